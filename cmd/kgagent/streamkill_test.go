package main

import (
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/kgagent/kgagent/agent/openai/openaitest"
)

// TestFaultServeReplicaKilledMidStream: a websocket client streams an
// answer from serve replica A (a scripted OpenAI-compatible model streams it
// slowly, a token every 40 ms); A is killed with SIGKILL mid-stream. The
// client reconnects to replica B with its last seq and resume token: B
// sends every frame A had written after that seq, each once and in order,
// and then (A's question dies with A; it is not re-run) a final UNAVAILABLE
// frame within seconds, so the client never waits without end.
func TestFaultServeReplicaKilledMidStream(t *testing.T) {
	ns := startJetStream(t)
	llm := openaitest.New(t)
	llm.SetDefault(openaitest.Reply("A: " + strings.Repeat("Lumen listens on port 8086 by default. ", 12)).WithDelay(40 * time.Millisecond))
	serve := func(name string) (*proc, string) {
		p := startProc(t, name, nil, "serve", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--nats-url", ns.ClientURL(),
			"--llm", "openai", "--llm-base-url", llm.URL, "--llm-model", "scripted", "--llm-protocol", "text", "--answer-cache-size", "0")
		var base string
		deadline := time.Now().Add(60 * time.Second)
		for {
			var ok bool
			if base, ok = chatPageURL(p.out.String()); ok {
				return p, base
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not start: %s", name, tail(p.out.String(), 2000))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	a, baseA := serve("serve-a")
	_, baseB := serve("serve-b")
	type frame struct {
		ID          string         `json:"id"`
		Seq         int64          `json:"seq"`
		Complete    bool           `json:"complete"`
		ResumeToken string         `json:"resume_token"`
		Error       map[string]any `json:"error"`
	}
	dial := func(base string) *websocket.Conn {
		ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/api/v1/socket", nil)
		if err != nil {
			t.Fatal(err)
		}
		return ws
	}
	wsA := dial(baseA)
	defer wsA.Close()
	if err := wsA.WriteJSON(map[string]any{"id": "q1", "service": "agent", "request": map[string]any{"question": "Which port does Lumen listen on?"}}); err != nil {
		t.Fatal(err)
	}
	var last frame
	var token string
	for last.Seq < 8 {
		_ = wsA.SetReadDeadline(time.Now().Add(20 * time.Second))
		var f frame
		if err := wsA.ReadJSON(&f); err != nil {
			t.Fatal(err)
		}
		if f.Complete || f.Error != nil {
			t.Fatalf("the answer ended before the kill: %+v", f)
		}
		if f.Seq != last.Seq+1 {
			t.Fatalf("frame %d after %d", f.Seq, last.Seq)
		}
		if f.Seq == 1 {
			token = f.ResumeToken
		}
		last = f
	}
	a.kill9(t)
	killed := time.Now()

	wsB := dial(baseB)
	defer wsB.Close()
	if err := wsB.WriteJSON(map[string]any{"id": "q1", "resume": map[string]any{"last_seq": last.Seq, "token": token}}); err != nil {
		t.Fatal(err)
	}
	want := last.Seq + 1
	for {
		_ = wsB.SetReadDeadline(time.Now().Add(15 * time.Second))
		var f frame
		if err := wsB.ReadJSON(&f); err != nil {
			t.Fatalf("no final frame from B %s after the kill: %v", time.Since(killed), err)
		}
		if f.ID != "q1" || f.Seq != want {
			t.Fatalf("frame from B: %+v, want seq %d", f, want)
		}
		if f.Complete {
			if f.Error == nil || f.Error["type"] != "UNAVAILABLE" {
				t.Fatalf("last frame from B: %+v, want an UNAVAILABLE error", f)
			}
			break
		}
		want++
	}
	t.Logf("killed A after the client read frame %d; B sent %d more frames (written by A before it died), then UNAVAILABLE %s after the kill",
		last.Seq, want-1-last.Seq, time.Since(killed).Round(time.Millisecond))
}
