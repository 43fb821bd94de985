package graphrag

import (
	"strings"
	"unicode"

	"github.com/kgagent/kgagent/internal/text"
)

// trimWord is a question word (one of strings.Fields) without the
// punctuation around it and a trailing "()": "json.loads()?" → "json.loads".
// QuestionTerms and AnalyzeQuestion read words through it, so both agree on
// what a word is.
func trimWord(f string) string {
	f = strings.TrimFunc(f, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
	})
	return strings.TrimSuffix(f, "()")
}

// QuestionTerms are the terms of a question used to find seed entities: code
// names as written (json.dumps, os.path.join), content words and their
// two- and three-word phrases, lower-cased.
func QuestionTerms(question string) []string {
	var words []string
	for _, f := range strings.Fields(text.ExpandContractions(question)) {
		if f = trimWord(f); f == "" {
			continue
		}
		words = append(words, strings.ToLower(f))
	}
	seen := map[string]bool{}
	var out []string
	add := func(t string) {
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	var run []string // consecutive content words
	flush := func() {
		for n := 3; n >= 2; n-- {
			for i := 0; i+n <= len(run); i++ {
				add(strings.Join(run[i:i+n], " "))
			}
		}
		run = run[:0]
	}
	for _, w := range words {
		if text.IsQuestionStop(w) || len([]rune(w)) < 2 {
			flush()
			continue
		}
		add(w)
		run = append(run, w)
	}
	flush()
	return out
}

// termSet is a question's words, for overlap scoring: each content word in
// its normalised (singular) form, dotted names also split.
func termSet(question string) map[string]bool {
	set := map[string]bool{}
	for _, t := range QuestionTerms(question) {
		if strings.Contains(t, " ") {
			continue
		}
		set[NormalizeName(t)] = true
		set[t] = true
		for _, p := range strings.Split(t, ".") {
			if p != "" && !text.IsQuestionStop(p) {
				set[p] = true
			}
		}
	}
	return set
}
