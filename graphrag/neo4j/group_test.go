package neo4j

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/graphtest"
)

// TestConcurrentPagesNoDeadlock is an ingest's write pattern against the
// real server: 64 pages written at once (crawler's write queue), each its
// own ReplaceDocument, all linking the same few shared entities, then all
// replaced again. As 64 concurrent transactions these deadlocked on the
// shared entities, and with a short retry time the driver gave up: pages
// failed UNAVAILABLE "DeadlockDetected" (21 of 298 OpenJDK pages on a loaded
// box with the default 30 s). Written through the Store's one writer, every
// page succeeds and every triple is there.
func TestConcurrentPagesNoDeadlock(t *testing.T) {
	cfg := envConfig(t)
	cfg.RetryTime = 500 * time.Millisecond // a deadlock's first retry waits ~1 s: any deadlock fails
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	coll := graphtest.Collection(t, "deadlock")
	defer s.DeleteCollection(context.Background(), coll)
	docs := synthDocs(coll, 64, 40, 12) // 12 shared terms: every page locks most of them
	want := 0
	for _, d := range docs {
		want += len(d.Triples)
	}
	for round := range 2 {
		var wg sync.WaitGroup
		errs := make(chan error, len(docs))
		for _, d := range docs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ts := d.Triples
				if round == 1 { // the same facts, in another order: a re-crawl
					ts = append(ts[len(ts)/2:len(ts):len(ts)], ts[:len(ts)/2]...)
				}
				if err := s.ReplaceDocument(ctx, coll, d.URL, ts); err != nil {
					errs <- fmt.Errorf("%s: %s %s", d.URL, kgagent.ErrorCode(err), kgagent.ErrorMessage(err))
				}
			}()
		}
		wg.Wait()
		close(errs)
		failed := 0
		for err := range errs {
			if failed++; failed <= 3 {
				t.Errorf("round %d: %v", round, err)
			}
		}
		if failed > 0 {
			t.Fatalf("round %d: %d of %d pages failed", round, failed, len(docs))
		}
		got, err := s.Find(ctx, graphrag.Pattern{Collection: coll, Limit: 100000})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != want {
			t.Fatalf("round %d: %d triples stored, want %d", round, len(got), want)
		}
	}
}

// TestTakeGroup checks which queued calls are written together: one
// collection, in arrival order, within the caps, and never two calls for the
// same document (the later one waits for the next transaction).
func TestTakeGroup(t *testing.T) {
	call := func(coll string, triples int, urls ...string) *pendingWrite {
		p := &pendingWrite{collection: coll, triples: triples}
		for _, u := range urls {
			p.docs = append(p.docs, document{URL: u})
		}
		return p
	}
	a, b, c := call("x", 1, "u1"), call("y", 1, "u2"), call("x", 1, "u3")
	d, e := call("x", 1, "u1"), call("x", 1, "u4")
	group, rest := takeGroup([]*pendingWrite{a, b, c, d, e})
	if len(group) != 2 || group[0] != a || group[1] != c {
		t.Errorf("group %v: want a, c (b is another collection, d repeats u1)", group)
	}
	if len(rest) != 3 || rest[0] != b || rest[1] != d || rest[2] != e {
		t.Errorf("rest %v: want b, d, e in order", rest)
	}
	big := call("x", maxGroupTriples, "big")
	group, rest = takeGroup([]*pendingWrite{a, big, c})
	if len(group) != 1 || len(rest) != 2 || rest[0] != big {
		t.Errorf("triple cap: group %d rest %d", len(group), len(rest))
	}
	group, _ = takeGroup([]*pendingWrite{big})
	if len(group) != 1 {
		t.Errorf("a call over the cap alone is still written: group %d", len(group))
	}
	var many []*pendingWrite
	for i := range maxGroupDocs + 5 {
		many = append(many, call("x", 1, fmt.Sprint("m", i)))
	}
	group, rest = takeGroup(many)
	if len(group) != maxGroupDocs || len(rest) != 5 {
		t.Errorf("call cap: group %d rest %d", len(group), len(rest))
	}
}
