package corpus_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kgagent/kgagent/corpus"
)

// memoEmbedder counts the texts it embeds; it can be made to fail or to
// take its time.
type memoEmbedder struct {
	name  string
	texts atomic.Int64
	fail  atomic.Bool
	delay time.Duration
}

func (e *memoEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	time.Sleep(e.delay)
	if e.fail.Load() {
		return nil, errors.New("embedder down")
	}
	e.texts.Add(int64(len(texts)))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), 1}
	}
	return out, nil
}
func (e *memoEmbedder) Dimension() int { return 2 }
func (e *memoEmbedder) Name() string   { return e.name }

// Under a request's query memo a text is embedded once per embedder,
// whoever asks and however often; each caller gets its own vector; without
// a memo, or for a batch, every call embeds.
func TestQueryMemo(t *testing.T) {
	a, b := &memoEmbedder{name: "a"}, &memoEmbedder{name: "b"}
	embed := func(ctx context.Context, e corpus.Embedder, q ...string) [][]float32 {
		t.Helper()
		vs, err := corpus.EmbedQueries(ctx, e, q)
		if err != nil || len(vs) != len(q) {
			t.Fatalf("EmbedQueries(%s, %q) = %v, %v", e.Name(), q, vs, err)
		}
		return vs
	}
	plain := t.Context()
	embed(plain, a, "how do I copy a file")
	embed(plain, a, "how do I copy a file")
	if n := a.texts.Load(); n != 2 {
		t.Fatalf("without a memo: %d texts embedded, want 2", n)
	}

	ctx := corpus.WithQueryMemo(t.Context())
	if corpus.WithQueryMemo(ctx) != ctx {
		t.Fatal("WithQueryMemo made a second memo under a context that has one")
	}
	v1 := embed(ctx, a, "how do I copy a file")
	v1[0][0] = -7 // the caller's own copy
	v2 := embed(ctx, a, "how do I copy a file")
	embed(ctx, b, "how do I copy a file")
	embed(ctx, a, "how do I move a file")
	if n := a.texts.Load(); n != 2+2 {
		t.Fatalf("with a memo: %d texts embedded by a, want 4 (2 before, then 2 distinct)", n)
	}
	if n := b.texts.Load(); n != 1 {
		t.Fatalf("with a memo: %d texts embedded by b, want 1 (another embedder's vector is not b's)", n)
	}
	if v2[0][0] != float32(len("how do I copy a file")) {
		t.Fatalf("second caller got %v: a caller's change reached another's vector", v2[0])
	}
	embed(ctx, a, "how do I copy a file", "how do I move a file")
	if n := a.texts.Load(); n != 4+2 {
		t.Fatalf("a batch of two: %d texts embedded in all, want 6 (batches are not memoised)", n)
	}

	// Concurrent callers wait for the first one's vector.
	slow := &memoEmbedder{name: "slow", delay: 20 * time.Millisecond}
	ctx = corpus.WithQueryMemo(t.Context())
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if vs, err := corpus.EmbedQueries(ctx, slow, []string{"walk a directory tree"}); err != nil || len(vs) != 1 || vs[0][0] != float32(len("walk a directory tree")) {
				t.Errorf("concurrent caller got %v, %v", vs, err)
			}
		}()
	}
	wg.Wait()
	if n := slow.texts.Load(); n != 1 {
		t.Fatalf("8 concurrent callers embedded %d times, want 1", n)
	}

	// A failure is not remembered: the next caller embeds again.
	ctx = corpus.WithQueryMemo(t.Context())
	a.fail.Store(true)
	if _, err := corpus.EmbedQueries(ctx, a, []string{"read a zip file"}); err == nil {
		t.Fatal("a failing embedder's error was not returned")
	}
	a.fail.Store(false)
	before := a.texts.Load()
	embed(ctx, a, "read a zip file")
	if n := a.texts.Load() - before; n != 1 {
		t.Fatalf("after a failure: %d texts embedded, want 1 (the failure was remembered)", n)
	}
}

// A caller waiting for another's vector gives up when its own context ends.
func TestQueryMemoWaiterCancelled(t *testing.T) {
	slow := &memoEmbedder{name: "slow", delay: 200 * time.Millisecond}
	ctx := corpus.WithQueryMemo(t.Context())
	go func() { _, _ = corpus.EmbedQueries(ctx, slow, []string{"parse a date"}) }()
	time.Sleep(20 * time.Millisecond)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := corpus.EmbedQueries(wctx, slow, []string{"parse a date"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiter's error %v, want its deadline", err)
	}
	if el := time.Since(start); el > 150*time.Millisecond {
		t.Fatalf("waiter returned after %v, not at its deadline", el)
	}
}

// panicEmbedder panics on its first Embed, once the second caller waits;
// later calls embed.
type panicEmbedder struct {
	calls   atomic.Int64
	waiting chan struct{}
}

func (e *panicEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	if e.calls.Add(1) == 1 {
		<-e.waiting
		time.Sleep(20 * time.Millisecond) // the waiter is in its select
		panic("embedder bug")
	}
	return [][]float32{{1, 2}}, nil
}
func (e *panicEmbedder) Dimension() int { return 2 }
func (e *panicEmbedder) Name() string   { return "p" }

// A caller whose embedding panics does not leave the others of its request
// waiting for a vector that never comes: the entry is forgotten as the
// panic goes on, and the waiter embeds the text itself.
func TestQueryMemoPanicWakesWaiters(t *testing.T) {
	e := &panicEmbedder{waiting: make(chan struct{})}
	ctx := corpus.WithQueryMemo(context.Background()) // a request that never ends by itself
	first := make(chan any)
	go func() {
		defer func() { first <- recover() }()
		_, _ = corpus.EmbedQueries(ctx, e, []string{"q"})
	}()
	for e.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	got := make(chan error, 1)
	go func() {
		close(e.waiting)
		vs, err := corpus.EmbedQueries(ctx, e, []string{"q"})
		if err == nil && len(vs) != 1 {
			err = errors.New("no vector")
		}
		got <- err
	}()
	if p := <-first; p != "embedder bug" {
		t.Fatalf("the first caller's panic: %v", p)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the waiter: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter still waits for the entry of a caller that panicked")
	}
}
