package agent

import (
	"math"
	"strings"
	"unicode"
)

// stopwords are left out of content terms.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the and or but if then else of to in on at by for with from into onto about as is are was were be been being
	do does did doing done have has had having can could should would will shall may might must i me my we our you your he she it its they them their
	this that these those there here what which who whom whose when where why how s t not no yes so than too very just also any all some each
	up down out over under again further once only own same other such more most both few between through during before after above below
	get gets use using used tell show explain please want need like give make per via within without whether`) {
		stopwords[w] = true
	}
}

// wordSpans returns the words of s (letters, digits, underscores) with
// their byte offsets.
func wordSpans(s string) [][2]int {
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

// stem folds a lower-cased word to a crude stem so that plural and verb
// forms meet.
func stem(w string) string {
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

// term folds one lower-cased word to its stem or synonym.
func term(w string) string {
	if t, ok := synonyms[w]; ok {
		return t
	}
	t := stem(w)
	if x, ok := synonyms[t]; ok {
		return x
	}
	return t
}

// terms returns the stemmed lower-case words of s, in order; snake_case
// identifiers also yield their parts (max_body_size: max, body, size).
func terms(s string) []string {
	sp := wordSpans(s)
	out := make([]string, 0, len(sp))
	for _, x := range sp {
		w := strings.ToLower(s[x[0]:x[1]])
		out = append(out, term(w))
		if strings.IndexByte(w, '_') > 0 {
			for _, p := range strings.Split(w, "_") {
				if p != "" {
					out = append(out, term(p))
				}
			}
		}
	}
	return out
}

// contentTerms returns the distinct terms of s that are not stopwords.
func contentTerms(s string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range wordSpans(s) {
		w := strings.ToLower(s[x[0]:x[1]])
		if stopwords[w] {
			continue
		}
		t := term(w)
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

func idf(n, df int) float64 {
	return math.Log(1 + (float64(n)+1)/(float64(df)+0.5))
}

// bagCosine is the cosine similarity of the content-term bags of a and b.
func bagCosine(a, b string) float64 {
	ta, tb := contentTerms(a), contentTerms(b)
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

func cosine(a, b []float32) float64 {
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
