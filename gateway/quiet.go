package gateway

import (
	"context"
	"sync/atomic"
	"time"
)

// activity counts the service calls in flight on a Server and when the
// last one ended, so that background work (the semantic pass) can run
// in the gaps between requests (Server.Quiet).
type activity struct {
	inFlight atomic.Int64
	lastEnd  atomic.Int64 // unix nanoseconds the last call ended
}

// begin marks a call started; the func it returns marks it ended.
func (a *activity) begin() func() {
	a.inFlight.Add(1)
	return func() {
		a.lastEnd.Store(time.Now().UnixNano())
		a.inFlight.Add(-1)
	}
}

// quietFor is how long no call has been in flight; 0 while one is.
func (a *activity) quietFor(now time.Time) time.Duration {
	if a.inFlight.Load() > 0 {
		return 0
	}
	last := a.lastEnd.Load()
	if last == 0 {
		return time.Duration(1<<63 - 1)
	}
	return max(now.Sub(time.Unix(0, last)), 0)
}

// quietPoll is how often Quiet looks again while calls are in flight.
const quietPoll = 10 * time.Millisecond

// Quiet returns once no service call (any transport) has been in flight
// for at least d, once most has passed (0: no bound), or with ctx's error
// when ctx ends first. Background work that would compete with answers for
// the cores (the semantic pass) calls it before each unit of work, so it
// runs in the gaps between requests; most keeps it from starving on a
// server that is never idle for d.
func (s *Server) Quiet(ctx context.Context, d, most time.Duration) error {
	var bound <-chan time.Time
	if most > 0 {
		t := time.NewTimer(most)
		defer t.Stop()
		bound = t.C
	}
	for {
		q := s.activity.quietFor(time.Now())
		if q >= d {
			return nil
		}
		wait := d - q
		if q == 0 {
			wait = quietPoll // a call is in flight
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-bound:
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}
