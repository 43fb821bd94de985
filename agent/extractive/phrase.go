package extractive

import (
	"strings"
	"unicode"

	"github.com/kgagent/kgagent/internal/text"
)

// compoundNames returns the runs of two or more capitalised words or
// acronyms inside question ("AWS Lambda", "VS Code", "Microsoft Excel"):
// the name of a product or service, which the docs must hold as the
// phrase, not as its words apart ("lambda" expressions and "AWS"-named
// parameters in the Python docs say nothing about AWS Lambda). The
// question's first word never starts one (it is capitalised as a sentence
// start), nor does a stop word.
func compoundNames(question string) []string {
	fields := strings.Fields(question)
	var out, run []string
	flush := func() {
		if len(run) >= 2 {
			out = append(out, strings.Join(run, " "))
		}
		run = nil
	}
	for i, f := range fields {
		w, named := nameWord(fields, i)
		if named && lettersOnly(w) {
			run = append(run, w)
		} else {
			flush()
		}
		if w != strings.TrimLeft(f, "\"'(`“‘") || strings.TrimRight(f, "?,.!;:\"')`”’") != f {
			flush() // punctuation ends a name
		}
	}
	flush()
	return out
}

func lettersOnly(w string) bool {
	for _, r := range w {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return true
}

// absentPhrases returns the question's compound names that no passage
// holds as a phrase (in its text, title or headings; case and the
// punctuation between words ignored; one word may come between two of its
// words: "ElementTree XML API" holds "ElementTree API").
func (q question) absentPhrases(ps []*passage) []string {
	if len(q.compounds) == 0 {
		return nil
	}
	var texts [][]string
	for _, p := range ps {
		texts = append(texts, strings.Fields(wordsOnly(p.Title+" "+strings.Join(p.HeadingPath, " ")+" "+p.Text)))
	}
	var out []string
	for _, c := range q.compounds {
		want := strings.Fields(wordsOnly(c))
		found := false
		for _, ws := range texts {
			if holdsPhrase(ws, want) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, c)
		}
	}
	return out
}

// maxPhraseGap is how many words may come between two words of a phrase.
const maxPhraseGap = 1

// holdsPhrase reports whether words holds want in order, each word at most
// maxPhraseGap words after the one before.
func holdsPhrase(words, want []string) bool {
	if len(want) == 0 {
		return true
	}
	for i, w := range words {
		if w != want[0] {
			continue
		}
		at, ok := i, true
		for _, next := range want[1:] {
			found := -1
			for j := at + 1; j < len(words) && j <= at+1+maxPhraseGap; j++ {
				if words[j] == next {
					found = j
					break
				}
			}
			if found < 0 {
				ok = false
				break
			}
			at = found
		}
		if ok {
			return true
		}
	}
	return false
}

// wordsOnly lower-cases s and writes every run of other characters than
// letters and digits as one space.
func wordsOnly(s string) string { return text.JoinWords(s, ' ') }
