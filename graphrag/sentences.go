package graphrag

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// sentences finds "X is a/an Y" and "X (Y)" definitions.
func (e *extraction) sentences(text, anchor string) {
	for rest := text; rest != ""; {
		var sent string
		sent, rest = nextSentence(rest)
		if sent == "" {
			continue
		}
		if mayIsA(sent) {
			e.isA("", sent, anchor)
		}
		if !mayParen(sent) {
			continue
		}
		parens(sent, 8, func(x, y string) { e.paren(x, y, anchor, sent) })
	}
}

// isA handles "X is a/an Y ..." in sent; a non-empty subject replaces X when
// sent is a definition ("a compact way ..." under a term).
func (e *extraction) isA(subject, sent, anchor string) {
	sent = strings.TrimSpace(sent)
	var x, rest string
	if subject != "" {
		low := strings.ToLower(sent)
		for _, art := range []string{"a ", "an "} {
			if strings.HasPrefix(low, art) {
				x, rest = subject, sent[len(art):]
			}
		}
		if x == "" {
			return
		}
	} else {
		m := reIsA.FindStringSubmatch(sent)
		if m == nil {
			return
		}
		x, rest = m[1], m[2]
		if text.PoorSubjects.Has(strings.ToLower(strings.Fields(x)[0])) {
			return
		}
	}
	y := headNoun(rest)
	if y == "" {
		return
	}
	xe, ye := e.term(x, TypeTerm), e.term(y, TypeConcept)
	if xe.ID == "" || ye.ID == "" {
		return
	}
	e.emit(xe, PredIsA, ye, "", anchor, sent)
	if subject == "" {
		e.emit(xe, PredIsDefinedAs, kgagent.Entity{}, sent, anchor, sent)
	}
}

// headNoun returns the noun phrase at the start of s: up to four words,
// stopping at a relative clause, preposition or punctuation.
func headNoun(s string) string {
	var words []string
	for _, w := range strings.Fields(s) {
		clean := strings.TrimRight(w, ".,;:!?)")
		if text.ClauseBreaks.Has(strings.ToLower(clean)) || clean == "" {
			break
		}
		if len(words) > 0 && strings.HasSuffix(clean, "ed") {
			break
		}
		words = append(words, clean)
		if clean != w || len(words) == 4 {
			break
		}
	}
	if len(words) == 0 {
		return ""
	}
	return strings.Join(words, " ")
}

// paren handles "X (Y)": an acronym in either place is an alias of the
// other; a short lower-case Y is a type of X.
func (e *extraction) paren(x, y, anchor, sent string) {
	x, y = strings.TrimSpace(x), strings.TrimSpace(y)
	for {
		w, rest, ok := strings.Cut(x, " ")
		if !ok || !text.PoorSubjects.Has(strings.ToLower(w)) {
			break
		}
		x = rest
	}
	if x == "" || y == "" {
		return
	}
	if isAcronymOf(y, x) {
		full := e.term(x, TypeConcept)
		e.emit(NewEntity(y, TypeConcept), PredAliasOf, full, "", anchor, sent)
		return
	}
	if isAcronymOf(x, y) {
		full := e.term(y, TypeConcept)
		e.emit(NewEntity(x, TypeConcept), PredAliasOf, full, "", anchor, sent)
		return
	}
	words := strings.Fields(y)
	if len(words) > 3 || text.PoorSubjects.Has(strings.ToLower(words[0])) {
		return
	}
	for _, w := range words {
		for _, r := range w {
			if !unicode.IsLetter(r) && r != '-' {
				return
			}
		}
		switch strings.ToLower(w) {
		case "or", "and", "to", "of", "in", "for", "with", "as", "see", "default", "optional", "deprecated", "new", "changed", "version", "e.g", "i.e", "eg", "ie", "not", "only", "also", "required":
			return
		}
	}
	if r, _ := utf8.DecodeRuneInString(y); !unicode.IsLower(r) {
		return
	}
	xe := e.term(x, TypeTerm)
	if xe.ID == "" || text.CommonTerms.Has(xe.ID) || text.PoorSubjects.Has(xe.ID) {
		return
	}
	e.emit(xe, PredIsA, e.term(y, TypeConcept), "", anchor, sent)
}

// isAcronymOf reports whether short (2..8 upper-case letters) is made of the
// initials of long's words.
func isAcronymOf(short, long string) bool {
	if len(short) < 2 || len(short) > 8 || strings.ToUpper(short) != short {
		return false
	}
	var initials strings.Builder
	for _, w := range strings.FieldsFunc(long, func(r rune) bool { return r == ' ' || r == '-' }) {
		for i, r := range w {
			if i == 0 || unicode.IsUpper(r) {
				initials.WriteRune(unicode.ToUpper(r))
			}
		}
	}
	ini := initials.String()
	return len(ini) >= 2 && (ini == short || (len(ini) > len(short) && subsequence(short, ini)))
}

func subsequence(short, long string) bool {
	i := 0
	for j := 0; j < len(long) && i < len(short); j++ {
		if long[j] == short[i] {
			i++
		}
	}
	return i == len(short) && long[0] == short[0]
}

// nextSentence returns the first sentence of text (trimmed, maybe empty)
// and the text after it: text is cut at ". ", "! ", "? " and newlines.
func nextSentence(s string) (sent, rest string) { return extractSentences.Next(s) }

// extractSentences is where the rule extractor ends a sentence: a line
// break or the loose rule. It shapes the stored triples.
var extractSentences = text.SentenceRule{Newline: true}
