package text

import "math"

// The BM25F parameters of keyword search, the same on the embedded index
// (corpus/sqlite) and the Qdrant adapter (corpus/qdrant): k1 above the
// usual 1.2 suits the weighted title term frequencies, and a chunk's page
// title counts six times and its heading path twice as much as its text
// (tuned on the Python docs benchmark).
const (
	BM25FK1            = 2.0
	BM25FB             = 0.75
	BM25FTitleWeight   = 6.0
	BM25FHeadingWeight = 2.0
	BM25FBodyWeight    = 1.0
)

// FieldTerms calls add with each term (Terms) of the three fields BM25F
// weighs, in order: a chunk's page title (field 0), its heading path (1)
// and its text (2).
func FieldTerms(title, headings, body string, add func(term string, field int)) {
	for f, s := range [3]string{title, headings, body} {
		for _, t := range Terms(s) {
			add(t, f)
		}
	}
}

// BM25IDF is BM25's inverse document frequency of a term found in df of n
// documents (Robertson–Spärck Jones, with 1 added inside the logarithm so
// it stays positive).
func BM25IDF(n, df float64) float64 {
	return math.Log(1 + (n-df+0.5)/(df+0.5))
}

// BM25Term is kgagent's one BM25 formula: the score of one query term in a
// document with (weighted) term frequency tf and length len is
//
//	idf·tf·(k1+1) / (tf + k1·(1 − b + b·len/avgLen))
//
// kept as W·tf / (tf + C0 + C1·len), so a search computes the term's
// constants once and pays one division per posting. F is float32 for the
// embedded index's postings and float64 elsewhere. The embedded index
// (chunk and page rankings), the Qdrant adapter's sparse vectors (with idf
// 1: Qdrant multiplies in its own IDF) and BM25 score with it.
type BM25Term[F ~float32 | ~float64] struct {
	W, C0, C1 F
}

// NewBM25Term returns the constants of a term of inverse document
// frequency idf under k1, b and the mean document length avgLen.
func NewBM25Term[F ~float32 | ~float64](idf, k1, b, avgLen F) BM25Term[F] {
	return BM25Term[F]{W: idf * (k1 + 1), C0: k1 * (1 - b), C1: k1 * b / avgLen}
}

// Score is the term's score in a document with term frequency tf and
// length length.
func (t BM25Term[F]) Score(tf, length F) F {
	return t.W * tf / (tf + t.C0 + t.C1*length)
}

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
		t := NewBM25Term(BM25IDF(n, df), m.K1, m.B, math.Max(m.avgLen, 1))
		for i, d := range m.docs {
			if tf := float64(d[q]); tf != 0 {
				out[i] += t.Score(tf, float64(m.lens[i]))
			}
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
