package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kgagent/kgagent/gateway"
)

func newServeCommand(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Serve the chat page, REST, websocket, NATS and agent-protocol endpoints",
		Long:  "serve opens the data dir, starts (or connects to) NATS, runs ingestion workers and serves HTTP on --addr.\nWith --demo it also serves the bundled sample docs site on loopback and ingests it.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), *cfg, stdout, stderr, nil)
		},
	}
}

// httpLimits are the connection limits of serve's HTTP listener.
func httpLimits(cfg Config) gateway.HTTPLimits {
	return gateway.HTTPLimits{ReadTimeout: cfg.HTTPReadTimeout, WriteTimeout: cfg.HTTPWriteTimeout,
		IdleTimeout: cfg.HTTPIdleTimeout, MaxHeaderBytes: cfg.HTTPMaxHeaderBytes}
}

// serve runs until ctx is done, then shuts down gracefully. ready, when not
// nil, receives the HTTP base URL once the server accepts requests (tests).
func serve(ctx context.Context, cfg Config, stdout, stderr io.Writer, ready chan<- string) error {
	defer limitServeMemory(cfg)()
	log := newLogger(cfg, stderr)
	a, err := openApp(ctx, cfg, "serve", log, true)
	if err != nil {
		return err
	}
	defer a.Close()

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Addr, err)
	}
	handler, err := a.httpHandler()
	if err != nil {
		ln.Close()
		return err
	}
	srv := gateway.NewHTTPServer(handler, httpLimits(cfg))
	base := "http://" + ln.Addr().String()
	a.lock.serving(base)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	if _, err := a.startBackground(ctx); err != nil {
		_ = srv.Close()
		return err
	}
	go a.warmUp(ctx)
	fmt.Fprintf(stdout, "kgagent serving on %s\nchat page: %s/\nNATS: %s%s\n", base, base, a.bus.URL(), natsHint(cfg))
	if cfg.Demo {
		if err := a.startDemo(ctx, base, stdout); err != nil {
			_ = srv.Close()
			return err
		}
	}
	log.Info("serving", "addr", ln.Addr().String(), "chat", base+"/", "nats", a.bus.URL())
	if ready != nil {
		ready <- base
	}

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	log.Info("shutting down", "deadline", cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	a.stopAccepting()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("shutdown deadline passed; closing connections", "err", err)
		_ = srv.Close()
	}
	fmt.Fprintln(stdout, "kgagent stopped")
	return nil
}

// natsHint tells, after the in-process NATS server's URL, how a client gets
// the credentials it requires: `kgagent nats-url` prints the URL with them.
// An external NATS (--nats-url) is the operator's: nothing to add.
func natsHint(cfg Config) string {
	if cfg.NATSURL != "" {
		return ""
	}
	cmd := invokedAs() + " nats-url"
	if cfg.DataDir != defaultConfig().DataDir {
		cmd += " --data-dir " + shellQuote(cfg.DataDir)
	}
	return " (credentials required: `" + cmd + "` prints the URL with them)"
}

// invokedAs is how the user ran this binary, for commands we print: the
// path they typed (bin/kgagent) when it is kgagent, else "kgagent".
func invokedAs() string {
	if p := os.Args[0]; filepath.Base(p) == "kgagent" && !strings.Contains(p, "go-build") {
		return p
	}
	return "kgagent"
}

// shellQuote quotes s for sh when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@,+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
