package sqlite_test

import (
	"fmt"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
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

// BenchmarkFind looks triples up by subject name, by object and by
// predicate in a collection of 30,000 triples (a name must never cost a
// scan of the collection).
func BenchmarkFind(b *testing.B) {
	s := open(b)
	for d := range 100 {
		doc := fmt.Sprintf("https://x.test/%d.html", d)
		var ts []kgagent.Triple
		for i := range 300 {
			ts = append(ts, graphtest.T("c", doc, fmt.Sprintf("Subject %d", (d*300+i)%5000), "links_to", fmt.Sprintf("object %d", i), ""))
		}
		if err := s.ReplaceDocument(b.Context(), "c", doc, ts); err != nil {
			b.Fatal(err)
		}
	}
	for _, p := range []graphrag.Pattern{
		{Collection: "c", S: "SUBJECT 42"},
		{Collection: "c", O: "object 7", Limit: 10},
		{Collection: "c", P: "links_to", Limit: 100},
		{Collection: "c"},
	} {
		b.Run(fmt.Sprintf("s=%q,o=%q,p=%q", p.S, p.O, p.P), func(b *testing.B) {
			for b.Loop() {
				if ts, err := s.Find(b.Context(), p); err != nil || len(ts) == 0 {
					b.Fatal(len(ts), err)
				}
			}
		})
	}
}
