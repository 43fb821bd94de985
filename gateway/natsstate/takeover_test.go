package natsstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kgagent/kgagent/gateway"
	"github.com/kgagent/kgagent/internal/natscluster"
	"github.com/kgagent/kgagent/internal/poll"
)

// newStreams is a Streams on its own connection to url.
func newStreams(t *testing.T, url string, cfg StreamsConfig) *Streams {
	t.Helper()
	ss, err := NewStreams(context.Background(), connect(t, url), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// frameTexts decodes frames to "seq:thought" strings.
func frameTexts(frames [][]byte) []string {
	var out []string
	for _, b := range frames {
		var f gateway.Frame
		_ = json.Unmarshal(b, &f)
		out = append(out, fmt.Sprintf("%d:%v", f.Seq, f.Response.Thought))
	}
	return out
}

// TestTakeoverExactlyOnce: replica A runs a request, records it, writes
// frames 1-3 and dies. Clients resumed after seq 2 on replicas B and C
// both watch the stream; when A's lease lapses both try to take it over,
// and exactly one does: its continuation (frames 4 and 5) reaches both
// clients once, after frame 3, and it was given the recorded request, the
// three stored frames and A's note (which no client gets).
func TestTakeoverExactlyOnce(t *testing.T) {
	s := startNATS(t)
	url := s.ClientURL()
	takeoverExactlyOnce(t, url, url, url, nil)
}

// TestTakeoverOnCluster: the same on a three-node cluster (frames and
// records replicated R3), where the node replica A was connected to is
// killed with A: B and C, on the other nodes, race to take over.
func TestTakeoverOnCluster(t *testing.T) {
	c := natscluster.Start(t, 3)
	takeoverExactlyOnce(t, c.URL(0), c.URL(1), c.URL(2), func() { c.Kill(0) })
}

// takeoverExactlyOnce runs the takeover race with A, B and C on urlA, urlB
// and urlC; die is called when A dies.
func takeoverExactlyOnce(t *testing.T, urlA, urlB, urlC string, die func()) {
	ctx := context.Background()
	cfg := StreamsConfig{SecretKey: testKey, Stale: 600 * time.Millisecond}
	ncA := connect(t, urlA)
	a, err := NewStreams(ctx, ncA, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	var given atomic.Value
	replica := func(name, url string) *Streams {
		r := newStreams(t, url, cfg)
		r.OnTakeover(func(to gateway.Takeover) {
			calls.Add(1)
			given.Store(to)
			to.Stream.Append(gateway.Frame{ID: "q1", Response: gateway.Response{Thought: "4 by " + name}})
			to.Stream.Append(gateway.Frame{ID: "q1", Response: gateway.Response{Thought: "5 by " + name}, Complete: true})
		})
		return r
	}
	b, c := replica("B", urlB), replica("C", urlC)
	// A cluster that has just formed may answer UNAVAILABLE at first.
	var st gateway.Stream
	poll.Until(t, 30*time.Second, func() error {
		if st == nil {
			if st, err = a.Start(ctx, "o:u\x00q1", "tok"); err != nil {
				return err
			}
		}
		return st.(gateway.DurableStream).Record([]byte(`{"question":"q"}`))
	})
	for i := 1; i <= 3; i++ {
		st.Append(gateway.Frame{ID: "q1", Response: gateway.Response{Thought: fmt.Sprint(i)}})
		if i == 2 {
			if err := st.(gateway.DurableStream).Note([]byte(`{"n":0}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	ncA.Close() // A dies: no frames, no renewals
	if die != nil {
		die()
	}
	var clients []*collector
	for i, r := range []*Streams{b, c} {
		cl := newCollector()
		// While a cluster elects new leaders the store answers
		// UNAVAILABLE; a client tries again.
		poll.Until(t, 30*time.Second, func() error {
			rs, err := r.Get(ctx, "o:u\x00q1")
			if err != nil {
				return err
			}
			return rs.Attach(uint64(i+1), 2, cl.send)
		})
		clients = append(clients, cl)
	}
	var by string
	for i, cl := range clients {
		_, got := cl.waitFor(t, 30*time.Second)
		if len(got) != 3 || got[0] != "3:3" || got[1][:7] != "4:4 by " || got[2] != "5:5 by "+got[1][7:] {
			t.Fatalf("client %d: %v, want 3, then 4 and 5 from one replica", i, got)
		}
		if by == "" {
			by = got[1][7:]
		} else if by != got[1][7:] {
			t.Fatalf("the clients got continuations of different replicas: %s and %s", by, got[1][7:])
		}
	}
	time.Sleep(3 * cfg.Stale) // no late second takeover
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d takeovers, want 1", n)
	}
	to := given.Load().(gateway.Takeover)
	if string(to.Run) != `{"question":"q"}` || !slices.Equal(frameTexts(to.Frames), []string{"1:1", "2:2", "3:3"}) ||
		len(to.Notes) != 1 || string(to.Notes[0]) != `{"n":0}` {
		t.Errorf("takeover given run %s, frames %v and notes %q", to.Run, frameTexts(to.Frames), to.Notes)
	}
	t.Logf("taken over by %s", by)
}

// TestTakeoverCompareAndSet: eight replicas try to take over the same
// lapsed stream at once; exactly one does.
func TestTakeoverCompareAndSet(t *testing.T) {
	s := startNATS(t)
	ctx := context.Background()
	a := newStreams(t, s.ClientURL(), StreamsConfig{SecretKey: testKey})
	st, err := a.Start(ctx, "o:u\x00q2", "tok")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.(gateway.DurableStream).Record([]byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	st.Append(gateway.Frame{ID: "q2", Response: gateway.Response{Thought: "1"}})
	close(st.(*stream).stop) // A stops renewing
	var runs atomic.Int32
	var reps []*Streams
	for range 8 {
		r := newStreams(t, s.ClientURL(), StreamsConfig{SecretKey: testKey})
		r.OnTakeover(func(gateway.Takeover) { runs.Add(1) })
		reps = append(reps, r)
	}
	rk := recordKey("o:u\x00q2")
	e, err := a.kv.Get(ctx, rk)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := a.decode(rk, e.Value())
	if err != nil {
		t.Fatal(err)
	}
	outcomes := make([]int, len(reps))
	var wg sync.WaitGroup
	for i, r := range reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outcomes[i] = r.takeOver("o:u\x00q2", rk, e, rec)
		}()
	}
	wg.Wait()
	won := 0
	for _, o := range outcomes {
		switch o {
		case tookOver:
			won++
		case raced:
		default:
			t.Errorf("outcome %d", o)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if won != 1 || runs.Load() != 1 {
		t.Fatalf("%d took over, %d runs; want 1 and 1 (outcomes %v)", won, runs.Load(), outcomes)
	}
}

// TestTakenOverReplicaWritesNothing: replica A is alive but its stream was
// taken over by B (A was paused past its lease, say). A's next frame is
// not written (JetStream's expected-last-sequence check finds B's frame),
// A sees Lost, and the stream holds A's frames 1-2, then B's.
func TestTakenOverReplicaWritesNothing(t *testing.T) {
	s := startNATS(t)
	ctx := context.Background()
	a := newStreams(t, s.ClientURL(), StreamsConfig{SecretKey: testKey})
	b := newStreams(t, s.ClientURL(), StreamsConfig{SecretKey: testKey})
	continued := make(chan struct{})
	b.OnTakeover(func(to gateway.Takeover) {
		to.Stream.Append(gateway.Frame{ID: "q3", Response: gateway.Response{Thought: "3 by B"}})
		close(continued)
	})
	st, err := a.Start(ctx, "o:u\x00q3", "tok")
	if err != nil {
		t.Fatal(err)
	}
	ds := st.(gateway.DurableStream)
	if err := ds.Record([]byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	st.Append(gateway.Frame{ID: "q3", Response: gateway.Response{Thought: "1 by A"}})
	st.Append(gateway.Frame{ID: "q3", Response: gateway.Response{Thought: "2 by A"}})
	rk := recordKey("o:u\x00q3")
	for {
		e, err := b.kv.Get(ctx, rk)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := b.decode(rk, e.Value())
		if err != nil {
			t.Fatal(err)
		}
		o := b.takeOver("o:u\x00q3", rk, e, rec)
		if o == tookOver {
			break
		}
		if o != raced { // A's renewal came between the read and the write
			t.Fatalf("outcome %d", o)
		}
	}
	<-continued
	st.Append(gateway.Frame{ID: "q3", Response: gateway.Response{Thought: "3 by A"}})
	select {
	case <-ds.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("A does not see that it lost the stream")
	}
	js, err := b.js.Stream(ctx, b.cfg.Stream)
	if err != nil {
		t.Fatal(err)
	}
	var e record
	ent, _ := b.kv.Get(ctx, rk)
	_ = json.Unmarshal(ent.Value(), &e)
	frames, _, last, _, whole, err := b.stored(ctx, e.Subject)
	if err != nil {
		t.Fatal(err)
	}
	if got := frameTexts(frames); !whole || last != 3 || !slices.Equal(got, []string{"1:1 by A", "2:2 by A", "3:3 by B"}) {
		t.Fatalf("stored frames: %v (whole %v)", got, whole)
	}
	if _, err := js.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(e.Subject)); errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatal("no frames")
	}
}

// TestTakeoverOfATakeover: A dies after frame 3; B takes over, writes
// frame 4 and dies too; C, whose client resumed after seq 2, takes over
// from B (with A's frames and B's) and finishes: the client gets 3, B's 4
// and C's 5, once each.
func TestTakeoverOfATakeover(t *testing.T) {
	s := startNATS(t)
	ctx := context.Background()
	cfg := StreamsConfig{SecretKey: testKey, Stale: 600 * time.Millisecond}
	ncA, ncB := connect(t, s.ClientURL()), connect(t, s.ClientURL())
	a, err := NewStreams(ctx, ncA, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewStreams(ctx, ncB, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := newStreams(t, s.ClientURL(), cfg)
	b.OnTakeover(func(to gateway.Takeover) {
		to.Stream.Append(gateway.Frame{ID: "q4", Response: gateway.Response{Thought: "4 by B"}})
		ncB.Close() // B dies before the end
	})
	var fromC atomic.Value
	c.OnTakeover(func(to gateway.Takeover) {
		fromC.Store(to)
		to.Stream.Append(gateway.Frame{ID: "q4", Response: gateway.Response{Thought: "5 by C"}, Complete: true})
	})
	st, err := a.Start(ctx, "o:u\x00q4", "tok")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.(gateway.DurableStream).Record([]byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		st.Append(gateway.Frame{ID: "q4", Response: gateway.Response{Thought: fmt.Sprint(i)}})
	}
	ncA.Close()
	// B's client comes and goes (it makes B take over); C's stays.
	rb, err := b.Get(ctx, "o:u\x00q4")
	if err != nil {
		t.Fatal(err)
	}
	if err := rb.Attach(1, 3, func([]byte) bool { return true }); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, func() error {
		if !ncB.IsClosed() {
			return errors.New("B has not taken over")
		}
		return nil
	})
	rc, err := c.Get(ctx, "o:u\x00q4")
	if err != nil {
		t.Fatal(err)
	}
	cl := newCollector()
	if err := rc.Attach(2, 2, cl.send); err != nil {
		t.Fatal(err)
	}
	if _, got := cl.waitFor(t, 15*time.Second); !slices.Equal(got, []string{"3:3", "4:4 by B", "5:5 by C"}) {
		t.Fatalf("client on C: %v", got)
	}
	if to := fromC.Load().(gateway.Takeover); len(to.Frames) != 4 {
		t.Fatalf("C took over with %d frames, want 4", len(to.Frames))
	}
}
