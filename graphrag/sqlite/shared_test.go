package sqlite

import (
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/graphtest"
)

// TestExpandShared: ExpandShared returns Expand's triples, in Expand's
// order, from the in-memory snapshot with every string the snapshot's own
// (pointing into its string table: nothing copied, one allocation for the
// lot), and with SQL when no snapshot is current.
func TestExpandShared(t *testing.T) {
	s := storeWithDoc(t, 0, nil)
	ctx := t.Context()
	for d := range 4 {
		doc := fmt.Sprintf("https://docs.example/p/C%d.html", d)
		var ts []kgagent.Triple
		for i := range 30 {
			subj := fmt.Sprintf("p.C%d.m%d", d, i%7)
			if i%3 == 0 {
				ts = append(ts, graphtest.L("c", doc, subj, "summary", fmt.Sprintf("Does thing %d of %d.", i, d), fmt.Sprintf("m%d", i)))
			} else {
				ts = append(ts, graphtest.T("c", doc, subj, "calls", fmt.Sprintf("p.C%d.m%d", (d+i)%4, i%5), fmt.Sprintf("m%d", i)))
			}
		}
		if err := s.ReplaceDocument(ctx, "c", doc, ts); err != nil {
			t.Fatal(err)
		}
	}
	seeds := []string{"p.c0.m1", "p.c2.m3", "p.c1.m0", "nothing"}
	lim := graphrag.ExpandLimits{Hops: 2, TriplesPerEntity: 6}
	want, err := s.Expand(ctx, "c", seeds, lim)
	if err != nil || len(want) < 20 {
		t.Fatalf("Expand: %d triples (%v)", len(want), err)
	}
	// no snapshot is current yet: SQL
	if got, err := s.ExpandShared(ctx, "c", seeds, lim); err != nil || !slices.Equal(got, want) {
		t.Fatalf("ExpandShared by SQL: %v (%v), want %v", got, err, want)
	}
	x, err := loadNames(ctx, s.rdb, "c", 0)
	if err != nil || x == nil {
		t.Fatal(x, err)
	}
	hops, per := expandDefaults(lim)
	got := x.sharedTriples(x.expandRows(seeds, hops, per), "c")
	if !slices.Equal(got, want) {
		t.Fatalf("shared triples %v, want %v", got, want)
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(x.strs.b)))
	hi := lo + uintptr(len(x.strs.b))
	for _, tr := range got {
		for _, f := range []string{tr.Subject.ID, tr.Subject.Name, tr.Subject.Type, tr.Predicate, tr.Object.ID, tr.Object.Name, tr.Object.Type, tr.Literal, tr.ChunkID, tr.DocURL, tr.SourceURL} {
			if p := uintptr(unsafe.Pointer(unsafe.StringData(f))); f != "" && (p < lo || p >= hi) {
				t.Fatalf("%q is a copy, not the table's", f)
			}
		}
	}
	rows := x.expandRows(seeds, hops, per)
	if n := testing.AllocsPerRun(20, func() { x.sharedTriples(rows, "c") }); n != 1 {
		t.Errorf("sharedTriples: %.0f allocations, want 1", n)
	}
}
