package sqlite_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"

	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/graphtest"
	"github.com/kgagent/kgagent/graphrag/sqlite"
)

func open(t testing.TB) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "graph.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	graphtest.Run(t, func(t *testing.T) graphrag.Store { return open(t) })
}

func TestReopenKeepsTriplesAndCache(t *testing.T) {
	dir := t.TempDir()
	s, err := sqlite.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	doc := "https://x.test/a.html"
	tr := graphtest.T("c", doc, "json", "defines", "json.dumps", "json.dumps")
	if err := s.ReplaceDocument(ctx, "c", doc, []kgagent.Triple{tr}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "k", "v1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "k", "v2"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = sqlite.Open(filepath.Join(dir, sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Find(ctx, graphrag.Pattern{Collection: "c"})
	if err != nil || len(got) != 1 || got[0] != tr {
		t.Fatalf("after reopen: %+v, %v", got, err)
	}
	if v, ok, err := s.Get(ctx, "k"); v != "v2" || !ok || err != nil {
		t.Errorf("cache Get = %q, %v, %v", v, ok, err)
	}
	if _, ok, err := s.Get(ctx, "missing"); ok || err != nil {
		t.Errorf("cache Get(missing) = %v, %v", ok, err)
	}
	n, e, err := s.Stats(ctx, "c")
	if n != 1 || e != 2 || err != nil {
		t.Errorf("Stats = %d, %d, %v", n, e, err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := sqlite.Open(""); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("Open(\"\"): %v", err)
	}
	if _, err := sqlite.Open(filepath.Join(t.TempDir(), "no", "such", "dir", "g.db")); kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
		t.Errorf("Open in a missing dir: %v", err)
	}
}

func TestEntitiesPrefixFallback(t *testing.T) {
	s := open(t)
	doc := "https://x.test/a.html"
	if err := s.ReplaceDocument(t.Context(), "c", doc, []kgagent.Triple{
		graphtest.T("c", doc, "serialization", "is_a", "process", ""),
		graphtest.T("c", doc, "json.dumps", "is_a", "function", ""),
	}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		terms []string
		want  []string
	}{
		{[]string{"serializ"}, []string{"serialization"}},
		{[]string{"dump"}, []string{"json.dumps"}}, // "dump" is no word of any name, but starts one
		{[]string{"dumps"}, []string{"json.dumps"}},
		{[]string{"xyz"}, nil}, // too short for the fallback
		{[]string{"process serializ"}, nil},
	}
	for _, tc := range tests {
		got, err := s.Entities(t.Context(), "c", tc.terms, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range got {
			ids = append(ids, e.ID)
		}
		if strings.Join(ids, ",") != strings.Join(tc.want, ",") {
			t.Errorf("Entities(%v) = %v, want %v", tc.terms, ids, tc.want)
		}
	}
}

func TestEntityRefcounts(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	a, b := "https://x.test/a.html", "https://x.test/b.html"
	steps := []struct {
		doc          string
		triples      []kgagent.Triple
		wantEntities int
	}{
		{a, []kgagent.Triple{graphtest.T("c", a, "x", "is_a", "y", ""), graphtest.L("c", a, "x", "is_defined_as", "lit", "")}, 2},
		{b, []kgagent.Triple{graphtest.T("c", b, "y", "is_a", "z", "")}, 3},
		{a, []kgagent.Triple{graphtest.T("c", a, "x", "is_a", "y", "")}, 3}, // unchanged entities
		{a, []kgagent.Triple{graphtest.T("c", a, "w", "is_a", "v", "")}, 4}, // x gone, y kept by b
		{b, nil, 2},
		{a, nil, 0},
	}
	for i, st := range steps {
		if err := s.ReplaceDocument(ctx, "c", st.doc, st.triples); err != nil {
			t.Fatal(err)
		}
		if _, n, err := s.Stats(ctx, "c"); err != nil || n != st.wantEntities {
			t.Errorf("step %d: %d entities, %v; want %d", i, n, err, st.wantEntities)
		}
	}
}
