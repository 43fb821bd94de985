package natscache

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/kgagent/kgagent/internal/natscluster"
)

func startNATS(t *testing.T) *server.Server { return natscluster.StartServer(t) }

func open(t *testing.T, s *server.Server, local func() uint64) *Generation {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	g, err := New(context.Background(), nc, local, Config{Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

// TestWriteOnOneRetiresEverywhere: a write counted by one process changes
// the generation every other process sees, within a second; without writes
// it stays put.
func TestWriteOnOneRetiresEverywhere(t *testing.T) {
	s := startNATS(t)
	var writesA, writesB atomic.Uint64
	a := open(t, s, writesA.Load)
	b := open(t, s, writesB.Load)
	before := b.Value()
	time.Sleep(50 * time.Millisecond) // several publish ticks: nothing to publish
	if b.Value() != before {
		t.Fatalf("generation moved without writes: %d -> %d", before, b.Value())
	}
	start := time.Now()
	writesA.Add(1)
	for b.Value() == before {
		if time.Since(start) > time.Second {
			t.Fatal("a write on A did not reach B within a second")
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("B saw A's write after %s", time.Since(start))
	// A's generation moved once, at its write, and not again when its own
	// increment came back through the watch.
	time.Sleep(100 * time.Millisecond)
	if a.Value() != 1 || b.Value() != before+1 {
		t.Errorf("generations after one write: A %d (want 1), B %d (want %d)", a.Value(), b.Value(), before+1)
	}
}

// TestConcurrentIncrementsAllCount: processes publishing writes at the same
// time each add one to the shared counter (compare-and-set, no lost update).
func TestConcurrentIncrementsAllCount(t *testing.T) {
	s := startNATS(t)
	const procs, rounds = 4, 10
	gs := make([]*Generation, procs)
	for i := range gs {
		gs[i] = open(t, s, func() uint64 { return 0 })
	}
	var wg sync.WaitGroup
	for _, g := range gs {
		wg.Add(1)
		go func(g *Generation) {
			defer wg.Done()
			for range rounds {
				if err := g.increment(context.Background()); err != nil {
					t.Error(err)
				}
			}
		}(g)
	}
	wg.Wait()
	// An observer that wrote nothing sees every increment; each writer
	// sees the others' (its own writes already counted locally).
	obs := open(t, s, func() uint64 { return 0 })
	deadline := time.Now().Add(5 * time.Second)
	for obs.Value() != procs*rounds || gs[0].Value() != (procs-1)*rounds {
		if time.Now().After(deadline) {
			t.Fatalf("observer sees %d, a writer %d; want %d and %d", obs.Value(), gs[0].Value(), procs*rounds, (procs-1)*rounds)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
