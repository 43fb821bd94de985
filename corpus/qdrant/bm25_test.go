package qdrant_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/kgagent/kgagent/corpus/qdrant"
	"github.com/kgagent/kgagent/internal/text"
)

// TestAnalysisIsTheEmbeddedIndexs: the sparse vectors analyse documents and
// queries exactly as the embedded index does (text.Terms, text.QuestionTerms),
// so both backends match the same terms.
func TestAnalysisIsTheEmbeddedIndexs(t *testing.T) {
	dims := func(terms []string) []uint32 {
		var out []uint32
		for _, t := range terms {
			out = append(out, qdrant.TermIndex(t))
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	for _, in := range []string{"", "The cat and the hat", "os.path.join(a, b)", "Queries QUERY queries",
		"difference between a deque and a list", "__init__ x86_64 IPv6", "Größe übermäßig 東京", strings.Repeat("a", 65) + " ok"} {
		if got, _ := (qdrant.BM25{}).Document(in); !slices.Equal(got, dims(text.Terms(in))) {
			t.Errorf("Document(%q) has dimensions %v, want those of text.Terms %q", in, got, text.Terms(in))
		}
		if got, _ := (qdrant.BM25{}).Query(in); !slices.Equal(got, dims(text.QuestionTerms(in))) {
			t.Errorf("Query(%q) has dimensions %v, want those of text.QuestionTerms %q", in, got, text.QuestionTerms(in))
		}
	}
}

func TestBM25Weights(t *testing.T) {
	k1, b := qdrant.DefaultBM25K1, qdrant.DefaultBM25B
	weight := func(tf, dl, avg float64) float32 {
		return float32(tf * (k1 + 1) / (tf + k1*(1-b+b*dl/avg)))
	}
	term := func(s string) string { return text.Terms(s)[0] }
	tests := []struct {
		name                 string
		p                    qdrant.BM25
		title, heading, body string
		want                 map[string]float32
	}{
		{"one term at the average length", qdrant.BM25{AvgLen: 1}, "", "", "zebra", map[string]float32{"zebra": 1}},
		{"repeats saturate", qdrant.BM25{AvgLen: 4}, "", "", "zebra zebra zebra okapi", map[string]float32{"zebra": weight(3, 4, 4), "okapi": weight(1, 4, 4)}},
		{"long texts weigh less", qdrant.BM25{}, "", "", "zebra " + strings.Repeat("filler ", 255), map[string]float32{"zebra": weight(1, 256, 72), term("filler"): weight(255, 256, 72)}},
		{"no length normalisation", qdrant.BM25{B: -1}, "", "", "zebra " + strings.Repeat("filler ", 9), map[string]float32{"zebra": 1, term("filler"): float32(9 * (k1 + 1) / (9 + k1))}},
		{"stop words only", qdrant.BM25{}, "", "", "the and of", map[string]float32{}},
		// BM25F: a title term counts six times, a heading term twice, and
		// the weighted length is 6·1 + 2·2 + 3 = 13.
		{"fields are weighted", qdrant.BM25{}, "zebra", "okapi zebra", "okapi gnu gnu",
			map[string]float32{"zebra": weight(6+2, 13, 72), "okapi": weight(2+1, 13, 72), "gnu": weight(2, 13, 72)}},
	}
	for _, tt := range tests {
		idx, val := tt.p.Fields(tt.title, tt.heading, tt.body)
		if len(idx) != len(tt.want) {
			t.Errorf("%s: %d dimensions, want %d", tt.name, len(idx), len(tt.want))
			continue
		}
		for term, w := range tt.want {
			i, ok := slices.BinarySearch(idx, qdrant.TermIndex(term))
			if !ok {
				t.Errorf("%s: term %q missing", tt.name, term)
				continue
			}
			if math.Abs(float64(val[i]-w)) > 1e-6 {
				t.Errorf("%s: weight of %q = %v, want %v", tt.name, term, val[i], w)
			}
		}
	}
	idx, val := qdrant.BM25{}.Query("zebra zebra okapi the")
	if len(idx) != 2 || val[0] != 1 || val[1] != 1 {
		t.Errorf("Query: %v %v, want two dimensions of weight 1", idx, val)
	}
}

// FuzzBM25 checks that any text gives a well-formed sparse vector: sorted
// unique dimensions, one positive finite value each, and the same dimensions
// for the document and query side.
func FuzzBM25(f *testing.F) {
	for _, s := range []string{"", "The quick brown fox", "os.path.join", "ÄÖÜ 東京 \x00\xff", strings.Repeat("ab ", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var p qdrant.BM25
		di, dv := p.Document(text)
		qi, qv := p.Query(text)
		if len(di) != len(dv) || len(qi) != len(qv) {
			t.Fatalf("lengths differ: %d/%d %d/%d", len(di), len(dv), len(qi), len(qv))
		}
		if !slices.Equal(di, qi) {
			t.Fatalf("document dims %v != query dims %v", di, qi)
		}
		for i := range di {
			if i > 0 && di[i] <= di[i-1] {
				t.Fatalf("dimensions not sorted and unique: %v", di)
			}
			if !(dv[i] > 0) || math.IsInf(float64(dv[i]), 0) || dv[i] > float32(qdrant.DefaultBM25K1+1) {
				t.Fatalf("weight %v out of (0, k1+1]", dv[i])
			}
		}
	})
}

func TestTermIndexIsFNV1a(t *testing.T) {
	// Reference values of 32-bit FNV-1a.
	tests := map[string]uint32{"": 0x811c9dc5, "a": 0xe40c292c, "foobar": 0xbf9cf968}
	for in, want := range tests {
		if got := qdrant.TermIndex(in); got != want {
			t.Errorf("TermIndex(%q) = %#x, want %#x", in, got, want)
		}
	}
}
