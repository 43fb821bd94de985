package corpus

import (
	"strings"
	"unicode"
)

// Tokens splits text into lower-case word tokens: runs of letters, digits
// and underscores. Dots, dashes and other punctuation separate tokens, so
// "os.path" gives "os" and "path".
func Tokens(text string) []string {
	var out []string
	start := -1
	lower := strings.ToLower(text)
	for i, r := range lower {
		word := unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_'
		if word && start < 0 {
			start = i
		} else if !word && start >= 0 {
			out = append(out, lower[start:i])
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, lower[start:])
	}
	return out
}

// Terms returns the content words of text: Tokens without stop words and
// without tokens longer than 64 bytes.
func Terms(text string) []string {
	toks := Tokens(text)
	out := toks[:0]
	for _, t := range toks {
		if len(t) > 64 || IsStopWord(t) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// IsStopWord reports whether w (lower case) is a common English function word
// that carries no meaning for retrieval.
func IsStopWord(w string) bool {
	_, ok := stopWords[w]
	return ok
}

var stopWords = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be because
	been before being below between both but by can could did do does doing down during each few for from
	further had has have having he her here hers herself him himself his how i if in into is it its itself
	just me more most my myself no nor not now of off on once only or other our ours ourselves out over own
	same she should so some such than that the their theirs them themselves then there these they this
	those through to too under until up very was we were what when where which while who whom why will with
	would you your yours yourself yourselves use used using want need get s t`) {
		m[w] = struct{}{}
	}
	return m
}()

// Stem is a light English suffix stripper in the spirit of Porter's: it
// removes one common inflectional or derivational suffix (plural s, -es,
// -ing, -ed, -er, -ly, -ment, -ness, -ation, -ize...) and a final e, and maps
// a final y to i, so that encode, encoder, encoders, encoding and encoded
// share the key "encod". Words of four bytes or fewer are left alone.
func Stem(w string) string {
	if len(w) <= 4 {
		return w
	}
	for _, suf := range stemSuffixes {
		if strings.HasSuffix(w, suf) && len(w)-len(suf) >= 3 {
			if suf == "s" && (strings.HasSuffix(w, "ss") || strings.HasSuffix(w, "us") || strings.HasSuffix(w, "is")) {
				break
			}
			w = w[:len(w)-len(suf)]
			if suf == "ies" || suf == "ied" {
				w += "i"
			}
			break
		}
	}
	if n := len(w); n > 3 && w[n-1] == 'e' {
		w = w[:n-1]
	}
	if n := len(w); n > 3 && w[n-1] == 'y' {
		w = w[:n-1] + "i"
	}
	return w
}

// stemSuffixes are tried longest first.
var stemSuffixes = []string{
	"izations", "ization", "ational", "ations", "ation", "nesses", "ments", "ness", "ment",
	"izing", "izers", "izer", "ized", "izes", "ings", "ing", "ers", "ies", "ied", "ize",
	"er", "es", "ed", "ly", "s",
}

// stemSuffixesByLast are stemSuffixes by their last byte, in the same
// order: the only ones stemBytes need try for a word ending in that byte.
var stemSuffixesByLast = func() (by [256][]string) {
	for _, suf := range stemSuffixes {
		by[suf[len(suf)-1]] = append(by[suf[len(suf)-1]], suf)
	}
	return by
}()

// maxStopWordLen is the length in bytes of the longest stop word.
const maxStopWordLen = 10

// stopByLenFirst lists the stop words by length and first letter (all are
// lower-case ASCII letters, TestStopBytes checks), so isStopBytes compares
// a token with the few of its length and first letter instead of hashing it.
var stopByLenFirst = func() (by [maxStopWordLen + 1][26][]string) {
	for w := range stopWords {
		if c := w[0] - 'a'; len(w) <= maxStopWordLen && c < 26 {
			by[len(w)][c] = append(by[len(w)][c], w)
		}
	}
	return by
}()

// isStopBytes is IsStopWord(string(t)) for a non-empty token.
func isStopBytes(t []byte) bool {
	if len(t) > maxStopWordLen || t[0]-'a' >= 26 {
		return false
	}
	for _, w := range stopByLenFirst[len(t)][t[0]-'a'] {
		if string(t) == w {
			return true
		}
	}
	return false
}

// stemBytes writes the stem of w (as Stem computes it) over dst[:0] and
// returns it, without allocating when dst has room.
func stemBytes(dst, w []byte) []byte {
	dst = append(dst[:0], w...)
	if len(w) <= 4 {
		return dst
	}
	for _, suf := range stemSuffixesByLast[w[len(w)-1]] {
		if len(w)-len(suf) < 3 || string(w[len(w)-len(suf):]) != suf {
			continue
		}
		if suf == "s" {
			if p := w[len(w)-2]; p == 's' || p == 'u' || p == 'i' {
				break
			}
		}
		dst = dst[:len(w)-len(suf)]
		if suf == "ies" || suf == "ied" {
			dst = append(dst, 'i')
		}
		break
	}
	if n := len(dst); n > 3 && dst[n-1] == 'e' {
		dst = dst[:n-1]
	}
	if n := len(dst); n > 3 && dst[n-1] == 'y' {
		dst[n-1] = 'i'
	}
	return dst
}
