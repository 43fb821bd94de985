package text

import "math"

// BM25 is a small in-memory Okapi BM25 scorer over tokenised documents
// (see Terms). The corpus service uses it to search ad-hoc texts (embeds)
// without an index; the benchmarks use it as the page-level baseline.
type BM25 struct {
	K1, B  float64
	docs   []map[string]int
	lens   []int
	avgLen float64
	df     map[string]int
}

// NewBM25 indexes docs, each a list of terms, with k1=1.2 and b=0.75.
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

// IDF is a smoothed inverse document frequency of a term found in df of n
// texts, never below log 2: the answer writer weighs a question's terms
// across the evidence's sentences with it, where a term in every sentence
// still counts.
func IDF(n, df int) float64 {
	return math.Log(1 + (float64(n)+1)/(float64(df)+0.5))
}

// Cosine is the cosine similarity of two vectors: 0 when either is zero or
// their lengths differ (vectors of two embedders do not compare).
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// BagCosine is the cosine similarity of the sets of distinct question
// terms (QuestionTerms) of a and b: how far two questions ask about the
// same things.
func BagCosine(a, b string) float64 {
	ta, tb := Distinct(QuestionTerms(a)), Distinct(QuestionTerms(b))
	if len(ta) == 0 || len(tb) == 0 {
		return 0
	}
	set := make(map[string]bool, len(ta))
	for _, t := range ta {
		set[t] = true
	}
	common := 0
	for _, t := range tb {
		if set[t] {
			common++
		}
	}
	return float64(common) / math.Sqrt(float64(len(ta))*float64(len(tb)))
}
