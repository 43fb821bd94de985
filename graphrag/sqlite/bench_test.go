package sqlite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/crawler/crawlertest"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/graphtest"
	"github.com/kgagent/kgagent/graphrag/sqlite"
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

// BenchmarkPyDocsLoad writes the built-in extractor's triples of every
// Python docs page (KGAGENT_PYDOCS) into a fresh store the way an ingestion
// does: many writers at once (32; KGAGENT_BENCH_WRITERS changes it), so
// their writes share transactions; "pages" with the indexes kept current,
// "bulk" as a bulk load (BulkLoad, then Close builds them).
// It measures the store's write path alone (the single writer is the floor
// of an ingestion's wall time):
//
//	KGAGENT_PYDOCS=/usr/share/doc/python3.11/html go test ./graphrag/sqlite -run '^$' -bench PyDocsLoad -benchtime 1x
func BenchmarkPyDocsLoad(b *testing.B) {
	root := os.Getenv("KGAGENT_PYDOCS")
	if root == "" {
		b.Skip("set KGAGENT_PYDOCS")
	}
	docs := crawlertest.ExtractDir(b, root, "https://docs.python.org/3.11/", "pydocs")
	type page struct {
		url string
		ts  []kgagent.Triple
	}
	var pages []page
	n := 0
	for _, d := range docs {
		ts, err := graphrag.BuiltinExtractor{}.Extract(b.Context(), d, corpus.ChunkDocument(d, corpus.ChunkConfig{}))
		if err != nil {
			b.Fatal(err)
		}
		pages = append(pages, page{d.URL, graphrag.Dedupe(ts)})
		n += len(ts)
	}
	for _, bulk := range []bool{false, true} {
		name := "pages"
		if bulk {
			name = "bulk" // into an empty store with BulkLoad, Close included
		}
		b.Run(name, func(b *testing.B) {
			var cpu, wcpu, written time.Duration
			for b.Loop() {
				b.StopTimer()
				s, err := sqlite.Open(filepath.Join(b.TempDir(), "graph.db"))
				if err != nil {
					b.Fatal(err)
				}
				c0, t0 := cpuTime(), time.Now()
				b.StartTimer()
				if bulk {
					if on, err := s.BulkLoad(b.Context()); err != nil || !on {
						b.Fatal(on, err)
					}
				}
				work := make(chan page)
				var wg sync.WaitGroup
				writers := 32
				if w, err := strconv.Atoi(os.Getenv("KGAGENT_BENCH_WRITERS")); err == nil {
					writers = w
				}
				for range writers {
					wg.Go(func() {
						for p := range work {
							if err := s.ReplaceDocument(b.Context(), "pydocs", p.url, p.ts); err != nil {
								b.Error(err)
							}
						}
					})
				}
				for _, p := range pages {
					work <- p
				}
				close(work)
				wg.Wait()
				written += time.Since(t0)
				wcpu += cpuTime() - c0
				if bulk {
					if err := s.Close(); err != nil {
						b.Fatal(err)
					}
				}
				cpu += cpuTime() - c0
				b.StopTimer()
				if !bulk {
					s.Close()
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "triples/s")
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/load")
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/load")
			// the writes alone, without Close (a bulk load's finish)
			b.ReportMetric(written.Seconds()/float64(b.N), "writes-s/load")
			b.ReportMetric(wcpu.Seconds()/float64(b.N), "writes-cpu-s/load")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
