package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/graphrag"
)

// startedSearch tells when the corpus search has begun and answers only
// once the graph retrieval has begun too.
type startedSearch struct {
	*fakeSearch
	once    sync.Once
	started chan struct{}
	graph   <-chan struct{}
}

func (s *startedSearch) Search(ctx context.Context, r corpus.SearchRequest) ([]corpus.Hit, error) {
	s.once.Do(func() { close(s.started) })
	select {
	case <-s.graph:
	case <-time.After(3 * time.Second):
		return nil, errors.New("the graph retrieval did not run beside the corpus search")
	}
	return s.fakeSearch.Search(ctx, r)
}

// waitingGraph answers only once the corpus search has begun: run one after
// the other, in either order, the two would wait for each other in vain.
type waitingGraph struct {
	once    *sync.Once
	begun   chan struct{}
	started <-chan struct{}
	facts   []graphrag.Fact
	err     error
}

func (g waitingGraph) Retrieve(ctx context.Context, q, coll string) ([]graphrag.Fact, error) {
	g.once.Do(func() { close(g.begun) })
	select {
	case <-g.started:
	case <-time.After(3 * time.Second):
		return nil, errors.New("the corpus search did not run beside the graph retrieval")
	}
	return g.facts, g.err
}

// TestQueryCorpusGraphConcurrent checks that fixie_query_corpus asks the
// graph while the corpus is searched, and that a failing graph leaves the
// documents' answer intact.
func TestQueryCorpusGraphConcurrent(t *testing.T) {
	fact := graphrag.Fact{Text: "Lumen written in Rust", SourceURL: "http://lumen/faq.html#written-in", Score: 0.9,
		Triple: kgagent.Triple{Subject: kgagent.Entity{Name: "Lumen"}}}
	tests := []struct {
		name      string
		err       error
		wantFacts bool
	}{
		{"graph answers", nil, true},
		{"graph fails", errors.New("graph store down"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			begun := make(chan struct{})
			fs := &startedSearch{fakeSearch: &fakeSearch{docs: lumenDocs}, started: make(chan struct{}), graph: begun}
			g := waitingGraph{once: &sync.Once{}, begun: begun, started: fs.started, facts: []graphrag.Fact{fact}, err: tc.err}
			m := newManager(t, Config{Builtins: BuiltinsConfig{Searcher: fs, Graph: g, SearchK: 3}})
			var ev events
			start := time.Now()
			ans, err := m.Ask(context.Background(), Request{Question: "What language is Lumen written in?", Collection: "lumen"}, ev.emit)
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("the answer took %v: search and graph ran one after the other", d)
			}
			var obs string
			for _, e := range ev.all() {
				if e.Kind == kgagent.EventObservation {
					obs = e.Text
				}
			}
			if !strings.Contains(obs, "Lumen is written in Rust.") {
				t.Errorf("observation without the document: %q", obs)
			}
			if got := strings.Contains(obs, "Facts:"); got != tc.wantFacts {
				t.Errorf("observation has facts = %v, want %v: %q", got, tc.wantFacts, obs)
			}
			if !strings.Contains(ans.Answer, "Rust") {
				t.Errorf("answer = %q", ans.Answer)
			}
		})
	}
}
