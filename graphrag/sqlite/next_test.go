package sqlite

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
)

// TestInsertNextChecksRowids: rows whose ids the writer gives (a bulk
// load's strings, every triple) are inserted without them, SQLite giving
// the next; should SQLite's differ from the writer's (here a string stored
// behind the writer's complete cache), the write fails instead of storing
// rows that name the wrong strings.
func TestInsertNextChecksRowids(t *testing.T) {
	ctx := t.Context()
	s := bulkLoading(t)
	tr := kgagent.Triple{Collection: "c", DocURL: "http://x/a", Subject: kgagent.Entity{ID: "a", Name: "A"}, Predicate: "p", Object: kgagent.Entity{ID: "b", Name: "B"}}
	if err := s.ReplaceDocument(ctx, "c", "http://x/a", []kgagent.Triple{tr}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.conn.ExecContext(ctx, `INSERT INTO strs (h, s) VALUES (0, 'behind')`); err != nil {
		t.Fatal(err)
	}
	tr.DocURL, tr.Subject.ID = "http://x/b", "new"
	err := s.ReplaceDocument(ctx, "c", "http://x/b", []kgagent.Triple{tr})
	if err == nil || !strings.Contains(err.Error(), "inserted as") {
		t.Fatalf("write after a string stored behind the cache: %v; want the rowid check's error", err)
	}
}

// bulkLoading is a new store in a test's temp dir with a bulk load begun,
// closed when the test ends.
func bulkLoading(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "graph.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if on, err := s.BulkLoad(t.Context()); err != nil || !on {
		t.Fatalf("BulkLoad: %v %v", on, err)
	}
	return s
}
