package natsjobs

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/internal/poll"
)

// flakyKV fails the first fails Puts and Updates, as a status bucket whose stream has
// lost its leader (a node of the cluster killed) answers for a while.
type flakyKV struct {
	jetstream.KeyValue
	fails atomic.Int32
}

// Put fails while fails lasts, else writes.
func (f *flakyKV) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	if f.fails.Add(-1) >= 0 {
		return 0, errors.New("nats: no response from stream")
	}
	return f.KeyValue.Put(ctx, key, value)
}

// Update fails as Put does (the worker's "running" write is an Update).
func (f *flakyKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if f.fails.Add(-1) >= 0 {
		return 0, errors.New("nats: no response from stream")
	}
	return f.KeyValue.Update(ctx, key, value, rev)
}

// TestStatusStoreOutageKeepsDeliveries: while the status store cannot be
// written, the worker retries in place; it no longer hands the message back
// once per failed write, which spent all MaxDeliver deliveries within
// seconds and left the job unfinished for good (TestFaultNATSNodeKilled's
// flake: "running" a minute after a node was killed).
func TestStatusStoreOutageKeepsDeliveries(t *testing.T) {
	s := startNATS(t, t.TempDir())
	defer s.Shutdown()
	cfg := Config{StatusInterval: 50 * time.Millisecond, MaxDeliver: 3}
	_, q := connect(t, s, cfg)
	_, worker := connect(t, s, cfg)
	flaky := &flakyKV{KeyValue: worker.kv}
	flaky.fails.Store(6) // more failed writes than deliveries allowed
	worker.kv = flaky
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go worker.Run(ctx, ingester())
	st, err := q.Submit(ctx, crawler.Spec{Collection: "lumen", URLs: []string{site(t) + "/faq.html"}})
	if err != nil {
		t.Fatal(err)
	}
	done := waitState(t, q, st.ID, crawler.JobSucceeded)
	if done.Counters.Indexed != 1 || done.Message != "" {
		t.Errorf("job after a status store outage: %+v (a message means it was redelivered)", done)
	}
	if n := flaky.fails.Load(); n >= 0 {
		t.Errorf("%d failed writes left: the outage was not exercised", n+1)
	}
}

// TestGivesUpAfterMaxDeliver: a job whose worker stops before it finishes,
// MaxDeliver times, is marked failed, saying why. The consumer's own limit
// used to drop the message silently, and the job said "running" for good.
func TestGivesUpAfterMaxDeliver(t *testing.T) {
	s := startNATS(t, t.TempDir())
	defer s.Shutdown()
	cfg := Config{StatusInterval: 20 * time.Millisecond, MaxDeliver: 2}
	_, q := connect(t, s, cfg)
	st, err := q.Submit(context.Background(), crawler.Spec{Collection: "lumen", URLs: []string{"http://example.invalid/x"}})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan string, 1)
	for i := 0; i < cfg.MaxDeliver; i++ { // each worker stops mid-job
		startWorker(t, q, started, "delivery "+itoa(i+1))()
	}
	wctx, stop := context.WithCancel(context.Background())
	defer stop()
	go q.Run(wctx, blockingRunner{started})
	got := waitState(t, q, st.ID, crawler.JobFailed)
	if got.FinishedAt == nil || !strings.Contains(got.Message, "gave up after 2 attempts") {
		t.Errorf("job past MaxDeliver: %+v", got)
	}
	select {
	case <-started:
		t.Error("a job past MaxDeliver ran again")
	default:
	}
}

// TestRedeliveredCopyKeepsFinishedState: a job redelivered while its first
// delivery still ran (its worker could not renew AckWait, the consumer's
// leader being gone) runs twice; once one copy has finished it, the other
// stops and never writes "running" over the finished status.
func TestRedeliveredCopyKeepsFinishedState(t *testing.T) {
	s := startNATS(t, t.TempDir())
	defer s.Shutdown()
	_, q := connect(t, s, Config{StatusInterval: 20 * time.Millisecond})
	ctx := context.Background()
	st, err := q.Submit(ctx, crawler.Spec{Collection: "lumen", URLs: []string{"http://example.invalid/x"}})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan string, 1)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go q.Run(wctx, blockingRunner{started})
	<-started
	waitState(t, q, st.ID, crawler.JobRunning)
	// The other copy finishes the job.
	fin, err := q.get(ctx, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	fin.State, fin.FinishedAt, fin.Counters = crawler.JobSucceeded, &now, crawler.Counters{Indexed: 7}
	if err := q.put(ctx, fin); err != nil {
		t.Fatal(err)
	}
	// This copy stops and acknowledges the message: the stream empties.
	waitStreamEmpty(t, q)
	time.Sleep(100 * time.Millisecond) // five status intervals
	got, err := q.Get(ctx, st.ID)
	if err != nil || got.State != crawler.JobSucceeded || got.Counters.Indexed != 7 {
		t.Errorf("finished status after the redelivered copy stopped: %+v %v", got, err)
	}
}

// interveningKV runs between once, right after the first Get it answers:
// another writer (a Cancel, another delivery of the job) comes in between
// a worker's read of a status and its write.
type interveningKV struct {
	jetstream.KeyValue
	between func()
	once    sync.Once
}

// Get reads, then lets between write (the first time).
func (k *interveningKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	e, err := k.KeyValue.Get(ctx, key)
	k.once.Do(k.between)
	return e, err
}

// TestStartKeepsStatusWrittenMeanwhile: a job canceled (or finished by
// another delivery) between a worker's read of its status and its
// "running" write stays canceled and never runs. The worker wrote
// "running" over whatever came in between, so the Cancel, answered
// "canceled", was lost and the job ran to its end.
func TestStartKeepsStatusWrittenMeanwhile(t *testing.T) {
	s := startNATS(t, t.TempDir())
	defer s.Shutdown()
	cfg := Config{StatusInterval: 20 * time.Millisecond}
	_, q := connect(t, s, cfg)
	_, worker := connect(t, s, cfg)
	ctx := context.Background()
	st, err := q.Submit(ctx, crawler.Spec{Collection: "lumen", URLs: []string{"http://example.invalid/x"}})
	if err != nil {
		t.Fatal(err)
	}
	worker.kv = &interveningKV{KeyValue: worker.kv, between: func() {
		if _, err := q.Cancel(ctx, st.ID); err != nil {
			t.Error(err)
		}
	}}
	started := make(chan string, 1)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go worker.Run(wctx, blockingRunner{started})
	waitStreamEmpty(t, q)
	select {
	case <-started:
		t.Error("a job canceled before its worker wrote \"running\" ran")
	case <-time.After(200 * time.Millisecond):
	}
	if got, err := q.Get(ctx, st.ID); err != nil || got.State != crawler.JobCanceled {
		t.Errorf("status after a Cancel between the worker's read and write: %+v %v", got, err)
	}
}

// TestCancelStoreOutageFails: Cancel answers EUNAVAILABLE when the status
// cannot be written; it read again and retried any failed write as a lost
// race, forever while reads still worked (a stream without a leader).
func TestCancelStoreOutageFails(t *testing.T) {
	s := startNATS(t, t.TempDir())
	defer s.Shutdown()
	_, q := connect(t, s, Config{})
	ctx := context.Background()
	st, err := q.Submit(ctx, crawler.Spec{Collection: "lumen", URLs: []string{"http://example.invalid/x"}})
	if err != nil {
		t.Fatal(err)
	}
	flaky := &flakyKV{KeyValue: q.kv}
	flaky.fails.Store(1 << 30)
	q.kv = flaky
	done := make(chan error, 1)
	go func() { _, err := q.Cancel(ctx, st.ID); done <- err }()
	select {
	case err := <-done:
		if kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
			t.Errorf("Cancel while the status cannot be written: %v, want EUNAVAILABLE", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Cancel still retrying after 5 s (%d failed writes)", 1<<30-flaky.fails.Load())
	}
}

// waitStreamEmpty waits until q's job stream holds no message: every job
// was acknowledged (or dropped).
func waitStreamEmpty(t *testing.T, q *Queue) {
	t.Helper()
	js, _ := jetstream.New(q.js.Conn())
	poll.Until(t, 10*time.Second, func() error {
		info, err := js.Stream(t.Context(), q.cfg.Stream)
		if err == nil && info.CachedInfo().State.Msgs != 0 {
			err = errors.New("job message still in the stream")
		}
		return err
	})
}

// slowStopConsumer hands out iterators whose Stop takes a while to begin, as
// the iterator's own goroutine, which unsubscribes, can on a loaded machine.
type slowStopConsumer struct{ jetstream.Consumer }

// Messages wraps the consumer's iterator in a slowStopIterator.
func (c slowStopConsumer) Messages(opts ...jetstream.PullMessagesOpt) (jetstream.MessagesContext, error) {
	it, err := c.Consumer.Messages(opts...)
	if err != nil {
		return nil, err
	}
	return slowStopIterator{it}, nil
}

// slowStopIterator is an iterator whose Stop starts 300 ms late.
type slowStopIterator struct{ jetstream.MessagesContext }

// Stop stops the iterator after 300 ms.
func (it slowStopIterator) Stop() {
	time.Sleep(300 * time.Millisecond)
	it.MessagesContext.Stop()
}

// Closed is the wrapped iterator's.
func (it slowStopIterator) Closed() <-chan struct{} {
	return it.MessagesContext.(interface{ Closed() <-chan struct{} }).Closed()
}

// TestShutdownHandsJobToNextWorker: a worker shut down mid-job hands the job
// to the next worker at once, as its second delivery. It used to hand it
// back before its iterator had unsubscribed, to the pull request that
// iterator still held open: the job went back to the stopping worker, was
// dropped, and ran again only after AckWait (30 s here), a delivery spent.
func TestShutdownHandsJobToNextWorker(t *testing.T) {
	s := startNATS(t, t.TempDir())
	defer s.Shutdown()
	cfg := Config{StatusInterval: 20 * time.Millisecond}
	_, q := connect(t, s, cfg)
	_, q2 := connect(t, s, cfg)
	q.cons = slowStopConsumer{q.cons}
	st, err := q.Submit(context.Background(), crawler.Spec{Collection: "lumen", URLs: []string{"http://example.invalid/x"}})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan string, 1)
	startWorker(t, q, started, "delivery 1")() // stops mid-job
	defer startWorker(t, q2, started, "the next worker's delivery (within 10 s of the first one stopping)")()
	got := waitState(t, q2, st.ID, crawler.JobRunning)
	if got.Message != "resumed (delivery 2)" {
		t.Errorf("job on the next worker: %q, want its second delivery", got.Message)
	}
}

// startWorker runs a worker of q with a blockingRunner until it has started
// a job (failing the test after 10 s, naming what did not start), and
// returns the function that stops the worker and waits until it has.
func startWorker(t *testing.T, q *Queue, started chan string, what string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := make(chan struct{})
	go func() { q.Run(ctx, blockingRunner{started}); close(w) }()
	stop = func() { cancel(); <-w }
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		stop()
		t.Fatalf("%s did not start", what)
	}
	return stop
}
