package sqlite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/internal/text/texttest"
)

// TestKeywordSearchReadsQuestionsAsText: keyword search looks for the terms
// package text gives every reader of a question (texttest), so a question
// finds what its words alone find, and the chunk holding only a fragment of
// a contraction ("won" of "won't") or filler ("show", "please") is never a
// hit.
func TestKeywordSearchReadsQuestionsAsText(t *testing.T) {
	ctx := context.Background()
	x, err := Open(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	texts := []string{"The team won the award.", "Show me, please.", "Not like that, also."}
	for _, q := range texttest.Questions {
		texts = append(texts, strings.Join(q.Words, " "))
	}
	for i, s := range texts {
		url := fmt.Sprintf("https://x/%d", i)
		c := kgagent.Chunk{ID: corpus.ChunkID("c", url, 0), Collection: "c", DocURL: url, URL: url, Title: "t", Text: s}
		if err := x.ReplaceDocument(ctx, "c", url, []kgagent.Chunk{c}, [][]float32{{1, 0}}); err != nil {
			t.Fatal(err)
		}
	}
	urls := func(q string) []string {
		hits, err := x.Search(ctx, corpus.Query{Collection: "c", Text: q, K: 20, Mode: corpus.ModeKeyword})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hits {
			out = append(out, h.DocURL)
		}
		return out
	}
	for i, q := range texttest.Questions {
		got, want := urls(q.Q), urls(strings.Join(q.Words, " "))
		if !slices.Equal(got, want) || len(got) == 0 || got[0] != fmt.Sprintf("https://x/%d", i+3) {
			t.Errorf("%q finds %v; its words find %v, first https://x/%d", q.Q, got, want, i+3)
		}
		for _, u := range got {
			if u == "https://x/0" || u == "https://x/1" || u == "https://x/2" {
				t.Errorf("%q finds %s, which holds only a contraction fragment or filler", q.Q, u)
			}
		}
	}
}
