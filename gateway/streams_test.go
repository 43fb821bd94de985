package gateway

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/poll"
)

func collect(st *stream, lastSeq int64) ([]int64, error) {
	var seqs []int64
	err := st.attach(1, lastSeq, func(data []byte) bool {
		var f Frame
		_ = json.Unmarshal(data, &f)
		seqs = append(seqs, f.Seq)
		return true
	})
	return seqs, err
}

func TestStreamStoreBounds(t *testing.T) {
	s := newStreamStore(time.Hour, 2, 3)
	defer s.close()
	a, err := s.start("a")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		a.append(Frame{ID: "a", Response: map[string]any{"thought": i}})
	}
	// Only the last 3 frames are kept.
	if seqs, err := collect(a, 2); err != nil || len(seqs) != 3 || seqs[0] != 3 {
		t.Errorf("after seq 2: %v %v", seqs, err)
	}
	if _, err := collect(a, 1); kgagent.ErrorCode(err) != kgagent.ENOTFOUND {
		t.Errorf("resume from a dropped seq: %v", err)
	}
	// A running id cannot be started twice.
	if _, err := s.start("a"); kgagent.ErrorCode(err) != kgagent.ECONFLICT {
		t.Errorf("duplicate running id: %v", err)
	}
	if _, err := s.start("b"); err != nil {
		t.Fatal(err)
	}
	// Full of running streams: refused.
	if _, err := s.start("c"); kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
		t.Errorf("store full of running streams: %v", err)
	}
	// A finished stream is evicted to make room.
	a.append(Frame{ID: "a", Complete: true})
	if _, err := s.start("c"); err != nil {
		t.Errorf("after a finished: %v", err)
	}
	if s.get("a") != nil {
		t.Error("finished stream a not evicted")
	}
}

func TestStreamRetentionWindow(t *testing.T) {
	s := newStreamStore(20*time.Millisecond, 10, 10)
	defer s.close()
	st, _ := s.start("x")
	st.append(Frame{ID: "x", Complete: true})
	poll.True(t, 5*time.Second, "the finished stream is dropped after its retention window", func() bool { return s.get("x") == nil })
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
	if got[len(got)-1].Response["answer"] != "Answer to: q2" {
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
