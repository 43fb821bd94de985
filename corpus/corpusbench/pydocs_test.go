// Package corpusbench holds the corpus quality and speed benchmarks. They
// are tests skipped unless an environment variable points them at their
// data, because they take minutes, not seconds:
//
//	KGAGENT_PYDOCS=/usr/share/doc/python3.11/html go test ./corpus/corpusbench -run PyDocs -v -timeout 30m
//	KGAGENT_SYNTH=200000 go test ./corpus/corpusbench -run Synthetic -v -timeout 30m
package corpusbench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/sqlite"
	"github.com/kgagent/kgagent/crawler/crawlertest"
	"github.com/kgagent/kgagent/internal/text"
)

const pydocsBase = "https://docs.python.org/3.11/"

type question struct {
	ID       string `json:"id"`
	Question string `json:"question"`
	Gold     string `json:"gold_page"`
}

func loadQuestions(t *testing.T, path string) []question {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var qs []question
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var q question
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q)
	}
	return qs
}

func pageText(d kgagent.Document) string {
	var b strings.Builder
	b.WriteString(d.Title)
	for _, s := range d.Sections {
		b.WriteString("\n")
		b.WriteString(s.Heading)
		for _, bl := range s.Blocks {
			b.WriteString("\n")
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}

type score struct {
	name      string
	hit5, rr  float64
	n         int
	latencies []time.Duration
	// the same over the questions that say what they want (see tagOnly)
	ahit5, arr float64
	an         int
}

// tagOnly matches the questions whose module synopsis is only a platform
// tag, e.g. "...for this: (Unix)?": 29 of them ask the same thing for
// different gold pages, so at most a few can be right by any method.
var tagOnly = regexp.MustCompile(`: \([^)]*\)\?$`)

func (s *score) add(q question, pages []string, gold string) {
	s.n++
	answerable := !tagOnly.MatchString(q.Question)
	if answerable {
		s.an++
	}
	for i, p := range pages {
		if p == gold {
			rr := 1 / float64(i+1)
			s.rr += rr
			if i < 5 {
				s.hit5++
			}
			if answerable {
				s.arr += rr
				if i < 5 {
					s.ahit5++
				}
			}
			return
		}
	}
}

func (s *score) String() string {
	line := fmt.Sprintf("%-20s recall@5 %.3f MRR %.3f (all %d) | recall@5 %.3f MRR %.3f (%d not tag-only)",
		s.name, s.hit5/float64(s.n), s.rr/float64(s.n), s.n, s.ahit5/float64(s.an), s.arr/float64(s.an), s.an)
	if len(s.latencies) > 0 {
		p50, p99 := percentiles(s.latencies)
		line += fmt.Sprintf("  latency p50 %v p99 %v", p50, p99)
	}
	return line
}

func percentiles(d []time.Duration) (time.Duration, time.Duration) {
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return at(0.50).Round(time.Microsecond), at(0.99).Round(time.Microsecond)
}

// distinctPages lists the document URLs of hits in order, each once.
func distinctPages(hits []corpus.Hit) []string {
	var out []string
	for _, h := range hits {
		if !slices.Contains(out, h.DocURL) {
			out = append(out, h.DocURL)
		}
	}
	return out
}

func TestPyDocs(t *testing.T) {
	root := os.Getenv("KGAGENT_PYDOCS")
	if root == "" {
		t.Skip("set KGAGENT_PYDOCS=/usr/share/doc/python3.11/html to run the Python docs benchmark")
	}
	qpath := os.Getenv("KGAGENT_PYDOCS_QUESTIONS")
	if qpath == "" {
		qpath = "../../bench/pydocs_questions.jsonl"
	}
	qs := loadQuestions(t, qpath)
	ctx := context.Background()

	start := time.Now()
	docs := crawlertest.ExtractDir(t, root, pydocsBase, "pydocs")
	t.Logf("extracted %d pages in %v", len(docs), time.Since(start).Round(time.Millisecond))

	// Baseline: plain page-level BM25 over each page's whole text.
	var pageTerms [][]string
	for _, d := range docs {
		pageTerms = append(pageTerms, text.ContentWords(pageText(d)))
	}
	bm := text.NewBM25(pageTerms)
	base := &score{name: "baseline page BM25"}
	for _, q := range qs {
		sc := bm.Scores(text.ContentWords(q.Question))
		order := make([]int, len(docs))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return sc[order[a]] > sc[order[b]] })
		var pages []string
		for _, i := range order[:min(50, len(order))] {
			if sc[i] > 0 {
				pages = append(pages, docs[i].URL)
			}
		}
		base.add(q, pages, pydocsBase+q.Gold)
	}

	dbPath := os.Getenv("KGAGENT_PYDOCS_DB") // reuse an index built by an earlier run
	reuse := dbPath != ""
	if reuse {
		if _, err := os.Stat(dbPath); err != nil {
			reuse = false
		}
	} else {
		dbPath = filepath.Join(t.TempDir(), "pydocs.db")
	}
	idx, err := sqlite.Open(sqlite.Config{Path: dbPath,
		TitleWeight: envFloat("KGAGENT_BENCH_TW"), HeadingWeight: envFloat("KGAGENT_BENCH_HW"),
		DenseWeight: envFloat("KGAGENT_BENCH_DW"), KeywordWeight: envFloat("KGAGENT_BENCH_KW"),
		K1: envFloat("KGAGENT_BENCH_K1"), B: envFloat("KGAGENT_BENCH_B"), HeadingRankWeight: envFloat("KGAGENT_BENCH_HR"),
		PageRankWeight: envFloat("KGAGENT_BENCH_PR"), IDFExponent: envFloat("KGAGENT_BENCH_IDFEXP"),
		RRFK: envFloat("KGAGENT_BENCH_RRFK"), PrefilterRows: int(envFloat("KGAGENT_BENCH_PREFILTER")),
		PrefilterMass: envFloat("KGAGENT_BENCH_PREFMASS")})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	lex := corpus.LexicalConfig{Dim: int(envFloat("KGAGENT_BENCH_DIM")), PairWeight: envFloat("KGAGENT_BENCH_PAIR"),
		CharWeight: envFloat("KGAGENT_BENCH_CHAR"), TitleWeight: envFloat("KGAGENT_BENCH_TITLE")}
	svc, err := corpus.NewService(corpus.ServiceConfig{Index: idx, Embedder: corpus.NewLexical(lex),
		Chunk: corpus.ChunkConfig{MaxChars: int(envFloat("KGAGENT_BENCH_CHUNK"))}})
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	chunks := 0
	for _, d := range docs {
		if reuse {
			break
		}
		cs, err := svc.IndexDocument(ctx, d)
		if err != nil {
			t.Fatalf("index %s: %v", d.URL, err)
		}
		chunks += len(cs)
	}
	t.Logf("indexed %d chunks of %d pages in %v (embedder %s)", chunks, len(docs), time.Since(start).Round(time.Millisecond), svc.Embedder().Name())

	results := []*score{base}
	for _, m := range []corpus.Mode{corpus.ModeDense, corpus.ModeKeyword, corpus.ModeHybrid} {
		s := &score{name: "kgagent " + string(m)}
		// warm the vector cache outside the timings
		svc.Search(ctx, corpus.SearchRequest{Query: "warm up", Collection: "pydocs", K: 5, Mode: m})
		var misses []string
		for _, q := range qs {
			t0 := time.Now()
			hits, err := svc.Search(ctx, corpus.SearchRequest{Query: q.Question, Collection: "pydocs", K: 50, Mode: m})
			s.latencies = append(s.latencies, time.Since(t0))
			if err != nil {
				t.Fatal(err)
			}
			pages := distinctPages(hits)
			s.add(q, pages, pydocsBase+q.Gold)
			if m == corpus.ModeHybrid && !slices.Contains(pages[:min(5, len(pages))], pydocsBase+q.Gold) {
				misses = append(misses, fmt.Sprintf("%s -> %v", q.ID, trimBase(pages[:min(3, len(pages))])))
			}
		}
		results = append(results, s)
		if len(misses) > 0 && testing.Verbose() {
			t.Logf("hybrid misses (%d): %s", len(misses), strings.Join(misses[:min(40, len(misses))], "; "))
		}
	}
	// latency of the typical agent search: hybrid, k=10
	typ := &score{name: "kgagent hybrid k=10"}
	for _, q := range qs {
		t0 := time.Now()
		hits, err := svc.Search(ctx, corpus.SearchRequest{Query: q.Question, Collection: "pydocs", K: 10})
		typ.latencies = append(typ.latencies, time.Since(t0))
		if err != nil {
			t.Fatal(err)
		}
		typ.add(q, distinctPages(hits), pydocsBase+q.Gold)
	}
	results = append(results, typ)
	for _, r := range results {
		t.Log(r.String())
	}
}

// envFloat reads a tuning knob (0, the default, when unset).
func envFloat(name string) float64 {
	f, _ := strconv.ParseFloat(os.Getenv(name), 64)
	return f
}

func trimBase(pages []string) []string {
	out := make([]string, len(pages))
	for i, p := range pages {
		out[i] = strings.TrimPrefix(p, pydocsBase)
	}
	return out
}
