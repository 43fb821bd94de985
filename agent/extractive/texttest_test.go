package extractive

import (
	"slices"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text/texttest"
)

// TestAnswerWriterReadsQuestionsAsText: the answer writer requires the
// terms package text gives every reader of the question (texttest), never a
// fragment of a contraction.
func TestAnswerWriterReadsQuestionsAsText(t *testing.T) {
	for _, q := range texttest.Questions {
		if got := analyse(q.Q).terms; !slices.Equal(got, q.Keys) {
			t.Errorf("analyse(%q).terms = %q, want %q", q.Q, got, q.Keys)
		}
	}
}

// TestNoAbstentionOnAContractionFragment is issue 22's symptom: the
// vocabulary check and the answer writer read "won't" as "will not", so no
// answer says the docs don't mention "won".
func TestNoAbstentionOnAContractionFragment(t *testing.T) {
	q := "the server won't start because the port is already used"
	ev := kgagent.Evidence{Passages: []kgagent.EvidencePassage{{URL: "http://docs/ports.html", DocURL: "http://docs/ports.html",
		Title: "Ports", Text: "If the server does not start, another process holds its port: stop it or set a free port.", Score: 1}},
		Unknown: []string{"won"}} // what the vocabulary check reported before
	ans := Compose(q, []kgagent.Evidence{ev}, Config{})
	if strings.Contains(ans, "won") {
		t.Fatalf("Compose(%q) = %q: names the fragment \"won\"", q, ans)
	}
}
