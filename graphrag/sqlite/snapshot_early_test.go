package sqlite

import (
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag/graphtest"
	"github.com/kgagent/kgagent/internal/snapfile"
)

// TestSnapshotEarlyNoIndex: a bulk-loaded collection too big to keep a
// name index of (its strings past maxTableBytes, lowered here) gets no
// snapshot when Snapshot reads its triples while the load finishes, as
// when it reads them from SQLite. The early read handed on an index with
// no triples, which was written as the collection's snapshot (and
// Entities answered from it: nothing).
func TestSnapshotEarlyNoIndex(t *testing.T) {
	ctx := t.Context()
	s := bulkLoading(t)
	doc := "https://docs.example/a.html"
	if err := s.ReplaceDocument(ctx, "c", doc, []kgagent.Triple{
		graphtest.T("c", doc, "json.loads", "returns", "Python object", "x"),
		graphtest.T("c", doc, "json.dumps", "returns", "JSON string", "y"),
	}); err != nil {
		t.Fatal(err)
	}
	old := maxTableBytes
	maxTableBytes = 10
	t.Cleanup(func() { maxTableBytes = old })
	if err := s.Snapshot(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if s.earlyNames != 1 {
		t.Fatalf("%d name indexes read while the load finished: the test does not reach that path", s.earlyNames)
	}
	header, err := snapState(ctx, s.rdb, "c")
	if err != nil {
		t.Fatal(err)
	}
	if body := snapfile.Read(snapfile.Path(s.snapDir(), "c"), header); body != nil {
		t.Errorf("a snapshot of %d bytes for a collection too big to index, want none", len(body))
	}
}
