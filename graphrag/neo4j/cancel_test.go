package neo4j

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"
	"github.com/neo4j/neo4j-go-driver/v5/neo4j/config"

	"github.com/kgagent/kgagent"
)

// silentStore is a Store whose server accepts connections and never
// answers: every write blocks until its context ends (or the driver's own
// timeouts, a minute here, give up).
type silentStore struct {
	*Store
	calls sync.WaitGroup
}

// newSilentStore starts the silent server and its Store; the test's end
// cancels the calls still running and waits for them before the driver is
// closed.
func newSilentStore(t *testing.T) *silentStore {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	url := "bolt://" + l.Addr().String()
	driver, err := neo4j.NewDriverWithContext(url, neo4j.NoAuth(), func(c *config.Config) {
		c.SocketConnectTimeout = time.Minute
		c.ConnectionAcquisitionTimeout = time.Minute
		c.MaxTransactionRetryTime = time.Minute
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &silentStore{Store: &Store{driver: driver, cfg: Config{URL: url, BatchSize: DefaultBatchSize, RetryTime: time.Minute}, group: &groupWriter{}}}
	t.Cleanup(func() {
		s.calls.Wait() // t.Context() has ended: every call returns
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		_ = driver.Close(context.Background())
	})
	return s
}

// replaceAsync starts a ReplaceDocument of url under a context that ends
// after d (or with the test), and returns the channel of its error.
func (s *silentStore) replaceAsync(t *testing.T, url string, d time.Duration) <-chan error {
	ch := make(chan error, 1)
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		ctx, cancel := context.WithTimeout(t.Context(), d)
		defer cancel()
		ch <- s.ReplaceDocument(ctx, "c", url, nil)
	}()
	return ch
}

// waitTaken waits until the writer has taken every queued call.
func waitTaken(t *testing.T, g *groupWriter) {
	t.Helper()
	for range 500 {
		g.mu.Lock()
		n, w := len(g.queue), g.writing
		g.mu.Unlock()
		if n == 0 && w {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the writer did not take the queued calls")
}

// TestQueuedWriteHonoursContext: a call waiting behind another's write
// returns when its context ends (ETIMEOUT), not when the write ahead of it
// is done, and is never written. Before, it waited out the write ahead
// (which may take the driver's whole retry time, 30 s by default).
func TestQueuedWriteHonoursContext(t *testing.T) {
	s := newSilentStore(t)
	ahead := s.replaceAsync(t, "https://x/a", 10*time.Second)
	waitTaken(t, s.group)
	start := time.Now()
	err := <-s.replaceAsync(t, "https://x/b", 100*time.Millisecond)
	if kgagent.ErrorCode(err) != kgagent.ETIMEOUT {
		t.Errorf("queued call: %v, want %s", err, kgagent.ETIMEOUT)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the queued call with a 100 ms deadline returned after %s (the write ahead has 10 s)", took.Round(time.Millisecond))
	}
	select {
	case err := <-ahead:
		t.Fatalf("the write ahead ended first (%v): the test shows nothing", err)
	default:
	}
	s.group.mu.Lock()
	n := len(s.group.queue)
	s.group.mu.Unlock()
	if n != 0 {
		t.Errorf("%d calls still queued after their contexts ended", n)
	}
}

// TestGroupWriteStopsWhenEveryCallerIsGone: a group's transaction runs
// under no one caller's cancellation, but once every caller in it has
// given up it stops too. Before, it ran on under context.WithoutCancel
// until the driver's own timeouts (a minute here), and its callers, whose
// contexts had ended, waited for it.
func TestGroupWriteStopsWhenEveryCallerIsGone(t *testing.T) {
	s := newSilentStore(t)
	ahead := s.replaceAsync(t, "https://x/a", 500*time.Millisecond)
	waitTaken(t, s.group)
	b := s.replaceAsync(t, "https://x/b", 1500*time.Millisecond)
	c := s.replaceAsync(t, "https://x/c", 1500*time.Millisecond)
	deadline := time.After(15 * time.Second)
	for i, ch := range []<-chan error{ahead, b, c} {
		select {
		case err := <-ch:
			if code := kgagent.ErrorCode(err); code != kgagent.ETIMEOUT {
				t.Errorf("call %d: %v, want %s", i, err, kgagent.ETIMEOUT)
			}
		case <-deadline:
			t.Fatalf("call %d still waits 15 s after its context ended", i)
		}
	}
}

// TestUnreachableServerFailsTheGroupOnce: when the server cannot be
// reached, a group's calls all get its error at once instead of each being
// written alone afterwards, which made every call wait out the driver's
// retry time again (64 pages: ~32 minutes against a dead server at the
// default 30 s, instead of 30 s).
func TestUnreachableServerFailsTheGroupOnce(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "bolt://" + l.Addr().String()
	l.Close() // connections are refused from now on
	const retry = time.Second
	driver, err := neo4j.NewDriverWithContext(url, neo4j.NoAuth(), func(c *config.Config) {
		c.MaxTransactionRetryTime = retry
	})
	if err != nil {
		t.Fatal(err)
	}
	defer driver.Close(context.Background())
	s := &Store{driver: driver, cfg: Config{URL: url, BatchSize: DefaultBatchSize, RetryTime: retry}, group: &groupWriter{}}
	const calls = 8
	start := time.Now()
	errs := make(chan error, calls)
	for i := range calls {
		go func() { errs <- s.ReplaceDocument(context.Background(), "c", fmt.Sprintf("https://x/%d", i), nil) }()
	}
	for range calls {
		if err := <-errs; kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
			t.Errorf("write to an unreachable server: %v, want %s", err, kgagent.EUNAVAILABLE)
		}
	}
	// The first call alone, then one group: each fails after the retry
	// time and the driver's last backoff (~2 s here). Written alone, the
	// group's calls would take calls-1 more of those (~17 s before).
	if took := time.Since(start); took > calls*retry {
		t.Errorf("%d writes to an unreachable server took %s (retry time %s): the group's calls were retried alone", calls, took.Round(time.Millisecond), retry)
	}
}

func TestUnreachable(t *testing.T) {
	conn := &neo4j.ConnectivityError{}
	deadlock := &neo4j.Neo4jError{Code: "Neo.TransientError.Transaction.DeadlockDetected"}
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{conn, true},
		{&neo4j.TransactionExecutionLimit{Errors: []error{deadlock, conn}}, true},
		{&neo4j.TransactionExecutionLimit{Errors: []error{conn, deadlock}}, false},
		{&neo4j.TransactionExecutionLimit{}, false},
		{deadlock, false},
		{kgagent.WrapError(kgagent.EUNAVAILABLE, &neo4j.TransactionExecutionLimit{Errors: []error{conn}}, "x"), true},
	} {
		if got := unreachable(tt.err); got != tt.want {
			t.Errorf("unreachable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
