package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag/graphtest"
)

// TestBulkSortsOnFile: while a bulk load has dropped strs_h, the writer's
// sorts use temporary files (temp_store FILE): a load whose strings
// outgrow the complete cache creates strs_h mid-load, and that sort held
// ~55 MB outside Go's heap in memory on 1.36M strings. Once strs_h is
// back, and after the load's finish, temp_store is MEMORY again.
func TestBulkSortsOnFile(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "graph.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	mode := func() int {
		t.Helper()
		var m int
		if err := s.w.conn.QueryRowContext(ctx, `PRAGMA temp_store`).Scan(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if on, err := s.BulkLoad(ctx); err != nil || !on {
		t.Fatalf("BulkLoad: %v, %v", on, err)
	}
	write := func(d int) {
		t.Helper()
		doc := fmt.Sprintf("https://x.test/%d.html", d)
		if err := s.ReplaceDocument(ctx, "c", doc, []kgagent.Triple{graphtest.T("c", doc, fmt.Sprintf("m%d.f", d), "calls", "m.g", "a")}); err != nil {
			t.Fatal(err)
		}
	}
	write(0)
	if m := mode(); m != 1 {
		t.Errorf("temp_store %d during a bulk load without strs_h, want 1 (FILE)", m)
	}
	// strings past the complete cache: looked up by hash, strs_h created
	old := maxCompleteStrBytes
	maxCompleteStrBytes = 0
	defer func() { maxCompleteStrBytes = old }()
	write(1)
	write(2)
	if s.w.noStrsH {
		t.Fatal("strs_h not created once the cache stopped being complete")
	}
	if m := mode(); m != 2 {
		t.Errorf("temp_store %d once strs_h is back, want 2 (MEMORY)", m)
	}
	if err := s.Snapshot(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if m := mode(); m != 2 || s.w.tempFile {
		t.Errorf("temp_store %d (tempFile %v) after the finish, want 2 (MEMORY)", m, s.w.tempFile)
	}
}
