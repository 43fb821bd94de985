package sqlite_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag/graphtest"
	"github.com/kgagent/kgagent/graphrag/sqlite"
)

// TestWordBlocksEdges loads, in bulk and then page by page, two
// collections sharing words that are prefixes of each other, unicode
// words and words held by many entities, into blocks so small that
// nearly every word starts one: every word, every byte prefix of a word
// (4 bytes and longer, some cutting a character) and terms before, between
// and after all words get the same Entities by SQL as by the name index,
// before and after deletes that empty words and blocks.
func TestWordBlocksEdges(t *testing.T) {
	ctx := t.Context()
	for _, cap := range []int{1, 24, 90} {
		t.Run(fmt.Sprint(cap), func(t *testing.T) {
			sqlite.SmallWordBlocks(t, cap)
			s, err := sqlite.Open(filepath.Join(t.TempDir(), "graph.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if on, err := s.BulkLoad(ctx); err != nil || !on {
				t.Fatalf("BulkLoad: %v %v", on, err)
			}
			words := []string{"abcd", "abcde", "abcdef", "abcdefg", "abce", "straße", "straßen", "日本", "日本語", "日本語版",
				"zzzz", "zzzzz", "éèêë", "éèêëa", "a", "ab", "x.y.z", "xylo", "xylophone"}
			rng := rand.New(rand.NewPCG(7, 11))
			name := func() string {
				n := 1 + rng.IntN(3)
				var ws []string
				for range n {
					ws = append(ws, words[rng.IntN(len(words))])
				}
				return strings.Join(ws, " ")
			}
			write := func(coll, doc string, n int) {
				var ts []kgagent.Triple
				for range n {
					ts = append(ts, graphtest.T(coll, doc, name(), "mentions", name(), "c1"))
				}
				if err := s.ReplaceDocument(ctx, coll, doc, ts); err != nil {
					t.Fatal(err)
				}
			}
			for d := range 6 {
				for _, coll := range []string{"a", "b"} {
					write(coll, fmt.Sprintf("https://x.test/%d.html", d), 25)
				}
			}
			path := s.Path()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = sqlite.Open(path); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			terms := []string{"", "0000", "aaaa", "abcc", "abcdz", "zzzzzz", "\U0001F600abc", "日本語版x", "ffff"}
			for _, w := range words {
				terms = append(terms, w, w+"z")
				for n := 4; n < len(w); n++ {
					terms = append(terms, w[:n])
				}
			}
			check := func(when string) {
				t.Helper()
				if _, err := sqlite.CheckWordBlocks(ctx, s); err != nil {
					t.Fatalf("%s: %v", when, err)
				}
				for _, coll := range []string{"a", "b"} {
					agree(t, s, coll, terms)
				}
			}
			check("after the bulk load")
			for d := range 6 {
				if d%2 == 0 {
					if err := s.DeleteDocument(ctx, "a", fmt.Sprintf("https://x.test/%d.html", d)); err != nil {
						t.Fatal(err)
					}
				} else {
					write("b", fmt.Sprintf("https://x.test/%d.html", d), 3)
				}
			}
			check("after deletes and rewrites")
			for d := range 6 {
				if err := s.DeleteDocument(ctx, "a", fmt.Sprintf("https://x.test/%d.html", d)); err != nil {
					t.Fatal(err)
				}
			}
			check("after emptying collection a")
		})
	}
}
