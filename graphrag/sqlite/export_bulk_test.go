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
