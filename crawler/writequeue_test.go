package crawler

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/knowledge"
)

// slowGraph counts concurrent graph writes and their peak.
type slowGraph struct {
	in, peak, calls atomic.Int32
}

func (g *slowGraph) IndexDocument(ctx context.Context, doc kgagent.Document, chunks []kgagent.Chunk) (int, error) {
	n := g.in.Add(1)
	defer g.in.Add(-1)
	g.calls.Add(1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
	time.Sleep(3 * time.Millisecond)
	return 1, nil
}

func (g *slowGraph) DeleteDocument(context.Context, string, string) error { return nil }

// TestIngestWriteQueue runs the page writes inline and in the background
// with several queue sizes: every page is indexed, counted done and has its
// state saved by the time Run returns, and no more writes than the queue
// allows run at once.
func TestIngestWriteQueue(t *testing.T) {
	srv := siteServer(t)
	for _, tc := range []struct {
		queue, maxPeak int
	}{
		{-1, 4}, // inline: at most one per crawl worker
		{1, 1},
		{3, 3},
		{0, DefaultWriteQueue},
	} {
		g := &slowGraph{}
		states := knowledge.NewMemoryStates()
		in := NewIngester(IngesterConfig{Crawler: testConfig(), Knowledge: knowledge.NewWriter(nil, g, states), WriteQueue: tc.queue})
		rep, err := in.Run(context.Background(), Spec{Collection: "c", URLs: []string{srv.URL + "/*"}}, nil)
		if err != nil || rep.Counters.Indexed < 30 || rep.Counters.Failed != 0 {
			t.Fatalf("queue %d: %+v %v", tc.queue, rep.Counters, err)
		}
		if rep.Counters.Done != rep.Counters.Queued {
			t.Errorf("queue %d: done %d of %d queued", tc.queue, rep.Counters.Done, rep.Counters.Queued)
		}
		if got := int64(g.calls.Load()); got != rep.Counters.Indexed || rep.Counters.Triples != got {
			t.Errorf("queue %d: %d graph writes, %d triples, %d indexed", tc.queue, got, rep.Counters.Triples, rep.Counters.Indexed)
		}
		pages, _ := states.ListPages(context.Background(), "c")
		if int64(len(pages)) != rep.Counters.Indexed {
			t.Errorf("queue %d: %d page states, %d indexed", tc.queue, len(pages), rep.Counters.Indexed)
		}
		if p := int(g.peak.Load()); p > tc.maxPeak {
			t.Errorf("queue %d: %d writes at once, want at most %d", tc.queue, p, tc.maxPeak)
		}
	}
}
