package sqlite_test

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag/graphtest"
	"github.com/kgagent/kgagent/graphrag/sqlite"
)

// TestBulkNamesFromMemory: the name-index snapshot that Snapshot writes at
// the end of a bulk load, built from the triples the writer kept in memory,
// is byte for byte the one built from SQLite (with two collections written
// concurrently, so writes share transactions and the rows interleave).
// Once a write deletes triples (a replaced document) the rows are dropped
// and the snapshot is built from SQLite, the same bytes again. The
// triples kept are read while the load finishes (the same bytes: the
// finish adds no triple and no string a triple holds), its entities
// are the finish's own rows in the table's order, and the snapshot is
// written then too, under the header the finish leaves; no temporary file
// is left beside it. With late, a load above the cap on early reads (the
// OpenJDK docs), the index is read after the finish: from the rows kept
// too, and either way its strings come from the writer's complete string
// cache, not a pass over strs. The rows are kept in chunks (small ones
// here, so that rows follow each other across them); past a cap on their
// bytes (capped) they are dropped and the index is read from SQLite, the
// same bytes. All of it also for a collection past maxIndexedTriples
// (entsOnly), whose snapshot holds its entities alone.
func TestBulkNamesFromMemory(t *testing.T) {
	for _, c := range []struct{ replace, late, capped, entsOnly bool }{
		{false, false, false, false}, {true, false, false, false}, {false, true, false, false}, {true, true, false, false},
		{false, false, true, false}, {false, true, true, false},
		{false, false, false, true}, {true, false, false, true}, {false, true, false, true}, {false, false, true, true},
	} {
		replace := c.replace || c.capped // either way no rows in memory
		t.Run(fmt.Sprintf("replace=%v,late=%v,capped=%v,entsOnly=%v", c.replace, c.late, c.capped, c.entsOnly), func(t *testing.T) {
			if c.entsOnly {
				// the ~500 triples of "c" past the bound
				sqlite.SetMaxIndexedTriples(t, 100)
			}
			if c.late {
				sqlite.SetEarlyNamesTriples(t, 0)
			}
			// ~20 KB of rows: 80 chunks; capped, the rows stop at 8 KB
			sqlite.SetBulkRows(t, 256, map[bool]int{false: 1 << 20, true: 8 << 10}[c.capped])
			early := map[bool]int{false: 1, true: 0}[c.late || replace]
			ctx := t.Context()
			s := open(t)
			if on, err := s.BulkLoad(ctx); err != nil || !on {
				t.Fatalf("BulkLoad: %v %v", on, err)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 40)
			for w := range 4 {
				wg.Go(func() {
					for d := range 10 {
						coll := []string{"c", "d"}[d%2]
						doc := fmt.Sprintf("https://x.test/%d/%d.html", w, d)
						var ts []kgagent.Triple
						for i := range 25 {
							ts = append(ts, graphtest.T(coll, doc, fmt.Sprintf("pkg%d.mod%d.func_%d", w, d, i), "calls", fmt.Sprintf("Shared Thing %d", (i+d)%9), fmt.Sprintf("c%d", i%3)))
						}
						ts = append(ts, graphtest.L(coll, doc, fmt.Sprintf("pkg%d.mod%d", w, d), "summary", fmt.Sprintf("Module %d of %d", d, w), "c0"))
						errs <- s.ReplaceDocument(ctx, coll, doc, ts)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if c.replace {
				doc := "https://x.test/1/2.html"
				if err := s.ReplaceDocument(ctx, "c", doc, []kgagent.Triple{graphtest.T("c", doc, "json.loads", "returns", "Python object", "y")}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Snapshot(ctx, "c"); err != nil {
				t.Fatal(err)
			}
			if got, want := sqlite.MemNames(s), map[bool]int{false: 1, true: 0}[replace]; got != want {
				t.Errorf("%d name indexes built from memory, want %d", got, want)
			}
			// read while the load finished, from the rows kept
			if got, want := sqlite.EarlyNames(s), early; got != want {
				t.Errorf("%d name indexes' triples read while the load finished, want %d", got, want)
			}
			// its strings from the writer's complete cache (a replaced
			// document's strings stay in strs and in the cache)
			if got, want := sqlite.KnownStrs(s), 1; got != want {
				t.Errorf("%d name indexes' strings from the bulk load's cache, want %d", got, want)
			}
			// written while the load finished, under the header it left
			// (SnapshotBody below reads it back with the header SQLite
			// gives)
			if got, want := sqlite.EarlySnaps(s), early; got != want {
				t.Errorf("%d name-index snapshots written while the load finished, want %d", got, want)
			}
			// and its entities taken from the finish's rows
			if got, want := sqlite.EarlyEnts(s), early; got != want {
				t.Errorf("%d name indexes' entities taken from the load's finish, want %d", got, want)
			}
			got := sqlite.SnapshotBody(t, s, "c")
			want, err := sqlite.EncodeNames(ctx, s, "c")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 || !bytes.Equal(got, want) {
				t.Errorf("snapshot of %d bytes, from SQLite %d bytes: want the same bytes", len(got), len(want))
			}
			if only, err := sqlite.EntitiesOnly(got); err != nil || only != c.entsOnly {
				t.Errorf("snapshot of the entities alone: %v (%v), want %v", only, err, c.entsOnly)
			}
			files, err := os.ReadDir(sqlite.SnapDir(s))
			if err != nil || len(files) != 1 {
				t.Errorf("snapshot directory holds %v (%v), want the snapshot alone", files, err)
			}
		})
	}
}

// TestNamesSnapshotMatchesSQL checks the name-index snapshot an ingest
// left beside the store at $KGAGENT_GRAPH_SNAPCHECK (a copy of a data dir's
// graph.db with its graph.db-snap; collection $KGAGENT_GRAPH_COLLECTION,
// default "default"; written under a bound of $KGAGENT_GRAPH_MAX_TRIPLES
// triples when set): its body must be byte for byte the index this code
// builds from SQLite, and Entities and Expand answered from it (for 30
// words of its word index, or $KGAGENT_GRAPH_SNAPCHECK_WORDS) must answer
// as SQL does. Skipped without it.
// The end-to-end form of TestBulkNamesFromMemory, on a real ingest.
func TestNamesSnapshotMatchesSQL(t *testing.T) {
	path := os.Getenv("KGAGENT_GRAPH_SNAPCHECK")
	if path == "" {
		t.Skip("KGAGENT_GRAPH_SNAPCHECK is not set")
	}
	if v := os.Getenv("KGAGENT_GRAPH_MAX_TRIPLES"); v != "" {
		// the bound the snapshot was written under, if not the default
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatal(err)
		}
		sqlite.SetMaxIndexedTriples(t, n)
	}
	coll := envCollection()
	got := sqlite.SnapshotFileBody(path, coll)
	if got == nil {
		t.Fatalf("no readable snapshot of %q beside %s", coll, path)
	}
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want, err := sqlite.EncodeNames(t.Context(), s, coll)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("snapshot of %d bytes, from SQLite %d bytes: want the same bytes", len(got), len(want))
	}
	entsOnly, err := sqlite.EntitiesOnly(got)
	if err != nil {
		t.Fatal(err)
	}
	// lookups through the snapshot answer as SQL does
	words := 30
	if v := os.Getenv("KGAGENT_GRAPH_SNAPCHECK_WORDS"); v != "" {
		if words, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	n, diff, err := sqlite.CompareLookups(t.Context(), s, coll, got, words)
	t.Logf("%d lookups in %v", n, time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	if diff != "" {
		t.Fatalf("after %d equal lookups: %s", n, diff)
	}
	fmt.Printf("SNAPCHECK %d bytes equal (entities only: %v), %d lookups equal\n", len(got), entsOnly, n)
}

// TestBulkLoadAgainKeepsRows: BulkLoad called again during a load (it
// reports the load on) keeps the triples written so far for the name
// index; it started the rows afresh, so the snapshot was read back from
// SQLite (the rows no longer matched the table).
func TestBulkLoadAgainKeepsRows(t *testing.T) {
	ctx := t.Context()
	s := open(t)
	for i := range 2 {
		if on, err := s.BulkLoad(ctx); err != nil || !on {
			t.Fatalf("BulkLoad %d: %v %v", i+1, on, err)
		}
		doc := fmt.Sprintf("https://x.test/%d.html", i)
		if err := s.ReplaceDocument(ctx, "c", doc, []kgagent.Triple{graphtest.T("c", doc, fmt.Sprintf("m%d.f", i), "calls", "m.g", "a")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Snapshot(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if n := sqlite.MemNames(s); n != 1 {
		t.Errorf("%d name indexes built from memory after BulkLoad was called twice, want 1", n)
	}
}

// TestSnapshotAfterWaits: SnapshotAfter completes a large bulk load (past
// earlyEntities and earlyNamesTriples, as the OpenJDK docs') waiting for
// ready before its entities' words, which are then made beside its index
// builds, and again before the name index; a small load's snapshot, made
// beside its finish, does not wait. Either way the snapshot is the index
// built from SQLite (TestBulkLoad's "after" case checks the rows stored).
func TestSnapshotAfterWaits(t *testing.T) {
	for _, large := range []bool{true, false} {
		t.Run(fmt.Sprintf("large=%v", large), func(t *testing.T) {
			if large {
				sqlite.SetEarlyEntities(t, 0)
				sqlite.SetEarlyNamesTriples(t, 0)
			}
			ctx := t.Context()
			s := open(t)
			if on, err := s.BulkLoad(ctx); err != nil || !on {
				t.Fatalf("BulkLoad: %v %v", on, err)
			}
			for d := range 5 {
				doc := fmt.Sprintf("https://x.test/%d.html", d)
				var ts []kgagent.Triple
				for i := range 20 {
					ts = append(ts, graphtest.T("c", doc, fmt.Sprintf("pkg%d.func_%d", d, i), "calls", fmt.Sprintf("Shared Thing %d", i%7), "c0"))
				}
				if err := s.ReplaceDocument(ctx, "c", doc, ts); err != nil {
					t.Fatal(err)
				}
			}
			ready := make(chan struct{})
			done := make(chan error, 1)
			go func() { done <- s.SnapshotAfter(ctx, "c", ready) }()
			want := 0
			if large {
				want = 2
				for start := time.Now(); sqlite.SnapWaits(s) == 0; time.Sleep(time.Millisecond) {
					if time.Since(start) > 20*time.Second {
						t.Fatal("SnapshotAfter did not wait for ready")
					}
				}
				time.Sleep(20 * time.Millisecond)
				select {
				case err := <-done:
					t.Fatalf("SnapshotAfter returned (%v) before ready", err)
				default:
				}
				close(ready)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("SnapshotAfter waits for ready on a small load")
			}
			if got := sqlite.SnapWaits(s); got != want {
				t.Errorf("%d waits for ready, want %d", got, want)
			}
			// a large load's words made beside its index builds, once
			// ready was closed
			if got, want := sqlite.WaitedWords(s), want/2; got != want {
				t.Errorf("%d loads' words made beside the index builds after the wait, want %d", got, want)
			}
			got := sqlite.SnapshotBody(t, s, "c")
			sql, err := sqlite.EncodeNames(ctx, s, "c")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 || !bytes.Equal(got, sql) {
				t.Errorf("snapshot of %d bytes, from SQLite %d bytes: want the same bytes", len(got), len(sql))
			}
		})
	}
}
