package natskv

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestEnsure: what a forming JetStream answers (timeouts, 503) is retried
// until the creation succeeds or ctx ends; anything else is returned at
// once.
func TestEnsure(t *testing.T) {
	ctx := context.Background()
	tries := 0
	err := Ensure(ctx, func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("a try has no deadline of its own")
		}
		tries++
		switch tries {
		case 1:
			return nats.ErrTimeout
		case 2:
			return &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}
		case 3:
			return context.DeadlineExceeded
		case 4:
			return &jetstream.APIError{Code: 400, ErrorCode: 10005, Description: "no suitable peers for placement, peer offline"}
		}
		return nil
	})
	if err != nil || tries != 5 {
		t.Fatalf("transient errors: err %v after %d tries, want nil after 5", err, tries)
	}

	tries = 0
	full := &jetstream.APIError{Code: 400, ErrorCode: 10005, Description: "no suitable peers for placement, insufficient storage"}
	if err := Ensure(ctx, func(context.Context) error { tries++; return full }); !errors.Is(err, full) || tries != 1 {
		t.Fatalf("no peers for a lasting reason: err %v after %d tries, want it after 1", err, tries)
	}

	tries = 0
	refused := &jetstream.APIError{Code: 400, ErrorCode: 10058, Description: "stream name already in use with a different configuration"}
	if err := Ensure(ctx, func(context.Context) error { tries++; return refused }); !errors.Is(err, refused) || tries != 1 {
		t.Fatalf("a refused configuration: err %v after %d tries, want it after 1", err, tries)
	}

	tries = 0
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := Ensure(short, func(context.Context) error { tries++; return nats.ErrTimeout }); !errors.Is(err, nats.ErrTimeout) || tries < 2 {
		t.Fatalf("until ctx ends: err %v after %d tries", err, tries)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Ensure kept trying %s after its context ended", d)
	}
}
