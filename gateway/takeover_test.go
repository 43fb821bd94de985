package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
)

// durableMem is a DurableStreams over the in-memory store that keeps what
// its streams record (a stand-in for gateway/natsstate, which tests the
// store's side with a real NATS server).
type durableMem struct {
	StreamStore
	mu       sync.Mutex
	recorded [][]byte
}

func (d *durableMem) OnTakeover(func(Takeover)) {}

func (d *durableMem) Start(ctx context.Context, key, token string) (Stream, error) {
	st, err := d.StreamStore.Start(ctx, key, token)
	if err != nil {
		return nil, err
	}
	return &durableMemStream{Stream: st, d: d, lost: make(chan struct{})}, nil
}

type durableMemStream struct {
	Stream
	d    *durableMem
	lost chan struct{}
}

func (s *durableMemStream) Record(run []byte) error {
	s.d.mu.Lock()
	s.d.recorded = append(s.d.recorded, run)
	s.d.mu.Unlock()
	return nil
}

func (s *durableMemStream) Lost() <-chan struct{} { return s.lost }

func (s *durableMemStream) Note([]byte) error { return nil }

// takenOver is the stream a takeover appends to: it numbers frames after
// the stored ones, as a DurableStreams does.
type takenOver struct {
	token  string
	next   int64
	frames []Frame
	lost   chan struct{}
}

func (s *takenOver) Token() string { return s.token }
func (s *takenOver) Append(f Frame) {
	f.Seq = s.next
	s.next++
	s.frames = append(s.frames, f)
}
func (s *takenOver) Attach(uint64, int64, func([]byte) bool) error { return nil }
func (s *takenOver) Detach(uint64)                                 {}
func (s *takenOver) Done() bool                                    { return false }
func (s *takenOver) Record([]byte) error                           { return nil }
func (s *takenOver) Note([]byte) error                             { return nil }
func (s *takenOver) Lost() <-chan struct{}                         { return s.lost }

// TestTakeoverContinuesTheRecordedRequest: a websocket request on a
// durable store is recorded once admitted (its collection resolved, its
// caller). A replica taking the stream over with frames 1-3 stored runs
// the recorded request again without charging the daily limit again (the
// key's limit of 1 is spent) and appends exactly the frames after 3, equal
// to the first run's. When the re-run differs from the stored frames, the
// stream ends with one UNAVAILABLE frame.
func TestTakeoverContinuesTheRecordedRequest(t *testing.T) {
	store := &durableMem{StreamStore: NewMemStreams(time.Minute, 100, 100, 1<<20)}
	f := newFixture(t, Config{Streams: store, APIKeys: []APIKey{{Name: "k", Hash: HashKey("k-secret"), Scopes: []Scope{ScopeAsk}, Collections: []string{"python"}, DailyLimit: 1}}})
	c := dialSocket(t, f.ts.URL, "k-secret")
	if err := c.WriteJSON(map[string]any{"id": "q1", "service": "agent", "request": map[string]any{"question": "code: how do I restore?"}}); err != nil {
		t.Fatal(err)
	}
	var first [][]byte
	for {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, data, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		first = append(first, data)
		var fr Frame
		_ = json.Unmarshal(data, &fr)
		if fr.Complete {
			if fr.Error != nil {
				t.Fatalf("first run: %+v", fr.Error)
			}
			break
		}
	}
	if len(first) < 6 {
		t.Fatalf("first run: %d frames", len(first))
	}
	store.mu.Lock()
	if len(store.recorded) != 1 {
		t.Fatalf("%d requests recorded, want 1", len(store.recorded))
	}
	run := store.recorded[0]
	store.mu.Unlock()
	var rec durableRun
	if err := json.Unmarshal(run, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.ID != "q1" || rec.Service != ServiceAgent || rec.Request.Question != "code: how do I restore?" || rec.Request.Collection != "python" ||
		time.Until(rec.Deadline) <= 0 {
		t.Fatalf("recorded: %s", run)
	}
	var f1 Frame
	_ = json.Unmarshal(first[0], &f1)

	// Taken over after frame 3: frames 4.. are appended, as the first run wrote them.
	to := &takenOver{token: f1.ResumeToken, next: 4, lost: make(chan struct{})}
	f.srv.takeover(Takeover{Stream: to, Run: run, Frames: first[:3]})
	if len(to.frames) != len(first)-3 {
		t.Fatalf("takeover appended %d frames, want %d: %+v", len(to.frames), len(first)-3, to.frames)
	}
	for i, fr := range to.frames {
		b, _ := json.Marshal(fr)
		if string(b) != string(first[3+i]) {
			t.Fatalf("appended frame %d: %s, want %s", fr.Seq, b, first[3+i])
		}
	}
	// The key's one query a day was spent by the first run: a new request is refused.
	if err := c.WriteJSON(map[string]any{"id": "q2", "service": "agent", "request": map[string]any{"question": "again"}}); err != nil {
		t.Fatal(err)
	}
	if fr := readFrame(t, c); fr.Error == nil || fr.Error.Type != kgagent.ERATELIMIT {
		t.Fatalf("second request: %+v", fr)
	}

	// A stored frame 2 the re-run does not give: one UNAVAILABLE frame.
	other := append([][]byte{first[0], []byte(strings.Replace(string(first[1]), "Ask", "Asks", 1))}, first[2])
	to = &takenOver{token: f1.ResumeToken, next: 4, lost: make(chan struct{})}
	f.srv.takeover(Takeover{Stream: to, Run: run, Frames: other})
	if len(to.frames) != 1 || to.frames[0].Seq != 4 || !to.frames[0].Complete || to.frames[0].Error == nil || to.frames[0].Error.Type != kgagent.EUNAVAILABLE {
		t.Fatalf("takeover of a diverging run: %+v", to.frames)
	}
}
