package agent

import (
	"context"
	"fmt"
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

// TestSearchObservationText: the observation is each passage under its
// source line, then the facts, exactly as fmt wrote it before; written
// into one buffer sized for it (before: Fprintf for each passage and a
// doubling buffer: 39 allocations for this call, 20 now).
func TestSearchObservationText(t *testing.T) {
	ev := &kgagent.Evidence{Query: "q", Passages: []kgagent.EvidencePassage{
		{Title: "json — JSON encoder", HeadingPath: []string{"json — JSON encoder", "Basic Usage"}, URL: "https://d/json.html#basic", Text: "  json.dumps(obj) serialises obj.\n"},
		{Title: "A", HeadingPath: []string{"A"}, URL: "https://d/a.html", Text: "The answer is here."},
		{Title: "B", URL: "https://d/b.html", Text: "docker run ghcr.io/x", SourceOnly: true},
		{Title: "C", HeadingPath: []string{"C", "x", "Last"}, URL: "https://d/c.html#last", Text: strings.Repeat("Long text. ", 300)},
	}, Facts: []kgagent.EvidenceFact{{Text: "json.dumps is a function.", SourceURL: "https://d/json.html#basic"}}}
	b := &Builtins{cfg: &Config{Builtins: BuiltinsConfig{Knowledge: evidenceRetriever{ev}}}}
	call := func() FuncResult {
		n := 0
		res, err := b.search(inCorpus)(context.Background(), FuncCall{Query: kgagent.Message{Text: "q"}, cite: func(kgagent.Source) int { n++; return n }})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := call()
	var want strings.Builder
	for _, p := range res.Evidence.Passages {
		if !p.SourceOnly {
			fmt.Fprintf(&want, "%s\n%s\n\n", fmt.Sprintf("[%d] %s (%s)", p.N, sourceTitle(p), p.URL), strings.TrimSpace(p.Text))
		}
	}
	want.WriteString("Facts:\n")
	fmt.Fprintf(&want, "- %s [%d]\n", res.Evidence.Facts[0].Text, res.Evidence.Facts[0].N)
	if got := res.Message.Text; got != strings.TrimSpace(want.String()) {
		t.Errorf("observation\n%s\nwant\n%s", got, want.String())
	}
	if n := testing.AllocsPerRun(20, func() { call() }); n > 25 {
		t.Errorf("%.0f allocations for an observation of four passages, want at most 25", n)
	}
}

// sourceTitle is the title SourceLine shows: the page's, then its last
// heading when that is not the title.
func sourceTitle(p kgagent.EvidencePassage) string {
	if h := p.HeadingPath; len(h) > 0 && h[len(h)-1] != p.Title {
		return p.Title + " › " + h[len(h)-1]
	}
	return p.Title
}
