package corpus_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/sqlite"
)

func newService(t *testing.T) *corpus.Service {
	t.Helper()
	idx, err := sqlite.Open(sqlite.Config{Path: t.TempDir() + "/c.db"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	s, err := corpus.NewService(corpus.ServiceConfig{Index: idx})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func doc(collection, url, title string, sections ...string) kgagent.Document {
	d := kgagent.Document{Collection: collection, URL: url, Title: title}
	for i, s := range sections {
		h := fmt.Sprintf("Part %d", i)
		d.Sections = append(d.Sections, kgagent.Section{Heading: h, Level: 2, Anchor: fmt.Sprintf("p%d", i), HeadingPath: []string{title, h},
			Blocks: []kgagent.Block{{Kind: kgagent.BlockParagraph, Text: s}}})
	}
	return d
}

func TestServiceIndexSearchDelete(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	chunks, err := s.IndexDocument(ctx, doc("py", "https://d/zipfile.html", "zipfile — Work with ZIP archives", "Read and write archive members.", "Compression methods."))
	if err != nil || len(chunks) != 2 {
		t.Fatalf("IndexDocument: %d chunks, %v", len(chunks), err)
	}
	if _, err := s.IndexDocument(ctx, doc("py", "https://d/json.html", "json — JSON encoder and decoder", "Serialize objects.", "Decoding.")); err != nil {
		t.Fatal(err)
	}
	// the title counts: "ZIP" is only in the title
	for _, m := range []corpus.Mode{corpus.ModeHybrid, corpus.ModeDense, corpus.ModeKeyword} {
		hits, err := s.Search(ctx, corpus.SearchRequest{Query: "work with zip", Collection: "py", K: 3, Mode: m})
		if err != nil || len(hits) == 0 || hits[0].DocURL != "https://d/zipfile.html" {
			t.Fatalf("%s: hits %+v err %v", m, hits, err)
		}
		if !strings.HasPrefix(hits[0].URL, "https://d/zipfile.html#p") || len(hits[0].HeadingPath) != 2 {
			t.Errorf("hit url %q path %v", hits[0].URL, hits[0].HeadingPath)
		}
	}
	cols, err := s.Collections(ctx)
	if err != nil || len(cols) != 1 || cols[0] != (corpus.CollectionInfo{Name: "py", Documents: 2, Chunks: 4}) {
		t.Fatalf("Collections = %+v, %v", cols, err)
	}
	// re-indexing replaces
	if _, err := s.IndexDocument(ctx, doc("py", "https://d/zipfile.html", "zipfile — Work with ZIP archives", "Only one part now.")); err != nil {
		t.Fatal(err)
	}
	cols, _ = s.Collections(ctx)
	if cols[0].Chunks != 3 {
		t.Errorf("after replace: %d chunks, want 3", cols[0].Chunks)
	}
	if err := s.DeleteDocument(ctx, "py", "https://d/json.html"); err != nil {
		t.Fatal(err)
	}
	hits, err := s.Search(ctx, corpus.SearchRequest{Query: "json", Collection: "py", K: 5, Mode: corpus.ModeKeyword})
	if err != nil || len(hits) != 0 {
		t.Errorf("deleted document still found: %+v %v", hits, err)
	}
	if err := s.DeleteCollection(ctx, "py"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Search(ctx, corpus.SearchRequest{Query: "zip", Collection: "py", K: 5}); kgagent.ErrorCode(err) != kgagent.ENOTFOUND {
		t.Errorf("search of a deleted collection: %v, want %s", err, kgagent.ENOTFOUND)
	}
}

func TestServiceValidation(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.IndexDocument(ctx, doc("py", "https://d/a", "A", "alpha text")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  corpus.SearchRequest
		code string
	}{
		{"empty query", corpus.SearchRequest{Query: "  ", Collection: "py", K: 5}, kgagent.EINVALID},
		{"huge query", corpus.SearchRequest{Query: strings.Repeat("a ", 50<<10), Collection: "py", K: 5}, kgagent.ETOOLARGE},
		{"k zero", corpus.SearchRequest{Query: "alpha", Collection: "py", K: 0}, kgagent.EINVALID},
		{"k huge", corpus.SearchRequest{Query: "alpha", Collection: "py", K: 101}, kgagent.EINVALID},
		{"unknown mode", corpus.SearchRequest{Query: "alpha", Collection: "py", K: 5, Mode: "semantic"}, kgagent.EINVALID},
		{"no collection", corpus.SearchRequest{Query: "alpha", K: 5}, kgagent.EINVALID},
		{"unknown collection", corpus.SearchRequest{Query: "alpha", Collection: "nope", K: 5}, kgagent.ENOTFOUND},
		{"ok, mode defaults to hybrid", corpus.SearchRequest{Query: "alpha", Collection: "py", K: 5}, ""},
	}
	for _, tt := range tests {
		_, err := s.Search(ctx, tt.req)
		if got := kgagent.ErrorCode(err); got != tt.code {
			t.Errorf("%s: code %q (%v), want %q", tt.name, got, err, tt.code)
		}
	}
	if _, err := s.IndexDocument(ctx, kgagent.Document{URL: "x"}); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("document without collection: %v", err)
	}
	// nothing stored was touched
	hits, err := s.Search(ctx, corpus.SearchRequest{Query: "alpha", Collection: "py", K: 5})
	if err != nil || len(hits) != 1 {
		t.Errorf("after bad requests: %d hits, %v", len(hits), err)
	}
}

func TestSearchText(t *testing.T) {
	text := "# Shipping\nOrders ship within two days.\n\n# Returns\nYou can return items within 30 days for a refund.\n\n# Contact\nEmail support."
	hits, err := corpus.SearchText(context.Background(), nil, "FAQ", text, "how do I get a refund", 2)
	if err != nil || len(hits) == 0 || !strings.Contains(hits[0].Text, "refund") || hits[0].Anchor != "returns" {
		t.Fatalf("SearchText: %+v %v", hits, err)
	}
	if len(hits) > 2 {
		t.Errorf("k=2 gave %d hits", len(hits))
	}
	if _, err := corpus.SearchText(context.Background(), nil, "", text, "", 2); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("empty query: %v", err)
	}
	if hits, err := corpus.SearchText(context.Background(), nil, "", "", "x", 2); err != nil || len(hits) != 0 {
		t.Errorf("empty text: %v %v", hits, err)
	}
}

func TestServiceGenerationCountsWrites(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	g0 := s.Generation()
	if _, err := s.Search(ctx, corpus.SearchRequest{Query: "zip", Collection: "py", K: 5}); err == nil {
		t.Fatal("search of a missing collection succeeded")
	}
	steps := []struct {
		name  string
		write func() error
	}{
		{"index", func() error {
			_, err := s.IndexDocument(ctx, doc("py", "https://d/zipfile.html", "zipfile", "Read archives."))
			return err
		}},
		{"search (no write)", nil},
		{"delete document", func() error { return s.DeleteDocument(ctx, "py", "https://d/zipfile.html") }},
		{"delete collection", func() error { return s.DeleteCollection(ctx, "py") }},
	}
	want := g0
	for _, st := range steps {
		if st.write == nil {
			_, _ = s.Search(ctx, corpus.SearchRequest{Query: "zip", Collection: "py", K: 5})
		} else {
			if err := st.write(); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			want++
		}
		if got := s.Generation(); got != want {
			t.Errorf("after %s: generation %d, want %d", st.name, got, want)
		}
	}
}

// semEmbedder is a semantic model that maps every text mentioning
// "migrat" or "upgrade" to one direction and anything else to another,
// and counts its calls.
type semEmbedder struct{ calls int }

func (s *semEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	s.calls++
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{0, 1}
		if l := strings.ToLower(t); strings.Contains(l, "migrat") || strings.Contains(l, "upgrade") {
			out[i] = []float32{1, 0}
		}
	}
	return out, nil
}
func (s *semEmbedder) Dimension() int { return 2 }
func (s *semEmbedder) Name() string   { return "sem-2" }

// The service embeds a query with its semantic model only when the
// collection has vectors of that model, and the search then finds the
// chunk that means what the query says although it shares no word with it.
// twoPages is a service over an in-memory index with the semantic embedder
// semEmbedder and two pages in collection "c": a migration guide, which the
// model ranks first for "how do I upgrade", and a newsletter page, which
// shares the question's words.
func twoPages(t *testing.T) (*corpus.Service, *semEmbedder) {
	t.Helper()
	idx, err := sqlite.Open(sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	sem := &semEmbedder{}
	s, err := corpus.NewService(corpus.ServiceConfig{Index: idx, Semantic: sem})
	if err != nil {
		t.Fatal(err)
	}
	for url, text := range map[string]string{
		"https://x/migration": "Migrating from version one: run the converter once.",
		"https://x/news":      "How do I get the newsletter? Subscribe on the site.",
	} {
		if _, err := s.IndexDocument(context.Background(), doc("c", url, "page", text)); err != nil {
			t.Fatal(err)
		}
	}
	return s, sem
}

func TestServiceSemanticSearch(t *testing.T) {
	ctx := context.Background()
	s, sem := twoPages(t)
	req := corpus.SearchRequest{Query: "how do I upgrade", Collection: "c", K: 1}
	hits, err := s.Search(ctx, req)
	if err != nil || len(hits) != 1 {
		t.Fatal(hits, err)
	}
	if sem.calls != 0 {
		t.Fatalf("the semantic model embedded a query for a collection without its vectors (%d calls)", sem.calls)
	}
	if hits[0].DocURL != "https://x/news" {
		t.Fatalf("lexical search: top %s, want the page sharing words with the query", hits[0].DocURL)
	}
	todo, err := s.SemanticMissing(ctx, sem.Name(), 0, 10)
	if err != nil || len(todo) != 2 {
		t.Fatalf("missing %v %v", todo, err)
	}
	var vs []corpus.SemanticVector
	for _, td := range todo {
		v, _ := sem.Embed(ctx, []string{td.Text})
		vs = append(vs, corpus.SemanticVector{Key: td.Key, Vector: v[0]})
	}
	gen := s.Generation()
	if err := s.PutSemantic(ctx, sem.Name(), vs); err != nil {
		t.Fatal(err)
	}
	if s.Generation() == gen {
		t.Fatal("storing semantic vectors did not count as a write")
	}
	hits, err = s.Search(ctx, req)
	if err != nil || len(hits) != 1 {
		t.Fatal(hits, err)
	}
	if hits[0].DocURL != "https://x/migration" || hits[0].Semantic < 0.99 {
		t.Fatalf("semantic search: top %s (semantic %.2f), want the migration page", hits[0].DocURL, hits[0].Semantic)
	}
}

// TestSemanticWaitsForEveryChunk: while the semantic pass has embedded only
// part of a collection, search stays lexical (the chunks with a vector
// would otherwise outrank the rest for having one); once every live chunk
// has its vector, the semantic ranking joins.
func TestSemanticWaitsForEveryChunk(t *testing.T) {
	ctx := context.Background()
	s, sem := twoPages(t)
	todo, err := s.SemanticMissing(ctx, sem.Name(), 0, 10)
	if err != nil || len(todo) != 2 {
		t.Fatalf("missing %v %v", todo, err)
	}
	put := func(td corpus.SemanticTodo) {
		v, _ := sem.Embed(ctx, []string{td.Text})
		if err := s.PutSemantic(ctx, sem.Name(), []corpus.SemanticVector{{Key: td.Key, Vector: v[0]}}); err != nil {
			t.Fatal(err)
		}
	}
	req := corpus.SearchRequest{Query: "how do I upgrade", Collection: "c", K: 1}
	for _, td := range todo {
		if strings.Contains(td.Text, "Migrating") {
			put(td) // the page the model prefers gets its vector first
		}
	}
	calls := sem.calls
	hits, err := s.Search(ctx, req)
	if err != nil || len(hits) != 1 {
		t.Fatal(hits, err)
	}
	if sem.calls != calls || hits[0].DocURL != "https://x/news" || hits[0].Semantic != 0 {
		t.Fatalf("one chunk of two embedded: top %s (semantic %.2f, %d query embeddings), want the lexical ranking alone", hits[0].DocURL, hits[0].Semantic, sem.calls-calls)
	}
	for _, td := range todo {
		if !strings.Contains(td.Text, "Migrating") {
			put(td)
		}
	}
	hits, err = s.Search(ctx, req)
	if err != nil || len(hits) != 1 {
		t.Fatal(hits, err)
	}
	if hits[0].DocURL != "https://x/migration" || hits[0].Semantic < 0.99 {
		t.Fatalf("every chunk embedded: top %s (semantic %.2f), want the migration page", hits[0].DocURL, hits[0].Semantic)
	}
}

// textsEmbedder is semEmbedder that also records the texts it embeds.
type textsEmbedder struct {
	semEmbedder
	texts []string
}

func (s *textsEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	s.texts = append(s.texts, texts...)
	return s.semEmbedder.Embed(ctx, texts)
}

// The semantic model embeds a query without its "Which Python module"
// frame (SemanticText); the search's lexical side still gets the whole
// query, and a how-to question is embedded whole.
func TestSemanticQueryLeavesOutTheAskedKind(t *testing.T) {
	ctx := context.Background()
	idx, err := sqlite.Open(sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	sem := &textsEmbedder{}
	s, err := corpus.NewService(corpus.ServiceConfig{Index: idx, Semantic: sem})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.IndexDocument(ctx, doc("c", "https://x/zipfile", "zipfile", "Read and write ZIP-format archive files.")); err != nil {
		t.Fatal(err)
	}
	todo, err := s.SemanticMissing(ctx, sem.Name(), 0, 10)
	if err != nil || len(todo) != 1 {
		t.Fatalf("missing %v %v", todo, err)
	}
	if err := s.PutSemantic(ctx, sem.Name(), []corpus.SemanticVector{{Key: todo[0].Key, Vector: []float32{0, 1}}}); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{
		"Which Python module should I use for this: read and write ZIP-format archive files?": "should I use for this: read and write ZIP-format archive files?",
		"what function reads a zip archive":                                                   "reads a zip archive",
		"How do I read a zip archive?":                                                        "How do I read a zip archive?",
		"which functions read zip archives?":                                                  "which functions read zip archives?",
	} {
		sem.texts = nil
		hits, err := s.Search(ctx, corpus.SearchRequest{Query: q, Collection: "c", K: 1})
		if err != nil || len(hits) != 1 {
			t.Fatalf("%q: %v %v", q, hits, err)
		}
		if len(sem.texts) != 1 || sem.texts[0] != want {
			t.Errorf("%q: the semantic model embedded %q, want %q", q, sem.texts, want)
		}
	}
}

func TestSemanticText(t *testing.T) {
	for q, want := range map[string]string{
		"Which Java class represents a URL?": "represents a URL?",
		"  WHAT METHOD sorts a list":         "sorts a list",
		"Which module ":                      "Which module ",
		"which is faster":                    "which is faster",
		"What classes are in os?":            "What classes are in os?",
		"the module which function":          "the module which function",
	} {
		if got := corpus.SemanticText(q); got != want {
			t.Errorf("SemanticText(%q) = %q, want %q", q, got, want)
		}
	}
}
