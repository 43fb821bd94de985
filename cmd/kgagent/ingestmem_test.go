package main

import (
	"runtime/debug"
	"testing"
)

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

// TestServeMemoryLimit: serve_memory_limit sets Go's soft limit the way
// ingest_memory_limit does (less the reserve) and restores it after; 0 and
// a GOMEMLIMIT in the environment leave Go's limit alone.
func TestServeMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	cfg := defaultConfig()
	if cfg.ServeMemoryLimit != 1<<30 {
		t.Fatalf("default serve_memory_limit %d, want 1 GiB", cfg.ServeMemoryLimit)
	}
	cfg.ServeMemoryLimit = 512 << 20
	restore := limitServeMemory(cfg)
	if got := debug.SetMemoryLimit(-1); got != 512<<20-136<<20 {
		t.Errorf("Go's limit under serve_memory_limit 512 MiB: %d, want %d", got, 512<<20-136<<20)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("after restore: %d, want %d", got, before)
	}
	cfg.ServeMemoryLimit = 0
	limitServeMemory(cfg)()
	t.Setenv("GOMEMLIMIT", "300MiB")
	cfg.ServeMemoryLimit = 512 << 20
	restore = limitServeMemory(cfg)
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("with 0 or GOMEMLIMIT set: %d, want Go's limit untouched (%d)", got, before)
	}
	restore()
}

// TestServeGCPercent: serve, worker and mcp collect once the heap has
// grown by serveGCPercent, restored after; GOGC in the environment wins.
// Go's default 100 let a 10,000-page data dir's ~360 MB heap grow to twice
// that, and 25 left the OpenJDK API docs' serve at 351 MB RSS after 1,000
// requests (323 MB at 12, the 350 MB target with room).
func TestServeGCPercent(t *testing.T) {
	t.Setenv("GOGC", "")
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	restore := limitServeMemory(defaultConfig())
	if got := debug.SetGCPercent(serveGCPercent); got != serveGCPercent || serveGCPercent > 12 {
		t.Errorf("GC percent in serve %d (serveGCPercent %d), want at most 12", got, serveGCPercent)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("after restore: GC percent %d, want 100", got)
	}
	t.Setenv("GOGC", "200")
	restore = limitServeMemory(defaultConfig())
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set: GC percent %d, want it untouched (100)", got)
	}
	restore()
}
