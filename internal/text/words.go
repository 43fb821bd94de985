package text

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// IsWordRune reports whether r belongs to a word: a letter, a digit or an
// underscore (so snake_case names are one word, and "os.path" is two).
func IsWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_'
}

// Spans returns the byte offsets [start, end) of the words of s, in order.
// A word is a run of letters, digits and underscores; everything else
// (dots, dashes, apostrophes, space) separates words.
func Spans(s string) [][2]int {
	var out [][2]int
	start := -1
	for i, r := range s {
		w := IsWordRune(r)
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

// Tokens returns the lower-case words of s (see Spans), with English
// contractions written out: "won't" gives "will" and "not", "doesn't"
// "does" and "not", and the endings 's, 're, 've, 'll, 'd and 'm are
// dropped ("it's" gives "it"), so no fragment of a contraction ("won",
// "doesn", "ll") ever reads as a word.
func Tokens(s string) []string {
	lower := strings.ToLower(s)
	var out []string
	sp := Spans(lower)
	for i := 0; i < len(sp); i++ {
		w := lower[sp[i][0]:sp[i][1]]
		if i+1 < len(sp) {
			if words, ok := contraction(lower, sp[i], sp[i+1]); ok {
				out = append(out, words...)
				i++
				continue
			}
		}
		out = append(out, w)
	}
	return out
}

// contraction reads the word at a and the one at b as one contraction when
// only an apostrophe (straight or curly) stands between them, the first is
// all letters and the second is one of the endings t (after n), s, re, ve,
// ll, d or m. It returns what the contraction stands for.
func contraction(s string, a, b [2]int) ([]string, bool) {
	gap := s[a[1]:b[0]]
	if gap != "'" && gap != "’" {
		return nil, false
	}
	first, end := s[a[0]:a[1]], s[b[0]:b[1]]
	for _, r := range first {
		if !unicode.IsLetter(r) {
			return nil, false
		}
	}
	switch end {
	case "t":
		stem, ok := strings.CutSuffix(first, "n")
		if !ok || stem == "" {
			return nil, false
		}
		switch stem {
		case "wo":
			stem = "will"
		case "ca":
			stem = "can"
		case "sha":
			stem = "shall"
		}
		return []string{stem, "not"}, true
	case "s", "re", "ve", "ll", "d", "m":
		return []string{first}, true
	}
	return nil, false
}

// ExpandContractions writes the contractions of s out as Tokens reads them
// ("won't" → "will not", "it's" → "it"), keeping the rest of s as it is,
// for code that reads a question's words by other means than Tokens.
func ExpandContractions(s string) string {
	if !strings.ContainsAny(s, "'’") {
		return s
	}
	sp := Spans(s)
	var b strings.Builder
	last := 0
	for i := 0; i+1 < len(sp); i++ {
		lowA := strings.ToLower(s[sp[i][0]:sp[i][1]])
		lowB := strings.ToLower(s[sp[i+1][0]:sp[i+1][1]])
		joined := lowA + s[sp[i][1]:sp[i+1][0]] + lowB
		words, ok := contraction(joined, [2]int{0, len(lowA)}, [2]int{len(joined) - len(lowB), len(joined)})
		if !ok {
			continue
		}
		b.WriteString(s[last:sp[i][0]])
		if words[0] == lowA || len(words) > 1 && words[0]+"n" == lowA {
			// keep the writer's case: "Doesn't" → "Does not"
			words[0] = s[sp[i][0] : sp[i][0]+len(words[0])]
		}
		b.WriteString(strings.Join(words, " "))
		last = sp[i+1][1]
		i++
	}
	b.WriteString(s[last:])
	return b.String()
}

// Clip cuts s to at most n bytes on a rune boundary.
func Clip(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Truncate cuts s to at most n bytes on a rune boundary and marks the cut
// with "…" (the mark is not counted in n).
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Clip(s, n) + "…"
}

// CutWords cuts s to at most n bytes at a space or newline (or, when the
// last one is in the first half, on a rune boundary) and marks the cut with
// " …".
func CutWords(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndexAny(s[:n], " \n")
	if cut < n/2 {
		cut = n
	}
	return Clip(s, cut) + " …"
}

// isLetterOrDigit is the word rune of JoinWords and LetterRuns: a letter
// or a digit (no underscore, unlike IsWordRune).
func isLetterOrDigit(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// LetterRuns returns the runs of letters and digits of s, as written: the
// words JoinWords joins. The answer writer counts a claim's words and the
// graph a definition's with it.
func LetterRuns(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !isLetterOrDigit(r) })
}

// JoinWords lower-cases s and joins its runs of letters and digits with
// sep: every run of other characters becomes one sep, and none stands at
// either end ("Is Part Of" gives "is_part_of" with '_'). An anchor slug
// (corpus.Slug, '-'), a graph predicate (graphrag.NormalizePredicate, '_')
// and the answer writer's phrase matching (' ') are written with it.
func JoinWords(s string, sep byte) string {
	var b strings.Builder
	pending := false
	for _, r := range s {
		if isLetterOrDigit(r) {
			if pending && b.Len() > 0 {
				b.WriteByte(sep)
			}
			pending = false
			b.WriteRune(unicode.ToLower(r))
		} else {
			pending = true
		}
	}
	return b.String()
}
