package text

import (
	"slices"
	"strings"
)

// MaxTermLen is the longest token, in bytes, that makes a term; longer
// ones (base64, hashes, minified code) are left out.
const MaxTermLen = 64

// ContentWords returns the words of s (Tokens: lower case, contractions
// written out) that are not stop words and not longer than MaxTermLen, in
// order, repeats kept.
func ContentWords(s string) []string {
	toks := Tokens(s)
	out := toks[:0]
	for _, t := range toks {
		if len(t) > MaxTermLen || IsStopWord(t) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// Terms returns the terms of a document's text: its ContentWords, each
// stemmed (Stem). The keyword index and the BM25 scorers index documents
// with it.
func Terms(s string) []string {
	ws := ContentWords(s)
	for i, w := range ws {
		ws[i] = Stem(w)
	}
	return ws
}

// QuestionWords returns the words of a question that may say what it is
// about: its ContentWords without filler (IsFiller), in order, repeats
// kept. The vocabulary check looks these words up and an abstention names
// them.
func QuestionWords(q string) []string {
	ws := ContentWords(q)
	out := ws[:0]
	for _, w := range ws {
		if !IsFiller(w) {
			out = append(out, w)
		}
	}
	return out
}

// QuestionTerms returns the terms of a question or search query: its
// QuestionWords, each stemmed. Keyword search, the vocabulary check, the
// router and the answer writer all read a question through it, so they
// agree on what it asks about.
func QuestionTerms(q string) []string {
	ws := QuestionWords(q)
	for i, w := range ws {
		ws[i] = Stem(w)
	}
	return ws
}

// Distinct returns terms without repeats, in first-seen order.
func Distinct(terms []string) []string {
	seen := make(map[string]bool, len(terms))
	out := make([]string, 0, len(terms))
	for _, t := range terms {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// Term is the key the answer writer matches a lower-case word by: the
// short form docs commonly write for it ("authentication" → "auth",
// "directory" → "dir", "maximum" → "max"), else its LightStem. Search does not
// fold synonyms (the stored index terms are stems), so a question's
// "authentication" finds pages by its stem while the answer writer accepts
// evidence that says "auth".
func Term(w string) string {
	if t, ok := synonyms[w]; ok {
		return t
	}
	t := LightStem(w)
	if x, ok := synonyms[t]; ok {
		return x
	}
	return t
}

// synonyms fold common abbreviations onto one term (keys: words, and
// light stems).
var synonyms = map[string]string{"maximum": "max", "minimum": "min", "configuration": "config", "configure": "config",
	"directory": "dir", "folder": "dir", "database": "db", "parameter": "param", "documentation": "doc", "docs": "doc",
	"authentication": "auth", "authorization": "auth", "milliseconds": "ms", "millisecond": "ms", "seconds": "second"}

// Keys returns the distinct answer-writer keys (Term) of the QuestionWords
// of s, in first-seen order.
func Keys(s string) []string {
	ws := QuestionWords(s)
	for i, w := range ws {
		ws[i] = Term(w)
	}
	return Distinct(ws)
}

// snake reports whether w is a snake_case word whose parts AllTerms adds
// (an underscore past its first byte).
func snake(w string) bool { return strings.IndexByte(w, '_') > 0 }

// AllTerms returns the Term of every word of s, stop words included, in
// order; a snake_case word also yields the terms of its parts
// (max_body_size: max_body_size, max, body, size). The answer writer matches
// sentences with it, where positions and identifiers' parts count.
func AllTerms(s string) []string {
	toks := Tokens(s)
	if toks == nil {
		return []string{}
	}
	if !slices.ContainsFunc(toks, snake) {
		// one term a word: Tokens' own slice holds them
		for i, w := range toks {
			toks[i] = Term(w)
		}
		return toks
	}
	out := make([]string, 0, len(toks))
	for _, w := range toks {
		out = append(out, Term(w))
		if snake(w) {
			for _, p := range strings.Split(w, "_") {
				if p != "" {
					out = append(out, Term(p))
				}
			}
		}
	}
	return out
}
