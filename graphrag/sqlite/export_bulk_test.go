package sqlite

import (
	"context"
	"testing"
)

// WriterCacheSize is the writer connection's PRAGMA cache_size.
func WriterCacheSize(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.w.conn.QueryRowContext(context.Background(), `PRAGMA cache_size`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// StrsComplete reports whether the writer's string cache is complete (a
// bulk load gives new strings ids without looking them up).
func StrsComplete(s *Store) bool { return s.w.strs.complete }

// SetMaxCachedStrs lowers the string cache's cap for the test.
func SetMaxCachedStrs(t *testing.T, n int) {
	old := maxCachedStrs
	maxCachedStrs = n
	t.Cleanup(func() { maxCachedStrs = old })
}

// DuplicateStrs is how many rows of strs repeat another's string.
func DuplicateStrs(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.rdb.QueryRowContext(context.Background(), `SELECT count(*) - count(DISTINCT s) FROM strs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
