package crawler

import (
	"context"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// DefaultInFlightBytes is Config.InFlightBytes's default: the share of a
// 400 MiB memory bound (the CLI's default ingest_memory_limit), 12.5 MiB.
const DefaultInFlightBytes = 400 << 20 / inFlightShare

// inFlightShare is the part of an ingest's memory bound that its crawl's
// pages in flight may hold: a 32nd, so that at 400 MiB a page of the
// default MaxBodyBytes (10 MiB) is parsed alone.
const inFlightShare = 32

// InFlightBytesWithin returns the Config.InFlightBytes of an ingest that
// aims to stay within memoryLimit bytes (the CLI's ingest_memory_limit).
func InFlightBytesWithin(memoryLimit int64) int64 { return memoryLimit / inFlightShare }

// byteBudget bounds the bytes of the pages a crawl holds at once
// (Config.InFlightBytes). Waiters are served in order, so a large page is
// not starved by a stream of small ones; a page larger than the budget
// waits for all of it.
type byteBudget struct {
	size int64
	sem  *semaphore.Weighted
	used atomic.Int64 // held now
	peak atomic.Int64 // the most held at once (for the tests)
}

func newByteBudget(size int64) *byteBudget {
	return &byteBudget{size: size, sem: semaphore.NewWeighted(size)}
}

// acquire takes n bytes of the budget (at least 1, at most all of it) and
// returns the hold, or an error when ctx is done first.
func (b *byteBudget) acquire(ctx context.Context, n int64) (*hold, error) {
	n = min(max(n, 1), b.size)
	if err := b.sem.Acquire(ctx, n); err != nil {
		return nil, err
	}
	u := b.used.Add(n)
	for p := b.peak.Load(); u > p && !b.peak.CompareAndSwap(p, u); p = b.peak.Load() {
	}
	h := &hold{b: b}
	h.n.Store(n)
	return h, nil
}

// hold is a page's share of a byteBudget.
type hold struct {
	b *byteBudget
	n atomic.Int64
}

// shrink gives back what the hold has over n bytes.
func (h *hold) shrink(n int64) {
	if h == nil {
		return
	}
	n = max(n, 1)
	for {
		cur := h.n.Load()
		if cur <= n {
			return
		}
		if h.n.CompareAndSwap(cur, n) {
			h.b.used.Add(n - cur)
			h.b.sem.Release(cur - n)
			return
		}
	}
}

// release gives the whole hold back; a second call does nothing.
func (h *hold) release() {
	if h == nil {
		return
	}
	if n := h.n.Swap(0); n > 0 {
		h.b.used.Add(-n)
		h.b.sem.Release(n)
	}
}
