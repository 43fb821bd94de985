package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kgagent/kgagent/corpus/minilm"
)

// TestLazySemanticLoadsOnce: the lazy model loads nothing until asked,
// then once for any number of concurrent callers; a failed load is logged
// once, its Name is "" and Embed returns the error.
func TestLazySemanticLoadsOnce(t *testing.T) {
	var loads atomic.Int64
	var logs bytes.Buffer
	fail := errors.New("weights corrupt")
	l := &lazySemantic{log: slog.New(slog.NewTextHandler(&logs, nil)), load: func() (*minilm.Embedder, error) {
		loads.Add(1)
		return nil, fail
	}}
	if loads.Load() != 0 || l.loaded() {
		t.Fatal("loaded before first use")
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if n := l.Name(); n != "" {
				t.Errorf("Name after a failed load: %q, want \"\"", n)
			}
		}()
	}
	wg.Wait()
	if _, err := l.Embed(context.Background(), []string{"x"}); !errors.Is(err, fail) {
		t.Fatalf("Embed after a failed load: %v, want the load's error", err)
	}
	if _, err := l.EmbedWorkers(context.Background(), []string{"x"}, 1); !errors.Is(err, fail) {
		t.Fatalf("EmbedWorkers after a failed load: %v", err)
	}
	if loads.Load() != 1 || l.loaded() || l.Dimension() != 0 {
		t.Fatalf("%d loads (loaded %v), want 1 that failed", loads.Load(), l.loaded())
	}
	if n := strings.Count(logs.String(), "failed to load"); n != 1 {
		t.Fatalf("the failure logged %d times: %s", n, logs.String())
	}
}

// TestLazySemanticHonoursContext: a search whose context ends while the
// model loads gets the context's error at once, not after the load; the
// load goes on and the next caller gets the model's answer.
func TestLazySemanticHonoursContext(t *testing.T) {
	release := make(chan struct{})
	fail := errors.New("weights corrupt")
	l := &lazySemantic{log: slog.New(slog.NewTextHandler(io.Discard, nil)), load: func() (*minilm.Embedder, error) {
		<-release
		return nil, fail
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := l.Embed(ctx, []string{"x"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Embed while loading, deadline passed: %v, want the deadline", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Embed waited %v for a load its deadline did not allow", took)
	}
	close(release)
	if _, err := l.Embed(context.Background(), []string{"x"}); !errors.Is(err, fail) {
		t.Fatalf("Embed after the load ended: %v, want the load's error", err)
	}
}
