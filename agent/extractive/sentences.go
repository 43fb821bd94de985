package extractive

import (
	"strings"

	"github.com/kgagent/kgagent/internal/text"
)

// proseSentence is one sentence of proseOf.
type proseSentence struct {
	blk   int
	text  string
	terms []string
}

// proseOf cuts the prose blocks of bs into sentences, with their terms.
func proseOf(bs []block) []proseSentence {
	var out []proseSentence
	for bi, b := range bs {
		if b.code {
			continue
		}
		for _, line := range strings.Split(b.text, "\n") {
			for _, s := range splitSentences(proseLine(line)) {
				out = append(out, proseSentence{blk: bi, text: s, terms: text.AllTerms(s)})
			}
		}
	}
	return out
}

// proseLine is a line of a prose block as sentences are cut from it:
// trimmed, without a list item's "- ", and without footnote marks
// ("JavaScript [1]"), which would read as citations.
func proseLine(line string) string {
	line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- "))
	if strings.IndexByte(line, '[') >= 0 {
		line = footnoteRe.ReplaceAllString(line, "")
	}
	return line
}

// textTerms is text.AllTerms(p.Text), read once.
func (p *passage) textTerms() []string {
	if p.terms == nil {
		p.terms = text.AllTerms(p.Text)
		if p.terms == nil {
			p.terms = []string{}
		}
	}
	return p.terms
}

// sentences is the prose sentences of p (proseOf its blocks).
func (p *passage) sentences() []proseSentence { return proseOf(p.blocks) }
