package qdrant

import (
	"math"
	"slices"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/internal/text"
)

// BM25 turns chunks into the sparse vectors stored under the "bm25f" name,
// weighting the page title and the heading path above the body (BM25F) with
// the same analyser, field weights and k1 as the embedded index
// (corpus/sqlite), so the two backends rank keyword and hybrid searches
// alike.
//
// Qdrant scores a sparse query as the dot product of the query and document
// vectors, and with the IDF modifier it multiplies each query dimension by
// the inverse document frequency it keeps per collection. So the client
// supplies the other half of BM25F: a document vector whose values are the
// saturated, length-normalised, field-weighted term frequencies
//
//	wtf·(k1+1) / (wtf + k1·(1 − b + b·wlen/avgLen))
//
// where wtf = Σ_field weight·tf and wlen = Σ_field weight·len, and a query
// vector with 1 per distinct term. The sum over shared terms of idf·1·value
// is then BM25F. AvgLen is a fixed estimate of the mean weighted chunk
// length, because the client never sees the whole corpus.
//
// Two things of the embedded index's keyword ranking cannot be done inside
// Qdrant's dot product and are left out: its IDF exponent (idf^1.5) and its
// dropping of terms found in more than half the chunks when the query has a
// rarer one.
//
// Documents are analysed as the embedded index analyses them
// (text.FieldTerms: text.Terms of each field, content words stemmed) and
// queries with text.QuestionTerms (the same words less filler), and the
// weights come from the one BM25 formula (text.BM25Term), so a query's
// terms meet the same stored terms on both backends. Changing the stemmer
// or the stop list changes the stored vectors: collections must then be
// re-ingested.
//
// Terms are hashed into uint32 dimensions (FNV-1a); two terms that collide
// count as one term, which at 2^32 buckets is rare enough to ignore.
type BM25 struct {
	K1     float64 // term-frequency saturation; 0 means 2 (the embedded index's)
	B      float64 // length normalisation; 0 means 0.75, negative means none
	AvgLen float64 // assumed mean weighted chunk length; 0 means 72

	// BM25F field weights; 0 means the embedded index's 6, 2 and 1.
	TitleWeight, HeadingWeight, BodyWeight float64
}

// Default BM25F parameters: those of the embedded index (corpus/sqlite), and
// an average weighted chunk length (body terms plus six times the title's
// and twice the headings' terms) measured on the Python 3.11 docs (71.0 over
// 29,887 chunks; the sample docs site's is 36.7).
const (
	DefaultBM25K1            = text.BM25FK1
	DefaultBM25B             = text.BM25FB
	DefaultBM25AvgLen        = 72.0
	DefaultBM25TitleWeight   = text.BM25FTitleWeight
	DefaultBM25HeadingWeight = text.BM25FHeadingWeight
	DefaultBM25BodyWeight    = text.BM25FBodyWeight
)

func (p BM25) params() (k1, b, avg float64, w [3]float64) {
	k1, b, avg = p.K1, p.B, p.AvgLen
	if k1 <= 0 {
		k1 = DefaultBM25K1
	}
	switch {
	case b == 0:
		b = DefaultBM25B
	case b < 0:
		b = 0
	case b > 1:
		b = 1
	}
	if avg <= 0 {
		avg = DefaultBM25AvgLen
	}
	w = [3]float64{p.TitleWeight, p.HeadingWeight, p.BodyWeight}
	for i, d := range [3]float64{DefaultBM25TitleWeight, DefaultBM25HeadingWeight, DefaultBM25BodyWeight} {
		if w[i] <= 0 {
			w[i] = d
		}
	}
	return k1, b, avg, w
}

// Chunk returns the sparse vector of a stored chunk: its page title, heading
// path and text as the three weighted fields.
func (p BM25) Chunk(c kgagent.Chunk) (indices []uint32, values []float32) {
	return p.Fields(corpus.PageTitle(c), corpus.HeadingText(c), c.Text)
}

// Document returns the sparse vector of a text that is all body.
func (p BM25) Document(text string) (indices []uint32, values []float32) {
	return p.Fields("", "", text)
}

// Fields returns the sparse vector of a document with the given title,
// headings and body: dimensions sorted and unique, values positive. A
// document with no indexable term gives empty slices.
func (p BM25) Fields(title, headings, body string) (indices []uint32, values []float32) {
	k1, b, avg, w := p.params()
	tf := map[uint32]float64{}
	var length float64
	text.FieldTerms(title, headings, body, func(t string, f int) {
		tf[TermIndex(t)] += w[f]
		length += w[f]
	})
	if len(tf) == 0 {
		return nil, nil
	}
	// Qdrant multiplies in the IDF: the document's side is idf 1.
	bt := text.NewBM25Term(1, k1, b, avg)
	indices = make([]uint32, 0, len(tf))
	for i := range tf {
		indices = append(indices, i)
	}
	slices.Sort(indices)
	values = make([]float32, len(indices))
	for n, i := range indices {
		values[n] = float32(bt.Score(tf[i], length))
	}
	return indices, values
}

// Query returns the sparse vector of a search text: one dimension per distinct
// term, each with value 1, sorted.
func (p BM25) Query(query string) (indices []uint32, values []float32) {
	terms := text.QuestionTerms(query)
	if len(terms) == 0 {
		return nil, nil
	}
	seen := make(map[uint32]bool, len(terms))
	for _, t := range terms {
		i := TermIndex(t)
		if !seen[i] {
			seen[i] = true
			indices = append(indices, i)
		}
	}
	slices.Sort(indices)
	values = make([]float32, len(indices))
	for n := range values {
		values[n] = 1
	}
	return indices, values
}

// TermIndex is the sparse dimension of an analysed term (FNV-1a, 32 bits).
func TermIndex(term string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(term); i++ {
		h ^= uint32(term[i])
		h *= 16777619
	}
	return h
}

// finite reports whether every value is a finite number.
func finite(v []float32) bool {
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return false
		}
	}
	return true
}
