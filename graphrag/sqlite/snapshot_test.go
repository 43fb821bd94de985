package sqlite_test

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/graphtest"
	"github.com/kgagent/kgagent/graphrag/sqlite"
)

// warmAndCompare warms collection c of the store at path and checks that
// the index it answers from agrees with SQL; it returns how many indexes
// the store built from SQL.
func warmAndCompare(t *testing.T, path string) int64 {
	t.Helper()
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	if err := s.Warm(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if !sqlite.NamesCurrent(ctx, s, "c") {
		t.Fatal("no current name index after Warm")
	}
	for _, term := range []string{"loads", "os.path.join", "shared thing 3", "pkg3"} {
		viaSQL, err := s.Entities(ctx, "c", []string{term}, 5)
		if err != nil {
			t.Fatal(err)
		}
		viaSQLOnly, _, err := sqlite.EntitiesBothWays(ctx, s, "c", []string{term}, 5)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(viaSQL, viaSQLOnly) {
			t.Errorf("Entities(%q) from the name index %v, by SQL %v", term, viaSQL, viaSQLOnly)
		}
	}
	lim := graphrag.ExpandLimits{Hops: 2, TriplesPerEntity: 50}
	got, err := s.Expand(ctx, "c", []string{"json.loads", "shared thing 3"}, lim)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := sqlite.ExpandBothWays(ctx, s, "c", []string{"json.loads", "shared thing 3"}, lim)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || !slices.EqualFunc(got, want, func(a, b kgagent.Triple) bool { return graphtest.Key(a) == graphtest.Key(b) }) {
		t.Errorf("Expand from the name index: %d triples, by SQL %d", len(got), len(want))
	}
	return sqlite.NamesLoadedFromSQL(s)
}

// TestNamesSnapshot: the name index a store builds from SQL is written
// beside the database and read back by the next process instead, but never
// after a write, nor when the file is corrupt.
func TestNamesSnapshot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "graph.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	bulkDocs(t, s)
	s.Close()

	if n := warmAndCompare(t, path); n != 1 {
		t.Fatalf("first warm-up: %d loads from SQL, want 1", n)
	}
	snaps, _ := filepath.Glob(path + "-snap/*")
	if len(snaps) != 1 {
		t.Fatalf("snapshots after the first warm-up: %v", snaps)
	}
	if n := warmAndCompare(t, path); n != 0 {
		t.Errorf("second warm-up: %d loads from SQL, want 0 (the snapshot)", n)
	}

	// A write makes the snapshot stale: the next process loads from SQL
	// (and sees the write), then writes a fresh snapshot.
	s, err = sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := "https://x.test/9.html"
	if err := s.ReplaceDocument(t.Context(), "c", doc, []kgagent.Triple{graphtest.T("c", doc, "json.loads", "raises", "JSONDecodeError", "z")}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n := warmAndCompare(t, path); n != 1 {
		t.Errorf("after a write: %d loads from SQL, want 1", n)
	}
	if n := warmAndCompare(t, path); n != 0 {
		t.Errorf("after the rewrite: %d loads from SQL, want 0", n)
	}

	// A corrupt snapshot is not used.
	b, err := os.ReadFile(snaps[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(snaps[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	if n := warmAndCompare(t, path); n != 1 {
		t.Errorf("corrupt snapshot: %d loads from SQL, want 1", n)
	}

	// A deleted collection's snapshot goes with it.
	s, err = sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteCollection(t.Context(), "c"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if snaps, _ := filepath.Glob(path + "-snap/*"); len(snaps) != 0 {
		t.Errorf("snapshots after deleting the collection: %v", snaps)
	}
}

// FuzzDecodeNames: any bytes either fail to decode or decode to an index
// that encodes back to the same bytes; none panics.
func FuzzDecodeNames(f *testing.F) {
	s, err := sqlite.Open(filepath.Join(f.TempDir(), "graph.db"))
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	doc := "https://x.test/a.html"
	if err := s.ReplaceDocument(f.Context(), "c", doc, []kgagent.Triple{
		graphtest.T("c", doc, "json.loads", "returns", "Python object", "a"),
		graphtest.L("c", doc, "json.loads", "summary", "Deserialize", "a"),
	}); err != nil {
		f.Fatal(err)
	}
	b, err := sqlite.EncodeNames(f.Context(), s, "c")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		again, err := sqlite.DecodeNames(b)
		if err != nil {
			return
		}
		if !bytes.Equal(again, b) {
			t.Errorf("decoded %d bytes, encoded again %d different bytes", len(b), len(again))
		}
	})
}

// TestNamesSnapshotOnEarlierStore opens a store written by the version
// before the versions and bulk_load tables (simulated by dropping them):
// its collections get a version, so their name indexes are snapshotted
// too, and a write afterwards still makes the snapshot stale.
func TestNamesSnapshotOnEarlierStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "graph.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	bulkDocs(t, s)
	s.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DROP TABLE versions; DROP TABLE bulk_load`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	if n := warmAndCompare(t, path); n != 1 {
		t.Fatalf("first warm-up: %d loads from SQL, want 1", n)
	}
	if n := warmAndCompare(t, path); n != 0 {
		t.Errorf("second warm-up: %d loads from SQL, want 0 (the snapshot)", n)
	}
	s, err = sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteDocument(t.Context(), "c", "https://x.test/3.html"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n := warmAndCompare(t, path); n != 1 {
		t.Errorf("after a delete: %d loads from SQL, want 1", n)
	}
}

// TestSnapshotAfterBulkLoad: Snapshot at the end of a bulk load (what
// kgagent ingest does) completes the load and writes the name index's
// snapshot, so the next process's warm-up builds nothing from SQL; without
// it, that warm-up rebuilds the index.
func TestSnapshotAfterBulkLoad(t *testing.T) {
	for _, snapshot := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "graph.db")
		s, err := sqlite.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if on, err := s.BulkLoad(t.Context()); err != nil || !on {
			t.Fatalf("BulkLoad: %v %v", on, err)
		}
		bulkDocs(t, s)
		if snapshot {
			if err := s.Snapshot(t.Context(), "c"); err != nil {
				t.Fatal(err)
			}
			if err := s.Snapshot(t.Context(), "never-written"); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		want := int64(1)
		if snapshot {
			want = 0
		}
		if n := warmAndCompare(t, path); n != want {
			t.Errorf("snapshot at the end of the load %v: the next warm-up built %d indexes from SQL, want %d", snapshot, n, want)
		}
	}
}
