package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Quiet returns at once on a server that has answered nothing, waits while
// a question is being answered and for the quiet gap after it, and returns
// ctx's error when ctx ends first.
func TestQuiet(t *testing.T) {
	f := newFixture(t, Config{})
	ctx := context.Background()
	start := time.Now()
	if err := f.srv.Quiet(ctx, time.Hour, 0); err != nil || time.Since(start) > time.Second {
		t.Fatalf("idle server: Quiet took %v (%v), want at once", time.Since(start), err)
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.Post(f.ts.URL+"/api/v1/agent", "application/json", strings.NewReader(`{"question":"block until released"}`))
		if err == nil {
			resp.Body.Close()
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for f.srv.activity.inFlight.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the question never got in flight")
		}
		time.Sleep(time.Millisecond)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := f.srv.Quiet(short, time.Millisecond, 0); err != context.DeadlineExceeded {
		t.Fatalf("a question in flight: Quiet returned %v, want the deadline", err)
	}
	// A server never idle long enough: Quiet gives in after most, so the
	// background work it paces still goes on, slowly.
	const most = 100 * time.Millisecond
	bounded := time.Now()
	if err := f.srv.Quiet(ctx, time.Hour, most); err != nil {
		t.Fatalf("a question in flight, bounded wait: Quiet returned %v, want nil after %v", err, most)
	}
	if took := time.Since(bounded); took < most {
		t.Fatalf("a question in flight, bounded wait: Quiet returned after %v, want at least %v", took, most)
	}

	released := time.Now()
	f.asker.unblock()
	<-done
	const gap = 150 * time.Millisecond
	if err := f.srv.Quiet(ctx, gap, 0); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(released); took < gap {
		t.Fatalf("Quiet returned %v after the answer, want at least the %v gap", took, gap)
	}
}
