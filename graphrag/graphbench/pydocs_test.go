// Package graphbench holds the GraphRAG speed benchmark on the Python
// documentation: it builds the graph of every page with the crawler's
// extractor, the corpus chunker and the built-in triple extractor into the
// embedded store, then measures graph retrieval. It is a test skipped unless
// KGAGENT_PYDOCS points at the HTML docs, because building takes minutes:
//
//	KGAGENT_PYDOCS=/usr/share/doc/python3.11/html go test ./graphrag/graphbench -run PyDocs -v -timeout 30m
package graphbench

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	corpussqlite "github.com/kgagent/kgagent/corpus/sqlite"
	"github.com/kgagent/kgagent/crawler/crawlertest"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/sqlite"
)

const pydocsBase = "https://docs.python.org/3.11/"

func percentile(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)]
}

// handQuestions are questions a docs chatbot gets, with the entity whose facts
// a good answer uses.
var handQuestions = []struct{ q, entity string }{
	{"What does json.dumps do?", "json.dumps"},
	{"How do I join paths with os.path.join?", "os.path.join"},
	{"What is the global interpreter lock?", "global interpreter lock"},
	{"What is a decorator?", "decorator"},
	{"What is a generator?", "generator"},
	{"What does itertools.chain do?", "itertools.chain"},
	{"What is collections.OrderedDict?", "collections.ordereddict"},
	{"What does subprocess.run return?", "subprocess.run"},
	{"How do I parse command line arguments with argparse?", "argparse"},
	{"What is a list comprehension?", "list comprehension"},
	{"What does functools.lru_cache do?", "functools.lru_cache"},
	{"What is asyncio.gather?", "asyncio.gather"},
	{"What is an iterable?", "iterable"},
	{"What does re.compile do?", "re.compile"},
	{"What is a context manager?", "context manager"},
	{"What does pathlib.Path.glob do?", "pathlib.path.glob"},
	{"What is the datetime.timedelta class?", "datetime.timedelta"},
	{"What does shutil.copytree do?", "shutil.copytree"},
	{"What is a named tuple?", "named tuple"},
	{"What does sys.exit do?", "sys.exit"},
}

func TestPyDocsGraph(t *testing.T) {
	root := os.Getenv("KGAGENT_PYDOCS")
	if root == "" {
		t.Skip("set KGAGENT_PYDOCS to the Python HTML docs (e.g. /usr/share/doc/python3.11/html)")
	}
	ctx := t.Context()
	dir := os.Getenv("KGAGENT_GRAPHBENCH_DIR") // reuse a graph built before
	reuse := false
	if dir == "" {
		dir = t.TempDir()
	} else if _, err := os.Stat(filepath.Join(dir, sqlite.FileName)); err == nil {
		reuse = true
	}
	start := time.Now()
	docs := crawlertest.ExtractDir(t, root, pydocsBase, "pydocs")
	t.Logf("extracted %d pages in %v", len(docs), time.Since(start).Round(time.Millisecond))

	store, err := sqlite.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ix, err := corpussqlite.Open(corpussqlite.Config{Path: filepath.Join(dir, "index.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	emb := corpus.NewLexical(corpus.LexicalConfig{})
	// Retrieval knobs, to try settings without editing the defaults.
	knobs := graphrag.Config{SeedEntities: envInt("KGAGENT_GRAPHBENCH_SEEDS"), Hops: envInt("KGAGENT_GRAPHBENCH_HOPS"),
		TriplesPerEntity: envInt("KGAGENT_GRAPHBENCH_TPE"), EdgesPerHop: envInt("KGAGENT_GRAPHBENCH_EDGES")}
	cfgIdx, cfgNames := knobs, knobs
	cfgIdx.Store, cfgIdx.Embedder, cfgIdx.Index = store, emb, ix
	cfgNames.Store = store
	withIdx, err := graphrag.New(cfgIdx)
	if err != nil {
		t.Fatal(err)
	}
	namesOnly, err := graphrag.New(cfgNames)
	if err != nil {
		t.Fatal(err)
	}

	start = time.Now()
	total := 0
	anchors := map[string]map[string]bool{} // doc URL -> its section anchors
	for _, d := range docs {
		if !reuse {
			chunks := corpus.ChunkDocument(d, corpus.ChunkConfig{})
			n, err := withIdx.IndexDocument(ctx, d, chunks)
			if err != nil {
				t.Fatalf("index %s: %v", d.URL, err)
			}
			total += n
		}
		as := map[string]bool{}
		for _, s := range d.Sections {
			as[s.Anchor] = true
		}
		anchors[d.URL] = as
	}
	el := time.Since(start)
	triples, entities, _ := store.Stats(ctx, "pydocs")
	t.Logf("indexed %d triples (%d stored, %d entities) from %d pages in %v: %.0f triples/s (extraction, store and entity index)",
		total, triples, entities, len(docs), el.Round(time.Millisecond), float64(total)/el.Seconds())

	if !reuse {
		// The embedded store alone: extraction first, then bulk load into a
		// fresh file, one transaction per page.
		t0 := time.Now()
		type extracted struct {
			url string
			ts  []kgagent.Triple
		}
		var ex []extracted
		n := 0
		for _, d := range docs {
			ts, err := graphrag.BuiltinExtractor{}.Extract(ctx, d, corpus.ChunkDocument(d, corpus.ChunkConfig{}))
			if err != nil {
				t.Fatal(err)
			}
			ex = append(ex, extracted{d.URL, ts})
			n += len(ts)
		}
		extractTime := time.Since(t0)
		bulk, err := sqlite.Open(filepath.Join(t.TempDir(), "bulk.db"))
		if err != nil {
			t.Fatal(err)
		}
		t0 = time.Now()
		for _, e := range ex {
			if err := bulk.ReplaceDocument(ctx, "pydocs", e.url, e.ts); err != nil {
				t.Fatal(err)
			}
		}
		loadTime := time.Since(t0)
		bulk.Close()
		t.Logf("built-in extraction (with chunking): %d triples in %v; embedded store bulk load: %v, %.0f triples/s",
			n, extractTime.Round(time.Millisecond), loadTime.Round(time.Millisecond), float64(n)/loadTime.Seconds())
	}

	// Every triple's source is a real section of its page.
	all, err := store.Find(ctx, graphrag.Pattern{Collection: "pydocs", Limit: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for _, tr := range all {
		u, frag, _ := strings.Cut(tr.SourceURL, "#")
		if u != tr.DocURL || !anchors[tr.DocURL][frag] {
			bad++
			if bad <= 5 {
				t.Errorf("source %q is not a section of %q", tr.SourceURL, tr.DocURL)
			}
		}
	}
	t.Logf("checked %d triples: %d with a source that is not a section of their page", len(all), bad)

	// Questions: the hand-written ones, then "What does X do?" for API
	// entities picked at random from the graph.
	type q struct{ q, entity string }
	var qs []q
	for _, h := range handQuestions {
		qs = append(qs, q{h.q, h.entity})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	defs, _ := store.Find(ctx, graphrag.Pattern{Collection: "pydocs", P: graphrag.PredDefines, Limit: 100000})
	for range 200 {
		if len(defs) == 0 {
			break
		}
		tr := defs[rng.IntN(len(defs))]
		qs = append(qs, q{fmt.Sprintf("What does %s do?", tr.Object.Name), tr.Object.ID})
	}
	for _, svc := range []struct {
		name string
		s    *graphrag.Service
	}{{"names only", namesOnly}, {"names + entity index", withIdx}} {
		var lat []time.Duration
		hit, hand := 0, 0
		// Three rounds, so a burst of load on a shared machine moves the
		// percentiles less; quality is counted on the last round.
		for range 2 {
			for _, q := range qs {
				t0 := time.Now()
				if _, err := svc.s.Retrieve(ctx, q.q, "pydocs"); err != nil {
					t.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
		}
		for i, q := range qs {
			t0 := time.Now()
			facts, err := svc.s.Retrieve(ctx, q.q, "pydocs")
			lat = append(lat, time.Since(t0))
			if err != nil {
				t.Fatal(err)
			}
			for j, f := range facts {
				if j == 5 {
					break
				}
				if f.Triple.Subject.ID == q.entity || f.Triple.Object.ID == q.entity {
					hit++
					if i < len(handQuestions) {
						hand++
					}
					break
				}
			}
		}
		t.Logf("%-22s retrieval, %d questions x 3: p50 %v p90 %v p99 %v; a fact about the asked entity in the top 5: %d/%d (hand-written %d/%d)",
			svc.name, len(qs), percentile(lat, .5).Round(10*time.Microsecond), percentile(lat, .9).Round(10*time.Microsecond),
			percentile(lat, .99).Round(10*time.Microsecond), hit, len(qs), hand, len(handQuestions))
	}
	ans, err := withIdx.Answer(ctx, "What does json.dumps do?", "pydocs")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Answer(What does json.dumps do?):\n%s\nsources: %d, first %+v", ans.Answer, len(ans.Sources), ans.Sources[0])
}

// envInt reads a positive integer knob (0 when unset: the default).
func envInt(k string) int {
	n, _ := strconv.Atoi(os.Getenv(k))
	return max(n, 0)
}
