package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
)

// app is the wired process: the data-dir lock, the bus and every service.
// This is the only place that chooses implementations.
type app struct {
	cfg     Config
	log     *slog.Logger
	lock    *dataLock
	bus     *bus
	closers []func() // run in reverse order by Close
	ready   atomic.Bool
	demo    *demoSite
	svc     services
}

// openApp takes the data-dir lock, opens the stores and the bus.
// The CLI commands (ingest, ask, eval) pass withBus false: they need no NATS.
func openApp(ctx context.Context, cfg Config, command string, log *slog.Logger, withBus bool) (*app, error) {
	lock, err := lockDataDir(cfg.DataDir, command)
	if err != nil {
		return nil, err
	}
	a := &app{cfg: cfg, log: log, lock: lock}
	if withBus {
		b, err := openBus(cfg, log)
		if err != nil {
			a.Close()
			return nil, err
		}
		a.bus = b
		a.closers = append(a.closers, b.Close)
	}
	if err := a.openServices(ctx); err != nil {
		a.Close()
		return nil, err
	}
	privateDataFiles(cfg.DataDir)
	a.ready.Store(true)
	return a, nil
}

// Close releases everything in reverse order of opening.
func (a *app) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
	if a.demo != nil {
		a.demo.Close()
	}
	_ = a.lock.Close()
}

func (a *app) stopAccepting()   { a.ready.Store(false) }
func (a *app) onClose(f func()) { a.closers = append(a.closers, f) }

// readiness reports whether the app still accepts work and its bus is
// connected (the gateway adds a check of the index).
func (a *app) readiness() error {
	if !a.ready.Load() {
		return fmt.Errorf("not ready")
	}
	if a.bus == nil {
		return nil
	}
	if err := a.bus.Ready(); err != nil {
		return err
	}
	return nil
}
