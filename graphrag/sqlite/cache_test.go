package sqlite

import (
	"database/sql"
	"path/filepath"
	"testing"
)

// cacheSize is SQLite's cache_size on a connection of db.
func cacheSize(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`PRAGMA cache_size`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestReadCacheKiB: Options.ReadCacheKiB sets the read connections' page
// cache and leaves the writer's 32 MiB; without it the readers keep
// SQLite's default.
func TestReadCacheKiB(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenWith(filepath.Join(dir, "g.db"), Options{ReadCacheKiB: 256})
	if err != nil {
		t.Fatal(err)
	}
	// every pooled connection, not just the first
	conns := make([]*sql.Conn, 3)
	for i := range conns {
		if conns[i], err = s.rdb.Conn(t.Context()); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := conns[i].QueryRowContext(t.Context(), `PRAGMA cache_size`).Scan(&n); err != nil || n != -256 {
			t.Fatalf("read connection %d: cache_size %d, %v; want -256", i, n, err)
		}
	}
	for _, c := range conns {
		c.Close()
	}
	var n int
	if err := s.w.conn.QueryRowContext(t.Context(), `PRAGMA cache_size`).Scan(&n); err != nil || n != -32768 {
		t.Fatalf("writer: cache_size %d, %v; want -32768", n, err)
	}
	s.Close()
	s, err = Open(filepath.Join(dir, "g.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := cacheSize(t, s.rdb); n != -2000 {
		t.Fatalf("default read connection: cache_size %d, want -2000", n)
	}
}
