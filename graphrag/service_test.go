package graphrag_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	corpussqlite "github.com/kgagent/kgagent/corpus/sqlite"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/graphtest"
	"github.com/kgagent/kgagent/graphrag/sqlite"
)

func newStore(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "graph.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newIndex(t *testing.T) corpus.Index {
	t.Helper()
	ix, err := corpussqlite.Open(corpussqlite.Config{Path: filepath.Join(t.TempDir(), "index.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

func newService(t *testing.T, cfg graphrag.Config) *graphrag.Service {
	t.Helper()
	if cfg.Store == nil {
		cfg.Store = newStore(t)
	}
	s, err := graphrag.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func hasFact(facts []graphrag.Fact, s, p, o string) *graphrag.Fact {
	for i, f := range facts {
		obj := f.Triple.Object.ID
		if f.Triple.Literal != "" {
			obj = f.Triple.Literal
		}
		if f.Triple.Subject.ID == s && f.Triple.Predicate == p && (o == "" || obj == o) {
			return &facts[i]
		}
	}
	return nil
}

func TestServiceIndexRetrieveAnswer(t *testing.T) {
	for _, withIndex := range []bool{false, true} {
		t.Run(map[bool]string{false: "names only", true: "entity index"}[withIndex], func(t *testing.T) {
			cfg := graphrag.Config{}
			if withIndex {
				cfg.Embedder, cfg.Index = corpus.NewLexical(corpus.LexicalConfig{}), newIndex(t)
			}
			svc := newService(t, cfg)
			ctx := t.Context()
			doc, chunks := sampleDoc()
			g0 := svc.Generation()
			n, err := svc.IndexDocument(ctx, doc, chunks)
			if err != nil || n == 0 {
				t.Fatalf("IndexDocument = %d, %v", n, err)
			}
			if g := svc.Generation(); g != g0+1 {
				t.Errorf("generation %d after a write, want %d", g, g0+1)
			}
			facts, err := svc.Retrieve(ctx, "What does json.dumps() do?", "py")
			if err != nil {
				t.Fatal(err)
			}
			f := hasFact(facts, "json.dumps", "is_defined_as", "Serialize obj to a JSON formatted str using this conversion table.")
			if f == nil {
				t.Fatalf("definition of json.dumps not among facts: %+v", facts)
			}
			if f.SourceURL != base+"#json.dumps" || !strings.HasPrefix(f.Text, "json.dumps: Serialize") {
				t.Errorf("fact = %+v", f)
			}
			if facts[0].Triple.Subject.ID != "json.dumps" && facts[0].Triple.Object.ID != "json.dumps" {
				t.Errorf("top fact is not about json.dumps: %+v", facts[0])
			}
			for i := 1; i < len(facts); i++ {
				if facts[i].Score > facts[i-1].Score {
					t.Errorf("facts not ranked: %v > %v", facts[i].Score, facts[i-1].Score)
				}
			}

			ans, err := svc.Answer(ctx, "What does json.dumps() do?", "py")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(ans.Answer, "Serialize obj to a JSON formatted str") {
				t.Errorf("answer lacks the definition: %q", ans.Answer)
			}
			urls := map[string]bool{}
			for _, s := range ans.Sources {
				if urls[s.URL] {
					t.Errorf("duplicate source %q", s.URL)
				}
				urls[s.URL] = true
			}
			for _, f := range ans.Facts {
				if !urls[f.SourceURL] {
					t.Errorf("fact %q cites %q, not among sources", f.Text, f.SourceURL)
				}
			}
			if !urls[base+"#json.dumps"] {
				t.Errorf("sources lack the json.dumps section: %+v", ans.Sources)
			}
			if !strings.Contains(ans.Answer, "[1]") {
				t.Errorf("answer has no citation: %q", ans.Answer)
			}
		})
	}
}

func TestServiceRecrawlConsistency(t *testing.T) {
	ix := newIndex(t)
	svc := newService(t, graphrag.Config{Embedder: corpus.NewLexical(corpus.LexicalConfig{}), Index: ix})
	ctx := t.Context()
	doc, chunks := sampleDoc()
	if _, err := svc.IndexDocument(ctx, doc, chunks); err != nil {
		t.Fatal(err)
	}
	// The page changes: json.dumps gets a new description.
	doc.Sections[1].Blocks[0].Text = "Encode obj as a JSON document string."
	if _, err := svc.IndexDocument(ctx, doc, chunks); err != nil {
		t.Fatal(err)
	}
	facts, err := svc.Retrieve(ctx, "json.dumps", "py")
	if err != nil {
		t.Fatal(err)
	}
	if hasFact(facts, "json.dumps", "is_defined_as", "Serialize obj to a JSON formatted str using this conversion table.") != nil {
		t.Error("old definition survived a re-crawl")
	}
	if hasFact(facts, "json.dumps", "is_defined_as", "Encode obj as a JSON document string.") == nil {
		t.Errorf("new definition missing: %+v", facts)
	}
	// The page is removed.
	if err := svc.DeleteDocument(ctx, "py", base); err != nil {
		t.Fatal(err)
	}
	if got, _ := svc.Find(ctx, graphrag.Pattern{Collection: "py"}); len(got) != 0 {
		t.Errorf("triples of a deleted page: %d", len(got))
	}
	hits, err := ix.Search(ctx, corpus.Query{Collection: "py__entities", Text: "json dumps", K: 10, Mode: corpus.ModeKeyword})
	if err != nil || len(hits) != 0 {
		t.Errorf("entity index of a deleted page: %d hits, %v", len(hits), err)
	}
	ans, err := svc.Answer(ctx, "json.dumps", "py")
	if err != nil || len(ans.Facts) != 0 || len(ans.Sources) != 0 || ans.Sources == nil || ans.Answer == "" {
		t.Errorf("answer over an empty graph: %+v, %v", ans, err)
	}
	// Deleting a collection deletes its graph and entity index.
	if _, err := svc.IndexDocument(ctx, doc, chunks); err != nil {
		t.Fatal(err)
	}
	if err := svc.DeleteCollection(ctx, "py"); err != nil {
		t.Fatal(err)
	}
	if got, _ := svc.Find(ctx, graphrag.Pattern{Collection: "py"}); len(got) != 0 {
		t.Errorf("triples of a deleted collection: %d", len(got))
	}
	if hits, _ := ix.Search(ctx, corpus.Query{Collection: "py__entities", Text: "json", K: 10, Mode: corpus.ModeKeyword}); len(hits) != 0 {
		t.Errorf("entity index of a deleted collection: %d hits", len(hits))
	}
}

func TestServiceEntityIndexFindsBySimilarity(t *testing.T) {
	doc := kgagent.Document{Collection: "c", URL: base, Title: "Glossary", Sections: []kgagent.Section{{
		Anchor: "glossary", Heading: "Glossary", Blocks: []kgagent.Block{{Kind: kgagent.BlockDefList, Terms: []kgagent.Definition{
			{Term: "GIL", Definition: "The mutex that protects interpreter state from concurrent bytecode execution."},
			{Term: "decorator", Definition: "A function returning another function, applied with the @wrapper syntax."},
		}}}}}}
	question := "Which mutex protects interpreter state?"
	for _, tc := range []struct {
		name     string
		withIdx  bool
		wantSeen bool
	}{{"names only", false, false}, {"entity index", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := graphrag.Config{}
			if tc.withIdx {
				cfg.Embedder, cfg.Index = corpus.NewLexical(corpus.LexicalConfig{}), newIndex(t)
			}
			svc := newService(t, cfg)
			if _, err := svc.IndexDocument(t.Context(), doc, nil); err != nil {
				t.Fatal(err)
			}
			facts, err := svc.Retrieve(t.Context(), question, "c")
			if err != nil {
				t.Fatal(err)
			}
			got := hasFact(facts, "gil", "is_defined_as", "") != nil
			if got != tc.wantSeen {
				t.Errorf("GIL definition found = %v, want %v (facts %+v)", got, tc.wantSeen, facts)
			}
		})
	}
}

func TestServiceExpansionLimits(t *testing.T) {
	store := newStore(t)
	ctx := t.Context()
	doc := "https://x.test/chain.html"
	T := func(s, p, o string) kgagent.Triple { return graphtest.T("c", doc, s, p, o, "s") }
	ts := []kgagent.Triple{T("alpha", "links_to", "beta"), T("beta", "links_to", "gamma"), T("gamma", "links_to", "delta"), T("delta", "links_to", "alpha")}
	for i := range 10 {
		ts = append(ts, T("alpha", "related_to", "spoke"+string(rune('a'+i))))
	}
	if err := store.ReplaceDocument(ctx, "c", doc, ts); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cfg     graphrag.Config
		want    []string // subjects>objects that must be present
		notWant []string
		max     int
	}{
		{"one hop", graphrag.Config{Hops: 1}, []string{"alpha>beta", "delta>alpha"}, []string{"beta>gamma"}, 100},
		{"two hops", graphrag.Config{Hops: 2}, []string{"alpha>beta", "beta>gamma", "gamma>delta"}, nil, 100},
		{"edges per hop", graphrag.Config{Hops: 1, EdgesPerHop: 3}, nil, nil, 3},
		{"max facts", graphrag.Config{Hops: 3, MaxFacts: 2}, nil, nil, 2},
		{"many hops on a cycle", graphrag.Config{Hops: 50}, []string{"gamma>delta"}, nil, 14},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Store = store
			svc := newService(t, tc.cfg)
			facts, err := svc.Retrieve(ctx, "Tell me about alpha", "c")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range facts {
				got = append(got, f.Triple.Subject.ID+">"+f.Triple.Object.ID)
				if f.SourceURL != doc+"#s" {
					t.Errorf("fact without its section: %+v", f)
				}
			}
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("missing %s in %v", w, got)
				}
			}
			for _, w := range tc.notWant {
				if slices.Contains(got, w) {
					t.Errorf("unexpected %s in %v", w, got)
				}
			}
			if len(got) > tc.max {
				t.Errorf("%d facts, want at most %d", len(got), tc.max)
			}
		})
	}
}

type failingExtractor struct{}

func (failingExtractor) Extract(context.Context, kgagent.Document, []kgagent.Chunk) ([]kgagent.Triple, error) {
	return nil, kgagent.Errorf(kgagent.EUNAVAILABLE, "model down")
}

type longNameExtractor struct{}

func (longNameExtractor) Extract(_ context.Context, doc kgagent.Document, _ []kgagent.Chunk) ([]kgagent.Triple, error) {
	tr := graphtest.T(doc.Collection, doc.URL, "ok", "is_a", "fine", "")
	bad := graphtest.T(doc.Collection, doc.URL, strings.Repeat("n", 10_000), "is_a", "fine", "")
	return []kgagent.Triple{tr, bad}, nil
}

func TestServiceBadInput(t *testing.T) {
	store := newStore(t)
	ctx := t.Context()
	doc, chunks := sampleDoc()
	good := newService(t, graphrag.Config{Store: store})
	n, err := good.IndexDocument(ctx, doc, chunks)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		x    graphrag.Extractor
		code string
	}{{"extractor down", failingExtractor{}, kgagent.EUNAVAILABLE}, {"entity name of 10 kB", longNameExtractor{}, kgagent.EINVALID}} {
		t.Run(tc.name, func(t *testing.T) {
			svc := newService(t, graphrag.Config{Store: store, Extractor: tc.x})
			if _, err := svc.IndexDocument(ctx, doc, chunks); kgagent.ErrorCode(err) != tc.code {
				t.Errorf("err = %v, want %s", err, tc.code)
			}
			got, _ := good.Find(ctx, graphrag.Pattern{Collection: "py", Limit: 1000})
			if len(got) != n {
				t.Errorf("old triples: %d, want %d", len(got), n)
			}
		})
	}
	if _, err := good.Retrieve(ctx, "  ", "py"); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("empty question: %v", err)
	}
	if _, err := good.Answer(ctx, "json", ""); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("no collection: %v", err)
	}
	if _, err := graphrag.New(graphrag.Config{}); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("New without store: %v", err)
	}
	if _, err := graphrag.New(graphrag.Config{Store: store, Embedder: corpus.NewLexical(corpus.LexicalConfig{})}); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("New with embedder but no index: %v", err)
	}
}

func TestQuestionTerms(t *testing.T) {
	tests := []struct {
		q    string
		want []string
	}{
		{"What does json.dumps() do?", []string{"json.dumps"}},
		{"How do I use the global interpreter lock?", []string{"global", "interpreter", "lock", "global interpreter lock", "global interpreter", "interpreter lock"}},
		{"what is it?", nil},
	}
	for _, tc := range tests {
		got := graphrag.QuestionTerms(tc.q)
		slices.Sort(got)
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("QuestionTerms(%q) = %q, want %q", tc.q, got, want)
		}
	}
}

func TestServiceConcurrent(t *testing.T) {
	svc := newService(t, graphrag.Config{Embedder: corpus.NewLexical(corpus.LexicalConfig{}), Index: newIndex(t)})
	ctx := t.Context()
	doc, chunks := sampleDoc()
	errs := make(chan error, 16)
	for i := range 4 {
		go func() {
			d := doc
			d.URL = fmt.Sprintf("%s?v=%d", base, i)
			_, err := svc.IndexDocument(ctx, d, nil)
			errs <- err
		}()
		go func() {
			_, err := svc.Retrieve(ctx, "What does json.dumps do?", "py")
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if _, err := svc.IndexDocument(ctx, doc, chunks); err != nil {
		t.Fatal(err)
	}
	got, err := svc.Find(ctx, graphrag.Pattern{Collection: "py", S: "json", P: "defines", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]bool{}
	for _, tr := range got {
		docs[tr.DocURL] = true
	}
	if len(docs) != 5 {
		t.Errorf("json defines triples from %d documents, want 5", len(docs))
	}
}

func TestServiceRanksDefinitionsOfTheNamedEntityFirst(t *testing.T) {
	svc := newService(t, graphrag.Config{})
	doc := kgagent.Document{Collection: "c", URL: base, Title: "Glossary", Sections: []kgagent.Section{
		{Anchor: "glossary", Heading: "Glossary", Blocks: []kgagent.Block{{Kind: kgagent.BlockDefList, Terms: []kgagent.Definition{
			{Term: "context manager", Definition: "An object which controls the environment seen in a with statement."},
		}}}},
		{Anchor: "telnet", Heading: "Telnet", Blocks: []kgagent.Block{{Kind: kgagent.BlockParagraph,
			Text: "A Telnet object is a context manager. A Runner is a context manager. The TaskGroup is a context manager."}}},
	}}
	if _, err := svc.IndexDocument(t.Context(), doc, nil); err != nil {
		t.Fatal(err)
	}
	facts, err := svc.Retrieve(t.Context(), "What is a context manager?", "c")
	if err != nil || len(facts) == 0 {
		t.Fatalf("Retrieve: %v, %d facts", err, len(facts))
	}
	if f := facts[0]; f.Triple.Subject.ID != "context manager" || f.Triple.Predicate != "is_defined_as" || f.SourceURL != base+"#glossary" {
		t.Errorf("top fact = %q from %s, want the definition of context manager", f.Text, f.SourceURL)
	}
	if hasFact(facts, "runner", "is_a", "context manager") == nil {
		t.Errorf("related facts missing: %+v", facts)
	}
}

// downStore is a Store whose backend is gone.
type downStore struct{ graphrag.Store }

func (downStore) err() error { return kgagent.Errorf(kgagent.EUNAVAILABLE, "graph store unreachable") }
func (d downStore) ReplaceDocument(context.Context, string, string, []kgagent.Triple) error {
	return d.err()
}
func (d downStore) DeleteDocument(context.Context, string, string) error { return d.err() }
func (d downStore) DeleteCollection(context.Context, string) error       { return d.err() }
func (d downStore) Find(context.Context, graphrag.Pattern) ([]kgagent.Triple, error) {
	return nil, d.err()
}
func (d downStore) Expand(context.Context, string, []string, graphrag.ExpandLimits) ([]kgagent.Triple, error) {
	return nil, d.err()
}
func (d downStore) Entities(context.Context, string, []string, int) ([]kgagent.Entity, error) {
	return nil, d.err()
}

func TestServiceStoreDown(t *testing.T) {
	ix := newIndex(t)
	svc := newService(t, graphrag.Config{Store: downStore{}, Embedder: corpus.NewLexical(corpus.LexicalConfig{}), Index: ix})
	ctx := t.Context()
	doc, chunks := sampleDoc()
	calls := []struct {
		name string
		fn   func() error
	}{
		{"IndexDocument", func() error { _, err := svc.IndexDocument(ctx, doc, chunks); return err }},
		{"DeleteDocument", func() error { return svc.DeleteDocument(ctx, "py", base) }},
		{"DeleteCollection", func() error { return svc.DeleteCollection(ctx, "py") }},
		{"Find", func() error { _, err := svc.Find(ctx, graphrag.Pattern{Collection: "py"}); return err }},
		{"Retrieve", func() error { _, err := svc.Retrieve(ctx, "What does json.dumps do?", "py"); return err }},
		{"Answer", func() error { _, err := svc.Answer(ctx, "json", "py"); return err }},
	}
	for _, c := range calls {
		if err := c.fn(); kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
			t.Errorf("%s: %v, want %s", c.name, err, kgagent.EUNAVAILABLE)
		}
	}
	// The entity index was not touched by the failed IndexDocument.
	if hits, _ := ix.Search(ctx, corpus.Query{Collection: "py__entities", Text: "json", K: 5, Mode: corpus.ModeKeyword}); len(hits) != 0 {
		t.Errorf("entity index written although the store failed: %d hits", len(hits))
	}
}

func TestDedupe(t *testing.T) {
	e := func(id string) kgagent.Entity { return kgagent.Entity{ID: id, Name: id, Type: "term"} }
	a := kgagent.Triple{Subject: e("a"), Predicate: "is_a", Object: e("b"), SourceURL: "u#1"}
	b := kgagent.Triple{Subject: e("a"), Predicate: "is_a", Object: e("b"), SourceURL: "u#2"}
	c := kgagent.Triple{Subject: e("a"), Predicate: "is_defined_as", Literal: "x", SourceURL: "u#1"}
	uniq := []kgagent.Triple{a, b, c}
	if got := graphrag.Dedupe(uniq); len(got) != 3 || &got[0] != &uniq[0] {
		t.Errorf("Dedupe of distinct triples = %v, want the same slice", got)
	}
	in := []kgagent.Triple{a, b, a, c, b, c}
	got := graphrag.Dedupe(in)
	if len(got) != 3 || got[0] != a || got[1] != b || got[2] != c {
		t.Errorf("Dedupe = %v, want [a b c]", got)
	}
	if in[2] != a || in[4] != b || len(in) != 6 {
		t.Errorf("Dedupe changed its input: %v", in)
	}
	if got := graphrag.Dedupe(nil); got != nil {
		t.Errorf("Dedupe(nil) = %v, want nil", got)
	}
}

// The entity index search adds the semantic query vector through
// Config.SemanticQuery (corpus.Service's), for the entity collection.
func TestEntitySearchAsksSemanticQuery(t *testing.T) {
	var asked []string
	cfg := graphrag.Config{Embedder: corpus.NewLexical(corpus.LexicalConfig{}), Index: newIndex(t),
		SemanticQuery: func(_ context.Context, q *corpus.Query) error {
			asked = append(asked, q.Collection)
			return nil
		}}
	svc := newService(t, cfg)
	ctx := t.Context()
	doc, chunks := sampleDoc()
	if _, err := svc.IndexDocument(ctx, doc, chunks); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Retrieve(ctx, "how do I turn an object into a string", "py"); err != nil {
		t.Fatal(err)
	}
	if len(asked) == 0 || asked[0] != "py__entities" {
		t.Fatalf("SemanticQuery was asked for %v, want the entity collection py__entities", asked)
	}
}
