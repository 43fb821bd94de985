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
	for a, b, ok := nextSpan(s, 0); ok; a, b, ok = nextSpan(s, b) {
		out = append(out, [2]int{a, b})
	}
	return out
}

// Tokens returns the lower-case words of s (see Spans), with English
// contractions written out: "won't" gives "will" and "not", "doesn't"
// "does" and "not", and the endings 's, 're, 've, 'll, 'd and 'm are
// dropped ("it's" gives "it"), so no fragment of a contraction ("won",
// "doesn", "ll") ever reads as a word.
//
// It runs at every ingest and query: ASCII text (most of it) is read in
// two passes over its bytes, one counting the words (so the result is
// allocated once) and one cutting them from a single lower-cased copy.
func Tokens(s string) []string {
	n, ascii := asciiWords(s)
	if !ascii {
		return tokensUnicode(s)
	}
	if n == 0 {
		return nil
	}
	lower := strings.ToLower(s) // ASCII: one copy, none when s has no upper case
	out := make([]string, 0, n) // a contraction gives at most one word per word
	for i := 0; i < len(lower); {
		if !isASCIIWordByte(lower[i]) {
			i++
			continue
		}
		start := i
		for i < len(lower) && isASCIIWordByte(lower[i]) {
			i++
		}
		if i+1 < len(lower) && lower[i] == '\'' && isASCIIWordByte(lower[i+1]) {
			j := i + 1
			for j < len(lower) && isASCIIWordByte(lower[j]) {
				j++
			}
			if a, b, k := Contraction(lower[start:i], lower[i+1:j]); k > 0 {
				out = append(out, a)
				if k == 2 {
					out = append(out, b)
				}
				i = j
				continue
			}
		}
		out = append(out, lower[start:i])
	}
	return out
}

// asciiWords counts the words of s when s is all ASCII (ascii false, and
// no count, when it is not).
func asciiWords(s string) (n int, ascii bool) {
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return 0, false
		}
		w := isASCIIWordByte(c)
		if w && !in {
			n++
		}
		in = w
	}
	return n, true
}

// isASCIIWordByte reports whether the ASCII byte c is a word rune (see
// IsWordRune): a letter, a digit or an underscore.
func isASCIIWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// tokensUnicode is Tokens for text that is not all ASCII: the words of
// one lower-cased copy, found as Spans finds them but one span ahead
// rather than as a slice of spans (30 KB an answer on the Python docs),
// after a pass that counts them, so the result is allocated once.
func tokensUnicode(s string) []string {
	lower := strings.ToLower(s)
	n := 0
	for _, e, ok := nextSpan(lower, 0); ok; _, e, ok = nextSpan(lower, e) {
		n++
	}
	if n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	a0, a1, ok := nextSpan(lower, 0)
	for ok {
		b0, b1, okB := nextSpan(lower, a1)
		if okB {
			if gap := lower[a1:b0]; gap == "'" || gap == "’" {
				if a, b, k := Contraction(lower[a0:a1], lower[b0:b1]); k > 0 {
					out = append(out, a)
					if k == 2 {
						out = append(out, b)
					}
					a0, a1, ok = nextSpan(lower, b1)
					continue
				}
			}
		}
		out = append(out, lower[a0:a1])
		a0, a1, ok = b0, b1, okB
	}
	return out
}

// nextSpan is the first span of Spans(s) that starts at or after from
// (from at a rune boundary or at a span's end): its byte offsets, ok false
// when there is none.
func nextSpan(s string, from int) (start, end int, ok bool) {
	start = -1
	for i := from; i < len(s); {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		w := IsWordRune(r)
		if w && start < 0 {
			start = i
		} else if !w && start >= 0 {
			return start, i, true
		}
		i += size
	}
	if start >= 0 {
		return start, len(s), true
	}
	return 0, 0, false
}

// contraction reads the word at a and the one at b as one contraction when
// only an apostrophe (straight or curly) stands between them (see
// Contraction). It returns what the contraction stands for.
func contraction(s string, a, b [2]int) ([]string, bool) {
	gap := s[a[1]:b[0]]
	if gap != "'" && gap != "’" {
		return nil, false
	}
	w1, w2, k := Contraction(s[a[0]:a[1]], s[b[0]:b[1]])
	switch k {
	case 1:
		return []string{w1}, true
	case 2:
		return []string{w1, w2}, true
	}
	return nil, false
}

// Contraction reads first, an apostrophe and end (lower-case words) as a
// contraction when first is all letters and end is one of the endings t
// (after n), s, re, ve, ll, d or m. It returns the k (1 or 2) words it
// stands for, k 0 when it is none. Tokens reads contractions with it; so
// does the lexical embedder, which cuts words itself, when it also gives a
// chunk's terms.
func Contraction(first, end string) (w1, w2 string, k int) {
	for _, r := range first {
		if !unicode.IsLetter(r) {
			return "", "", 0
		}
	}
	switch end {
	case "t":
		stem, ok := strings.CutSuffix(first, "n")
		if !ok || stem == "" {
			return "", "", 0
		}
		switch stem {
		case "wo":
			stem = "will"
		case "ca":
			stem = "can"
		case "sha":
			stem = "shall"
		}
		return stem, "not", 2
	case "s", "re", "ve", "ll", "d", "m":
		return first, "", 1
	}
	return "", "", 0
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
		if i > 0 && isApostrophe(s[sp[i-1][1]:sp[i][0]]) {
			// "An'tN't": Tokens reads "an" and "tn't"; "An't not" would
			// read as "a not not"
			b.WriteByte(' ')
		}
		if len(lowA) == sp[i][1]-sp[i][0] && (words[0] == lowA || len(words) > 1 && words[0]+"n" == lowA) {
			// keep the writer's case: "Doesn't" → "Does not" (not where
			// lower case has another length: "İstanbul's" → "istanbul")
			words[0] = s[sp[i][0] : sp[i][0]+len(words[0])]
		}
		b.WriteString(strings.Join(words, " "))
		if i+2 < len(sp) && isApostrophe(s[sp[i+1][1]:sp[i+2][0]]) {
			b.WriteByte(' ') // "A'd'm": not "A'm", read as "a"
		}
		last = sp[i+1][1]
		i++
	}
	b.WriteString(s[last:])
	return b.String()
}

func isApostrophe(gap string) bool { return gap == "'" || gap == "’" }

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
