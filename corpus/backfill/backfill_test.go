package backfill

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/sqlite"
	"github.com/kgagent/kgagent/internal/poll"
)

// fakeEmbedder returns a vector per text and counts the texts; after
// failAfter calls (when set) it cancels the pass's context, as a kill would
// stop it mid-batch.
type fakeEmbedder struct {
	texts     atomic.Int64
	calls     atomic.Int64
	failAfter int64
	cancel    context.CancelFunc
	workers   atomic.Int64
	names     atomic.Int64 // calls of Name
}

func (f *fakeEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if n := f.calls.Add(1); f.failAfter > 0 && n > f.failAfter {
		f.cancel()
		return nil, ctx.Err()
	}
	f.texts.Add(int64(len(texts)))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), 1, 0}
	}
	return out, nil
}

func (f *fakeEmbedder) EmbedWorkers(ctx context.Context, texts []string, workers int) ([][]float32, error) {
	f.workers.Store(int64(workers))
	return f.Embed(ctx, texts)
}

func (f *fakeEmbedder) Dimension() int { return 3 }
func (f *fakeEmbedder) Name() string   { f.names.Add(1); return "fake-3" }

func fill(t *testing.T, x *sqlite.Index, docs, per int) {
	t.Helper()
	for d := range docs {
		url := "https://x/" + string(rune('a'+d))
		var cs []kgagent.Chunk
		var vs [][]float32
		for i := range per {
			text := strings.Repeat("w", d*per+i+1)
			cs = append(cs, kgagent.Chunk{ID: corpus.ChunkID("c", url, i), Collection: "c", DocURL: url, URL: url, Title: "t", Ordinal: i, Text: text, Hash: text})
			vs = append(vs, []float32{1, 0})
		}
		if err := x.ReplaceDocument(context.Background(), "c", url, cs, vs); err != nil {
			t.Fatal(err)
		}
	}
}

// A pass stopped mid-batch (its context canceled, as by a kill) keeps the
// batches it committed; a new pass on the reopened index embeds only the
// rest, and every chunk ends with a vector.
func TestPassResumesAfterKill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	x, err := sqlite.Open(sqlite.Config{Path: path, NoSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, x, 5, 10) // 50 chunks
	ctx, cancel := context.WithCancel(context.Background())
	emb := &fakeEmbedder{failAfter: 3, cancel: cancel}
	p, err := New(Config{Store: x, Embedder: emb, Batch: 8, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(ctx, false); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.Embedded != 24 || s.Batches != 3 {
		t.Fatalf("stopped pass: %+v, want 24 embedded in 3 batches", s)
	}
	if emb.workers.Load() != 3 {
		t.Fatalf("the pass embedded on %d workers, want 3", emb.workers.Load())
	}
	x.Close()

	y, err := sqlite.Open(sqlite.Config{Path: path, NoSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	done, total, err := y.SemanticProgress(context.Background(), "fake-3")
	if err != nil || done != 24 || total != 50 {
		t.Fatalf("after the kill: %d/%d (%v), want 24/50", done, total, err)
	}
	emb2 := &fakeEmbedder{}
	p2, _ := New(Config{Store: y, Embedder: emb2, Batch: 8})
	if err := p2.Run(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if emb2.texts.Load() != 26 {
		t.Fatalf("the resumed pass embedded %d chunks, want the 26 left", emb2.texts.Load())
	}
	if s := p2.Stats(); s.Done != 50 || s.Total != 50 || s.Running {
		t.Fatalf("resumed pass stats %+v, want 50/50 and idle", s)
	}
	if n, _ := y.SemanticChunks(context.Background(), "c", "fake-3"); n != 50 {
		t.Fatalf("search copy holds %d vectors, want 50", n)
	}
}

// An idle pass picks up chunks written later when kicked, and WaitIdle
// returns once they are embedded; canceling stops it.
func TestPassEmbedsNewChunks(t *testing.T) {
	x, err := sqlite.Open(sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	fill(t, x, 1, 3)
	emb := &fakeEmbedder{}
	p, _ := New(Config{Store: x, Embedder: emb, Batch: 2, Idle: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- p.Run(ctx, false) }()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := p.WaitIdle(wctx); err != nil {
		t.Fatal(err)
	}
	fill(t, x, 3, 3) // rewrites a (kept: no new vectors), adds b and c
	if err := p.WaitIdle(wctx); err != nil {
		t.Fatal(err)
	}
	if got := emb.texts.Load(); got != 9 {
		t.Fatalf("embedded %d texts, want 9 (3, then the 6 new ones)", got)
	}
	cancel()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pass did not stop")
	}
}

// A pass with Yield embeds nothing while Yield holds it back (nor asks the
// embedder its name: a model loaded on first use stays unloaded), calls it
// before every batch once let go, and stops when Yield's context ends.
func TestPassYields(t *testing.T) {
	x, err := sqlite.Open(sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	fill(t, x, 2, 5) // 10 chunks: 5 batches of 2
	emb := &fakeEmbedder{}
	gate := make(chan struct{})
	var yields atomic.Int64
	p, _ := New(Config{Store: x, Embedder: emb, Batch: 2, Idle: time.Hour, Yield: func(ctx context.Context) error {
		yields.Add(1)
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- p.Run(ctx, true) }()
	time.Sleep(100 * time.Millisecond)
	if n := emb.texts.Load(); n != 0 || yields.Load() != 1 || emb.names.Load() != 0 {
		t.Fatalf("held back: embedded %d texts after %d yields, %d Name calls, want 0 after 1, none", n, yields.Load(), emb.names.Load())
	}
	close(gate)
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pass did not finish")
	}
	if n := emb.texts.Load(); n != 10 {
		t.Fatalf("embedded %d texts, want 10", n)
	}
	if b, y := p.Stats().Batches, yields.Load(); y <= b {
		t.Fatalf("%d yields for %d batches, want one before each batch and scan", y, b)
	}

	// Canceled while held back: Run returns nil, nothing embedded.
	fill(t, x, 3, 5)
	gate2 := make(chan struct{})
	p2, _ := New(Config{Store: x, Embedder: emb, Batch: 2, Yield: func(ctx context.Context) error {
		select {
		case <-gate2:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}})
	go func() { stopped <- p2.Run(ctx, true) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-stopped; err != nil {
		t.Fatalf("canceled while yielding: %v, want nil", err)
	}
	if n := emb.texts.Load(); n != 10 {
		t.Fatalf("embedded %d texts while held back, want none more than 10", n)
	}
}

// unnamedEmbedder is a model that failed to load: its Name is "".
type unnamedEmbedder struct{ fakeEmbedder }

func (*unnamedEmbedder) Name() string { return "" }

// TestPassWithoutModel: a pass whose model failed to load (no name) ends
// with ErrNoModel and embeds nothing, instead of an invalid-argument error
// from the store that reads as a bug.
func TestPassWithoutModel(t *testing.T) {
	x, err := sqlite.Open(sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	fill(t, x, 1, 3)
	emb := &unnamedEmbedder{}
	p, _ := New(Config{Store: x, Embedder: emb, Batch: 2})
	if err := p.Run(context.Background(), true); !errors.Is(err, ErrNoModel) {
		t.Fatalf("Run with an unloaded model: %v, want ErrNoModel", err)
	}
	if n := emb.texts.Load(); n != 0 {
		t.Fatalf("embedded %d texts without a model", n)
	}
}

// loadingEmbedder is a model still loading (serve's lazy one): Name waits
// for the load, Load too, unless its context ends first.
type loadingEmbedder struct {
	fakeEmbedder
	loaded chan struct{}
}

func (l *loadingEmbedder) Name() string { <-l.loaded; return "fake-3" }

func (l *loadingEmbedder) Load(ctx context.Context) error {
	select {
	case <-l.loaded:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestPassStopsWhileModelLoads: a pass stopped while its model loads
// returns at once (serve's shutdown waited out the load before: 1-4 s, over
// 10 s under -race), and embeds nothing.
func TestPassStopsWhileModelLoads(t *testing.T) {
	x, err := sqlite.Open(sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	fill(t, x, 1, 3)
	emb := &loadingEmbedder{loaded: make(chan struct{})}
	defer close(emb.loaded) // the load ends after the test, as it would in serve
	p, _ := New(Config{Store: x, Embedder: emb, Batch: 2})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- p.Run(ctx, false) }()
	time.Sleep(50 * time.Millisecond) // the pass is waiting for the load
	cancel()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("stopped while the model loads: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pass did not stop while its model loads")
	}
	if n := emb.texts.Load(); n != 0 {
		t.Fatalf("embedded %d texts", n)
	}
}

// pausingEmbedder embeds in three steps and asks the context's pause func
// (corpus.Pause) before each, as MiniLM does before each layer.
type pausingEmbedder struct {
	fakeEmbedder
	steps atomic.Int64
}

func (f *pausingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	for range 3 {
		corpus.Pause(ctx)
		f.steps.Add(1)
	}
	return f.fakeEmbedder.Embed(ctx, texts)
}

func (f *pausingEmbedder) EmbedWorkers(ctx context.Context, texts []string, _ int) ([][]float32, error) {
	return f.Embed(ctx, texts)
}

// A pass with Pause waits for it mid-batch (before each step of the
// embedder), not only between batches as with Yield: a batch started just
// before a request arrives goes no further while Pause holds it.
func TestPassPausesMidBatch(t *testing.T) {
	x, err := sqlite.Open(sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	fill(t, x, 1, 4) // 4 chunks: 2 batches of 2
	emb := &pausingEmbedder{}
	var hold atomic.Bool
	hold.Store(true)
	var pauses atomic.Int64
	p, _ := New(Config{Store: x, Embedder: emb, Batch: 2, Idle: time.Hour, Pause: func(ctx context.Context) {
		pauses.Add(1)
		for hold.Load() && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
	}})
	stopped := make(chan error, 1)
	go func() { stopped <- p.Run(t.Context(), true) }()
	poll.Until(t, 5*time.Second, func() error {
		if pauses.Load() == 0 {
			return errors.New("no pause asked")
		}
		return nil
	})
	time.Sleep(50 * time.Millisecond)
	if s, n := emb.steps.Load(), emb.texts.Load(); s != 0 || n != 0 {
		t.Fatalf("held mid-batch: %d steps taken, %d texts embedded, want none", s, n)
	}
	hold.Store(false)
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pass did not finish once let go")
	}
	if n, ps := emb.texts.Load(), pauses.Load(); n != 4 || ps != 6 {
		t.Fatalf("embedded %d texts with %d pauses, want 4 with 6 (3 steps a batch)", n, ps)
	}
}
