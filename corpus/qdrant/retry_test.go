package qdrant_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	qc "github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus/qdrant"
	"github.com/kgagent/kgagent/corpus/qdrant/qdranttest"
)

// TestDeleteDuringCreation sends concurrent deletes of one collection while
// a write is creating it, on a stand-in that, like Qdrant 1.17.1, refuses
// updates with "Please retry" until the new collection's shard is active.
// Every delete and the write succeed (before, the deletes failed INTERNAL:
// 17 errors in 10 rounds of 4 deletes on the real server), and the written
// document is there afterwards.
// TestDeleteDuringCreationRealServer does the same on a real Qdrant.
func TestDeleteDuringCreation(t *testing.T) {
	defer qdrant.SetRetryBase(20 * time.Millisecond)()
	srv := startStandIn(t, qdranttest.Options{Activation: 150 * time.Millisecond})
	checkDeleteDuringCreation(t, open(t, qdrant.Config{Addr: srv.Addr()}), rawClient(t, srv), 3)
}

// checkDeleteDuringCreation runs rounds of one write creating a collection
// and four deletes of other documents sent as soon as raw sees the new
// collection.
func checkDeleteDuringCreation(t *testing.T, ix *qdrant.Index, raw *qc.Client, rounds int) {
	ctx := context.Background()
	for round := 0; round < rounds; round++ {
		collection := fmt.Sprintf("docs%d", round)
		var wg sync.WaitGroup
		errs := make(chan error, 5)
		wg.Add(1)
		go func() {
			defer wg.Done()
			chunks, vecs := doc(collection, "https://ex.org/kept", "alpacas", 2)
			if err := ix.ReplaceDocument(ctx, collection, "https://ex.org/kept", chunks, vecs); err != nil {
				errs <- fmt.Errorf("ReplaceDocument: %w", err)
			}
		}()
		// The deletes start once the collection's creation has begun.
		for deadline := time.Now().Add(10 * time.Second); ; {
			if ok, _ := raw.CollectionExists(ctx, ix.CollectionName(collection)); ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the write never created the collection")
			}
			time.Sleep(time.Millisecond)
		}
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := ix.DeleteDocument(ctx, collection, fmt.Sprintf("https://ex.org/gone%d", i)); err != nil {
					errs <- fmt.Errorf("DeleteDocument %d: %w", i, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("round %d: %v (code %s)", round, err, kgagent.ErrorCode(err))
		}
		got, err := ix.DocumentChunks(ctx, collection, "https://ex.org/kept")
		if err != nil || len(got) != 2 {
			t.Errorf("round %d: the written document has %d chunks (%v), want 2", round, len(got), err)
		}
	}
}

// TestRetryIsBounded: "Please retry" is retried at most RetryAttempts times
// in all, other internal errors are not retried, and the last error comes
// back with its code.
func TestRetryIsBounded(t *testing.T) {
	defer qdrant.SetRetryBase(time.Millisecond)()
	srv := startStandIn(t, qdranttest.Options{})
	ix := open(t, qdrant.Config{Addr: srv.Addr()})
	put(t, ix, "docs", "https://ex.org/a", "alpacas", 1)
	retry := status.Error(codes.Internal, "Failed to apply operation to at least one `Active` replica. Please retry.")
	tests := []struct {
		name      string
		errs      []error
		wantCalls int
		wantCode  string
	}{
		{"recovers", []error{retry, retry}, 3, ""},
		{"other internal error", []error{status.Error(codes.Internal, "disk full")}, 1, kgagent.EINTERNAL},
		// Last: it leaves errors queued that no later call should meet.
		{"gives up", repeat(retry, qdrant.RetryAttempts()+2), qdrant.RetryAttempts(), kgagent.EINTERNAL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.FailNext("Delete", tt.errs...)
			before := srv.Calls("Delete")
			err := ix.DeleteDocument(context.Background(), "docs", "https://ex.org/a")
			if got := kgagent.ErrorCode(err); got != tt.wantCode {
				t.Errorf("DeleteDocument: %v, want code %q", err, tt.wantCode)
			}
			if got := srv.Calls("Delete") - before; got != tt.wantCalls {
				t.Errorf("%d Delete calls, want %d", got, tt.wantCalls)
			}
		})
	}
}

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}
