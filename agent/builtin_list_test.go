package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
)

// evidenceRetriever is a Retriever that finds ev.
type evidenceRetriever struct{ ev *kgagent.Evidence }

func (r evidenceRetriever) Retrieve(context.Context, string, string, int) (kgagent.Evidence, error) {
	return *r.ev, nil
}

// TestSearchResultCarriesTheGraphList checks what an LLM reads of a
// graph list that fixie_query_corpus found: the observation text names
// every item with its citation number, and the result's sources hold each
// item's own section under that number.
func TestSearchResultCarriesTheGraphList(t *testing.T) {
	ev := &kgagent.Evidence{Query: "q", Passages: []kgagent.EvidencePassage{},
		List: &kgagent.EvidenceList{Shape: kgagent.ShapeRelation, Subject: "json.loads", Relation: "raises", SourceURL: "https://d/json.html#json.loads",
			Items: []kgagent.EvidenceItem{{Name: "JSONDecodeError", Text: "Subclass of ValueError.", SourceURL: "https://d/json.html#json.JSONDecodeError"}}}}
	var cited []string
	cite := func(s kgagent.Source) int {
		for i, u := range cited {
			if u == s.URL {
				return i + 1
			}
		}
		cited = append(cited, s.URL)
		return len(cited)
	}
	b := &Builtins{cfg: &Config{Builtins: BuiltinsConfig{Knowledge: evidenceRetriever{ev}}}}
	res, err := b.search(inCorpus)(context.Background(), FuncCall{Query: kgagent.Message{Text: "q"}, cite: cite})
	if err != nil {
		t.Fatal(err)
	}
	if want := "- JSONDecodeError: Subclass of ValueError. [2]"; !strings.Contains(res.Message.Text, want) || !strings.Contains(res.Message.Text, "(relation raises of json.loads) [1]") {
		t.Errorf("observation %q lacks %q and the lead", res.Message.Text, want)
	}
	if len(res.Sources) != 2 || res.Sources[1].URL != "https://d/json.html#json.JSONDecodeError" || res.Evidence.List.Items[0].N != 2 {
		t.Errorf("sources %+v, item numbered %d: want the item's section as source 2", res.Sources, ev.List.Items[0].N)
	}
}

// TestSearchObservationLeavesSourceOnlyText: a passage kept only to name
// one of the search's first pages is a source of the result, but its text
// is not in the observation an LLM reads (the built-in answerer does not
// compose from it either).
func TestSearchObservationLeavesSourceOnlyText(t *testing.T) {
	ev := &kgagent.Evidence{Query: "q", Passages: []kgagent.EvidencePassage{
		{Title: "A", URL: "https://d/a.html", DocURL: "https://d/a.html", Text: "The answer is here."},
		{Title: "B", URL: "https://d/b.html", DocURL: "https://d/b.html", Text: "docker run ghcr.io/x", SourceOnly: true},
	}}
	n := 0
	cite := func(kgagent.Source) int { n++; return n }
	b := &Builtins{cfg: &Config{Builtins: BuiltinsConfig{Knowledge: evidenceRetriever{ev}}}}
	res, err := b.search(inCorpus)(context.Background(), FuncCall{Query: kgagent.Message{Text: "q"}, cite: cite})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Message.Text, "The answer is here.") || strings.Contains(res.Message.Text, "docker run") {
		t.Errorf("observation %q: want the answer passage's text and not the source-only one's", res.Message.Text)
	}
	if len(res.Sources) != 2 || res.Sources[1].URL != "https://d/b.html" {
		t.Errorf("sources %+v: want both pages", res.Sources)
	}
}
