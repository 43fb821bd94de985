package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// TestHasCollectionFromCopy: HasCollection answers from the search copy
// when one is held (no query: no allocation; before, a query on every
// search, 3% of an answer's CPU), from SQLite otherwise, and a deleted
// collection is gone either way, also in a file opened again.
func TestHasCollectionFromCopy(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "corpus.db")
	x, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { x.Close() }()
	has := func(name string, want bool) {
		t.Helper()
		if got, err := x.HasCollection(ctx, name); err != nil || got != want {
			t.Errorf("HasCollection(%q) = %v, %v; want %v", name, got, err, want)
		}
	}
	url := "https://x/a"
	c := kgagent.Chunk{ID: corpus.ChunkID("c", url, 0), Collection: "c", DocURL: url, URL: url, Title: "t", Text: "some words"}
	if err := x.ReplaceDocument(ctx, "c", url, []kgagent.Chunk{c}, [][]float32{{1, 0}}); err != nil {
		t.Fatal(err)
	}
	has("c", true) // no copy yet: SQLite
	has("d", false)
	if _, err := x.Search(ctx, corpus.Query{Collection: "c", Text: "words", K: 5, Mode: corpus.ModeKeyword}); err != nil {
		t.Fatal(err)
	}
	if !x.Holds("c") {
		t.Fatal("no search copy after a search")
	}
	has("c", true)
	if n := testing.AllocsPerRun(50, func() { x.HasCollection(ctx, "c") }); n > 0 {
		t.Errorf("HasCollection of a held collection: %.0f allocations, want none (no query)", n)
	}
	if err := x.DeleteCollection(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	has("c", false)
	x.Close()
	if x, err = Open(Config{Path: path}); err != nil {
		t.Fatal(err)
	}
	has("c", false)
}
