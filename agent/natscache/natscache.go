// Package natscache shares the answer cache's generation between kgagent
// replicas through a NATS JetStream key-value bucket, so that a write to
// the corpus or graph on any replica (or worker) retires the answers every
// replica has cached, within a second, instead of when their TTL ends.
//
// Each process counts its own writes (the stores' generation). When that
// count changes, the process increments one shared counter in the bucket
// with compare-and-set; every process watches the counter. The generation
// the answer cache compares (agent.Config.Cache.Generation) is the local count
// plus the other processes' increments, so it changes on the writer at once
// (and not again when its own increment comes back through the watch) and
// on every other process as soon as the watch delivers the new value.
package natscache

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/natskv"
)

// Config names the bucket and tunes the polling. The zero value works.
type Config struct {
	Bucket   string        // key-value bucket; "kgagent_state"
	Key      string        // key of the shared counter; "answer_generation"
	Interval time.Duration // how often the local write count is compared; 100ms
	Replicas int           // bucket replicas; 0: natskv.Replicas
}

// Generation is the shared answer-cache generation of one process.
type Generation struct {
	cfg    Config
	kv     jetstream.KeyValue
	local  func() uint64
	offset atomic.Uint64 // the shared counter less this process's own increments

	// mu is held while an increment is written and while the watcher
	// applies an entry, so the watcher always knows which revisions are
	// this process's own.
	mu   sync.Mutex
	mine []uint64 // revisions written by this process, ascending, not yet seen
	own  uint64   // own increments the watcher has seen

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New creates (or opens) the bucket, starts watching the shared counter and
// publishing this process's writes; local returns the process's own write
// count. Errors: EUNAVAILABLE when JetStream cannot be reached.
func New(ctx context.Context, nc *nats.Conn, local func() uint64, cfg Config) (*Generation, error) {
	if cfg.Bucket == "" {
		cfg.Bucket = "kgagent_state"
	}
	if cfg.Key == "" {
		cfg.Key = "answer_generation"
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 100 * time.Millisecond
	}
	kv, err := natskv.Bucket(ctx, nc, jetstream.KeyValueConfig{
		Bucket:   cfg.Bucket,
		Storage:  jetstream.FileStorage,
		Replicas: cfg.Replicas,
		History:  1,
	}, "shared state")
	if err != nil {
		return nil, err
	}
	w, err := kv.Watch(ctx, cfg.Key)
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "watching the answer-cache generation")
	}
	rctx, cancel := context.WithCancel(context.Background())
	g := &Generation{cfg: cfg, kv: kv, local: local, cancel: cancel}
	g.wg.Add(2)
	go func() {
		defer g.wg.Done()
		defer func() { _ = w.Stop() }()
		for {
			select {
			case <-rctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil {
					continue // the end of the initial values
				}
				g.apply(e)
			}
		}
	}()
	go func() {
		defer g.wg.Done()
		g.publish(rctx)
	}()
	return g, nil
}

// Value is the generation the answer cache compares: the local write count
// plus the other processes' increments of the shared counter.
func (g *Generation) Value() uint64 { return g.local() + g.offset.Load() }

// apply takes in one value of the shared counter from the watch.
func (g *Generation) apply(e jetstream.KeyValueEntry) {
	n, err := strconv.ParseUint(string(e.Value()), 10, 64)
	if err != nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	// Every own revision up to this one is in n, including any the watch
	// skipped (it may, when its consumer is recreated).
	for len(g.mine) > 0 && g.mine[0] <= e.Revision() {
		g.mine = g.mine[1:]
		g.own++
	}
	g.offset.Store(n - g.own)
}

// Close stops watching and publishing.
func (g *Generation) Close() {
	g.cancel()
	g.wg.Wait()
}

// publish increments the shared counter whenever the local count changed
// since the last increment, until ctx ends. An increment that fails (NATS
// unreachable) is retried at the next tick.
func (g *Generation) publish(ctx context.Context) {
	t := time.NewTicker(g.cfg.Interval)
	defer t.Stop()
	last := g.local()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur := g.local()
		if cur == last {
			continue
		}
		if err := g.increment(ctx); err == nil {
			last = cur
		}
	}
}

// increment adds one to the shared counter with compare-and-set, so
// concurrent increments from several processes all count.
func (g *Generation) increment(ctx context.Context) error {
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		g.mu.Lock()
		var rev uint64
		e, err := g.kv.Get(cctx, g.cfg.Key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			rev, err = g.kv.Create(cctx, g.cfg.Key, []byte("1"))
		case err == nil:
			n, _ := strconv.ParseUint(string(e.Value()), 10, 64)
			rev, err = g.kv.Update(cctx, g.cfg.Key, []byte(strconv.FormatUint(n+1, 10)), e.Revision())
		}
		if err == nil {
			g.mine = append(g.mine, rev)
		}
		g.mu.Unlock()
		cancel()
		if err == nil {
			return nil
		}
		if natskv.IsConflict(err) {
			continue // another process incremented first: read again
		}
		return err
	}
}
