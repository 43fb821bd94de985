// Package limitertest is the conformance suite every gateway.Limiter
// passes: the in-memory one (gateway.NewMemLimiter) and the JetStream one
// (gateway/natsstate). Call Run from a test in the implementation's
// package, in the manner of testing/fstest.
//
// The contract it checks, beyond the Limiter doc comment:
//   - Limiters sharing a store (replicas) share one limit: of many
//     concurrent Takes of one bucket exactly Limit are allowed.
//   - A new day starts every bucket afresh.
//   - A Take of several buckets is all or none: when one is full, the
//     full one is returned with ok false and none is charged.
//   - Buckets are independent: filling one leaves the others as they were.
package limitertest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kgagent/kgagent/gateway"
)

// NewFunc returns n limiters sharing one store (n replicas' views of it),
// fresh for each call.
type NewFunc func(t *testing.T, n int) []gateway.Limiter

// Run runs the suite on the limiters newLimiters returns.
func Run(t *testing.T, newLimiters NewFunc) {
	t.Run("ExactUnderConcurrency", func(t *testing.T) { testExact(t, newLimiters(t, 2)) })
	t.Run("NewDayStartsAfresh", func(t *testing.T) { testNewDay(t, newLimiters(t, 1)[0]) })
	t.Run("AllOrNone", func(t *testing.T) { testAllOrNone(t, newLimiters(t, 1)[0]) })
	t.Run("BucketsIndependent", func(t *testing.T) { testIndependent(t, newLimiters(t, 1)[0]) })
}

// TakeConcurrently runs n Takes spread over ls at once and returns how many
// were allowed.
func TakeConcurrently(t *testing.T, ls []gateway.Limiter, n int, day string, bs []gateway.Bucket) int {
	t.Helper()
	var ok atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func(l gateway.Limiter) {
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

func testExact(t *testing.T, ls []gateway.Limiter) {
	bs := []gateway.Bucket{{Key: "key:chatbot", Limit: 40}}
	if got := TakeConcurrently(t, ls, 120, "2026-11-24", bs); got != 40 {
		t.Errorf("%d of 120 concurrent requests allowed, want exactly 40", got)
	}
	if got := TakeConcurrently(t, ls, 10, "2026-11-24", bs); got != 0 {
		t.Errorf("%d more allowed once the limit was reached", got)
	}
}

func testNewDay(t *testing.T, l gateway.Limiter) {
	ctx := context.Background()
	b := []gateway.Bucket{{Key: "key:daily", Limit: 1}}
	if _, ok, err := l.Take(ctx, "2026-11-24", b); !ok || err != nil {
		t.Fatalf("first take: %v %v", ok, err)
	}
	if full, ok, err := l.Take(ctx, "2026-11-24", b); ok || err != nil || full != b[0] {
		t.Fatalf("second take the same day: full %v ok %v err %v, want the bucket refused", full, ok, err)
	}
	if _, ok, err := l.Take(ctx, "2026-11-25", b); !ok || err != nil {
		t.Errorf("next day: %v %v, want allowed", ok, err)
	}
}

func testAllOrNone(t *testing.T, l gateway.Limiter) {
	ctx, day := context.Background(), "2026-11-24"
	user := gateway.Bucket{Key: "user:ann@example.org", Limit: 2}
	key := gateway.Bucket{Key: "key:team", Limit: 3}
	for i := range 2 {
		if _, ok, err := l.Take(ctx, day, []gateway.Bucket{key, user}); !ok || err != nil {
			t.Fatalf("take %d: %v %v", i, ok, err)
		}
	}
	full, ok, err := l.Take(ctx, day, []gateway.Bucket{key, user})
	if ok || err != nil || full != user {
		t.Fatalf("third take with the user full: full %v ok %v err %v, want %v refused", full, ok, err, user)
	}
	// The key was not charged for the refused request: one more fits.
	if _, ok, _ := l.Take(ctx, day, []gateway.Bucket{key}); !ok {
		t.Error("the refused request was charged to the key")
	}
	if full, ok, _ := l.Take(ctx, day, []gateway.Bucket{key}); ok || full != key {
		t.Errorf("the key's limit of 3 was exceeded (full %v ok %v)", full, ok)
	}
}

func testIndependent(t *testing.T, l gateway.Limiter) {
	ctx, day := context.Background(), "2026-11-24"
	a := gateway.Bucket{Key: "key:a", Limit: 1}
	b := gateway.Bucket{Key: "key:b", Limit: 1}
	if _, ok, _ := l.Take(ctx, day, []gateway.Bucket{a}); !ok {
		t.Fatal("first take of a refused")
	}
	if _, ok, _ := l.Take(ctx, day, []gateway.Bucket{a}); ok {
		t.Fatal("a's limit of 1 was exceeded")
	}
	if _, ok, err := l.Take(ctx, day, []gateway.Bucket{b}); !ok || err != nil {
		t.Errorf("b refused after a filled up: %v %v", ok, err)
	}
}
