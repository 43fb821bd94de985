package text

import "strings"

// Stem folds a lower-case word to its search key: a light English suffix
// stripper in the spirit of Porter's that removes one common inflectional
// or derivational suffix (plural s, -es, -ing, -ed, -er, -ly, -ment, -ness,
// -ation, -ize...) and a final e, and maps a final y to i, so that encode,
// encoder, encoders, encoding and encoded share the key "encod". Words of
// four bytes or fewer are left alone.
//
// The keyword index, the lexical embedder's stored vectors and Qdrant's
// stored sparse vectors are written with it: changing it needs a new
// embedder name or a re-ingest (see the package comment).
func Stem(w string) string {
	keep, i := stemCut(w)
	if !i {
		return w[:keep]
	}
	return w[:keep] + "i"
}

// StemBytes writes Stem(w) over dst[:0] and returns it, without allocating
// when dst has room (the lexical embedder's hot path).
func StemBytes(dst, w []byte) []byte {
	keep, i := stemCut(w)
	dst = append(dst[:0], w[:keep]...)
	if i {
		dst = append(dst, 'i')
	}
	return dst
}

// stemCut is Stem's rule, on a word held as a string or as bytes: its stem
// is w[:keep], followed by an "i" when i is set (-ies and -ied give i, and
// a final y becomes i).
func stemCut[T ~string | ~[]byte](w T) (keep int, i bool) {
	n := len(w)
	if n <= 4 {
		return n, false
	}
	for _, suf := range stemSuffixesByLast[w[n-1]] {
		if n-len(suf) < 3 || string(w[n-len(suf):]) != suf {
			continue
		}
		if suf == "s" {
			if p := w[n-2]; p == 's' || p == 'u' || p == 'i' {
				break // -ss, -us, -is are no plurals
			}
		}
		keep = n - len(suf)
		if suf == "ies" || suf == "ied" {
			return keep, true
		}
		n = keep
		break
	}
	if n > 3 && w[n-1] == 'e' {
		n--
	}
	if n > 3 && w[n-1] == 'y' {
		return n - 1, true
	}
	return n, false
}

// stemSuffixes are tried longest first.
var stemSuffixes = []string{
	"izations", "ization", "ational", "ations", "ation", "nesses", "ments", "ness", "ment",
	"izing", "izers", "izer", "ized", "izes", "ings", "ing", "ers", "ies", "ied", "ize",
	"er", "es", "ed", "ly", "s",
}

// stemSuffixesByLast are stemSuffixes by their last byte, in the same
// order: the only ones a word ending in that byte can have.
var stemSuffixesByLast = func() (by [256][]string) {
	for _, suf := range stemSuffixes {
		by[suf[len(suf)-1]] = append(by[suf[len(suf)-1]], suf)
	}
	return by
}()

// Singular strips a simple English plural ending from a lower-case name,
// for naming entities rather than matching words: unlike Stem its result is
// a word a reader recognises ("classes" → "class", "dictionaries" →
// "dictionary"), and it is deliberately conservative: words of four letters
// or fewer and endings that are rarely plurals ("ss", "us", "is", "as",
// "os", "ics") are kept. The graph's entity keys are stored with it.
func Singular(w string) string {
	if s, ok := irregular[w]; ok {
		return s
	}
	n := len(w)
	if n <= 4 || !strings.HasSuffix(w, "s") {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && n > 5:
		return w[:n-3] + "y"
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"):
		return w[:n-2]
	}
	for _, keep := range []string{"ss", "us", "is", "as", "os", "ics"} {
		if strings.HasSuffix(w, keep) {
			return w
		}
	}
	return w[:n-1]
}

// irregular are plurals (and words that only look plural) the suffix rules
// of Singular get wrong.
var irregular = map[string]string{
	"series": "series", "species": "species", "news": "news", "aliases": "alias",
	"statuses": "status", "buses": "bus", "indices": "index", "matrices": "matrix",
	"vertices": "vertex", "analyses": "analysis", "movies": "movie", "cookies": "cookie",
	"children": "child", "people": "person", "criteria": "criterion", "axes": "axis",
}

// LightStem folds a lower-case word's inflection only: -ing, -ed, -ies
// (to y), -es (not -ses) and a plural s (not -ss), so "parsing" and
// "parsed" give "pars" but "parser" stays "parser" and "process" and
// "processes" stay apart. The answer writer (Term) ranks sentences by the
// question's words with it; search, which only has to find pages, uses
// the stronger Stem. Measured on kgagent eval with the answer writer on
// Stem instead: the Python docs' questions named the answer in 0.934 of
// them instead of 0.944; on Singular, 0.937 (and the demo site's
// abstentions rose from 0.133 to 0.200).
func LightStem(w string) string {
	switch n := len(w); {
	case n > 5 && strings.HasSuffix(w, "ing"):
		return w[:n-3]
	case n > 4 && strings.HasSuffix(w, "ies"):
		return w[:n-3] + "y"
	case n > 4 && strings.HasSuffix(w, "ed"):
		return w[:n-2]
	case n > 4 && strings.HasSuffix(w, "es") && !strings.HasSuffix(w, "ses"):
		return w[:n-2]
	case n > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss"):
		return w[:n-1]
	}
	return w
}
