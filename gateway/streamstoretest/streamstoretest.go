// Package streamstoretest is the conformance suite every
// gateway.StreamStore passes: the in-memory one (gateway.NewMemStreams)
// and the JetStream one (gateway/natsstate). Call Run from a test in the
// implementation's package, in the manner of testing/fstest.
//
// The contract it checks, beyond the StreamStore and Stream doc comments:
//   - Get returns a started stream with its token, not done; an unknown key
//     is ENOTFOUND.
//   - A key cannot be started twice while its stream runs (ECONFLICT); once
//     its last frame is appended it can.
//   - Frames are numbered from 1 in append order and the first carries the
//     resume token; Attach after lastSeq sends the kept frames after it,
//     then the live ones, each once, in order (a later Attach takes the
//     live frames over); a finished stream replays.
//   - Replicas sharing a store (n > 1) resume each other's streams.
package streamstoretest

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/gateway"
)

// NewFunc returns n stores sharing their streams (n replicas' views of
// one store), fresh for each call; the suite closes them.
type NewFunc func(t *testing.T, n int) []gateway.StreamStore

// Wait bounds how long the suite waits for frames to arrive.
const Wait = 10 * time.Second

// Run runs the suite on the stores newStores returns.
func Run(t *testing.T, newStores NewFunc) {
	open := func(t *testing.T, n int) []gateway.StreamStore {
		ss := newStores(t, n)
		for _, s := range ss {
			t.Cleanup(func() { _ = s.Close() })
		}
		return ss
	}
	t.Run("StartAndGet", func(t *testing.T) { testStartGet(t, open(t, 1)[0]) })
	t.Run("ConflictWhileRunning", func(t *testing.T) { testConflict(t, open(t, 1)[0]) })
	t.Run("NumberingAndResume", func(t *testing.T) { testResume(t, open(t, 1)) })
	t.Run("ResumeOnAnotherReplica", func(t *testing.T) { testResume(t, open(t, 2)) })
}

// collector gathers the seqs and resume tokens of the frames sent to it.
type collector struct {
	mu     sync.Mutex
	seqs   []int64
	tokens []string
	done   chan struct{}
	once   sync.Once
}

func newCollector() *collector { return &collector{done: make(chan struct{})} }

func (c *collector) send(b []byte) bool {
	var f gateway.Frame
	_ = json.Unmarshal(b, &f)
	c.mu.Lock()
	c.seqs = append(c.seqs, f.Seq)
	c.tokens = append(c.tokens, f.ResumeToken)
	c.mu.Unlock()
	if f.Complete {
		c.once.Do(func() { close(c.done) })
	}
	return true
}

// wait waits for the last frame and returns the seqs and tokens.
func (c *collector) wait(t *testing.T) ([]int64, []string) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(Wait):
		c.mu.Lock()
		defer c.mu.Unlock()
		t.Fatalf("no complete frame after %s; got seqs %v", Wait, c.seqs)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seqs), slices.Clone(c.tokens)
}

// seen returns the seqs and tokens sent so far.
func (c *collector) seen() ([]int64, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seqs), slices.Clone(c.tokens)
}

func seqRange(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func testStartGet(t *testing.T, s gateway.StreamStore) {
	ctx := context.Background()
	if _, err := s.Start(ctx, "o:ann\x00q1", "tok"); err != nil {
		t.Fatal(err)
	}
	st, err := s.Get(ctx, "o:ann\x00q1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Token() != "tok" || st.Done() {
		t.Errorf("started stream: token %q done %v, want tok and running", st.Token(), st.Done())
	}
	if _, err := s.Get(ctx, "o:ann\x00nope"); kgagent.ErrorCode(err) != kgagent.ENOTFOUND {
		t.Errorf("unknown stream: %v, want NOT_FOUND", err)
	}
}

func testConflict(t *testing.T, s gateway.StreamStore) {
	ctx := context.Background()
	st, err := s.Start(ctx, "o:ann\x00q1", "tok")
	if err != nil {
		t.Fatal(err)
	}
	st.Append(gateway.Frame{ID: "q1", Response: gateway.Response{Thought: "x"}})
	if _, err := s.Start(ctx, "o:ann\x00q1", "tok2"); kgagent.ErrorCode(err) != kgagent.ECONFLICT {
		t.Errorf("second start of a running stream: %v, want CONFLICT", err)
	}
	st.Append(gateway.Frame{ID: "q1", Response: gateway.Response{Answer: gateway.Text("y")}, Complete: true})
	if !st.Done() {
		t.Error("stream not done after its complete frame")
	}
	again, err := s.Start(ctx, "o:ann\x00q1", "tok3")
	if err != nil {
		t.Fatalf("start after the stream finished: %v", err)
	}
	if again.Token() != "tok3" {
		t.Errorf("restarted stream's token %q, want tok3", again.Token())
	}
}

// testResume: the stream runs on ss[0]; a client attached there from the
// start gets frames 1-5 at least; one that saw frames 1-2 resumes on ss[len-1]
// while the stream runs and gets 3 to the last once, in order; a finished
// stream replays from the start.
func testResume(t *testing.T, ss []gateway.StreamStore) {
	ctx := context.Background()
	a, b := ss[0], ss[len(ss)-1]
	st, err := a.Start(ctx, "o:ann\x00q1", "tok")
	if err != nil {
		t.Fatal(err)
	}
	local := newCollector()
	if err := st.Attach(1, 0, local.send); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		st.Append(gateway.Frame{ID: "q1", Response: gateway.Response{Thought: "x"}})
	}
	rs, err := b.Get(ctx, "o:ann\x00q1")
	if err != nil {
		t.Fatal(err)
	}
	if rs.Token() != "tok" || rs.Done() {
		t.Errorf("running stream seen by the resuming store: token %q done %v", rs.Token(), rs.Done())
	}
	remote := newCollector()
	if err := rs.Attach(7, 2, remote.send); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		st.Append(gateway.Frame{ID: "q1", Response: gateway.Response{Answer: gateway.Text("y")}, Complete: i == 2})
	}
	if got, _ := remote.wait(t); !slices.Equal(got, seqRange(3, 8)) {
		t.Errorf("resumed after seq 2: %v, want 3..8", got)
	}
	// A Stream has one attached subscriber: the in-memory store hands the
	// frames after the resume to the new one only, a shared store may
	// still send them to the first client, on its replica.
	got, tokens := local.seen()
	if n := int64(len(got)); n < 5 || !slices.Equal(got, seqRange(1, n)) {
		t.Errorf("client attached from the start: %v, want 1..5 or more, in order", got)
	}
	if len(tokens) > 1 && (tokens[0] != "tok" || tokens[1] != "") {
		t.Errorf("resume tokens of the frames %q, want tok on the first only", tokens)
	}
	if !rs.Done() {
		t.Error("the resuming store does not see the stream done")
	}
	again := newCollector()
	if err := rs.Attach(8, 0, again.send); err != nil {
		t.Fatal(err)
	}
	if got, _ := again.wait(t); !slices.Equal(got, seqRange(1, 8)) {
		t.Errorf("replay of a finished stream: %v, want 1..8", got)
	}
}
