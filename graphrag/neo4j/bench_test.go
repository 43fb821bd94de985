package neo4j

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/graphtest"
)

// The benchmark graph is shaped like the Python docs: 500 pages of 200
// triples (100,000 triples) over about 20,500 entities (500 pages, 10,000
// sections, 10,000 terms); 10% has_section, 50% mentions, 30% links_to, 10%
// literal definitions.
const (
	benchDocs  = 500
	benchPer   = 200
	benchVocab = 10000
)

// BenchmarkBulkLoad loads the benchmark graph into a fresh collection per
// iteration, 50 documents (10,000 triples) per ReplaceDocuments transaction,
// and reports triples/s. Needs NEO4J_URL:
//
//	eval "$(deploy/neo4j/start.sh)"
//	go test -run '^$' -bench BulkLoad -benchtime 3x ./graphrag/neo4j/
func BenchmarkBulkLoad(b *testing.B) {
	benchLoad(b, 50)
}

// BenchmarkBulkLoadPerDocument loads the same graph with one transaction per
// document (ReplaceDocument), the path a crawl takes page by page.
func BenchmarkBulkLoadPerDocument(b *testing.B) {
	benchLoad(b, 1)
}

// BenchmarkBulkLoadParallel loads the graph with two concurrent loaders (one
// per core of the test machine), 50 documents per transaction each.
func BenchmarkBulkLoadParallel(b *testing.B) {
	benchLoadN(b, 50, 2)
}

func benchLoad(b *testing.B, docsPerTx int) { benchLoadN(b, docsPerTx, 1) }

// benchLoadN loads the benchmark graph with loaders goroutines, each taking
// the next docsPerTx documents. Besides wall-clock triples/s it reports
// triples per CPU-second of the Neo4j process (JIT compiler threads
// excluded) when NEO4J_PID names it, which says more than wall-clock on a
// shared, loaded machine.
func benchLoadN(b *testing.B, docsPerTx, loaders int) {
	s := realStore(b)
	ctx := context.Background()
	var total, cpu time.Duration
	triples := 0
	for b.Loop() {
		b.StopTimer()
		coll := graphtest.Collection(b, "benchload")
		docs := synthDocs(coll, benchDocs, benchPer, benchVocab)
		next := make(chan []document, len(docs))
		for i := 0; i < len(docs); i += docsPerTx {
			next <- docs[i:min(i+docsPerTx, len(docs))]
		}
		close(next)
		b.StartTimer()
		cpu0 := neo4jCPU()
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, loaders)
		for range loaders {
			wg.Go(func() {
				for batch := range next {
					if err := s.ReplaceDocuments(ctx, coll, docMap(batch)); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		total += time.Since(start)
		cpu += neo4jCPU() - cpu0
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		triples += benchDocs * benchPer
		b.StopTimer()
		if err := s.DeleteCollection(ctx, coll); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(triples)/total.Seconds(), "triples/s")
	if cpu > 0 {
		b.ReportMetric(float64(triples)/cpu.Seconds(), "triples/neo4j-cpu-s")
	}
}

// neo4jCPU returns the CPU time the Neo4j process (NEO4J_PID, exported by
// deploy/neo4j/start.sh) has used, without its JIT compiler threads; 0 when
// unknown.
func neo4jCPU() time.Duration {
	pid := os.Getenv("NEO4J_PID")
	if pid == "" {
		return 0
	}
	dir := "/proc/" + pid + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	ticks := 0
	for _, t := range tasks {
		comm, _ := os.ReadFile(dir + t.Name() + "/comm")
		if strings.Contains(string(comm), "Compiler") || strings.HasPrefix(string(comm), "C1 Compil") || strings.HasPrefix(string(comm), "C2 Compil") {
			continue
		}
		stat, err := os.ReadFile(dir + t.Name() + "/stat")
		if err != nil {
			continue
		}
		st := string(stat)
		f := strings.Fields(st[strings.LastIndexByte(st, ')')+1:])
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.Atoi(f[11])
		sy, _ := strconv.Atoi(f[12])
		ticks += u + sy
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

var (
	benchGraphOnce sync.Once
	benchGraphColl string
	benchGraphErr  error
)

// benchGraph loads the benchmark graph once per test binary; TestMain deletes
// it at the end.
func benchGraph(b *testing.B, s *Store) string {
	benchGraphOnce.Do(func() {
		benchGraphColl = graphtest.Collection(b, "benchgraph")
		docs := synthDocs(benchGraphColl, benchDocs, benchPer, benchVocab)
		for i := 0; i < len(docs) && benchGraphErr == nil; i += 50 {
			benchGraphErr = s.ReplaceDocuments(context.Background(), benchGraphColl, docMap(docs[i:min(i+50, len(docs))]))
		}
	})
	if benchGraphErr != nil {
		b.Fatal(benchGraphErr)
	}
	return benchGraphColl
}

// BenchmarkExpand measures graph retrieval on the benchmark graph: Expand
// from 3 random term entities, 2 hops, 30 triples per entity (the
// retriever's defaults), and reports p50 and p95 latency in ms.
//
//	go test -run '^$' -bench Expand -benchtime 300x ./graphrag/neo4j/
func BenchmarkExpand(b *testing.B) {
	s := realStore(b)
	coll := benchGraph(b, s)
	r := rand.New(rand.NewPCG(1, 2))
	lim := graphrag.ExpandLimits{Hops: 2, TriplesPerEntity: 30}
	var lat []time.Duration
	n := 0
	for b.Loop() {
		seeds := []string{}
		for range 3 {
			seeds = append(seeds, graphrag.EntityID(fmt.Sprintf("term %d", r.IntN(benchVocab))))
		}
		start := time.Now()
		got, err := s.Expand(context.Background(), coll, seeds, lim)
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		n += len(got)
	}
	reportLatency(b, lat)
	b.ReportMetric(float64(n)/float64(len(lat)), "triples/op")
}

// BenchmarkRetrieve measures the store's part of graph retrieval for a
// question: seed entities by two terms (Entities, limit 50), then Expand from
// the first 5 seeds, 2 hops, 30 triples per entity; reports p50/p95 in ms.
//
//	go test -run '^$' -bench Retrieve -benchtime 300x ./graphrag/neo4j/
func BenchmarkRetrieve(b *testing.B) {
	s := realStore(b)
	coll := benchGraph(b, s)
	r := rand.New(rand.NewPCG(3, 4))
	lim := graphrag.ExpandLimits{Hops: 2, TriplesPerEntity: 30}
	var lat []time.Duration
	for b.Loop() {
		terms := []string{fmt.Sprintf("term %d", r.IntN(benchVocab)), fmt.Sprintf("Section %d.%d", r.IntN(benchDocs), r.IntN(20))}
		start := time.Now()
		ents, err := s.Entities(context.Background(), coll, terms, 50)
		if err != nil {
			b.Fatal(err)
		}
		var seeds []string
		for _, e := range ents[:min(5, len(ents))] {
			seeds = append(seeds, e.ID)
		}
		if _, err := s.Expand(context.Background(), coll, seeds, lim); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	reportLatency(b, lat)
}

func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	ms := func(q float64) float64 {
		return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.95), "p95-ms")
}

// TestMain deletes the benchmark graph, if a benchmark loaded one.
func TestMain(m *testing.M) {
	code := m.Run()
	if benchGraphColl != "" && sharedStore != nil {
		if err := sharedStore.DeleteCollection(context.Background(), benchGraphColl); err != nil {
			fmt.Println("deleting the benchmark graph:", err)
		}
	}
	if sharedStore != nil {
		_ = sharedStore.Close()
	}
	os.Exit(code)
}
