package main

import (
	"context"
	"io"
	"runtime/debug"
	"testing"

	"github.com/kgagent/kgagent/graphrag"
)

// limitRecorder is a graph store whose Snapshot records Go's soft memory
// limit at the time.
type limitRecorder struct {
	graphrag.Store
	limit int64
}

func (r *limitRecorder) Snapshot(context.Context, string) error {
	r.limit = debug.SetMemoryLimit(-1)
	return nil
}

// TestSnapshotUnderLowerLimit: kgagent ingest makes its snapshots under a
// soft limit snapshotReserve below its crawl's, and the crawl's limit is
// back once they are written; another command's snapshots (a background
// job in serve) leave the limit alone.
func TestSnapshotUnderLowerLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	cfg := defaultConfig()
	cfg.DataDir = t.TempDir()
	ctx := context.Background()
	crawl := goMemoryLimit(cfg.IngestMemoryLimit)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(crawl))
	for _, command := range []string{"ingest", "worker"} {
		a, err := openApp(ctx, cfg, command, newLogger(cfg, io.Discard), false)
		if err != nil {
			t.Fatal(err)
		}
		rec := &limitRecorder{Store: a.svc.graphStore}
		a.svc.graphStore = rec
		a.snapshot(ctx, "docs")
		a.Close()
		want := crawl
		if command == "ingest" {
			want = crawl - snapshotReserve
		}
		if rec.limit != want {
			t.Errorf("%s: snapshots made under a soft limit of %d, want %d", command, rec.limit, want)
		}
		if got := debug.SetMemoryLimit(-1); got != crawl {
			t.Errorf("%s: soft limit %d after the snapshots, want %d back", command, got, crawl)
		}
	}
}
