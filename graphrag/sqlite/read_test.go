package sqlite_test

import (
	"cmp"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/graphtest"
	"github.com/kgagent/kgagent/graphrag/sqlite"
	"github.com/kgagent/kgagent/internal/poll"
)

// TestNameIndexAgreesWithSQL checks that the in-memory name index answers
// every kind of term (word, dotted name, phrase, prefix fallback, unknown)
// exactly like the SQL path, limits included.
func TestNameIndexAgreesWithSQL(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"json", "dumps", "loads", "lock", "global", "interpreter", "serialization", "serializer", "path", "join", "file", "files", "open", "socket", "thread", "threading"}
	name := func() string {
		n := 1 + r.IntN(3)
		out := ""
		for i := range n {
			sep := " "
			if r.IntN(4) == 0 {
				sep = "."
			}
			if i > 0 {
				out += sep
			}
			out += words[r.IntN(len(words))]
		}
		return out
	}
	for d := range 20 {
		doc := fmt.Sprintf("https://x.test/%d.html", d)
		var ts []kgagent.Triple
		for range 40 {
			ts = append(ts, graphtest.T("c", doc, name(), "links_to", name(), ""))
		}
		if err := s.ReplaceDocument(ctx, "c", doc, ts); err != nil {
			t.Fatal(err)
		}
	}
	tests := [][]string{
		{"json"}, {"JSON.dumps"}, {"dumps"}, {"files"}, {"global interpreter"}, {"lock global interpreter"},
		{"serializ"}, {"thre"}, {"threadin"}, {"nothing"}, {"json", "lock", "path join"}, {"os.path.join"}, {""},
	}
	for _, terms := range tests {
		for _, limit := range []int{1, 3, 50} {
			viaSQL, viaIndex, err := sqlite.EntitiesBothWays(ctx, s, "c", terms, limit)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(viaSQL, viaIndex) {
				t.Errorf("Entities(%q, %d):\n SQL   %v\n index %v", terms, limit, viaSQL, viaIndex)
			}
			if len(viaSQL) > limit {
				t.Errorf("Entities(%q, %d) returned %d", terms, limit, len(viaSQL))
			}
		}
	}
	if got, _, _ := sqlite.EntitiesBothWays(ctx, s, "c", []string{"serializ"}, 50); len(got) == 0 {
		t.Error("the prefix fallback found nothing for serializ")
	}
	// A page with literals, a self loop and a cycle, for Expand.
	d := "https://x.test/lit.html"
	if err := s.ReplaceDocument(ctx, "c", d, []kgagent.Triple{
		graphtest.L("c", d, "json", "is_defined_as", "a data format", ""),
		graphtest.T("c", d, "json", "links_to", "json", ""),
		graphtest.T("c", d, "json", "links_to", "lock", ""),
		graphtest.T("c", d, "lock", "links_to", "json", ""),
	}); err != nil {
		t.Fatal(err)
	}
	for _, seeds := range [][]string{{"json"}, {"lock", "json", "nothing"}, {"file", "path.join"}, {""}, nil} {
		for _, lim := range []graphrag.ExpandLimits{{}, {Hops: 1, TriplesPerEntity: 2}, {Hops: 3, TriplesPerEntity: 5}} {
			viaSQL, viaIndex, err := sqlite.ExpandBothWays(ctx, s, "c", seeds, lim)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(viaSQL, viaIndex) {
				t.Errorf("Expand(%q, %+v):\n SQL   %v\n index %v", seeds, lim, viaSQL, viaIndex)
			}
			if len(seeds) > 0 && seeds[0] == "json" && len(viaSQL) == 0 {
				t.Errorf("Expand(%q) found nothing", seeds)
			}
		}
	}
}

// TestNameIndexNeverStale checks that once the name index is built, a write
// makes Entities see the new entity at once (the stale index is not used)
// and that the index is rebuilt afterwards.
func TestNameIndexNeverStale(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	a := "https://x.test/a.html"
	if err := s.ReplaceDocument(ctx, "c", a, []kgagent.Triple{graphtest.T("c", a, "json", "defines", "json.dumps", "")}); err != nil {
		t.Fatal(err)
	}
	waitCurrent := func() {
		t.Helper()
		poll.True(t, 10*time.Second, "the name index is built", func() bool { return sqlite.NamesCurrent(ctx, s, "c") })
	}
	waitCurrent()
	ids := func(term string) []string {
		t.Helper()
		got, err := s.Entities(ctx, "c", []string{term}, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range got {
			out = append(out, e.ID)
		}
		return out
	}
	if got := ids("json"); !reflect.DeepEqual(got, []string{"json", "json.dumps"}) {
		t.Errorf("from the index: %v", got)
	}
	b := "https://x.test/b.html"
	if err := s.ReplaceDocument(ctx, "c", b, []kgagent.Triple{graphtest.T("c", b, "json", "defines", "json.loads", "")}); err != nil {
		t.Fatal(err)
	}
	if sqlite.NamesCurrent(ctx, s, "c") {
		t.Fatal("the name index counts as current after a write")
	}
	if got := ids("loads"); !reflect.DeepEqual(got, []string{"json.loads"}) {
		t.Errorf("right after a write: %v", got)
	}
	if err := s.DeleteDocument(ctx, "c", a); err != nil {
		t.Fatal(err)
	}
	waitCurrent()
	if got := ids("json"); !reflect.DeepEqual(got, []string{"json", "json.loads"}) {
		t.Errorf("from the rebuilt index after a delete: %v", got)
	}
}

// TestNameIndexSeesForeignWrites: a write this process's writer did not
// make (another connection on the file) still retires the name index, within
// the time a data_version read is trusted.
func TestNameIndexSeesForeignWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "graph.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	a := "https://x.test/a.html"
	if err := s.ReplaceDocument(ctx, "c", a, []kgagent.Triple{graphtest.T("c", a, "json", "defines", "json.dumps", "")}); err != nil {
		t.Fatal(err)
	}
	poll.True(t, 10*time.Second, "the name index is built", func() bool { return sqlite.NamesCurrent(ctx, s, "c") })
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec(`DELETE FROM word_blocks`); err != nil {
		t.Fatal(err)
	}
	poll.True(t, 2*time.Second, "a write by another connection retires the name index", func() bool { return !sqlite.NamesCurrent(ctx, s, "c") })
}

// BenchmarkSnapshot builds the in-memory snapshot of collection
// KGAGENT_GRAPH_COLLECTION (default pydocs) of the graph store
// KGAGENT_GRAPH_DB, reporting the heap it takes.
func BenchmarkSnapshot(b *testing.B) {
	path := os.Getenv("KGAGENT_GRAPH_DB")
	if path == "" {
		b.Skip("KGAGENT_GRAPH_DB not set")
	}
	coll := cmp.Or(os.Getenv("KGAGENT_GRAPH_COLLECTION"), "pydocs")
	s, err := sqlite.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var before, after runtime.MemStats
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&before)
		snap, e, n, err := sqlite.LoadSnapshot(b.Context(), s, coll)
		if err != nil || n == 0 {
			b.Fatal(e, n, err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(snap)
		b.ReportMetric(float64(e), "entities")
		b.ReportMetric(float64(n), "triples")
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB")
}

// TestFindUsesIndexes checks SQLite's plan for each kind of Find on a
// store with statistics: a subject, object, name or literal is looked up in
// its index, never by scanning the collection (triples_p on collection
// alone), and nothing is scanned whole.
func TestFindUsesIndexes(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "graph.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for d := range 20 {
		doc := fmt.Sprintf("https://x.test/%d.html", d)
		var ts []kgagent.Triple
		for i := range 50 {
			ts = append(ts, graphtest.T("c", doc, fmt.Sprintf("Subject %d", d*50+i), "links_to", fmt.Sprintf("object %d", i), ""),
				graphtest.L("c", doc, fmt.Sprintf("Subject %d", d*50+i), "is_defined_as", fmt.Sprintf("text %d %d", d, i), ""))
		}
		if err := s.ReplaceDocument(ctx, "c", doc, ts); err != nil {
			t.Fatal(err)
		}
	}
	s.Close() // Close runs PRAGMA optimize: the planner gets statistics
	s, err = sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		name string
		p    graphrag.Pattern
		want []string // indexes the plan must use
	}{
		{"subject", graphrag.Pattern{Collection: "c", S: "subject 7"}, []string{"triples_sid", "triples_sname"}},
		{"object", graphrag.Pattern{Collection: "c", O: "Object 7"}, []string{"triples_oid", "triples_oname", "triples_literal"}},
		{"literal", graphrag.Pattern{Collection: "c", O: "text 3 4", P: "is_defined_as"}, []string{"triples_literal"}},
		{"subject and object", graphrag.Pattern{Collection: "c", S: "subject 7", O: "object 7"}, []string{"triples_sid"}},
		{"predicate", graphrag.Pattern{Collection: "c", P: "links_to"}, []string{"triples_p"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := sqlite.FindPlan(ctx, s, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			for _, ix := range tc.want {
				if !strings.Contains(plan, "INDEX "+ix+" (") {
					t.Errorf("plan does not search %s:\n%s", ix, plan)
				}
			}
			if tc.p.S != "" || tc.p.O != "" {
				if strings.Contains(plan, "triples_p") {
					t.Errorf("plan scans the collection:\n%s", plan)
				}
			}
			for _, line := range strings.Split(plan, "\n") {
				if strings.HasPrefix(line, "SCAN triples") && !strings.Contains(line, "INDEX") {
					t.Errorf("plan scans the table: %s\n%s", line, plan)
				}
			}
		})
	}
}

// TestWarmBuildsTheNameIndex: Warm returns once the name index is built,
// where a question would only have started a build in the background.
func TestWarmBuildsTheNameIndex(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	a := "https://x.test/a.html"
	if err := s.ReplaceDocument(ctx, "c", a, []kgagent.Triple{graphtest.T("c", a, "json", "defines", "json.dumps", "")}); err != nil {
		t.Fatal(err)
	}
	if sqlite.NamesCurrent(ctx, s, "c") {
		t.Fatal("name index current before any question or warm-up")
	}
	if err := s.Warm(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if !sqlite.NamesCurrent(ctx, s, "c") {
		t.Fatal("Warm returned before the name index was built")
	}
}

// TestNoNameIndexes: with name indexes off, nothing is built and Entities
// still answers (from SQL).
func TestNoNameIndexes(t *testing.T) {
	s := open(t)
	s.NoNameIndexes()
	ctx := t.Context()
	a := "https://x.test/a.html"
	if err := s.ReplaceDocument(ctx, "c", a, []kgagent.Triple{graphtest.T("c", a, "json", "defines", "json.dumps", "")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Warm(ctx, "c"); err != nil || sqlite.NamesCurrent(ctx, s, "c") {
		t.Fatalf("a name index was built (warm: %v)", err)
	}
	got, err := s.Entities(ctx, "c", []string{"json"}, 10)
	if err != nil || len(got) == 0 {
		t.Fatalf("Entities without an index: %v %v", got, err)
	}
}
