package extractive

import (
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
)

// shelveEvidence is what a search finds for "keep a dictionary on disk
// between runs of my program": no page holds two thirds of the question's
// words, and the semantic model puts the shelve section closest.
func shelveEvidence(shelveCos float64) []kgagent.Evidence {
	return ev("",
		kgagent.EvidencePassage{URL: "http://py/library/idle.html#user-output", Title: "IDLE", HeadingPath: []string{"User output in Shell"},
			Text: "Keep the program's output in the Shell window between runs.", Semantic: 0.41},
		kgagent.EvidencePassage{URL: "http://py/library/shelve.html#module-shelve", Title: "shelve — Python object persistence", HeadingPath: []string{"shelve — Python object persistence"},
			Text: "A shelf is a persistent, dictionary-like object stored in a file on disk.", Semantic: shelveCos},
		kgagent.EvidencePassage{URL: "http://py/library/stdtypes.html#dict", Title: "Built-in Types", HeadingPath: []string{"Mapping Types — dict"},
			Text: "A mapping object maps hashable values to arbitrary objects. The dictionary is the standard mapping type.", Semantic: 0.52},
	)
}

// TestSemanticLeadAnswersUsersWords: a question in users' words whose
// words no page holds together is answered from the section the semantic
// model finds closest when it is sure (cosine >= semanticLeadMin); below
// that, or when the question names something, it is still the not-found
// abstention. Before, every such question was an abstention.
func TestSemanticLeadAnswersUsersWords(t *testing.T) {
	q := "keep a dictionary on disk between runs of my program"
	got := Compose(q, shelveEvidence(0.66), Config{})
	if Abstained(got) || !strings.Contains(got, "A shelf is a persistent, dictionary-like object stored in a file on disk [2]") {
		t.Errorf("sure: answer = %q, want it from the shelve section [2]", got)
	}
	if got := Compose(q, shelveEvidence(0.55), Config{}); !strings.HasPrefix(got, NotFound) {
		t.Errorf("unsure: answer = %q, want the not-found abstention", got)
	}
	if got := Compose("keep a dictionary on disk between runs of my Django program", shelveEvidence(0.66), Config{}); !Abstained(got) {
		t.Errorf("a question naming something: answer = %q, want an abstention", got)
	}
	// Without semantic vectors (every cosine 0) nothing changes.
	e := shelveEvidence(0)
	for i := range e[0].Passages {
		e[0].Passages[i].Semantic = 0
	}
	if got := Compose(q, e, Config{}); !strings.HasPrefix(got, NotFound) {
		t.Errorf("lexical: answer = %q, want the not-found abstention", got)
	}
}
