package natsapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/gateway"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// asker streams a thought and an observation, then answers; it counts calls.
type asker struct{ calls atomic.Int64 }

func (a *asker) Ask(ctx context.Context, req agent.Request, emit agent.Emit) (kgagent.Answer, error) {
	a.calls.Add(1)
	if req.Question == "panic" {
		panic("asker panicked")
	}
	emit(kgagent.Event{Kind: kgagent.EventThought, Text: "thinking"})
	emit(kgagent.Event{Kind: kgagent.EventObservation, Text: "seen"})
	return kgagent.Answer{Answer: "A: " + req.Question, Sources: []kgagent.Source{{URL: "https://x.example/p#s", Title: "P"}}}, nil
}

func startNATS(t testing.TB) *server.Server {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(5 * time.Second) {
		t.Fatal("nats server not ready")
	}
	t.Cleanup(ns.Shutdown)
	return ns
}

func connect(t testing.TB, ns *server.Server) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// startWorker starts a gateway and a natsapi server on its own connection.
func startWorker(t testing.TB, ns *server.Server, a *asker) *Server {
	t.Helper()
	gw, err := gateway.New(gateway.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, gateway.Backends{Asker: a})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	s := New(connect(t, ns), gw, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// request publishes data on subject and collects frames until complete.
func request(t testing.TB, nc *nats.Conn, subject, data string) []gateway.Frame {
	t.Helper()
	return requestWith(t, nc, subject, data, nil)
}

func TestNATSStreams(t *testing.T) {
	ns := startNATS(t)
	a := &asker{}
	startWorker(t, ns, a)
	nc := connect(t, ns)

	frames := request(t, nc, "kgagent.request.agent", `{"id":"n1","question":"What is NATS?"}`)
	if len(frames) != 3 {
		t.Fatalf("frames = %+v", frames)
	}
	wantKeys := []string{"thought", "observation", "answer"}
	for i, f := range frames {
		if f.ID != "n1" || f.Seq != int64(i+1) || !strings.Contains(string(mustJSON(t, f.Response)), `"`+wantKeys[i]+`":`) {
			t.Errorf("frame %d = %+v", i, f)
		}
	}
	if textOf(frames[2].Response.Answer) != "A: What is NATS?" || frames[2].Response.Sources == nil {
		t.Errorf("final = %+v", frames[2])
	}
}

// TestNATSAcceptsTheWebsocketEnvelope: a websocket client's frame, sent as
// is, is answered like the bare request, under the envelope's id.
func TestNATSAcceptsTheWebsocketEnvelope(t *testing.T) {
	ns := startNATS(t)
	startWorker(t, ns, &asker{})
	nc := connect(t, ns)
	frames := request(t, nc, "kgagent.request.agent", `{"id":"w1","service":"agent","flow":"default","request":{"question":"What is NATS?"}}`)
	last := frames[len(frames)-1]
	if len(frames) != 3 || last.ID != "w1" || textOf(last.Response.Answer) != "A: What is NATS?" {
		t.Fatalf("frames = %+v", frames)
	}
	for _, tt := range []struct{ data, typ string }{
		{`{"id":"w2","service":"search","request":{"question":"q"}}`, "INVALID_ARGUMENT"}, // sent to the agent subject
		{`{"id":"w3","service":"agent","request":{}}`, "INVALID_ARGUMENT"},
		{`{"id":"w4","service":"agent","flow":"nope","request":{"question":"q"}}`, "NOT_FOUND"},
	} {
		frames := request(t, nc, "kgagent.request.agent", tt.data)
		if len(frames) != 1 || frames[0].Error == nil || frames[0].Error.Type != tt.typ {
			t.Errorf("%s: got %+v, want one %s error", tt.data, frames, tt.typ)
		}
	}
}

func TestNATSValidationErrors(t *testing.T) {
	ns := startNATS(t)
	startWorker(t, ns, &asker{})
	nc := connect(t, ns)
	tests := []struct{ subject, data, typ string }{
		{"kgagent.request.agent", `{"question":`, "INVALID_ARGUMENT"},
		{"kgagent.request.agent", `{}`, "INVALID_ARGUMENT"},
		{"kgagent.request.agent", `{"question":1}`, "INVALID_ARGUMENT"},
		{"kgagent.request.agent", "{\"question\":\"\xff\"}", "INVALID_ARGUMENT"},
		{"kgagent.request.llm", `{"question":"q"}`, "NOT_FOUND"},
		{"kgagent.request.agent", `{"question":"q","flow":"nope"}`, "NOT_FOUND"},
		{"kgagent.request.search", `{"query":"q"}`, "UNAVAILABLE"},
		{"kgagent.request.agent", `{"question":"panic"}`, "INTERNAL"},
		{"kgagent.request.agent", `{"question":"` + strings.Repeat("a", 70<<10) + `"}`, "TOO_LARGE"},
	}
	for _, tt := range tests {
		frames := request(t, nc, tt.subject, tt.data)
		if len(frames) != 1 || frames[0].Error == nil || frames[0].Error.Type != tt.typ || frames[0].ID == "" {
			t.Errorf("%s %s: got %+v, want one %s error", tt.subject, tt.data, frames, tt.typ)
		}
	}
	// A request without a reply subject is dropped, not fatal.
	if err := nc.Publish("kgagent.request.agent", []byte(`{"question":"nobody listens"}`)); err != nil {
		t.Fatal(err)
	}
	if frames := request(t, nc, "kgagent.request.agent", `{"question":"still ok"}`); textOf(frames[len(frames)-1].Response.Answer) != "A: still ok" {
		t.Errorf("after errors: %+v", frames)
	}
}

func TestNATSQueueGroupSharesWork(t *testing.T) {
	ns := startNATS(t)
	a1, a2 := &asker{}, &asker{}
	startWorker(t, ns, a1)
	startWorker(t, ns, a2)
	nc := connect(t, ns)
	const n = 40
	for i := 0; i < n; i++ {
		request(t, nc, "kgagent.request.agent", fmt.Sprintf(`{"question":"q%d"}`, i))
	}
	if got := a1.calls.Load() + a2.calls.Load(); got != n {
		t.Errorf("calls = %d, want %d (each request answered once)", got, n)
	}
	if a1.calls.Load() == 0 || a2.calls.Load() == 0 {
		t.Errorf("queue group did not share work: %d / %d", a1.calls.Load(), a2.calls.Load())
	}
}

// requestWith is request with headers.
func requestWith(t testing.TB, nc *nats.Conn, subject, data string, hdr nats.Header) []gateway.Frame {
	t.Helper()
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishMsg(&nats.Msg{Subject: subject, Reply: inbox, Data: []byte(data), Header: hdr}); err != nil {
		t.Fatal(err)
	}
	var frames []gateway.Frame
	for {
		m, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("%s %s: %v after %d frames", subject, data, err, len(frames))
		}
		var f gateway.Frame
		if err := json.Unmarshal(m.Data, &f); err != nil {
			t.Fatalf("frame %q: %v", m.Data, err)
		}
		frames = append(frames, f)
		if f.Complete {
			return frames
		}
	}
}

// TestNATSChecksAndChargesLikeHTTP is part of finding 2 of issue 11, on a
// real NATS server: with API keys configured, a request without a key is
// refused, one with a key runs with its scope and collections, and is
// charged to the same daily limit as HTTP.
func TestNATSChecksAndChargesLikeHTTP(t *testing.T) {
	ns := startNATS(t)
	a := &asker{}
	gw, err := gateway.New(gateway.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), APIKeys: []gateway.APIKey{
		{Name: "two", Hash: gateway.HashKey("two-key"), Scopes: []gateway.Scope{gateway.ScopeAsk}, DailyLimit: 2, Collections: []string{"py"}},
		{Name: "ingest", Hash: gateway.HashKey("ingest-key"), Scopes: []gateway.Scope{gateway.ScopeIngest}},
	}}, gateway.Backends{Asker: a})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	s := New(connect(t, ns), gw, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	nc := connect(t, ns)
	errType := func(fr []gateway.Frame) string {
		if last := fr[len(fr)-1]; last.Error != nil {
			return last.Error.Type
		}
		return ""
	}
	if got := errType(requestWith(t, nc, "kgagent.request.agent", `{"question":"q"}`, nil)); got != kgagent.EUNAUTH {
		t.Errorf("no key: %q", got)
	}
	if got := errType(requestWith(t, nc, "kgagent.request.agent", `{"question":"q"}`, nats.Header{"Authorization": {"Bearer wrong"}})); got != kgagent.EUNAUTH {
		t.Errorf("wrong key: %q", got)
	}
	if got := errType(requestWith(t, nc, "kgagent.request.agent", `{"question":"q"}`, nats.Header{"X-API-Key": {"ingest-key"}})); got != kgagent.EFORBIDDEN {
		t.Errorf("key without ask scope: %q", got)
	}
	if got := errType(requestWith(t, nc, "kgagent.request.agent", `{"question":"q","collection":"go"}`, nats.Header{"X-API-Key": {"two-key"}})); got != kgagent.EFORBIDDEN {
		t.Errorf("collection outside the key's: %q", got)
	}
	if a.calls.Load() != 0 {
		t.Fatalf("refused requests reached the agent: %d", a.calls.Load())
	}
	for i := 0; i < 2; i++ {
		if got := errType(requestWith(t, nc, "kgagent.request.agent", `{"question":"q"}`, nats.Header{"Authorization": {"Bearer two-key"}})); got != "" {
			t.Fatalf("query %d: %q", i, got)
		}
	}
	if got := errType(requestWith(t, nc, "kgagent.request.agent", `{"question":"q"}`, nats.Header{"X-API-Key": {"two-key"}})); got != kgagent.ERATELIMIT {
		t.Errorf("third query of a two-a-day key: %q", got)
	}
	// and HTTP shares the count
	srv := httptest.NewServer(gw.Handler())
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/agent", strings.NewReader(`{"question":"q"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", "two-key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 {
		t.Errorf("HTTP after the NATS queries: %d", resp.StatusCode)
	}
}

// TestNATSSingleReply is finding 3 of issue 21: a request on
// kgagent.ask.<service> is answered once, with the last frame, so a plain
// request/reply call (nc.Request) gets the answer, not the first thought;
// errors come back the same way.
func TestNATSSingleReply(t *testing.T) {
	ns := startNATS(t)
	startWorker(t, ns, &asker{})
	nc := connect(t, ns)
	m, err := nc.Request("kgagent.ask.agent", []byte(`{"id":"a1","question":"What is NATS?"}`), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var f gateway.Frame
	if err := json.Unmarshal(m.Data, &f); err != nil {
		t.Fatal(err)
	}
	if !f.Complete || f.ID != "a1" || textOf(f.Response.Answer) != "A: What is NATS?" || f.Response.Sources == nil {
		t.Errorf("single reply = %+v", f)
	}
	// Exactly one message reaches the inbox.
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishRequest("kgagent.ask.search", inbox, []byte(`{"query":"q"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.NextMsg(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if extra, err := sub.NextMsg(300 * time.Millisecond); err == nil {
		t.Errorf("a second reply: %s", extra.Data)
	}
	for _, tt := range []struct{ subject, data, typ string }{
		{"kgagent.ask.agent", `{}`, "INVALID_ARGUMENT"},
		{"kgagent.ask.llm", `{"question":"q"}`, "NOT_FOUND"},
	} {
		m, err := nc.Request(tt.subject, []byte(tt.data), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var f gateway.Frame
		_ = json.Unmarshal(m.Data, &f)
		if f.Error == nil || f.Error.Type != tt.typ || !f.Complete {
			t.Errorf("%s %s: %+v, want %s", tt.subject, tt.data, f, tt.typ)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// textOf is the text p points to, or "" for nil (Response.Answer).
func textOf(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
