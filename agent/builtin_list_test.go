package agent

import (
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
)

// TestEvidenceResultCarriesTheGraphList checks what an LLM reads of a
// graph list: the observation text names every item with its citation
// number, and the result's sources hold each item's own section under
// that number.
func TestEvidenceResultCarriesTheGraphList(t *testing.T) {
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
	res := evidenceResult(ev, cite)
	if want := "- JSONDecodeError: Subclass of ValueError. [2]"; !strings.Contains(res.Message.Text, want) || !strings.Contains(res.Message.Text, "(relation raises of json.loads) [1]") {
		t.Errorf("observation %q lacks %q and the lead", res.Message.Text, want)
	}
	if len(res.Sources) != 2 || res.Sources[1].URL != "https://d/json.html#json.JSONDecodeError" || ev.List.Items[0].N != 2 {
		t.Errorf("sources %+v, item numbered %d: want the item's section as source 2", res.Sources, ev.List.Items[0].N)
	}
}
