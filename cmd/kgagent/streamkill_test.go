package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/kgagent/kgagent/openai/openaitest"
)

// TestFaultServeReplicaKilledMidStream: a websocket client streams an
// answer from serve replica A (a scripted OpenAI-compatible model: after
// the run's first search it asks for a second search, worded differently
// on every call as a sampling model would, then streams the answer slowly,
// a token every 40 ms); A is killed with SIGKILL mid-answer. The client
// reconnects to replica B with its last seq and resume token. When A's
// lease on the stream lapses, B takes the request over (it was recorded
// beside the stream, with the model's finished outputs) and continues it:
// the model's step is replayed, not asked again, so the client gets every
// remaining event exactly once, in order, ending with the final answer —
// its whole event sequence is that of a clean run of the same question.
func TestFaultServeReplicaKilledMidStream(t *testing.T) {
	t.Parallel() // its own processes and ports: the fault tests run side by side
	ns := startJetStream(t)
	answer := openaitest.Reply("A: " + strings.Repeat("Lumen listens on port 8086 by default. ", 12)).WithDelay(40 * time.Millisecond)
	search := func(try int) openaitest.Step {
		return openaitest.Reply(fmt.Sprintf("Ask Func[fixie_query_corpus]: Lumen default port (try %d)", try))
	}
	// The clean run, then A's: each a search, then the answer. A takeover
	// that asked the model again would get the answer as its first step.
	llm := openaitest.New(t, search(1), answer, search(2), answer)
	llm.SetDefault(answer)
	serve := func(name string) (*proc, string) {
		p := startProc(t, name, nil, "serve", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--nats-url", ns.ClientURL(), "--job-secret", testJobSecret,
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
	b, baseB := serve("serve-b")
	dial := func(base string) *websocket.Conn {
		ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/api/v1/socket", nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ws.Close() })
		return ws
	}
	ask := map[string]any{"id": "q1", "service": "agent", "request": map[string]any{"question": "Which port does Lumen listen on?"}}
	// read reads frames of ws until the last one, or until stop says so,
	// checking that seqs follow each other from after.
	read := func(ws *websocket.Conn, after int64, stop func(wsFrame) bool) []wsFrame {
		var out []wsFrame
		for {
			_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
			var f wsFrame
			if err := ws.ReadJSON(&f); err != nil {
				t.Fatalf("after %d frames: %v", len(out), err)
			}
			if f.ID != "q1" || f.Seq != after+int64(len(out))+1 {
				t.Fatalf("frame %+v after seq %d", f, after+int64(len(out)))
			}
			out = append(out, f)
			if f.Complete || stop(f) {
				return out
			}
		}
	}

	// The clean run, on B.
	wsClean := dial(baseB)
	if err := wsClean.WriteJSON(ask); err != nil {
		t.Fatal(err)
	}
	clean := read(wsClean, 0, func(wsFrame) bool { return false })
	if last := clean[len(clean)-1]; last.Error != nil || last.Response["answer"] == nil || last.Response["delta"] != nil {
		t.Fatalf("the clean run did not end with the answer: %+v", last)
	}

	// The same question on A, killed after the client read frame 8.
	wsA := dial(baseA)
	if err := wsA.WriteJSON(ask); err != nil {
		t.Fatal(err)
	}
	before := read(wsA, 0, func(f wsFrame) bool { return f.Seq == 8 })
	if before[len(before)-1].Complete {
		t.Fatalf("the answer ended before the kill: %+v", before[len(before)-1])
	}
	a.kill9(t)
	killed := time.Now()

	wsB := dial(baseB)
	if err := wsB.WriteJSON(map[string]any{"id": "q1", "resume": map[string]any{"last_seq": 8, "token": before[0].ResumeToken}}); err != nil {
		t.Fatal(err)
	}
	after := read(wsB, 8, func(wsFrame) bool { return false })
	got := append(before, after...)
	if len(got) != len(clean) {
		t.Fatalf("%d frames (8 from A, %d from B after the kill), a clean run has %d; the end: %+v", len(got), len(after), len(clean), got[len(got)-1])
	}
	for i := range got {
		// The two runs' searches were worded differently.
		resp, _ := json.Marshal(got[i].Response)
		var norm map[string]any
		_ = json.Unmarshal([]byte(strings.ReplaceAll(string(resp), "(try 2)", "(try 1)")), &norm)
		if !reflect.DeepEqual(norm, clean[i].Response) || !reflect.DeepEqual(got[i].Error, clean[i].Error) || got[i].Complete != clean[i].Complete {
			t.Fatalf("frame %d: %+v, a clean run's: %+v", i+1, got[i], clean[i])
		}
	}
	if !strings.Contains(fmt.Sprint(got[:8]), "(try 2)") {
		t.Errorf("A's second search is not in the frames before the kill: %+v", got[:8])
	}
	if n := len(llm.ChatRequests()); n != 5 {
		t.Errorf("the model was asked %d times, want 5 (2 per run, the takeover only for the answer)", n)
	}
	if !strings.Contains(b.out.String(), "continuing a stream whose replica stopped") {
		t.Errorf("B's log does not say it continued the stream: %s", tail(b.out.String(), 2000))
	}
	t.Logf("killed A after the client read frame 8 of %d; resumed on B, which took the request over: frames 9-%d, each once, the last the answer %s after the kill",
		len(clean), len(got), time.Since(killed).Round(time.Millisecond))
}

// wsFrame is a websocket response frame as a client reads it, whole.
type wsFrame struct {
	ID          string         `json:"id"`
	Seq         int64          `json:"seq"`
	Complete    bool           `json:"complete"`
	ResumeToken string         `json:"resume_token"`
	Response    map[string]any `json:"response"`
	Error       map[string]any `json:"error"`
}
