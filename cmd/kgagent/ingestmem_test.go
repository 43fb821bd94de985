package main

import "testing"

// TestGoMemoryLimit: ingest_memory_limit bounds the whole process, so Go's
// soft limit is what is left after the reserve for SQLite and the
// executable, never below 48 MiB.
func TestGoMemoryLimit(t *testing.T) {
	for _, c := range []struct{ limit, want int64 }{
		{400 << 20, 264 << 20},
		{1 << 30, 1<<30 - 136<<20},
		{64 << 20, 48 << 20},
	} {
		if got := goMemoryLimit(c.limit); got != c.want {
			t.Errorf("goMemoryLimit(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
}
