package main

import (
	"context"
	"errors"
	"io"
	"net/http"
)

var errNotWired = errors.New("not wired yet")

func (a *app) openServices(ctx context.Context) error { return nil }

func (a *app) httpHandler() (http.Handler, error) {
	mux := http.NewServeMux()
	healthHandlers(mux, a)
	return mux, nil
}

func (a *app) startBackground(ctx context.Context) error { return nil }

func (a *app) startDemo(ctx context.Context, base string) error {
	d, err := startDemoSite(a.cfg.DemoSiteDir)
	if err != nil {
		return err
	}
	a.demo = d
	return nil
}

func runWorker(ctx context.Context, cfg Config, stdout, stderr io.Writer) error { return errNotWired }
func runIngest(ctx context.Context, cfg Config, o ingestOptions, args []string, stdout, stderr io.Writer) error {
	return errNotWired
}
func runAsk(ctx context.Context, cfg Config, o askOptions, args []string, stdout, stderr io.Writer) error {
	return errNotWired
}
func runEval(ctx context.Context, cfg Config, o evalOptions, file string, stdout, stderr io.Writer) error {
	return errNotWired
}
