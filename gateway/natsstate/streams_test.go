package natsstate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/gateway"
	"github.com/kgagent/kgagent/gateway/streamstoretest"
)

// collector gathers the frames sent to it: their seqs, and "seq:thought"
// texts.
type collector struct {
	mu    sync.Mutex
	seqs  []int64
	texts []string
	done  chan struct{}
	once  sync.Once
}

func newCollector() *collector { return &collector{done: make(chan struct{})} }

func (c *collector) send(b []byte) bool {
	var f gateway.Frame
	_ = json.Unmarshal(b, &f)
	c.mu.Lock()
	c.seqs = append(c.seqs, f.Seq)
	c.texts = append(c.texts, fmt.Sprintf("%d:%v", f.Seq, f.Response.Thought))
	c.mu.Unlock()
	if f.Complete {
		c.once.Do(func() { close(c.done) })
	}
	return true
}

// waitFor waits up to d for the last frame and returns the seqs and texts.
func (c *collector) waitFor(t *testing.T, d time.Duration) ([]int64, []string) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(d):
		c.mu.Lock()
		defer c.mu.Unlock()
		t.Fatalf("no complete frame after %s; got %v", d, c.texts)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seqs), slices.Clone(c.texts)
}

// wait is waitFor 10 s, for the seqs.
func (c *collector) wait(t *testing.T) []int64 {
	t.Helper()
	seqs, _ := c.waitFor(t, 10*time.Second)
	return seqs
}

// TestStreamsConformance runs the StreamStore suite: each case gets its
// own NATS server, and n Streams on n connections to it (n replicas).
func TestStreamsConformance(t *testing.T) {
	streamstoretest.Run(t, func(t *testing.T, n int) []gateway.StreamStore {
		s := startNATS(t)
		ss := make([]gateway.StreamStore, n)
		for i := range ss {
			ss[i] = newStreams(t, s.ClientURL(), StreamsConfig{SecretKey: testKey})
		}
		return ss
	})
}

// TestByteBudget: with a budget of a few frames, the oldest frames go
// first, and a resume from before them is refused with NOT_FOUND.
func TestByteBudget(t *testing.T) {
	s := startNATS(t)
	ctx := context.Background()
	ss := newStreams(t, s.ClientURL(), StreamsConfig{SecretKey: testKey, MaxBytes: 4096})
	st, err := ss.Start(ctx, "k", "tok")
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 500)
	for i := range 40 {
		st.Append(gateway.Frame{ID: "q", Response: gateway.Response{Thought: big}, Complete: i == 39})
	}
	rs, err := ss.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Attach(1, 0, func([]byte) bool { return true }); kgagent.ErrorCode(err) != kgagent.ENOTFOUND {
		t.Errorf("resume from seq 0 after the budget dropped it: %v", err)
	}
	tailc := newCollector()
	if err := rs.Attach(2, 38, tailc.send); err != nil {
		t.Fatal(err)
	}
	if got := tailc.wait(t); !slices.Equal(got, []int64{39, 40}) {
		t.Errorf("resume after seq 38: %v", got)
	}
}

// TestResumeAfterTheRunningReplicaDied: replica A writes three frames of a
// stream and dies (its connection closes, its record is no longer
// renewed). A client resuming on B after frame 1 gets frames 2 and 3 and
// then a final UNAVAILABLE error frame, not a wait without end.
func TestResumeAfterTheRunningReplicaDied(t *testing.T) {
	s := startNATS(t)
	ctx := context.Background()
	ncA := connect(t, s.ClientURL())
	a, err := NewStreams(ctx, ncA, StreamsConfig{SecretKey: testKey, Stale: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b := newStreams(t, s.ClientURL(), StreamsConfig{SecretKey: testKey, Stale: 1500 * time.Millisecond})
	st, err := a.Start(ctx, "o:u\x00q9", "tok")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		st.Append(gateway.Frame{ID: "q9", Response: gateway.Response{Thought: "x"}})
	}
	_ = ncA.Flush()
	ncA.Close() // the replica is gone: no more frames, no more renewals
	rs, err := b.Get(ctx, "o:u\x00q9")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var frames []gateway.Frame
	done := make(chan struct{})
	start := time.Now()
	if err := rs.Attach(1, 1, func(data []byte) bool {
		var f gateway.Frame
		_ = json.Unmarshal(data, &f)
		mu.Lock()
		frames = append(frames, f)
		mu.Unlock()
		if f.Complete {
			close(done)
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no final frame 10 s after the replica died")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(frames) != 3 || frames[0].Seq != 2 || frames[1].Seq != 3 || frames[2].Error == nil ||
		frames[2].Error.Type != kgagent.EUNAVAILABLE || frames[2].Seq != 4 || frames[2].ID != "q9" {
		t.Fatalf("frames after the replica died: %+v", frames)
	}
	t.Logf("final UNAVAILABLE frame %s after resuming", time.Since(start).Round(time.Millisecond))
}

// testKey is the secret every replica of a test shares (job_secret).
var testKey = []byte("the job_secret of every replica")
