package sqlite

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// semDoc writes a document of one chunk per text (lexical vector {1, 0}).
func semDoc(t *testing.T, x *Index, url string, texts ...string) {
	t.Helper()
	var cs []kgagent.Chunk
	var vs [][]float32
	for i, s := range texts {
		cs = append(cs, kgagent.Chunk{ID: corpus.ChunkID("c", url, i), Collection: "c", DocURL: url, URL: url, Title: "page", Ordinal: i, Text: s, Hash: "h-" + s})
		vs = append(vs, []float32{1, 0})
	}
	if err := x.ReplaceDocument(context.Background(), "c", url, cs, vs); err != nil {
		t.Fatal(err)
	}
}

// semAll gives every chunk lacking one a semantic vector: vec(text).
func semAll(t *testing.T, x *Index, vec func(string) []float32) int {
	t.Helper()
	ctx := context.Background()
	todo, err := x.SemanticMissing(ctx, "m", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var vs []corpus.SemanticVector
	for _, td := range todo {
		vs = append(vs, corpus.SemanticVector{Key: td.Key, Vector: vec(td.Text)})
	}
	if err := x.PutSemantic(ctx, "m", vs); err != nil {
		t.Fatal(err)
	}
	return len(todo)
}

func semRows(t *testing.T, x *Index) int {
	t.Helper()
	var n int
	if err := x.db.QueryRow(`SELECT COUNT(*) FROM semvecs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A chunk's semantic vector goes with the chunk; a rewrite of its document
// that keeps the chunk's text keeps its vector (only changed chunks need
// embedding again), in SQLite and in the loaded search copy.
func TestSemanticVectorsFollowChunks(t *testing.T) {
	ctx := context.Background()
	x, err := Open(Config{Path: filepath.Join(t.TempDir(), "c.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	semDoc(t, x, "https://x/a", "alpha one", "alpha two")
	semDoc(t, x, "https://x/b", "beta")
	if err := x.Warm(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if n := semAll(t, x, func(string) []float32 { return []float32{0, 1, 0} }); n != 3 {
		t.Fatalf("missing before the pass: %d, want 3", n)
	}
	if n, _ := x.SemanticChunks(ctx, "c", "m"); n != 3 {
		t.Fatalf("SemanticChunks = %d, want 3", n)
	}
	// Rewrite a: one chunk kept, one changed, one added.
	semDoc(t, x, "https://x/a", "alpha one", "alpha changed", "alpha three")
	todo, err := x.SemanticMissing(ctx, "m", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(todo) != 2 {
		t.Fatalf("after the rewrite %d chunks lack vectors, want 2 (the changed and the new one): %+v", len(todo), todo)
	}
	if done, total, _ := x.SemanticProgress(ctx, "m"); done != 2 || total != 4 {
		t.Fatalf("progress %d/%d, want 2/4", done, total)
	}
	if n, _ := x.SemanticChunks(ctx, "c", "m"); n != 2 {
		t.Fatalf("search copy: %d chunks with vectors, want 2", n)
	}
	// Delete b: its vector goes.
	if err := x.DeleteDocument(ctx, "c", "https://x/b"); err != nil {
		t.Fatal(err)
	}
	if n := semRows(t, x); n != 1 {
		t.Fatalf("semvecs rows after deleting b: %d, want 1 (a's kept chunk)", n)
	}
	if n, _ := x.SemanticChunks(ctx, "c", "m"); n != 1 {
		t.Fatalf("search copy after delete: %d, want 1", n)
	}
	// A vector for a chunk removed meanwhile is dropped, not an error.
	if err := x.PutSemantic(ctx, "m", []corpus.SemanticVector{{Key: 999999, Vector: []float32{1, 0, 0}}}); err != nil {
		t.Fatal(err)
	}
	if n := semRows(t, x); n != 1 {
		t.Fatalf("a vector of a missing chunk was stored: %d rows", n)
	}
	if err := x.DeleteCollection(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if n := semRows(t, x); n != 0 {
		t.Fatalf("semvecs rows after deleting the collection: %d", n)
	}
}

// Hybrid and dense search rank by the semantic vectors when the query has
// one: a chunk that shares no word with the query but is its nearest
// neighbour in the model's space comes first; without the semantic query
// vector, the keyword match does. The vectors survive a reopen (they are
// read from SQLite beside the snapshot).
func TestSemanticSearch(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	x, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	semDoc(t, x, "https://x/migration", "moving to version three: what changed in the configuration")
	semDoc(t, x, "https://x/news", "we upgrade our office coffee machine")
	semDoc(t, x, "https://x/other", "an unrelated page about logging")
	vec := map[string][]float32{
		"migration": {1, 0, 0},
		"coffee":    {0, 1, 0},
		"logging":   {0, 0, 1},
	}
	semAll(t, x, func(text string) []float32 {
		for k, v := range vec {
			if strings.Contains(text, k) {
				return v
			}
		}
		return []float32{0.5, 0.5, 0.5}
	})
	q := corpus.Query{Collection: "c", Vector: []float32{1, 0}, Text: "how do I upgrade", K: 3, Mode: corpus.ModeHybrid}
	top := func(x *Index, q corpus.Query) string {
		t.Helper()
		hits, err := x.Search(ctx, q)
		if err != nil || len(hits) == 0 {
			t.Fatalf("search: %v %v", hits, err)
		}
		return hits[0].DocURL
	}
	if got := top(x, q); got != "https://x/news" {
		t.Fatalf("lexical hybrid: top %s, want the keyword match news", got)
	}
	q.Semantic, q.SemanticModel = []float32{0.95, 0.1, 0.05}, "m"
	if got := top(x, q); got != "https://x/migration" {
		t.Fatalf("hybrid with the semantic vector: top %s, want migration", got)
	}
	q.Mode = corpus.ModeDense
	if got := top(x, q); got != "https://x/migration" {
		t.Fatalf("dense with the semantic vector: top %s, want migration", got)
	}
	if err := x.Snapshot(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	x.Close()
	y, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	q.Mode = corpus.ModeHybrid
	if got := top(y, q); got != "https://x/migration" {
		t.Fatalf("after reopening: top %s, want migration", got)
	}
	if y.snapHits.Load() != 1 {
		t.Fatalf("the search copy was not read from its snapshot (%d)", y.snapHits.Load())
	}
	q.SemanticModel = "other-model"
	if got := top(y, q); got != "https://x/news" {
		t.Fatalf("another model's query vector must be ignored: top %s", got)
	}
}

// A semantic set holds memory for the blocks of slots that have a vector,
// not for every slot from its first vector on (the background pass embeds
// a 10,000-page corpus over hours; its first batch used to allocate the
// whole set, 77 MB on the OpenJDK docs), and ranks as a scan of every
// slot would.
func TestSemanticSetGrowsWithVectors(t *testing.T) {
	const dim = 16
	n := 3*semBlock + 5
	vs := randVecs(n+semBlock, dim)
	m := newMemColl(2, [3]float32{1, 1, 1})
	for i := range n {
		m.add(int64(i+1), "https://a/", kgagent.Chunk{Text: "x"}, []float32{1, 0})
	}
	held := func(s *semSet) int {
		b := 0
		for _, bl := range s.blocks {
			b += cap(bl)
		}
		return b
	}
	check := func(stage string, have []int) {
		t.Helper()
		s := m.sem["m"]
		if s == nil || s.n != len(have) {
			t.Fatalf("%s: set %v, want %d vectors", stage, s, len(have))
		}
		blocks := map[int]bool{}
		for _, i := range have {
			blocks[i/semBlock] = true
		}
		if got, want := held(s), len(blocks)*semBlock*dim; got != want {
			t.Errorf("%s: set holds %d bytes of vectors for %d slots in %d blocks, want %d", stage, got, len(have), len(blocks), want)
		}
		q := vs[n*dim : (n+1)*dim]
		qv, qs := quantize(nil, q)
		var want []scored
		for _, i := range have {
			r, sc := quantize(nil, vs[i*dim:(i+1)*dim])
			want = append(want, scored{int64(i + 1), float64(DotInt8(qv, r)) * float64(qs*sc)})
		}
		want = best(want, 10)
		if got := m.semTop(s, qv, qs, 10, ""); !slices.Equal(got, want) {
			t.Errorf("%s: semantic top 10 %v, want %v", stage, got, want)
		}
	}
	var have []int
	for i := range 10 {
		m.setSem("m", int32(i), vs[i*dim:(i+1)*dim])
		have = append(have, i)
	}
	check("first batch", have)
	m.setSem("m", int32(n-1), vs[(n-1)*dim:n*dim])
	have = append(have, n-1)
	check("a slot in the last block", have)
	for i := 10; i < n-1; i++ {
		m.setSem("m", int32(i), vs[i*dim:(i+1)*dim])
		have = append(have, i)
	}
	check("every slot", have)
	// slots added later get blocks as their vectors arrive
	for i := n; i < n+semBlock; i++ {
		m.add(int64(i+1), "https://a/", kgagent.Chunk{Text: "x"}, []float32{1, 0})
	}
	m.setSem("m", int32(n+semBlock-1), vs[(n+semBlock-1)*dim:(n+semBlock)*dim])
	have = append(have, n+semBlock-1)
	check("grown", have)
}
