package sqlite

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/internal/text"
)

// termWords are what the random chunks of the terms tests are made of:
// repeated words (so sums of weights add up), stop words, contractions,
// non-ASCII text and separators.
var termWords = strings.Fields(`encoder Encoders encoding json JSON parser parsing the is not won't it's
	isn’t mustn't Straße naïve 日本語 os.path max_body_size 3.11 x86_64 » › - ( ) ¶ , .`)

func randTermText(r *rand.Rand, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = termWords[r.IntN(len(termWords))]
	}
	return strings.Join(ws, " ")
}

// refTerms is what the search copy took from a chunk when its terms were
// maps filled as text.FieldTerms gives them (before the embedder's terms):
// the weighted frequencies and lengths over all fields and over title and
// headings.
func refTerms(c *kgagent.Chunk, w [3]float32) (tf, htf map[string]float32, length, hlength float32) {
	tf, htf = map[string]float32{}, map[string]float32{}
	text.FieldTerms(corpus.PageTitle(*c), corpus.HeadingText(*c), c.Text, func(t string, f int) {
		tf[t] += w[f]
		length += w[f]
		if f < 2 {
			htf[t]++
			hlength++
		}
	})
	return tf, htf, length, hlength
}

// asMap is terms with their frequencies; it fails on a term given twice.
func asMap(t *testing.T, terms []string, tf []float32) map[string]float32 {
	t.Helper()
	if len(terms) != len(tf) {
		t.Fatalf("%d terms, %d frequencies", len(terms), len(tf))
	}
	m := make(map[string]float32, len(terms))
	for i, term := range terms {
		if _, ok := m[term]; ok {
			t.Fatalf("term %q twice", term)
		}
		m[term] = tf[i]
	}
	return m
}

// TestChunkTermsFromMatches: a chunk's terms taken as it was embedded
// (corpus.ChunkTerms), and those chunkTermsOf cuts, give the search copy
// what adding up text.FieldTerms' terms gives, the sums to the bit, also
// under weights whose sums depend on the order they are added in.
func TestChunkTermsFromMatches(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, w := range [][3]float32{{6, 2, 1}, {0.3, 1.7, 0.1}, {1e-3, 7.77, 0.9}} {
		for i := range 500 {
			c := kgagent.Chunk{Title: randTermText(r, r.IntN(4)), HeadingPath: []string{randTermText(r, r.IntN(3)), randTermText(r, r.IntN(3))},
				Text: randTermText(r, r.IntN(200))}
			ct := corpus.TermsOf(c)
			tf, htf, length, hlength := refTerms(&c, w)
			for _, got := range []chunkTerms{chunkTermsFrom(&ct, w), chunkTermsOf(&c, w)} {
				gtf, ghtf := asMap(t, got.terms, got.tf), asMap(t, got.hterms, got.htf)
				if !maps.Equal(gtf, tf) || !maps.Equal(ghtf, htf) ||
					math.Float32bits(got.length) != math.Float32bits(length) || math.Float32bits(got.hlength) != math.Float32bits(hlength) {
					t.Fatalf("weights %v, chunk %d %+v:\n got %v %v %v %v\nwant %v %v %v %v", w, i, c,
						gtf, ghtf, got.length, got.hlength, tf, htf, length, hlength)
				}
			}
		}
	}
}

// TestKeepTermsFromService: documents and entity entries indexed through
// corpus.Service (IndexDocument, ReplaceChunks), which hands the index the
// terms its lexical embedder took, leave a kept search copy that is the
// copy SQLite gives (built by tokenising the rows).
func TestKeepTermsFromService(t *testing.T) {
	ctx := t.Context()
	f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
	x := f.openKept(Config{})
	defer x.Close()
	svc, err := corpus.NewService(corpus.ServiceConfig{Index: x, Embedder: f.emb})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for d := range 12 {
		title := randTermText(r, 1+r.IntN(3))
		doc := kgagent.Document{Collection: "c", URL: fmt.Sprintf("https://x/p%d", d), Title: title + " — Docs"}
		for s := range 1 + r.IntN(4) {
			h := randTermText(r, 1+r.IntN(3))
			doc.Sections = append(doc.Sections, kgagent.Section{Heading: h, Level: 1 + min(s, 1), HeadingPath: []string{title, h},
				Blocks: []kgagent.Block{{Kind: kgagent.BlockParagraph, Text: randTermText(r, 5+r.IntN(300))}}})
		}
		if _, err := svc.IndexDocument(ctx, doc); err != nil {
			t.Fatal(err)
		}
		// and an entity index's entries (ReplaceChunks: the text as it is)
		url := fmt.Sprintf("https://x/e%d", d)
		var cs []kgagent.Chunk
		for i := range 1 + r.IntN(4) {
			name := randTermText(r, 1+r.IntN(2))
			cs = append(cs, kgagent.Chunk{ID: corpus.ChunkID("c", url, i), Collection: "c", DocURL: url, URL: url, Ordinal: i,
				Title: name, HeadingPath: []string{"e:" + name, randTermText(r, 1)}, Text: name + "\n" + randTermText(r, r.IntN(40))})
		}
		if err := svc.ReplaceChunks(ctx, "c", url, cs); err != nil {
			t.Fatal(err)
		}
	}
	x.cacheMu.RLock()
	m := x.cache["c"]
	x.cacheMu.RUnlock()
	if m == nil || len(m.rids) == 0 {
		t.Fatal("no kept copy")
	}
	f.sameAsSQLite(m, "c")
}
