package sqlite

import (
	"context"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// Documents pages through a collection's documents by URL with their first
// chunk's title; DocumentChunks returns a page's chunks in order, and nothing
// for another collection or a deleted page.
func TestDocumentReader(t *testing.T) {
	ctx := context.Background()
	x, err := Open(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	put := func(coll, url, title string, texts ...string) {
		t.Helper()
		var cs []kgagent.Chunk
		var vs [][]float32
		for i, s := range texts {
			cs = append(cs, kgagent.Chunk{ID: corpus.ChunkID(coll, url, i), Collection: coll, DocURL: url, URL: url + "#s" + string(rune('a'+i)),
				Title: title, HeadingPath: []string{title, "H" + string(rune('a'+i))}, Anchor: "s" + string(rune('a'+i)), Ordinal: i, Text: s})
			vs = append(vs, []float32{1, 0})
		}
		if err := x.ReplaceDocument(ctx, coll, url, cs, vs); err != nil {
			t.Fatal(err)
		}
	}
	// Inserted out of order, so ordering is the query's, not the rowid's.
	put("c", "https://x/b", "Page B", "b zero", "b one", "b two")
	put("c", "https://x/a", "Page A", "a zero")
	put("c", "https://x/c", "Page C", "c zero", "c one")
	put("other", "https://x/z", "Other", "z")

	ds, err := x.Documents(ctx, "c", "", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || ds[0] != (corpus.DocumentInfo{URL: "https://x/a", Title: "Page A", Chunks: 1}) || ds[1] != (corpus.DocumentInfo{URL: "https://x/b", Title: "Page B", Chunks: 3}) {
		t.Fatalf("first page: %+v", ds)
	}
	ds, err = x.Documents(ctx, "c", ds[1].URL, 2)
	if err != nil || len(ds) != 1 || ds[0].URL != "https://x/c" {
		t.Fatalf("second page: %+v %v", ds, err)
	}
	cs, err := x.DocumentChunks(ctx, "c", "https://x/b")
	if err != nil || len(cs) != 3 {
		t.Fatalf("chunks: %+v %v", cs, err)
	}
	for i, c := range cs {
		if c.Ordinal != i || c.Anchor != "s"+string(rune('a'+i)) || len(c.HeadingPath) != 2 || c.Collection != "c" {
			t.Fatalf("chunk %d: %+v", i, c)
		}
	}
	if cs[1].Text != "b one" {
		t.Fatalf("chunk text %q", cs[1].Text)
	}
	if cs, _ := x.DocumentChunks(ctx, "other", "https://x/b"); len(cs) != 0 {
		t.Fatalf("read across collections: %+v", cs)
	}
	if err := x.DeleteDocument(ctx, "c", "https://x/b"); err != nil {
		t.Fatal(err)
	}
	if cs, _ := x.DocumentChunks(ctx, "c", "https://x/b"); len(cs) != 0 {
		t.Fatalf("deleted page still read: %+v", cs)
	}

	svc, err := corpus.NewService(corpus.ServiceConfig{Index: x})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.DocumentChunks(ctx, "c", "https://x/b"); kgagent.ErrorCode(err) != kgagent.ENOTFOUND {
		t.Fatalf("service on a missing page: %v", err)
	}
	if _, err := svc.Documents(ctx, "c", "", 0); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Fatalf("limit 0: %v", err)
	}
}
