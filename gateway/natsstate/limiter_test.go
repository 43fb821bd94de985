package natsstate

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kgagent/kgagent/gateway"
	"github.com/kgagent/kgagent/internal/natscluster"
)

func startNATS(t *testing.T) *server.Server { return natscluster.StartServer(t) }

func connect(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// takeConcurrently runs n Takes spread over the limiters at once and
// returns how many were allowed.
func takeConcurrently(t *testing.T, ls []*Limiter, n int, day string, bs []gateway.Bucket) int {
	t.Helper()
	var ok atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func(l *Limiter) {
			defer wg.Done()
			_, allowed, err := l.Take(context.Background(), day, bs)
			if err != nil {
				t.Error(err)
			}
			if allowed {
				ok.Add(1)
			}
		}(ls[i%len(ls)])
	}
	wg.Wait()
	return int(ok.Load())
}

// TestLimitExactAcrossProcesses: two limiters (two replicas' connections)
// share one daily limit: of 120 concurrent requests at most 40 are allowed,
// exactly 40, and the next day starts afresh.
func TestLimitExactAcrossProcesses(t *testing.T) {
	s := startNATS(t)
	var ls []*Limiter
	for range 2 {
		l, err := NewLimiter(context.Background(), connect(t, s.ClientURL()), LimiterConfig{})
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	bs := []gateway.Bucket{{Key: "key:chatbot", Limit: 40}}
	if got := takeConcurrently(t, ls, 120, "2026-11-24", bs); got != 40 {
		t.Errorf("%d of 120 requests allowed, want exactly 40", got)
	}
	if got := takeConcurrently(t, ls, 10, "2026-11-25", bs); got != 10 {
		t.Errorf("next day: %d of 10 allowed", got)
	}
}

// TestLimitAllOrNone: a request charged to a key and a user is refused when
// either is full, and then counts in neither.
func TestLimitAllOrNone(t *testing.T) {
	s := startNATS(t)
	l, err := NewLimiter(context.Background(), connect(t, s.ClientURL()), LimiterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, day := context.Background(), "2026-11-24"
	user := gateway.Bucket{Key: "user:ann@example.org", Limit: 2}
	key := gateway.Bucket{Key: "key:team", Limit: 3}
	for i := 0; i < 2; i++ {
		if _, ok, err := l.Take(ctx, day, []gateway.Bucket{key, user}); !ok || err != nil {
			t.Fatalf("take %d: %v %v", i, ok, err)
		}
	}
	full, ok, err := l.Take(ctx, day, []gateway.Bucket{key, user})
	if ok || err != nil || full.Key != user.Key {
		t.Fatalf("third take with the user full: full %v ok %v err %v", full, ok, err)
	}
	// The key was not charged for the refused request: one more fits.
	if _, ok, _ := l.Take(ctx, day, []gateway.Bucket{key}); !ok {
		t.Error("the refused request was charged to the key")
	}
	if _, ok, _ := l.Take(ctx, day, []gateway.Bucket{key}); ok {
		t.Error("the key's limit of 3 was exceeded")
	}
}

// TestLimitOnCluster runs the exactness check on the three-node cluster make
// test starts, with the replicas on different nodes.
func TestLimitOnCluster(t *testing.T) {
	urls := natscluster.Shared(t)
	var ls []*Limiter
	bucket := "kgagent_limits_test_" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "_")
	for i := range 2 {
		nc := connect(t, urls[i])
		l, err := NewLimiter(context.Background(), nc, LimiterConfig{Bucket: bucket})
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	t.Cleanup(func() {
		nc, err := nats.Connect(urls[0])
		if err != nil {
			return
		}
		defer nc.Close()
		if js, err := jetstream.New(nc); err == nil {
			_ = js.DeleteKeyValue(context.Background(), bucket)
		}
	})
	if got := takeConcurrently(t, ls, 60, "2026-11-24", []gateway.Bucket{{Key: "key:k", Limit: 25}}); got != 25 {
		t.Errorf("%d of 60 requests allowed on the cluster, want exactly 25", got)
	}
}
