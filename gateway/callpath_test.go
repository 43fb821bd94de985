package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/kgagent/kgagent/gateway"
	"github.com/kgagent/kgagent/gateway/mcp"
	"github.com/kgagent/kgagent/gateway/natsapi"
)

// transports is one gateway reached through every transport that runs
// service calls: REST, the websocket, NATS, the OpenAI API (plain and
// streamed), sessions (REST and GraphQL), MCP and the agent protocol.
type transports struct {
	srv  *gateway.Server
	base string
	nc   *nats.Conn
	mcp  *sdk.ClientSession
}

func startTransports(t *testing.T) *transports {
	t.Helper()
	srv := gateway.NewFakeServer(t)
	calls := srv.Calls()
	m := mcp.New(calls, mcp.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Authenticate: func(ctx context.Context, h http.Header) (context.Context, error) {
			return calls.Authenticate(ctx, h, gateway.ScopeAsk)
		}})
	srv.Mount("/mcp", gateway.ScopeAsk, m.HTTPHandler())
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(5 * time.Second) {
		t.Fatal("nats server not ready")
	}
	t.Cleanup(ns.Shutdown)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	worker, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(worker.Close)
	na := natsapi.New(worker, srv, natsapi.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := na.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { na.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return &transports{srv: srv, base: ts.URL, nc: nc, mcp: cs}
}

// post sends body to path and returns the status and the body.
func (tr *transports) post(t *testing.T, path, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(tr.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// code returns the code of an error response the way each transport
// carries it, or "OK".
func jsonCode(t *testing.T, body string, path ...string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("not JSON: %q", body)
	}
	for _, k := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			if len(x) == 0 {
				return "OK"
			}
			v = x[0]
		}
	}
	if s, ok := v.(string); ok {
		return s
	}
	return "OK"
}

// ask asks question through transport and returns the stable code the
// client saw (INTERNAL for a recovered panic; the agent protocol's
// ERR_AGENT_UNHANDLED_EXCEPTION), or "OK".
func (tr *transports) ask(t *testing.T, transport, question string) string {
	t.Helper()
	q, _ := json.Marshal(question)
	switch transport {
	case "rest":
		_, body := tr.post(t, "/api/v1/agent", `{"question":`+string(q)+`}`)
		return jsonCode(t, body, "error", "code")
	case "websocket":
		c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(tr.base, "http")+"/api/v1/socket", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.WriteMessage(websocket.TextMessage, []byte(`{"id":"w1","service":"agent","request":{"question":`+string(q)+`}}`)); err != nil {
			t.Fatal(err)
		}
		for {
			var f gateway.Frame
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if err := c.ReadJSON(&f); err != nil {
				t.Fatal(err)
			}
			if f.Complete {
				if f.Error != nil {
					return f.Error.Type
				}
				return "OK"
			}
		}
	case "nats":
		msg, err := tr.nc.Request(natsapi.DefaultAskPrefix+".agent", []byte(`{"question":`+string(q)+`}`), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return jsonCode(t, string(msg.Data), "error", "type")
	case "openai":
		_, body := tr.post(t, "/v1/chat/completions", `{"model":"kgagent","messages":[{"role":"user","content":`+string(q)+`}]}`)
		return jsonCode(t, body, "error", "code")
	case "openai stream":
		_, body := tr.post(t, "/v1/chat/completions", `{"model":"kgagent","stream":true,"messages":[{"role":"user","content":`+string(q)+`}]}`)
		if !strings.HasPrefix(body, "data: ") {
			return jsonCode(t, body, "error", "code") // refused before the stream started
		}
		code, done := "OK", false
		sc := bufio.NewScanner(strings.NewReader(body))
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			switch {
			case !ok:
			case data == "[DONE]":
				done = true
			default:
				if c := jsonCode(t, data, "error", "code"); c != "OK" {
					code = c
				}
			}
		}
		if !done {
			t.Errorf("the stream did not end with [DONE]: %q", body)
		}
		return code
	case "session":
		_, body := tr.post(t, "/api/v1/sessions", `{}`)
		id := jsonCode(t, body, "id")
		_, body = tr.post(t, "/api/v1/sessions/"+id+"/messages", `{"text":`+string(q)+`}`)
		return jsonCode(t, body, "error", "code")
	case "graphql":
		_, body := tr.post(t, "/api/v1/sessions", `{}`)
		id := jsonCode(t, body, "id")
		doc, _ := json.Marshal(`mutation { postMessage(sessionId: "` + id + `", text: ` + string(q) + `) { text } }`)
		_, body = tr.post(t, "/graphql", `{"query":`+string(doc)+`}`)
		return jsonCode(t, body, "errors", "0", "extensions", "code")
	case "mcp":
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := tr.mcp.CallTool(ctx, &sdk.CallToolParams{Name: "ask", Arguments: map[string]any{"question": question}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError {
			return "OK"
		}
		text := res.Content[0].(*sdk.TextContent).Text
		code, _, _ := strings.Cut(text, ":")
		return code
	case "agent protocol":
		fn := "echo"
		if strings.HasPrefix(question, "panic") {
			fn = "panic"
		}
		_, body := tr.post(t, "/agents/docs/"+fn, `{"message":{"text":`+string(q)+`}}`)
		return jsonCode(t, body, "error", "code")
	}
	t.Fatalf("no transport %q", transport)
	return ""
}

// calls returns kgagent_calls_total{service, code}.
func (tr *transports) calls(t *testing.T, service, code string) float64 {
	t.Helper()
	mfs, err := tr.srv.Metrics().Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "kgagent_calls_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["service"] == service && labels["code"] == code {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestEveryTransportRunsTheCallPath: on every transport, a question is
// counted in kgagent_calls_total once, and a panic in the service behind
// it is recovered (the server goes on, the client gets INTERNAL, or the
// agent protocol's unhandled-exception code) and counted as INTERNAL.
// Before the one call path, the OpenAI, session, GraphQL and agent
// protocol routes counted nothing, and MCP did not count panics.
func TestEveryTransportRunsTheCallPath(t *testing.T) {
	tr := startTransports(t)
	for _, tt := range []struct {
		transport string
		service   string // the metrics label
		panicCode string // what the client sees for a panic
	}{
		{"rest", "agent", "INTERNAL"},
		{"websocket", "agent", "INTERNAL"},
		{"nats", "agent", "INTERNAL"},
		{"openai", "agent", "INTERNAL"},
		{"openai stream", "agent", "INTERNAL"},
		{"session", "agent", "INTERNAL"},
		{"graphql", "agent", "INTERNAL"},
		{"mcp", "agent", "INTERNAL"},
		{"agent protocol", "func", "ERR_AGENT_UNHANDLED_EXCEPTION"},
	} {
		t.Run(tt.transport, func(t *testing.T) {
			for _, c := range []struct{ question, code, counted string }{
				{"what is kgagent?", "OK", "OK"},
				{"panic please", tt.panicCode, "INTERNAL"},
			} {
				before := tr.calls(t, tt.service, c.counted)
				if got := tr.ask(t, tt.transport, c.question); got != c.code {
					t.Errorf("%q: the client got %q, want %q", c.question, got, c.code)
				}
				// The websocket and NATS count after the last frame is sent.
				deadline := time.Now().Add(5 * time.Second)
				for tr.calls(t, tt.service, c.counted)-before < 1 && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				if n := tr.calls(t, tt.service, c.counted) - before; n != 1 {
					t.Errorf("%q: kgagent_calls_total{service=%q,code=%q} grew by %v, want 1", c.question, tt.service, c.counted, n)
				}
			}
		})
	}
	// A question over the limit is refused the same way everywhere.
	long := strings.Repeat("how do I restore a backup? ", 500) // 13.5 KB
	for _, transport := range []string{"rest", "websocket", "nats", "openai", "openai stream", "session", "graphql", "mcp", "agent protocol"} {
		if got := tr.ask(t, transport, long); got != "TOO_LARGE" {
			t.Errorf("%s: a %d-byte question got %q, want TOO_LARGE", transport, len(long), got)
		}
	}
	// The server survived every panic.
	if got := tr.ask(t, "rest", "still there?"); got != "OK" {
		t.Errorf("after the panics: %q", got)
	}
}
