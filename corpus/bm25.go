package corpus

import "math"

// BM25 is a small in-memory Okapi BM25 scorer over tokenised documents. The
// service uses it to search ad-hoc texts (embeds) without an index; the
// benchmarks use it as the page-level baseline.
type BM25 struct {
	K1, B  float64
	docs   []map[string]int
	lens   []int
	avgLen float64
	df     map[string]int
}

// NewBM25 indexes docs, each a list of terms (see Terms), with k1=1.2 and
// b=0.75.
func NewBM25(docs [][]string) *BM25 {
	m := &BM25{K1: 1.2, B: 0.75, df: map[string]int{}}
	total := 0
	for _, d := range docs {
		tf := map[string]int{}
		for _, t := range d {
			tf[t]++
		}
		for t := range tf {
			m.df[t]++
		}
		m.docs = append(m.docs, tf)
		m.lens = append(m.lens, len(d))
		total += len(d)
	}
	if len(docs) > 0 {
		m.avgLen = float64(total) / float64(len(docs))
	}
	return m
}

// Scores returns the BM25 score of every document for the query terms.
func (m *BM25) Scores(query []string) []float64 {
	out := make([]float64, len(m.docs))
	n := float64(len(m.docs))
	seen := map[string]bool{}
	for _, q := range query {
		if seen[q] {
			continue
		}
		seen[q] = true
		df := float64(m.df[q])
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for i, d := range m.docs {
			tf := float64(d[q])
			if tf == 0 {
				continue
			}
			norm := 1 - m.B + m.B*float64(m.lens[i])/math.Max(m.avgLen, 1)
			out[i] += idf * tf * (m.K1 + 1) / (tf + m.K1*norm)
		}
	}
	return out
}
