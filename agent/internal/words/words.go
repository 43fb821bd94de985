// Package words holds the word handling the agent's router, its few-shot
// matching and the built-in answerer share: word spans, light stemming,
// stop words and bag-of-words similarity.
package words

import (
	"math"
	"strings"
	"unicode"
)

// Stopwords are left out of content terms.
var Stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the and or but if then else of to in on at by for with from into onto about as is are was were be been being
	do does did doing done have has had having can could should would will shall may might must i me my we our you your he she it its they them their
	this that these those there here what which who whom whose when where why how s t not no yes so than too very just also any all some each
	up down out over under again further once only own same other such more most both few between through during before after above below
	get gets use using used tell show explain please want need like give make per via within without whether`) {
		Stopwords[w] = true
	}
}

// Spans returns the words of s (letters, digits, underscores) with
// their byte offsets.
func Spans(s string) [][2]int {
	var out [][2]int
	start := -1
	for i, r := range s {
		w := unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_'
		if w && start < 0 {
			start = i
		} else if !w && start >= 0 {
			out = append(out, [2]int{start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, [2]int{start, len(s)})
	}
	return out
}

// Stem folds a lower-cased word to a crude stem so that plural and verb
// forms meet.
func Stem(w string) string {
	switch {
	case len(w) > 5 && strings.HasSuffix(w, "ing"):
		return w[:len(w)-3]
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 4 && strings.HasSuffix(w, "ed"):
		return w[:len(w)-2]
	case len(w) > 4 && strings.HasSuffix(w, "es") && !strings.HasSuffix(w, "ses"):
		return w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss"):
		return w[:len(w)-1]
	}
	return w
}

// synonyms fold common abbreviations onto one term.
var synonyms = map[string]string{"maximum": "max", "minimum": "min", "configuration": "config", "configure": "config",
	"directory": "dir", "folder": "dir", "database": "db", "parameter": "param", "documentation": "doc", "docs": "doc",
	"authentication": "auth", "authorization": "auth", "milliseconds": "ms", "millisecond": "ms", "seconds": "second"}

// Term folds one lower-cased word to its stem or synonym.
func Term(w string) string {
	if t, ok := synonyms[w]; ok {
		return t
	}
	t := Stem(w)
	if x, ok := synonyms[t]; ok {
		return x
	}
	return t
}

// Terms returns the stemmed lower-case words of s, in order; snake_case
// identifiers also yield their parts (max_body_size: max, body, size).
func Terms(s string) []string {
	sp := Spans(s)
	out := make([]string, 0, len(sp))
	for _, x := range sp {
		w := strings.ToLower(s[x[0]:x[1]])
		out = append(out, Term(w))
		if strings.IndexByte(w, '_') > 0 {
			for _, p := range strings.Split(w, "_") {
				if p != "" {
					out = append(out, Term(p))
				}
			}
		}
	}
	return out
}

// ContentTerms returns the distinct terms of s that are not stopwords.
func ContentTerms(s string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range Spans(s) {
		w := strings.ToLower(s[x[0]:x[1]])
		if Stopwords[w] {
			continue
		}
		t := Term(w)
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// IDF is the inverse document frequency weight of a term found in df of n texts.
func IDF(n, df int) float64 {
	return math.Log(1 + (float64(n)+1)/(float64(df)+0.5))
}

// BagCosine is the cosine similarity of the content-term bags of a and b.
func BagCosine(a, b string) float64 {
	ta, tb := ContentTerms(a), ContentTerms(b)
	if len(ta) == 0 || len(tb) == 0 {
		return 0
	}
	set := map[string]bool{}
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

// Cosine is the cosine similarity of two vectors (0 when either is zero).
func Cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		if i >= len(b) {
			break
		}
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
