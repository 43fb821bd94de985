package backfill

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/sqlite"
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
func (f *fakeEmbedder) Name() string   { return "fake-3" }

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
