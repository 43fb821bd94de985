package graphbench

import (
	"os"
	"testing"

	"github.com/kgagent/kgagent/crawler/crawlertest"
	"github.com/kgagent/kgagent/graphrag"
)

// BenchmarkBuiltinExtract runs the built-in extractor over every Python docs
// page (KGAGENT_PYDOCS) per iteration. It also reports the process's CPU
// time per iteration (cpu-ns/op), steadier than ns/op on a busy machine.
func BenchmarkBuiltinExtract(b *testing.B) {
	root := os.Getenv("KGAGENT_PYDOCS")
	if root == "" {
		b.Skip("set KGAGENT_PYDOCS")
	}
	docs := crawlertest.ExtractDir(b, root, pydocsBase, "pydocs")
	b.ResetTimer()
	n := 0
	cpu0 := cpuNanos()
	for b.Loop() {
		for _, d := range docs {
			ts, err := graphrag.BuiltinExtractor{}.Extract(b.Context(), d, nil)
			if err != nil {
				b.Fatal(err)
			}
			n += len(ts)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "triples/s")
	if cpu := cpuNanos() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op") // GC workers included
	}
}
