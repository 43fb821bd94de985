// Package groupcommit lets concurrent writers of one store share a
// transaction: each queues its job, and whoever finds the queue idle leads,
// running up to a maximum of queued jobs (its own first) in one go, then
// handing the lead to the next waiter. The embedded stores (corpus/sqlite,
// graphrag/sqlite) use it so that an ingestion's concurrent page writes pay
// one commit per group rather than one each.
package groupcommit

import "sync"

// Queue is a group-commit queue of jobs of type J. The zero value is not
// ready: use New. It is safe for concurrent use.
type Queue[J any] struct {
	max   int
	mu    sync.Mutex
	queue []*waiter[J]
	busy  bool // a leader is running a group
}

type waiter[J any] struct {
	job  J
	wake chan bool // true: lead the next group; false: the job ran
}

// New returns a queue whose groups hold at most size jobs (at least one).
func New[J any](size int) *Queue[J] {
	return &Queue[J]{max: max(1, size)}
}

// Do queues job and returns once it has run: either this caller led and
// called run with a group that starts with job, or another leader ran it
// in its group. run must record each job's outcome in the job itself (a
// pointer type, typically); it is never called by two leaders at once.
func (q *Queue[J]) Do(job J, run func(group []J)) {
	w := &waiter[J]{job: job, wake: make(chan bool, 1)}
	q.mu.Lock()
	q.queue = append(q.queue, w)
	lead := !q.busy
	q.busy = true
	q.mu.Unlock()
	if !lead && !<-w.wake {
		return
	}
	// Leading: w is first in the queue.
	q.mu.Lock()
	n := min(len(q.queue), q.max)
	group := append([]*waiter[J](nil), q.queue[:n]...)
	q.queue = append(q.queue[:0], q.queue[n:]...)
	q.mu.Unlock()

	jobs := make([]J, n)
	for i, g := range group {
		jobs[i] = g.job
	}
	run(jobs)

	q.mu.Lock()
	if len(q.queue) > 0 {
		q.queue[0].wake <- true
	} else {
		q.busy = false
	}
	q.mu.Unlock()
	for _, g := range group[1:] {
		g.wake <- false
	}
}

// Waiting is how many jobs wait for a leader (for tests).
func (q *Queue[J]) Waiting() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}

// Busy reports whether a leader is running a group (for tests).
func (q *Queue[J]) Busy() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.busy
}
