package qdrant_test

import (
	"context"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus/corpustest"
	"github.com/kgagent/kgagent/corpus/qdrant"
	"github.com/kgagent/kgagent/corpus/qdrant/qdranttest"
)

// DocumentChunks pages through a document's points with Scroll offsets and
// returns them in ordinal order.
// TestDocumentChunksPagingRealServer does the same on a real Qdrant.
func TestDocumentChunksPaging(t *testing.T) {
	srv := startStandIn(t, qdranttest.Options{})
	checkPaging(t, open(t, qdrant.Config{Addr: srv.Addr()}), srv.Calls)
}

// checkPaging reads a 7-chunk document back in pages of 2; calls, when not
// nil, counts the server's calls of a method (stand-in only).
func checkPaging(t *testing.T, ix *qdrant.Index, calls func(method string) int) {
	ctx := context.Background()
	var chunks []kgagent.Chunk
	var vecs [][]float32
	for i := 0; i < 7; i++ {
		text := "section text number " + string(rune('a'+i))
		chunks = append(chunks, kgagent.Chunk{ID: "c" + string(rune('a'+i)), Collection: "docs", DocURL: "https://x/p", URL: "https://x/p#s" + string(rune('a'+i)),
			Title: "P", Anchor: "s" + string(rune('a'+i)), Ordinal: i, Text: text, Hash: "h"})
		vecs = append(vecs, corpustest.Embedder.Vector(text))
	}
	if err := ix.ReplaceDocument(ctx, "docs", "https://x/p", chunks, vecs); err != nil {
		t.Fatal(err)
	}
	defer qdrant.SetScrollPage(2)()
	before := 0
	if calls != nil {
		before = calls("Scroll")
	}
	got, err := ix.DocumentChunks(ctx, "docs", "https://x/p")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 7 {
		t.Fatalf("%d chunks, want 7", len(got))
	}
	for i, c := range got {
		if c.Ordinal != i || c.Text != chunks[i].Text {
			t.Fatalf("chunk %d: %+v", i, c)
		}
	}
	if calls == nil {
		return
	}
	if n := calls("Scroll") - before; n != 4 {
		t.Fatalf("%d Scroll calls for 7 points in pages of 2, want 4", n)
	}
}
