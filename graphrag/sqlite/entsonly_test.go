package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/graphtest"
	"github.com/kgagent/kgagent/internal/snapfile"
)

// recordQueries is a queryer that records the statements it runs.
type recordQueries struct {
	db *sql.DB
	mu sync.Mutex
	qs []string
}

func (r *recordQueries) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	r.mu.Lock()
	r.qs = append(r.qs, q)
	r.mu.Unlock()
	return r.db.QueryContext(ctx, q, args...)
}

func (r *recordQueries) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	r.mu.Lock()
	r.qs = append(r.qs, q)
	r.mu.Unlock()
	return r.db.QueryRowContext(ctx, q, args...)
}

// TestNameIndexEntitiesOnly: a collection past maxIndexedTriples (lowered
// here to a tenth of the test graph) gets a name index of its entities
// and words alone, built without reading a triple, and Entities answers
// from it exactly as SQL does; Expand answers with SQL, the same triples as
// from a full index. Its snapshot round-trips as such, and a store opened
// on the data again reads it instead of building it. Before, such a
// collection got no index: every Entities ran in SQL (~400 ms an answer at
// the 97,977-page point of issue 25), and each serve read the first
// maxIndexedTriples triples for an index it then dropped.
func TestNameIndexEntitiesOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "graph.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	ctx := t.Context()
	r := rand.New(rand.NewPCG(3, 4))
	words := []string{"json", "dumps", "loads", "lock", "global", "interpreter", "serialization", "serializer", "path", "join", "file", "files", "open", "socket", "thread", "threading"}
	name := func() string {
		var b strings.Builder
		for i := range 1 + r.IntN(3) {
			if i > 0 {
				b.WriteString([]string{" ", ".", "_"}[r.IntN(3)])
			}
			b.WriteString(words[r.IntN(len(words))])
		}
		return b.String()
	}
	total := 0
	for d := range 20 {
		doc := fmt.Sprintf("https://x.test/%d.html", d)
		var ts []kgagent.Triple
		for i := range 40 {
			if i%5 == 0 {
				ts = append(ts, graphtest.L("c", doc, name(), "summary", fmt.Sprintf("text %d", i), ""))
			} else {
				ts = append(ts, graphtest.T("c", doc, name(), "links_to", name(), fmt.Sprintf("a%d", i%4)))
			}
		}
		if err := s.ReplaceDocument(ctx, "c", doc, ts); err != nil {
			t.Fatal(err)
		}
		total += len(ts)
	}
	full, err := loadNames(ctx, s.rdb, "c", 0)
	if err != nil || full == nil || full.entsOnly || len(full.rows) != total {
		t.Fatalf("full index %v (%v), want one of %d triples", full, err, total)
	}
	old := maxIndexedTriples
	maxIndexedTriples = total / 10
	t.Cleanup(func() { maxIndexedTriples = old })

	rec := &recordQueries{db: s.rdb}
	x, err := loadNames(ctx, rec, "c", 0)
	if err != nil || x == nil {
		t.Fatalf("past the bound: index %v (%v), want one of the entities alone", x, err)
	}
	if !x.entsOnly || x.rows != nil || x.strs.len() != 0 || len(x.ents) != len(full.ents) {
		t.Errorf("past the bound: entsOnly %v, %d rows, %d strings, %d entities; want entities only, none, none, %d",
			x.entsOnly, len(x.rows), x.strs.len(), len(x.ents), len(full.ents))
	}
	for _, q := range rec.qs {
		if strings.Contains(q, "FROM triples") {
			t.Errorf("the build read the triples: %s", q)
		}
	}
	terms := [][]string{
		{"json"}, {"JSON.dumps"}, {"dumps"}, {"files"}, {"global interpreter"}, {"lock global interpreter"},
		{"serializ"}, {"thre"}, {"threadin"}, {"nothing"}, {"json", "lock", "path join"}, {"path_join"}, {""},
	}
	for _, ts := range terms {
		for _, limit := range []int{1, 3, 50} {
			forms := termForms(ts)
			want, err := s.entitiesSQL(ctx, "c", forms, limit)
			if err != nil {
				t.Fatal(err)
			}
			if got := x.entities(forms, limit); !reflect.DeepEqual(got, want) {
				t.Errorf("Entities(%q, %d):\n SQL    %v\n entities-only index %v", ts, limit, want, got)
			}
			if got := full.entities(forms, limit); !reflect.DeepEqual(got, want) {
				t.Errorf("Entities(%q, %d):\n SQL    %v\n full index %v", ts, limit, want, got)
			}
		}
	}

	// the snapshot round-trips as an index of the entities alone
	e := &snapfile.Encoder{}
	encodeNames(e, x)
	back, err := decodeNames(e.B)
	if err != nil || !back.entsOnly || back.rows != nil {
		t.Fatalf("decoded %v (%v), want an index of the entities alone", back, err)
	}
	again := &snapfile.Encoder{}
	encodeNames(again, back)
	if string(again.B) != string(e.B) {
		t.Errorf("decoded and encoded again: %d bytes, want the %d read", len(again.B), len(e.B))
	}

	// the store: Entities from the index, Expand by SQL, the full index's
	// triples
	if err := s.Warm(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	idx := s.currentNames(ctx, "c")
	if idx == nil || !idx.entsOnly {
		t.Fatalf("after Warm: index %v, want one of the entities alone", idx)
	}
	for _, seeds := range [][]string{{"json"}, {"lock", "json", "nothing"}, {"file", "path.join"}, {""}, nil} {
		for _, lim := range []graphrag.ExpandLimits{{}, {Hops: 1, TriplesPerEntity: 2}, {Hops: 3, TriplesPerEntity: 5}} {
			want, err := s.expand(ctx, "c", seeds, lim, full)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Expand(ctx, "c", seeds, lim)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Expand(%q, %+v): %d triples, the full index %d", seeds, lim, len(got), len(want))
			}
			shared, err := s.ExpandShared(ctx, "c", seeds, lim, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(shared, want) {
				t.Errorf("ExpandShared(%q, %+v): %d triples, the full index %d", seeds, lim, len(shared), len(want))
			}
		}
	}
	got, err := s.Entities(ctx, "c", []string{"json"}, 5)
	if want := x.entities(termForms([]string{"json"}), 5); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Entities(json) = %v (%v), want %v", got, err, want)
	}

	// the snapshot an ingest leaves is one of the entities alone, and
	// the next store on the data reads it back
	if err := s.Snapshot(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Warm(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if idx := s.currentNames(ctx, "c"); idx == nil || !idx.entsOnly || len(idx.ents) != len(full.ents) {
		t.Errorf("reopened: index %v, want one of the %d entities alone", idx, len(full.ents))
	}
	if n := s.names.sqlLoads.Load(); n != 0 {
		t.Errorf("reopened: %d name indexes built from SQL, want the snapshot read", n)
	}
}

// TestEntitiesOnlyMemory: an index of the entities alone holds an entity
// of an API-docs-like graph in at most 200 bytes (ids, names, types,
// normalised names and the words, whose strings no triple table holds
// now).
func TestEntitiesOnlyMemory(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "graph.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	for d := range 20 {
		doc := fmt.Sprintf("https://docs.example/api/java.base/java/util/pkg%d/Class%d.html", d%7, d)
		var ts []kgagent.Triple
		for i := range 300 {
			subj := fmt.Sprintf("java.util.pkg%d.Class%d.method%d(int)", d%7, d, i%90)
			ts = append(ts, graphtest.T("c", doc, subj, fmt.Sprintf("rel%d", i%5), fmt.Sprintf("java.util.pkg%d.Type%d", i%7, (d*300+i)%3000), fmt.Sprintf("method%d(int)", i%90)))
		}
		if err := s.ReplaceDocument(ctx, "c", doc, ts); err != nil {
			t.Fatal(err)
		}
	}
	old := maxIndexedTriples
	maxIndexedTriples = 10
	defer func() { maxIndexedTriples = old }()
	x, err := loadNames(ctx, s.rdb, "c", 0)
	if err != nil || x == nil || !x.entsOnly {
		t.Fatalf("index %v (%v), want one of the entities alone", x, err)
	}
	b := x.memBytes()
	t.Logf("%d entities, %d words: %d bytes, %d an entity", len(x.ents), len(x.words), b, b/len(x.ents))
	if b > 200*len(x.ents) {
		t.Errorf("%d bytes, %d an entity, want at most 200", b, b/len(x.ents))
	}
}
