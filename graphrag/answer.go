package graphrag

import (
	"context"
	"fmt"
	"strings"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// FactText renders a triple as a sentence.
func FactText(t kgagent.Triple) string {
	s, o := t.Subject.Name, t.Object.Name
	if t.Subject.Type == TypeSection {
		s = shortHeading(s)
	}
	if t.Object.Type == TypeSection {
		o = shortHeading(o)
	}
	switch t.Predicate {
	case PredIsDefinedAs:
		return s + ": " + t.Literal
	case PredIsA:
		return s + " is " + article(o) + " " + o
	case PredDefines:
		return s + " defines " + o
	case PredHasSection:
		return s + " has a section “" + o + "”"
	case PredMentions:
		return "The section “" + s + "” mentions " + o
	case PredLinksTo:
		return s + " links to " + o
	case PredAliasOf:
		return s + " is another name for " + o
	}
	if t.Literal != "" {
		o = t.Literal
	}
	return s + " " + strings.ReplaceAll(t.Predicate, "_", " ") + " " + o
}

// Answer retrieves facts for a question and composes a deterministic answer
// from the top AnswerFacts of them, each cited by its number in Sources.
func (s *Service) Answer(ctx context.Context, question, collection string) (GraphAnswer, error) {
	facts, err := s.Retrieve(ctx, question, collection)
	if err != nil {
		return GraphAnswer{}, err
	}
	ans := GraphAnswer{Facts: facts, Sources: SourcesOf(facts)}
	if len(facts) == 0 {
		ans.Facts = []Fact{}
		ans.Answer = fmt.Sprintf("The knowledge graph of collection %q has no facts about this question.", collection)
		return ans, nil
	}
	index := map[string]int{}
	for i, src := range ans.Sources {
		index[src.URL] = i + 1
	}
	var b strings.Builder
	b.WriteString("From the knowledge graph:\n")
	said := map[string]bool{}
	for _, f := range facts {
		if len(said) == s.cfg.AnswerFacts {
			break
		}
		text := strings.TrimSpace(text.Clip(f.Text, 500))
		if said[text] {
			continue // the same fact from another page
		}
		said[text] = true
		fmt.Fprintf(&b, "- %s [%d]\n", text, index[f.SourceURL])
	}
	ans.Answer = strings.TrimRight(b.String(), "\n")
	return ans, nil
}

// SourcesOf lists the sections of facts, deduplicated by URL, in the order of
// first use, each with the best score among its facts and a title naming the
// first fact's subject.
func SourcesOf(facts []Fact) []kgagent.Source {
	out := []kgagent.Source{}
	at := map[string]int{}
	for _, f := range facts {
		if f.SourceURL == "" {
			continue
		}
		if i, ok := at[f.SourceURL]; ok {
			if f.Score > out[i].Score {
				out[i].Score = f.Score
			}
			continue
		}
		at[f.SourceURL] = len(out)
		title := f.Triple.Subject.Name
		if f.Triple.Subject.Type == TypePage {
			title = f.Triple.Object.Name
		}
		out = append(out, kgagent.Source{URL: f.SourceURL, Title: title, Score: f.Score, Snippet: text.Clip(f.Text, 300)})
	}
	return out
}

// shortHeading cuts a long heading (such as a full API signature) to its
// first 80 bytes.
func shortHeading(h string) string {
	if len(h) <= 80 {
		return h
	}
	if i := strings.IndexByte(h, '('); i > 0 && i < 80 {
		return h[:i] + "(…)"
	}
	return text.Truncate(h, 80)
}

// article is "an" before a vowel letter, else "a".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an"
	}
	return "a"
}
