package main

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/backfill"
	"github.com/kgagent/kgagent/corpus/minilm"
)

// lazySemantic is the semantic model of a long-running command (serve,
// worker, mcp), loaded on first use instead of at start: by the
// background pass once the app is warm and quiet, or by the first search
// of a collection that has semantic vectors (corpus.Service asks the
// embedder nothing while the index holds none). Loading takes 1-4 s of a
// core (all-MiniLM-L6-v2, read and packed), which serve used to spend
// before it listened. A load that fails is logged once; the model's Name
// is then "" (no vectors are ever stored under it, so search stays
// lexical) and Embed returns the error.
//
// The load runs on a goroutine of its own: Embed and EmbedWorkers wait for
// it only as long as their context lets them, so a search with a deadline
// right after a restart is never held past its deadline by the load.
type lazySemantic struct {
	load func() (*minilm.Embedder, error)
	log  *slog.Logger
	once sync.Once
	done chan struct{} // closed when the load has ended (set by once)
	e    *minilm.Embedder
	err  error
	ok   atomic.Bool // loaded without error
}

var (
	_ corpus.Embedder         = (*lazySemantic)(nil)
	_ backfill.WorkerEmbedder = (*lazySemantic)(nil)
	_ backfill.Loader         = (*lazySemantic)(nil)
	_ corpus.ContextNamer     = (*lazySemantic)(nil)
)

// started starts the load the first time and returns the channel closed
// when it has ended.
func (l *lazySemantic) started() <-chan struct{} {
	l.once.Do(func() {
		l.done = make(chan struct{})
		go func() {
			defer close(l.done)
			start := time.Now()
			l.e, l.err = l.load()
			if l.err != nil {
				l.log.Error("semantic search off: the semantic model failed to load", "err", l.err)
				return
			}
			l.ok.Store(true)
			l.log.Info("semantic search: built-in semantic model", "model", l.e.Name(), "kernel", l.e.Kernel(), "load_seconds", time.Since(start).Seconds())
		}()
	})
	return l.done
}

// get loads the model the first time and returns it, or ctx's error when
// ctx ends before the load does (the load goes on for the next caller).
func (l *lazySemantic) get(ctx context.Context) (*minilm.Embedder, error) {
	select {
	case <-l.started():
		return l.e, l.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Load waits for the load (starting it the first time) and returns its
// error, or ctx's when ctx ends first: the background pass waits with it,
// so a serve shut down during the load stops without waiting it out.
func (l *lazySemantic) Load(ctx context.Context) error {
	_, err := l.get(ctx)
	return err
}

// loaded reports whether the model was loaded (tests, the log).
func (l *lazySemantic) loaded() bool { return l.ok.Load() }

// Name loads the model and returns its name ("" when it failed to load).
func (l *lazySemantic) Name() string {
	if e, err := l.get(context.Background()); err == nil {
		return e.Name()
	}
	return ""
}

// NameContext is Name under ctx (corpus.ContextNamer): it waits for the
// load only as long as ctx lets it, so a search right after a restart is
// not held past its deadline by the load.
func (l *lazySemantic) NameContext(ctx context.Context) (string, error) {
	e, err := l.get(ctx)
	if ctx.Err() != nil && err == ctx.Err() {
		return "", err
	}
	if err != nil {
		return "", nil // failed to load: no name, as Name
	}
	return e.Name(), nil
}

// Dimension loads the model and returns its dimension (0 when it failed).
func (l *lazySemantic) Dimension() int {
	if e, err := l.get(context.Background()); err == nil {
		return e.Dimension()
	}
	return 0
}

// Embed loads the model and embeds texts.
func (l *lazySemantic) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return e.Embed(ctx, texts)
}

// EmbedWorkers loads the model and embeds texts on workers goroutines.
func (l *lazySemantic) EmbedWorkers(ctx context.Context, texts []string, workers int) ([][]float32, error) {
	e, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return e.EmbedWorkers(ctx, texts, workers)
}
