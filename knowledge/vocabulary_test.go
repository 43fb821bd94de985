package knowledge_test

import (
	"context"
	"slices"
	"testing"

	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/internal/text/texttest"
	"github.com/kgagent/kgagent/knowledge"
)

// vocabSearch is a searcher with a vocabulary that knows no word: it
// records the words it was asked about.
type vocabSearch struct {
	fakeSearch
	asked *[]string
}

func (v vocabSearch) Known(ctx context.Context, collection string, words []string) ([]bool, error) {
	*v.asked = append((*v.asked)[:0], words...)
	return make([]bool, len(words)), nil
}

var _ corpus.Vocabulary = vocabSearch{}

// TestVocabularyCheckReadsQuestionsAsText: the vocabulary check looks up
// the question's words as package text reads them (texttest), so a
// contraction's fragment ("won" of "won't") or filler ("show", "please")
// is never reported as a word the docs lack.
func TestVocabularyCheckReadsQuestionsAsText(t *testing.T) {
	for _, q := range texttest.Questions {
		var asked []string
		r := knowledge.NewRetriever(vocabSearch{fakeSearch{hit("https://d/a.html#x", "A", "Some text.", 1)}, &asked}, nil, knowledge.RetrieveConfig{})
		ev, err := r.Retrieve(context.Background(), q.Q, "c", 5)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(asked, q.Words) || !slices.Equal(ev.Unknown, q.Words) {
			t.Errorf("%q: vocabulary asked %q, unknown %q; want %q", q.Q, asked, ev.Unknown, q.Words)
		}
	}
}
