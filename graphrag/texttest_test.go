package graphrag_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/internal/text/texttest"
)

// TestQuestionTermsReadQuestionsAsText: the graph seeds a question with the
// words package text gives every reader of it (texttest), code names kept
// whole ("json.loads") and phrases added, never a contraction's fragment or
// filler.
func TestQuestionTermsReadQuestionsAsText(t *testing.T) {
	for _, q := range texttest.Questions {
		var words []string
		for _, term := range graphrag.QuestionTerms(q.Q) {
			if strings.Contains(term, " ") {
				continue // a phrase of the words
			}
			words = append(words, strings.Split(term, ".")...)
		}
		if !slices.Equal(words, q.Words) {
			t.Errorf("QuestionTerms(%q) has the words %q, want %q", q.Q, words, q.Words)
		}
	}
}
