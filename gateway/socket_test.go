package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/kgagent/kgagent"
)

func dialSocket(t testing.TB, baseURL, token string) *websocket.Conn {
	t.Helper()
	u := "ws" + strings.TrimPrefix(baseURL, "http") + "/api/v1/socket"
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	c, resp, err := websocket.DefaultDialer.Dial(u, h)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial: %v (status %d)", err, status)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func readFrame(t testing.TB, c *websocket.Conn) Frame {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, data, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var f Frame
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("frame %q: %v", data, err)
	}
	return f
}

// readUntilComplete reads frames until one for each id in ids is complete;
// it returns the frames by id.
func readUntilComplete(t testing.TB, c *websocket.Conn, ids ...string) map[string][]Frame {
	t.Helper()
	got := map[string][]Frame{}
	open := map[string]bool{}
	for _, id := range ids {
		open[id] = true
	}
	for len(open) > 0 {
		f := readFrame(t, c)
		got[f.ID] = append(got[f.ID], f)
		if f.Complete {
			delete(open, f.ID)
		}
	}
	return got
}

func send(t testing.TB, c *websocket.Conn, s string) {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(s)); err != nil {
		t.Fatal(err)
	}
}

func TestSocketMultiplexedStreams(t *testing.T) {
	f := newFixture(t, Config{})
	c := dialSocket(t, f.ts.URL, "")
	send(t, c, `{"id":"a","service":"agent","flow":"default","request":{"question":"What does NASA stand for?"}}`)
	send(t, c, `{"id":"b","service":"agent","request":{"question":"second"}}`)
	send(t, c, `{"id":"s","service":"search","request":{"query":"gil"}}`)
	got := readUntilComplete(t, c, "a", "b", "s")

	a := got["a"]
	var kinds []string
	for i, fr := range a {
		if fr.Seq != int64(i+1) {
			t.Errorf("frame %d seq = %d", i, fr.Seq)
		}
		switch r := fr.Response; {
		case r.Thought != "":
			kinds = append(kinds, "thought")
		case r.Observation != nil:
			kinds = append(kinds, "observation")
		case r.Answer != nil:
			kinds = append(kinds, "answer")
		}
	}
	want := "thought thought observation answer answer answer"
	if strings.Join(kinds, " ") != want {
		t.Errorf("kinds = %v, want %s", kinds, want)
	}
	last := a[len(a)-1]
	if !last.Complete || textOf(last.Response.Answer) != "Answer to: What does NASA stand for?" || last.Response.Sources == nil {
		t.Errorf("last frame = %+v", last)
	}
	for _, fr := range a[:len(a)-1] {
		if fr.Complete {
			t.Errorf("non-final frame complete: %+v", fr)
		}
	}
	if b := got["b"]; textOf(b[len(b)-1].Response.Answer) != "Answer to: second" {
		t.Errorf("b = %+v", b)
	}
	if s := got["s"]; len(s) != 1 || s[0].Response.Hits == nil {
		t.Errorf("s = %+v", s)
	}
}

func TestSocketErrorsPerID(t *testing.T) {
	f := newFixture(t, Config{MaxFrameBytes: 4096})
	c := dialSocket(t, f.ts.URL, "")
	tests := []struct {
		frame, id, typ string
	}{
		{`{"id":"x1","service":"agent","request":{}}`, "x1", "INVALID_ARGUMENT"},
		{`{"id":"x2","service":"nope","request":{"question":"q"}}`, "x2", "NOT_FOUND"},
		{`{"id":"x3","service":"agent","flow":"other","request":{"question":"q"}}`, "x3", "NOT_FOUND"},
		{`{"id":"x4","service":"agent","request":{"question":7}}`, "x4", "INVALID_ARGUMENT"},
		{`{"id":"x5","service":"agent","request":{"question":"boom"}}`, "x5", "INTERNAL"},
		{`{"id":"x5p","service":"agent","request":{"question":"panic please"}}`, "x5p", "INTERNAL"},
		{`{"id":"x6","service":"agent","request":{"question":"q","agent":"nope"}}`, "x6", "NOT_FOUND"},
		{`{"id":"x7","resume":{"last_seq":0}}`, "x7", "NOT_FOUND"},
		{`not json`, "", "INVALID_ARGUMENT"},
		{`{"service":"agent","request":{"question":"q"}}`, "", "INVALID_ARGUMENT"},
		{"{\"id\":\"x8\",\"service\":\"agent\",\"request\":{\"question\":\"\xff\"}}", "x8", "INVALID_ARGUMENT"},
	}
	for _, tt := range tests {
		send(t, c, tt.frame)
		fr := readFrame(t, c)
		if fr.ID != tt.id || fr.Error == nil || fr.Error.Type != tt.typ || !fr.Complete {
			t.Errorf("%s: got %+v, want error %s for %q", tt.frame, fr, tt.typ, tt.id)
		}
		if fr.Error != nil && strings.Contains(fr.Error.Message, "secret") {
			t.Errorf("internal detail leaked: %q", fr.Error.Message)
		}
	}
	// The socket still works.
	send(t, c, `{"id":"ok","service":"agent","request":{"question":"still there?"}}`)
	got := readUntilComplete(t, c, "ok")["ok"]
	if textOf(got[len(got)-1].Response.Answer) != "Answer to: still there?" {
		t.Errorf("after errors: %+v", got)
	}

	// A frame over the limit gets TOO_LARGE for its id; the socket lives.
	send(t, c, `{"id":"big","service":"agent","request":{"question":"`+strings.Repeat("a", 5000)+`"}}`)
	if fr := readFrame(t, c); fr.ID != "big" || fr.Error == nil || fr.Error.Type != "TOO_LARGE" {
		t.Errorf("oversized frame: %+v", fr)
	}
	send(t, c, `{"id":"ok1","service":"agent","request":{"question":"after big"}}`)
	readUntilComplete(t, c, "ok1")

	// A frame over 16x the limit closes this socket only.
	// The server may close while the client is still writing, so the write
	// itself may fail with a reset; then the close frame cannot be read, but
	// the socket must be gone.
	werr := c.WriteMessage(websocket.TextMessage, []byte(`{"id":"huge","service":"agent","request":{"question":"`+strings.Repeat("a", 70000)+`"}}`))
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err := c.ReadMessage()
	if err == nil {
		t.Errorf("huge frame: socket still open")
	} else if werr == nil && !websocket.IsCloseError(err, websocket.CloseMessageTooBig) && !strings.Contains(err.Error(), "reset by peer") {
		t.Errorf("huge frame: err = %v, want close 1009", err)
	}
	c2 := dialSocket(t, f.ts.URL, "")
	send(t, c2, `{"id":"ok2","service":"agent","request":{"question":"other socket"}}`)
	readUntilComplete(t, c2, "ok2")
}

// TestSocketInFlightBackPressure: requests past MaxInFlight wait for a
// slot instead of failing; all complete once the first ones finish.
func TestSocketInFlightBackPressure(t *testing.T) {
	f := newFixture(t, Config{MaxInFlight: 2})
	c := dialSocket(t, f.ts.URL, "")
	send(t, c, `{"id":"b1","service":"agent","request":{"question":"block 1"}}`)
	send(t, c, `{"id":"b2","service":"agent","request":{"question":"block 2"}}`)
	send(t, c, `{"id":"b3","service":"agent","request":{"question":"block 3"}}`)
	// b1 and b2 run (their first frames come); b3 waits.
	seen := map[string]bool{}
	for !seen["b1"] || !seen["b2"] {
		fr := readFrame(t, c)
		seen[fr.ID] = true
		if fr.ID == "b3" {
			t.Fatalf("b3 ran past the in-flight cap: %+v", fr)
		}
	}
	f.asker.unblock()
	got := readUntilComplete(t, c, "b1", "b2", "b3")
	for id, frames := range got {
		if last := frames[len(frames)-1]; last.Error != nil {
			t.Errorf("%s: %+v", id, last.Error)
		}
	}
	send(t, c, `{"id":"b4","service":"agent","request":{"question":"after"}}`)
	readUntilComplete(t, c, "b4")
}

func TestSocketResume(t *testing.T) {
	f := newFixture(t, Config{})
	c := dialSocket(t, f.ts.URL, "")
	send(t, c, `{"id":"r1","service":"agent","request":{"question":"block resume"}}`)
	// Read the first two frames, then drop the connection.
	first := []Frame{readFrame(t, c), readFrame(t, c)}
	if first[1].Seq != 2 || len(first[0].ResumeToken) != 32 || first[1].ResumeToken != "" {
		t.Fatalf("first frames %+v", first)
	}
	tok := first[0].ResumeToken
	c.Close()
	f.asker.unblock()

	c2 := dialSocket(t, f.ts.URL, "")
	send(t, c2, `{"id":"r1","resume":{"last_seq":2,"token":"`+tok+`"}}`)
	rest := readUntilComplete(t, c2, "r1")["r1"]
	if rest[0].Seq != 3 {
		t.Errorf("resume started at seq %d, want 3", rest[0].Seq)
	}
	for i := 1; i < len(rest); i++ {
		if rest[i].Seq != rest[i-1].Seq+1 {
			t.Errorf("gap: %d after %d", rest[i].Seq, rest[i-1].Seq)
		}
	}
	if last := rest[len(rest)-1]; textOf(last.Response.Answer) != "Answer to: block resume" {
		t.Errorf("last = %+v", last)
	}
	// Resuming a finished stream from the start replays all of it.
	send(t, c2, `{"id":"r1","resume":{"last_seq":0,"token":"`+tok+`"}}`)
	all := readUntilComplete(t, c2, "r1")["r1"]
	if len(all) != 2+len(rest) || all[0].Seq != 1 {
		t.Errorf("replay: %d frames from seq %d, want %d from 1", len(all), all[0].Seq, 2+len(rest))
	}
}

func TestSocketSlowReaderCutOff(t *testing.T) {
	f := newFixture(t, Config{SendBuffer: 16, MaxInFlight: 1000})
	c := dialSocket(t, f.ts.URL, "")
	// Never read; flood requests until the server closes the socket.
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		err = c.WriteMessage(websocket.TextMessage, []byte(`{"id":"f`+strings.Repeat("x", i%7)+string(rune('a'+i%26))+`","service":"search","request":{"query":"`+strings.Repeat("z", 2000)+`"}}`))
		if err != nil {
			break
		}
	}
	if err == nil {
		t.Fatal("a client that never reads was not cut off")
	}
	// Others are served.
	c2 := dialSocket(t, f.ts.URL, "")
	send(t, c2, `{"id":"ok","service":"agent","request":{"question":"q"}}`)
	readUntilComplete(t, c2, "ok")
}

func TestSocketPingPong(t *testing.T) {
	f := newFixture(t, Config{PingInterval: 150 * time.Millisecond})
	c := dialSocket(t, f.ts.URL, "")
	pings := make(chan struct{}, 10)
	c.SetPingHandler(func(string) error {
		select {
		case pings <- struct{}{}:
		default:
		}
		return c.WriteControl(websocket.PongMessage, nil, time.Now().Add(time.Second))
	})
	go func() {
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
		}
	}()
	for i := 0; i < 2; i++ {
		select {
		case <-pings:
		case <-time.After(5 * time.Second):
			t.Fatal("no ping from the server")
		}
	}
	// A client that answers pings stays connected past the pong deadline.
	send(t, c, `{"id":"alive","service":"search","request":{"query":"q"}}`)
}

func TestSocketDeadClientDropped(t *testing.T) {
	f := newFixture(t, Config{PingInterval: 50 * time.Millisecond})
	c := dialSocket(t, f.ts.URL, "")
	c.SetPingHandler(func(string) error { return nil }) // never pong
	done := make(chan error, 1)
	go func() {
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				done <- err
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a client that never answers pings was not dropped")
	}
}

func TestEventResponse(t *testing.T) {
	tests := []struct {
		ev   kgagent.Event
		want map[string]any
	}{
		{kgagent.Event{Kind: kgagent.EventThought, Text: "hm"}, map[string]any{"thought": "hm"}},
		{kgagent.Event{Kind: kgagent.EventRoute, Agent: "docs", Text: "routed to agent docs (similarity 0.80)"}, map[string]any{"thought": "routed to agent docs (similarity 0.80)", "agent": "docs"}},
		{kgagent.Event{Kind: kgagent.EventAction, Func: "f", Text: "Ask Func[f]: x"}, map[string]any{"thought": "Ask Func[f]: x", "action": "f"}},
		{kgagent.Event{Kind: kgagent.EventAction, Func: "f", Text: "x"}, map[string]any{"thought": "Ask Func[f]: x", "action": "f"}},
		{kgagent.Event{Kind: kgagent.EventObservation, Text: "o"}, map[string]any{"observation": "o"}},
		{kgagent.Event{Kind: kgagent.EventObservation, Text: ""}, map[string]any{"observation": ""}},
		{kgagent.Event{Kind: kgagent.EventObservation, Text: "o", Sources: []kgagent.Source{{URL: "u", Title: "t", HeadingPath: []string{"h"}}}},
			map[string]any{"observation": "o", "sources": []kgagent.Source{{URL: "u", Title: "t", HeadingPath: []string{"h"}}}}},
		{kgagent.Event{Kind: kgagent.EventAnswer, Delta: true, Text: ""}, map[string]any{"answer": "", "delta": true}},
		{kgagent.Event{Kind: kgagent.EventAnswer, Delta: true, Text: "to"}, map[string]any{"answer": "to", "delta": true}},
		{kgagent.Event{Kind: kgagent.EventAnswer, Final: true, Text: "full"}, nil},
		{kgagent.Event{Kind: kgagent.EventError, Text: "bad output"}, map[string]any{"thought": "error: bad output"}},
		{kgagent.Event{Kind: kgagent.EventError, Final: true, Text: "x"}, nil},
	}
	for _, tt := range tests {
		got, ok := eventResponse(tt.ev)
		if ok != (tt.want != nil) || ok && jsonString(got) != jsonString(tt.want) {
			t.Errorf("%+v: got %v (%v), want %v", tt.ev, jsonString(got), ok, tt.want)
		}
	}
	// The final answer: the same bytes as the map it was before.
	src := []kgagent.Source{{URL: "https://docs.example.org/a#b", Title: "A", Score: 0.5}}
	for _, tt := range []struct {
		ans  kgagent.Answer
		want map[string]any
	}{
		{kgagent.Answer{Answer: "x [1]", Sources: src, Agent: "docs", RequestID: "r1", Citations: "model"},
			map[string]any{"answer": "x [1]", "sources": src, "agent": "docs", "request_id": "r1", "citations": "model"}},
		{kgagent.Answer{}, map[string]any{"answer": "", "sources": []kgagent.Source{}}},
	} {
		if got := answerResponse(tt.ans); jsonString(got) != jsonString(tt.want) {
			t.Errorf("answer %+v: got %s, want %s", tt.ans, jsonString(got), jsonString(tt.want))
		}
	}
}
