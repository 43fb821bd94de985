package main

import (
	"context"
	"io"
	"slices"
	"sync"
	"testing"

	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/graphrag"
)

// snapEvents records the order of the snapshot steps of a test.
type snapEvents struct {
	mu  sync.Mutex
	all []string
}

func (e *snapEvents) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, s)
}

// copyRecorder is an index that holds no search copy: each is written
// from SQLite (recorded).
type copyRecorder struct {
	corpus.Index
	ev *snapEvents
}

func (r *copyRecorder) Holds(string) bool { return false }

func (r *copyRecorder) Snapshot(_ context.Context, c string) error {
	r.ev.add("copy " + c)
	return nil
}

// graphRecorder is a graph store whose snapshot is recorded: its start
// and, with SnapshotAfter, the steps after ready.
type graphRecorder struct {
	graphrag.Store
	ev *snapEvents
}

func (r *graphRecorder) Snapshot(context.Context, string) error {
	r.ev.add("graph")
	return nil
}

// afterRecorder is a graphRecorder that can wait in part.
type afterRecorder struct{ graphRecorder }

func (r *afterRecorder) SnapshotAfter(_ context.Context, _ string, ready <-chan struct{}) error {
	r.ev.add("graph start")
	<-ready
	r.ev.add("graph after ready")
	return nil
}

// TestSnapshotCopiesBesideGraph: the search copies that kgagent ingest
// writes from SQLite (the OpenJDK docs') are written while the graph's
// snapshot starts (its index builds), and the graph's steps that hold
// the most memory (after ready) come only after both copies; a graph
// store that cannot wait in part snapshots after them. Before, the copies
// came after the whole graph's snapshot.
func TestSnapshotCopiesBesideGraph(t *testing.T) {
	cfg := defaultConfig()
	cfg.DataDir = t.TempDir()
	ctx := context.Background()
	for _, after := range []bool{true, false} {
		a, err := openApp(ctx, cfg, "ingest", newLogger(cfg, io.Discard), false)
		if err != nil {
			t.Fatal(err)
		}
		ev := &snapEvents{}
		a.svc.index = &copyRecorder{Index: a.svc.index, ev: ev}
		g := graphRecorder{Store: a.svc.graphStore, ev: ev}
		if after {
			a.svc.graphStore = &afterRecorder{g}
		} else {
			a.svc.graphStore = &g
		}
		ents := "docs" + a.svc.graph.Config().EntitySuffix
		a.snapshot(ctx, "docs")
		a.Close()
		all := ev.all
		copies := []int{slices.Index(all, "copy docs"), slices.Index(all, "copy "+ents)}
		last := "graph"
		if after {
			last = "graph after ready"
			if !slices.Contains(all, "graph start") {
				t.Errorf("SnapshotAfter not called: %q", all)
			}
		}
		at := slices.Index(all, last)
		if copies[0] < 0 || copies[1] < 0 || at < copies[0] || at < copies[1] {
			t.Errorf("after=%v: steps %q, want both copies before %q", after, all, last)
		}
	}
}
