package qdrant

import (
	"math"
	"slices"
	"strings"
	"unicode"
)

// BM25 turns texts into the sparse vectors stored under the "bm25" name.
//
// Qdrant scores a sparse query as the dot product of the query and document
// vectors, and with the IDF modifier it multiplies each query dimension by
// the inverse document frequency it keeps per collection. So the client
// supplies the other half of BM25: a document vector whose values are the
// saturated, length-normalised term frequencies
//
//	tf·(k1+1) / (tf + k1·(1 − b + b·len/avgLen))
//
// and a query vector with 1 per distinct term. The sum over shared terms of
// idf·1·weight is then Okapi BM25. AvgLen is a fixed estimate of the mean
// chunk length in tokens, because the client never sees the whole corpus.
//
// Terms are hashed into uint32 dimensions (FNV-1a); two terms that collide
// count as one term, which at 2^32 buckets is rare enough to ignore.
type BM25 struct {
	K1     float64 // term-frequency saturation; 0 means 1.2
	B      float64 // length normalisation; 0 means 0.75, negative means none
	AvgLen float64 // assumed mean chunk length in tokens; 0 means 128
}

// Default BM25 parameters.
const (
	DefaultBM25K1     = 1.2
	DefaultBM25B      = 0.75
	DefaultBM25AvgLen = 128
)

// maxTokenLen drops tokens longer than this many bytes (base64 blobs, hashes).
const maxTokenLen = 64

func (p BM25) params() (k1, b, avg float64) {
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
	return k1, b, avg
}

// Document returns the sparse vector of a stored text: dimensions sorted and
// unique, values positive. A text with no indexable term gives empty slices.
func (p BM25) Document(text string) (indices []uint32, values []float32) {
	terms := Tokenize(text)
	if len(terms) == 0 {
		return nil, nil
	}
	tf := make(map[uint32]int, len(terms))
	for _, t := range terms {
		tf[TermIndex(t)]++
	}
	k1, b, avg := p.params()
	norm := k1 * (1 - b + b*float64(len(terms))/avg)
	indices = make([]uint32, 0, len(tf))
	for i := range tf {
		indices = append(indices, i)
	}
	slices.Sort(indices)
	values = make([]float32, len(indices))
	for n, i := range indices {
		f := float64(tf[i])
		values[n] = float32(f * (k1 + 1) / (f + norm))
	}
	return indices, values
}

// Query returns the sparse vector of a search text: one dimension per distinct
// term, each with value 1, sorted.
func (p BM25) Query(text string) (indices []uint32, values []float32) {
	terms := Tokenize(text)
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

// Tokenize analyses text the way a plain English BM25 analyser does: split at
// every rune that is not a letter or digit, lowercase, drop stop words and
// over-long tokens, and strip plural endings (Harman's S-stemmer), so that
// "Queries" and "query" meet.
func Tokenize(text string) []string {
	fields := strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	out := fields[:0]
	for _, f := range fields {
		if len(f) > maxTokenLen {
			continue
		}
		t := strings.ToLower(f)
		if stopWords[t] {
			continue
		}
		out = append(out, stemS(t))
	}
	return out
}

// stemS is Harman's S-stemmer ("How effective is suffixing?", JASIS 1991):
// ies→y, es→e, s→"" with the usual exceptions; tokens of three bytes or less
// and tokens ending in a digit are kept as they are.
func stemS(t string) string {
	if len(t) <= 3 || t[len(t)-1] != 's' {
		return t
	}
	switch {
	case strings.HasSuffix(t, "ies") && !strings.HasSuffix(t, "eies") && !strings.HasSuffix(t, "aies"):
		return t[:len(t)-3] + "y"
	case strings.HasSuffix(t, "es") && !strings.HasSuffix(t, "aes") && !strings.HasSuffix(t, "ees") && !strings.HasSuffix(t, "oes"):
		return t[:len(t)-1]
	case !strings.HasSuffix(t, "us") && !strings.HasSuffix(t, "ss"):
		return t[:len(t)-1]
	}
	return t
}

// stopWords is Lucene's English stop set (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET).
var stopWords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true,
	"be": true, "but": true, "by": true, "for": true, "if": true, "in": true,
	"into": true, "is": true, "it": true, "no": true, "not": true, "of": true,
	"on": true, "or": true, "such": true, "that": true, "the": true,
	"their": true, "then": true, "there": true, "these": true, "they": true,
	"this": true, "to": true, "was": true, "will": true, "with": true,
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
