package sqlite_test

import (
	"fmt"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag/graphtest"
)

// BenchmarkReplaceDocument loads documents of 300 triples each (100
// subjects, shared objects), reporting triples/s.
func BenchmarkReplaceDocument(b *testing.B) {
	s := open(b)
	n := 0
	for b.Loop() {
		doc := fmt.Sprintf("https://x.test/%d.html", n)
		var ts []kgagent.Triple
		for i := range 300 {
			ts = append(ts, graphtest.T("c", doc, fmt.Sprintf("s%d_%d", n, i%100), "links_to", fmt.Sprintf("object %d", i), fmt.Sprintf("a%d", i%10)))
		}
		if err := s.ReplaceDocument(b.Context(), "c", doc, ts); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n*300)/b.Elapsed().Seconds(), "triples/s")
}
