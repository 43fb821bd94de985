package corpus_test

import (
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// TestReplaceChunks: chunks made elsewhere (the graph's entity index) are
// embedded from their Text as it is — the vector a search for the text
// finds, not the title-and-headings index text of IndexDocument — replace
// the document's earlier chunks, and none deletes them; a write without a
// collection or URL is EINVALID and counts in Generation like any write.
func TestReplaceChunks(t *testing.T) {
	ctx := t.Context()
	s := newService(t)
	c := func(id, title, text string) kgagent.Chunk {
		return kgagent.Chunk{ID: id, Collection: "c__entities", DocURL: "https://d/p", URL: "https://d/p#x", Title: title, HeadingPath: []string{id, "function"}, Text: text}
	}
	g := s.Generation()
	if err := s.ReplaceChunks(ctx, "c__entities", "https://d/p", []kgagent.Chunk{
		c("e1", "json.dumps", "json.dumps\nSerialize obj to a JSON formatted str"),
		c("e2", "json.loads", "json.loads\nDeserialize a str to a Python object"),
	}); err != nil {
		t.Fatal(err)
	}
	if s.Generation() == g {
		t.Error("ReplaceChunks did not count as a write")
	}
	chunks, err := s.DocumentChunks(ctx, "c__entities", "https://d/p")
	if err != nil || len(chunks) != 2 {
		t.Fatalf("stored %d chunks, %v; want 2", len(chunks), err)
	}
	// The stored vector is the embedding of Text alone: a dense search for
	// that very text scores 1.
	hits, err := s.Search(ctx, corpus.SearchRequest{Query: "json.dumps\nSerialize obj to a JSON formatted str", Collection: "c__entities", K: 1, Mode: corpus.ModeDense})
	if err != nil || len(hits) != 1 || hits[0].Chunk.ID != "e1" || hits[0].Score < 0.999 {
		t.Fatalf("dense search for e1's text: %+v %v; want e1 with score 1", hits, err)
	}
	if err := s.ReplaceChunks(ctx, "c__entities", "https://d/p", []kgagent.Chunk{c("e2", "json.loads", "json.loads\nDeserialize")}); err != nil {
		t.Fatal(err)
	}
	if chunks, _ := s.DocumentChunks(ctx, "c__entities", "https://d/p"); len(chunks) != 1 || chunks[0].ID != "e2" {
		t.Fatalf("after a replace: %+v, want only e2", chunks)
	}
	if err := s.ReplaceChunks(ctx, "c__entities", "https://d/p", nil); err != nil {
		t.Fatal(err)
	}
	if chunks, _ := s.DocumentChunks(ctx, "c__entities", "https://d/p"); len(chunks) != 0 {
		t.Fatalf("no chunks left %d behind", len(chunks))
	}
	for _, bad := range [][2]string{{"", "https://d/p"}, {"c__entities", ""}} {
		if err := s.ReplaceChunks(ctx, bad[0], bad[1], nil); kgagent.ErrorCode(err) != kgagent.EINVALID {
			t.Errorf("ReplaceChunks(%q, %q): %v, want EINVALID", bad[0], bad[1], err)
		}
	}
}
