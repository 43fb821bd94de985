package sqlite

import (
	"fmt"
	"testing"

	"github.com/kgagent/kgagent/corpus"
)

// BenchmarkAddTerms measures what the search copy does with a written
// chunk's terms as its embedder took them (corpus.ChunkTerms): weigh them
// (chunkTermsFrom) and add them to the keyword index (addTerms), for
// 1,280 chunks shaped like the Python docs' (benchDocs).
func BenchmarkAddTerms(b *testing.B) {
	_, chunks, _ := benchDocs(64, 20)
	var terms []corpus.ChunkTerms
	for _, cs := range chunks {
		for _, c := range cs {
			terms = append(terms, corpus.TermsOf(c))
		}
	}
	w := [3]float32{6, 2, 1}
	for b.Loop() {
		m := newMemColl(384, w)
		for i := range terms {
			ct := chunkTermsFrom(&terms[i], w)
			m.addTerms(int64(i+1), fmt.Sprint(i/20), &ct)
		}
	}
}
