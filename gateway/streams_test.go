package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/internal/poll"
)

func collect(st Stream, lastSeq int64) ([]int64, error) {
	var seqs []int64
	err := st.Attach(1, lastSeq, func(data []byte) bool {
		var f Frame
		_ = json.Unmarshal(data, &f)
		seqs = append(seqs, f.Seq)
		return true
	})
	return seqs, err
}

func gone(s StreamStore, key string) bool {
	_, err := s.Get(context.Background(), key)
	return kgagent.ErrorCode(err) == kgagent.ENOTFOUND
}

func TestStreamStoreBounds(t *testing.T) {
	ctx := context.Background()
	s := NewMemStreams(time.Hour, 2, 3, 1<<20)
	defer s.Close()
	a, err := s.Start(ctx, "a", "tok")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		a.Append(Frame{ID: "a", Response: Response{Thought: fmt.Sprint(i)}})
	}
	// Only the last 3 frames are kept.
	if seqs, err := collect(a, 2); err != nil || len(seqs) != 3 || seqs[0] != 3 {
		t.Errorf("after seq 2: %v %v", seqs, err)
	}
	if _, err := collect(a, 1); kgagent.ErrorCode(err) != kgagent.ENOTFOUND {
		t.Errorf("resume from a dropped seq: %v", err)
	}
	// A running id cannot be started twice.
	if _, err := s.Start(ctx, "a", "t2"); kgagent.ErrorCode(err) != kgagent.ECONFLICT {
		t.Errorf("duplicate running id: %v", err)
	}
	if _, err := s.Start(ctx, "b", "t3"); err != nil {
		t.Fatal(err)
	}
	// Full of running streams: refused.
	if _, err := s.Start(ctx, "c", "t4"); kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
		t.Errorf("store full of running streams: %v", err)
	}
	// A finished stream is evicted to make room.
	a.Append(Frame{ID: "a", Complete: true})
	if _, err := s.Start(ctx, "c", "t5"); err != nil {
		t.Errorf("after a finished: %v", err)
	}
	if !gone(s, "a") {
		t.Error("finished stream a not evicted")
	}
}

func TestStreamRetentionWindow(t *testing.T) {
	s := NewMemStreams(20*time.Millisecond, 10, 10, 1<<20)
	defer s.Close()
	st, _ := s.Start(context.Background(), "x", "tok")
	st.Append(Frame{ID: "x", Complete: true})
	poll.True(t, 5*time.Second, "the finished stream is dropped after its retention window", func() bool { return gone(s, "x") })
}

// TestStreamByteBudget is part of finding 6 of issue 11: the kept frames
// never pass the byte budget; the oldest go first, across streams.
func TestStreamByteBudget(t *testing.T) {
	ctx := context.Background()
	const budget = 64 << 10
	s := NewMemStreams(time.Hour, 100000, 2048, budget).(*memStreams)
	defer s.Close()
	big := []corpus.Hit{{Chunk: kgagent.Chunk{Text: strings.Repeat("x", 1000)}}}
	var first Stream
	for i := 0; i < 1000; i++ {
		st, err := s.Start(ctx, fmt.Sprint("s", i), "tok")
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = st
		}
		st.Append(Frame{ID: "s", Response: Response{Hits: big}})
		st.Append(Frame{ID: "s", Response: Response{Hits: big}, Complete: true})
		s.mu.Lock()
		b := s.bytes
		s.mu.Unlock()
		if b > budget {
			t.Fatalf("after %d streams %d bytes kept, over the %d budget", i+1, b, budget)
		}
	}
	if _, err := collect(first, 0); kgagent.ErrorCode(err) != kgagent.ENOTFOUND && !gone(s, "s0") {
		t.Errorf("the oldest stream survived the budget: %v", err)
	}
	last, err := s.Get(ctx, "s999")
	if err != nil {
		t.Fatal(err)
	}
	if seqs, err := collect(last, 0); err != nil || len(seqs) != 2 {
		t.Errorf("newest stream: %v %v", seqs, err)
	}
	s.mu.Lock()
	if len(s.order) > 2*s.live+1024 {
		t.Errorf("order list not compacted: %d refs for %d frames", len(s.order), s.live)
	}
	s.mu.Unlock()
}

func TestSocketResumeIsPerCaller(t *testing.T) {
	cfg := authConfig()
	cfg.DailyLimit = 1000
	f := newFixture(t, cfg)
	a := dialSocket(t, f.ts.URL, "ask-key")
	send(t, a, `{"id":"mine","service":"agent","request":{"question":"q"}}`)
	readUntilComplete(t, a, "mine")
	b := dialSocket(t, f.ts.URL, "py-key")
	send(t, b, `{"id":"mine","resume":{"last_seq":0}}`)
	if fr := readFrame(t, b); fr.Error == nil || fr.Error.Type != "NOT_FOUND" {
		t.Errorf("another key resumed the stream: %+v", fr)
	}
	// The same id is free for the other key.
	send(t, b, `{"id":"mine","service":"agent","request":{"question":"q2","collection":"python"}}`)
	got := readUntilComplete(t, b, "mine")["mine"]
	if textOf(got[len(got)-1].Response.Answer) != "Answer to: q2" {
		t.Errorf("b's own stream: %+v", got)
	}
	// Binary frames get an error; the socket lives.
	if err := b.WriteMessage(websocket.BinaryMessage, []byte{1, 2}); err != nil {
		t.Fatal(err)
	}
	if fr := readFrame(t, b); fr.Error == nil || fr.Error.Type != "UNSUPPORTED_MEDIA" {
		t.Errorf("binary frame: %+v", fr)
	}
}
