package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kgagent/kgagent/crawler"
)

// app is the wired process: the data-dir lock, the bus and every service.
// This is the only place that chooses implementations.
type app struct {
	cfg     Config
	command string // serve, worker, ingest, ask, …
	log     *slog.Logger
	lock    *dataLock
	bus     *bus
	closers []func() // run in reverse order by Close
	ready   atomic.Bool
	warm    atomic.Bool   // the search copies are loaded: answers run at full speed
	warmed  chan struct{} // closed when warm is set
	// ingests counts the ingests running in this process (jobs, the
	// demo's): the background semantic pass waits for them to end.
	ingests atomic.Int32
	demo    *demoSite
	svc     services
}

// openApp takes the data-dir lock, opens the stores and the bus.
// The CLI commands (ingest, ask, eval) pass withBus false: they need no NATS.
func openApp(ctx context.Context, cfg Config, command string, log *slog.Logger, withBus bool) (*app, error) {
	lock, err := lockDataDir(cfg.DataDir, command)
	if err != nil {
		return nil, err
	}
	a := &app{cfg: cfg, log: log, lock: lock, command: command, warmed: make(chan struct{})}
	if withBus {
		b, err := openBus(cfg, log)
		if err != nil {
			a.Close()
			return nil, err
		}
		a.bus = b
		a.closers = append(a.closers, b.Close)
	}
	if err := a.openServices(ctx); err != nil {
		a.Close()
		return nil, err
	}
	privateDataFiles(cfg.DataDir)
	a.ready.Store(true)
	return a, nil
}

// Close releases everything in reverse order of opening.
func (a *app) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
	if a.demo != nil {
		a.demo.Close()
	}
	_ = a.lock.Close()
}

func (a *app) stopAccepting()   { a.ready.Store(false) }
func (a *app) onClose(f func()) { a.closers = append(a.closers, f) }

// readiness reports whether the app still accepts work and its bus is
// connected (the gateway adds a check of the index).
func (a *app) readiness() error {
	if !a.ready.Load() {
		return fmt.Errorf("not ready")
	}
	if a.bus == nil {
		return nil
	}
	if err := a.bus.Ready(); err != nil {
		return err
	}
	return nil
}

// warmer loads a collection's in-memory search structures ahead of its
// first question; the embedded index and graph implement it.
type warmer interface {
	Warm(ctx context.Context, collection string) error
}

// warmUp loads every collection's search copy (from its snapshot when one
// is current) and the graph's name indexes, then marks the app warm: until
// then /readyz answers 503, so a load balancer sends no question that would
// wait seconds for a load. Failures are logged; the stores' own readiness
// checks report them.
//
// The search copies (one after the other: the index loads under one lock)
// and the name indexes load at the same time, on two cores. The collector
// runs a quarter as often meanwhile (GOGC 400 unless GOGC is set; the
// memory limit still holds): the load only adds to the heap, apart from
// each snapshot's decompressed body, which is garbage once decoded. Once
// warm, that garbage goes back to the OS (debug.FreeOSMemory), so the
// resident set is what the copies hold. OpenJDK docs (134k chunks, 1.38M
// triples), load ~17: 9.3 s to warm, 2.9 CPU-s (index 1.24, graph 1.14,
// GC 0.5) one after the other.
func (a *app) warmUp(ctx context.Context) {
	start := time.Now()
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	defer func() {
		a.warm.Store(true)
		close(a.warmed)
		if a.background() {
			debug.FreeOSMemory()
		}
	}()
	cols, err := a.svc.corpus.Collections(ctx)
	if err != nil {
		a.log.Warn("warm-up: cannot list collections", "err", err)
		return
	}
	idx, _ := a.svc.index.(warmer)
	rebuilt := a.rebuilds()
	suffix := a.svc.graph.Config().EntitySuffix
	var wg sync.WaitGroup
	if a.svc.graphWarm != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, c := range cols {
				if strings.HasSuffix(c.Name, suffix) {
					continue
				}
				if err := a.svc.graphWarm.Warm(ctx, c.Name); err != nil {
					a.log.Warn("warm-up: graph", "collection", c.Name, "err", err)
				}
			}
		}()
	}
	if idx != nil {
		for _, c := range cols {
			if err := idx.Warm(ctx, c.Name); err != nil {
				a.log.Warn("warm-up: search copy", "collection", c.Name, "err", err)
			}
		}
	}
	wg.Wait()
	// rebuilt counts the search copies and name indexes built from the
	// stores rather than read from their snapshots: 0 right after an
	// ingest, which leaves them current.
	a.log.Info("warm", "collections", len(cols), "rebuilt", a.rebuilds()-rebuilt, "seconds", time.Since(start).Seconds())
}

// rebuilder counts the in-memory structures a store built from its rows
// rather than read back from a snapshot; the embedded index and graph
// implement it.
type rebuilder interface {
	Rebuilds() int64
}

// rebuilds is the sum of the stores' rebuild counts.
func (a *app) rebuilds() int64 {
	var n int64
	for _, s := range []any{a.svc.index, a.svc.graphStore} {
		if r, ok := s.(rebuilder); ok {
			n += r.Rebuilds()
		}
	}
	return n
}

// snapshotter writes a collection's in-memory search structures to disk
// now; the embedded index and graph implement it.
type snapshotter interface {
	Snapshot(ctx context.Context, collection string) error
}

// afterSnapshotter is a snapshotter whose steps that hold the most memory
// wait until ready is closed; the rest (the embedded graph's index builds
// at the end of a bulk load) run meanwhile.
type afterSnapshotter interface {
	SnapshotAfter(ctx context.Context, collection string, ready <-chan struct{}) error
}

// snapshot leaves current snapshots of collection on disk: its search copy,
// its entity collection's, and the graph's name index. The first serve or
// ask after an ingest then reads them instead of building them from the
// stores (15.7 s before serve was ready on the OpenJDK docs). A failure is
// logged, not returned: it costs the next process a rebuild, nothing else.
func (a *app) snapshot(ctx context.Context, collection string) {
	start := time.Now()
	// The search copies the index holds already (kgagent ingest kept them
	// current while it crawled, see keepCopies: only their encoding is
	// left) are written at the same time as the graph's snapshot (its bulk
	// load completed in SQLite, then its name index built and written), on
	// two cores. A copy that must be built from SQLite (streamed, in
	// bounded pieces) is written first, beside the graph's index builds,
	// which hold little of Go's memory; the graph's steps that hold the
	// most (its entities' words, its name index) wait for those copies
	// (SnapshotAfter), so that a copy and the name index are never both
	// in memory (the 33,438-page corpus's ingest went to 455 MB with the
	// two together).
	colls := []string{collection, collection + a.svc.graph.Config().EntitySuffix}
	var held, rest []string
	for _, c := range colls {
		if h, ok := a.svc.index.(interface{ Holds(string) bool }); ok && h.Holds(c) {
			held = append(held, c)
		} else {
			rest = append(rest, c)
		}
	}
	// In kgagent ingest the crawl's garbage goes back to the OS first and
	// each copy goes once written, when a copy is to be built from SQLite
	// (the OpenJDK docs'), which then has the room. When the ingest kept
	// every copy (a small corpus, the Python docs') nothing is loaded at
	// the end but the graph's name index, under the same soft limit on
	// Go's memory; the frees (three forced collections, and the crawl's
	// heap handed back to the OS to be faulted in again by the end's
	// allocations) only cost: the first, ~40 ms, held up the graph's
	// finish, which the end waits for. osFrees counts them.
	var osFrees int
	free := func() {
		if a.command == "ingest" && len(rest) > 0 {
			debug.FreeOSMemory()
			osFrees++
		}
	}
	// In kgagent ingest the snapshots are made under a lower soft limit
	// than the crawl's (snapshotReserve), unless GOMEMLIMIT is set.
	if a.command == "ingest" && os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(snapshotMemoryLimit(a.cfg.IngestMemoryLimit)))
	}
	// searchRebuilt counts the search copies built from SQLite here
	// rather than taken from memory: 0 after kgagent ingest (keepCopies)
	var searchRebuilt int64
	r, _ := a.svc.index.(rebuilder)
	if r != nil {
		searchRebuilt = -r.Rebuilds()
	}
	s, _ := a.svc.index.(snapshotter)
	write := func(cs []string) {
		if s == nil {
			return
		}
		for _, c := range cs {
			if err := s.Snapshot(ctx, c); err != nil {
				a.log.Warn("snapshot: search copy", "collection", c, "err", err)
			}
			// the ingest searches no more: each copy goes once written
			if r, ok := s.(interface{ Release(string) }); ok && a.command == "ingest" {
				r.Release(c)
				free()
			}
		}
	}
	free()
	ready := make(chan struct{})
	if len(rest) == 0 {
		close(ready)
	}
	var wg sync.WaitGroup
	if g, ok := a.svc.graphStore.(snapshotter); ok {
		// a graph that cannot wait in part waits for those copies whole
		graph := func() error {
			<-ready
			return g.Snapshot(ctx, collection)
		}
		if ga, ok := g.(afterSnapshotter); ok {
			graph = func() error { return ga.SnapshotAfter(ctx, collection, ready) }
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := graph(); err != nil {
				a.log.Warn("snapshot: graph", "collection", collection, "err", err)
			}
		}()
	}
	if len(rest) > 0 {
		write(rest)
		close(ready)
	}
	write(held)
	wg.Wait()
	if r != nil {
		searchRebuilt += r.Rebuilds()
	}
	a.log.Info("snapshots written", "collection", collection, "search_rebuilt", searchRebuilt, "os_frees", osFrees, "seconds", time.Since(start).Seconds())
}

// snapshotReserve is how much lower than the crawl's the soft limit on
// Go's memory is while kgagent ingest makes its snapshots: the graph's
// index builds and the search copies' reads from SQLite then hold more
// outside Go's heap than the crawl did, while the heap, past the crawl's
// garbage, holds less (at most ~190 MB live for the OpenJDK docs, the
// graph's entities and words, under a soft limit of 264 MiB). The ingest's
// peak resident set came in that phase; with the lower limit it comes in
// the crawl. OpenJDK docs, the same build without and with it, alternating
// (loads 3, 7, 12): peak RSS 390.6 -> 372.7, 394.8 -> 397.4, 392.1 -> 367.4
// MB; CPU 72.7 -> 73.6, 87.5 -> 93.0, 83.5 -> 82.9 s.
const snapshotReserve = 32 << 20

// snapshotMemoryLimit is the soft limit on Go's memory while kgagent ingest
// makes its snapshots (snapshotReserve).
func snapshotMemoryLimit(limit int64) int64 {
	return max(goMemoryLimit(limit)-snapshotReserve, 48<<20)
}

// keeper is an index that can keep a collection's search copy current
// from its writes (the embedded index, corpus/sqlite.(*Index).Keep), and
// stop as soon as the crawl's progress shows the copies will not fit
// (Crawled).
type keeper interface {
	Keep(ctx context.Context, collection string, maxBytes int64) error
	Crawled(done, total int64) bool
}

// keepCopies has the index keep the search copies of collection and of
// its entity collection current while kgagent ingest writes them, so that
// the snapshots at its end (snapshot) encode the copies in memory instead
// of building them again from SQLite (Python docs: ~1.6 CPU-s after the
// crawl), as long as they hold an eighth of ingest_memory_limit together
// (the Python docs' two copies ~27 MB; the OpenJDK docs' ~110 MB, which
// held all along raised the crawl's peak: those are built at the end). A
// failure is logged: the end then builds them as before.
//
// It returns the crawl's progress hook (crawler.Ingester.Run's progress):
// it tells the index the pages done of those queued, so that copies
// projected past the bound are dropped early in the crawl rather than
// grown to it (Crawled).
func (a *app) keepCopies(ctx context.Context, collection string) func(crawler.Counters) {
	k, ok := a.svc.index.(keeper)
	if !ok {
		return func(crawler.Counters) {}
	}
	for _, c := range []string{collection, collection + a.svc.graph.Config().EntitySuffix} {
		if err := k.Keep(ctx, c, a.cfg.IngestMemoryLimit/8); err != nil {
			a.log.Warn("keep search copy", "collection", c, "err", err)
		}
	}
	return func(c crawler.Counters) {
		if k.Crawled(c.Done, c.Queued) {
			a.log.Info("search copies not kept: projected past the bound", "collection", collection, "pages_done", c.Done, "pages_queued", c.Queued)
		}
	}
}

// afterIngest is every ingestion's end (crawler.IngesterConfig.AfterRun;
// kgagent ingest, the background job worker and the demo ingest): it
// writes the snapshots of the collection (app.snapshot), also after a run
// that failed (it may have written pages), but not after a cancelled one:
// the process is going away, and the next one rebuilds what it needs. Then
// it wakes the semantic pass (new chunks to embed).
func (a *app) afterIngest(ctx context.Context, collection string) {
	if ctx.Err() == nil {
		a.snapshot(ctx, collection)
	}
	if p := a.svc.semPass; p != nil {
		p.Kick()
	}
}

// warmth is the readiness check of warmUp.
func (a *app) warmth() error {
	if !a.warm.Load() {
		return fmt.Errorf("loading the search indexes")
	}
	return nil
}
