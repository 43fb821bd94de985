package gateway

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/crawler"
)

// countingAsker answers after a moment, recording the most questions it
// ever answered at once.
type countingAsker struct {
	running, peak atomic.Int64
	hold          func(ctx context.Context) // when set, called instead of the moment's wait
}

func (c *countingAsker) Ask(ctx context.Context, req agent.Request, emit agent.Emit) (kgagent.Answer, error) {
	n := c.running.Add(1)
	defer c.running.Add(-1)
	for {
		p := c.peak.Load()
		if n <= p || c.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if c.hold != nil {
		c.hold(ctx)
	} else {
		time.Sleep(5 * time.Millisecond)
	}
	return kgagent.Answer{Answer: req.Question}, nil
}

func answersServer(t *testing.T, a Asker, maxAnswers int, timeout time.Duration) *Server {
	t.Helper()
	s, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxAnswers: maxAnswers, RequestTimeout: timeout, DailyLimit: -1}, Backends{Asker: a})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestMaxAnswersBoundsConcurrency: questions from every transport share
// Config.MaxAnswers slots.
func TestMaxAnswersBoundsConcurrency(t *testing.T) {
	c := &countingAsker{}
	s := answersServer(t, c, 3, time.Minute)
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				if a, err := s.Calls().Ask(context.Background(), "q", "", "", nil); err != nil || a.Answer != "q" {
					t.Errorf("ask: %v %v", a, err)
				}
				return
			}
			var last Frame
			s.Run(context.Background(), Call{ID: "r", Service: ServiceAgent, Request: Request{Question: "q"}}, func(f Frame) { last = f })
			if last.Error != nil || textOf(last.Response.Answer) != "q" {
				t.Errorf("run: %+v", last)
			}
		}()
	}
	wg.Wait()
	if p := c.peak.Load(); p > 3 || p < 1 {
		t.Fatalf("peak concurrency %d, want 1..3", p)
	}
}

// TestMaxAnswersWaitEndsWithTheRequestTimeout: a question waiting for a
// slot gives up with TIMEOUT when its request timeout ends.
func TestMaxAnswersWaitEndsWithTheRequestTimeout(t *testing.T) {
	block, holding := make(chan struct{}), make(chan struct{})
	c := &countingAsker{hold: func(ctx context.Context) { close(holding); <-block }}
	s := answersServer(t, c, 1, 50*time.Millisecond)
	go s.Calls().Ask(context.Background(), "first", "", "", nil)
	<-holding // the one slot is taken: the next question can only wait for it
	_, err := s.Calls().Ask(context.Background(), "second", "", "", nil)
	close(block)
	if kgagent.ErrorCode(err) != kgagent.ETIMEOUT {
		t.Fatalf("got %v, want TIMEOUT while waiting for a slot", err)
	}
}

// TestIngestRulesOnEveryTransport: REST and Calls (MCP) submit jobs
// through one check: before, Calls accepted an empty URL and a max_pages
// over int32 that REST refused.
func TestIngestRulesOnEveryTransport(t *testing.T) {
	f := newFixture(t, Config{})
	for _, spec := range []crawler.Spec{
		{Collection: "python", URLs: []string{""}},
		{Collection: "python", URLs: []string{"https://docs.example.org/"}, MaxPages: math.MaxInt32 + 1},
		{Collection: "", URLs: []string{"https://docs.example.org/"}},
	} {
		if _, err := f.srv.Calls().Ingest(context.Background(), spec); kgagent.ErrorCode(err) != kgagent.EINVALID {
			t.Errorf("Calls.Ingest(%+v): %v, want INVALID_ARGUMENT", spec, err)
		}
		body, _ := json.Marshal(spec)
		if st, _, _ := do(t, "POST", f.ts.URL+"/api/v1/corpora", "", string(body)); st != 400 {
			t.Errorf("POST /api/v1/corpora %s: %d, want 400", body, st)
		}
	}
	if _, err := f.srv.Calls().Ingest(context.Background(), crawler.Spec{Collection: "python", URLs: []string{"https://docs.example.org/"}}); err != nil {
		t.Errorf("a good spec: %v", err)
	}
}
