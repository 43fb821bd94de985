package sqlite

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/graphtest"
	"golang.org/x/sync/errgroup"
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
	if got, err := s.ExpandShared(ctx, "c", seeds, lim, nil); err != nil || !slices.Equal(got, want) {
		t.Fatalf("ExpandShared by SQL: %v (%v), want %v", got, err, want)
	}
	x, err := loadNames(ctx, s.rdb, "c", 0)
	if err != nil || x == nil {
		t.Fatal(x, err)
	}
	hops, per := expandDefaults(lim)
	got := x.sharedTriples(x.expandRows(seeds, hops, per), "c", nil)
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
	if n := testing.AllocsPerRun(20, func() { x.sharedTriples(rows, "c", nil) }); n != 1 {
		t.Errorf("sharedTriples: %.0f allocations, want 1", n)
	}
	// Into a buffer with room, holding other triples (literals where
	// these have objects and the other way round): the same triples,
	// written into it, with no allocation.
	buf := make([]kgagent.Triple, len(want)+3)
	for i := range buf {
		if i%2 == 0 {
			buf[i] = graphtest.L("x", "d", "s", "p", "stale literal", "k")
		} else {
			buf[i] = graphtest.T("x", "d", "s", "p", "stale object", "k")
		}
	}
	if got, err := s.ExpandShared(ctx, "c", seeds, lim, buf); err != nil || !slices.Equal(got, want) || &got[0] != &buf[0] {
		t.Fatalf("ExpandShared into a buffer: %v (%v, in the buffer: %v), want %v", got, err, err == nil && &got[0] == &buf[0], want)
	}
	if n := testing.AllocsPerRun(20, func() { x.sharedTriples(rows, "c", buf) }); n != 0 {
		t.Errorf("sharedTriples into a buffer: %.0f allocations, want 0", n)
	}
}

// TestExpandRowsMarks: the walk's visited and seen marks are pooled
// bitsets, cleared after each walk: walks from random seeds, one after
// another and four at once, each return what the SQL path does, and a
// walk allocates its result and frontiers only (before, two maps: 33
// allocations for this walk; now 10).
func TestExpandRowsMarks(t *testing.T) {
	s := storeWithDoc(t, 0, nil)
	ctx := t.Context()
	for d := range 5 {
		doc := fmt.Sprintf("https://docs.example/p/C%d.html", d)
		var ts []kgagent.Triple
		for i := range 60 {
			ts = append(ts, graphtest.T("c", doc, fmt.Sprintf("p.C%d.m%d", d, i%11), "calls", fmt.Sprintf("p.C%d.m%d", (d+i)%5, i%13), fmt.Sprintf("m%d", i)))
		}
		if err := s.ReplaceDocument(ctx, "c", doc, ts); err != nil {
			t.Fatal(err)
		}
	}
	x, err := loadNames(ctx, s.rdb, "c", 0)
	if err != nil || x == nil {
		t.Fatal(x, err)
	}
	walk := func(r *rand.Rand) error {
		seeds := make([]string, 1+r.IntN(4))
		for i := range seeds {
			seeds[i] = x.strs.at(x.ids[r.IntN(len(x.ids))])
		}
		lim := graphrag.ExpandLimits{Hops: 1 + r.IntN(3), TriplesPerEntity: 1 + r.IntN(12)}
		want, err := s.expand(ctx, "c", seeds, lim, nil)
		if err != nil {
			return err
		}
		if got, _ := s.expand(ctx, "c", seeds, lim, x); !slices.Equal(got, want) {
			return fmt.Errorf("seeds %v %+v: %d triples, SQL %d", seeds, lim, len(got), len(want))
		}
		return nil
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 40 {
		if err := walk(r); err != nil {
			t.Fatal(err)
		}
	}
	var g errgroup.Group
	for i := range 4 {
		g.Go(func() error {
			r := rand.New(rand.NewPCG(uint64(i), 7))
			for range 10 {
				if err := walk(r); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if raceOn {
		return
	}
	seeds := []string{"p.c0.m1", "p.c2.m3", "p.c4.m0"}
	x.expandRows(seeds, 2, 30)
	if n := testing.AllocsPerRun(20, func() { x.expandRows(seeds, 2, 30) }); n > 15 {
		t.Errorf("expandRows: %.0f allocations, want at most 15", n)
	} else if testing.Verbose() {
		t.Logf("expandRows: %.0f allocations, %d rows", n, len(x.expandRows(seeds, 2, 30)))
	}
}
