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

// Stem is a deliberately light English suffix stripper (plural s, -es, -ing,
// -ed, -ly) that maps common inflections of a word to one key.
func Stem(w string) string {
	n := len(w)
	switch {
	case n > 5 && strings.HasSuffix(w, "ies"):
		return w[:n-3] + "y"
	case n > 5 && strings.HasSuffix(w, "sses"):
		return w[:n-2]
	case n > 4 && strings.HasSuffix(w, "ing"):
		return w[:n-3]
	case n > 4 && strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed"):
		return w[:n-2]
	case n > 4 && strings.HasSuffix(w, "ly"):
		return w[:n-2]
	case n > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:n-1]
	}
	return w
}
