package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kgagent/kgagent"
)

// rawStdio runs s over a pipe and returns a function that sends one
// JSON-RPC message and, for a request (id > 0), returns the raw response.
func rawStdio(t *testing.T, s *Server) func(id int, method string, params any) json.RawMessage {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.RunIO(ctx, inR, outW); close(done) }()
	t.Cleanup(func() { cancel(); inW.Close(); outW.Close(); <-done })
	rd := bufio.NewReader(outR)
	return func(id int, method string, params any) json.RawMessage {
		t.Helper()
		msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
		if id > 0 {
			msg["id"] = id
		}
		b, _ := json.Marshal(msg)
		if _, err := inW.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
		if id == 0 {
			return nil
		}
		for {
			line, err := rd.ReadBytes('\n')
			if err != nil {
				t.Fatalf("%s: %v", method, err)
			}
			var m struct {
				ID     int             `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(line, &m) == nil && m.ID == id {
				if m.Error != nil {
					t.Fatalf("%s: %s", method, m.Error)
				}
				return m.Result
			}
		}
	}
}

// resources/list as it goes on the wire (issue 21, item 14): the SDK's
// result fields are filled as the protocol says — cacheScope is "public"
// or "private", never "" (which fastmcp's validation refuses) — on both
// protocol generations over stdio.
func TestResourcesListWire(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			call := rawStdio(t, New(newFakeBackend(map[string]int{"a": 2}), Options{DefaultCollection: "a"}))
			info := map[string]any{"name": "raw", "version": "1"}
			var res json.RawMessage
			if version < sessionlessVersion {
				call(1, "initialize", map[string]any{"protocolVersion": version, "capabilities": map[string]any{}, "clientInfo": info})
				call(0, "notifications/initialized", map[string]any{})
				res = call(2, "resources/list", map[string]any{})
			} else {
				res = call(2, "resources/list", map[string]any{"_meta": map[string]any{
					"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientInfo": info,
					"io.modelcontextprotocol/clientCapabilities": map[string]any{}}})
			}
			var got struct {
				CacheScope *string           `json:"cacheScope"`
				Resources  []json.RawMessage `json:"resources"`
			}
			if err := json.Unmarshal(res, &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Resources) != 3 || (got.CacheScope != nil && *got.CacheScope != "public" && *got.CacheScope != "private") {
				t.Fatalf("resources/list result: %s", res)
			}
		})
	}
}

// bearerAuth authenticates "Bearer k1" and "Bearer k2" as owners k1 and k2.
func bearerAuth(ctx context.Context, h http.Header) (context.Context, error) {
	k := strings.TrimPrefix(h.Get("Authorization"), "Bearer ")
	if k != "k1" && k != "k2" {
		return ctx, kgagent.Errorf(kgagent.EUNAUTH, "bad key")
	}
	return context.WithValue(ctx, ownerKey{}, k), nil
}

type ownerKey struct{}

type bearerRT struct{ key string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// Streamable HTTP speaks 2026-07-28 like stdio (issue 21, item 14): the Go
// SDK's client settles on it (server/discover, no session), calls a tool
// and lists resources with a private cacheScope; a client of
// 2025-11-25 still gets a session.
func TestStreamableHTTPProtocols(t *testing.T) {
	s := New(newFakeBackend(map[string]int{"a": 2}), Options{DefaultCollection: "a", Authenticate: bearerAuth, RequireBearer: true,
		Owner: func(ctx context.Context) string { o, _ := ctx.Value(ownerKey{}).(string); return o }})
	ts := httptest.NewServer(s.HTTPHandler())
	defer ts.Close()
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cl := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil)
			cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: &http.Client{Transport: bearerRT{"k1"}}},
				&sdk.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("protocol %s, want %s", got, version)
			}
			if (cs.ID() == "") != (version >= sessionlessVersion) {
				t.Errorf("session id %q on %s", cs.ID(), version)
			}
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "collections", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Fatalf("collections: %v %+v", err, res)
			}
			lr, err := cs.ListResources(ctx, nil)
			if err != nil || len(lr.Resources) != 3 || lr.CacheScope != "private" {
				t.Fatalf("resources/list: %v %+v", err, lr)
			}
		})
	}
	// Without a key, either way: refused.
	req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("2026-07-28 without a key: %d", resp.StatusCode)
	}
}

// The tools' schemas say what the tools do (issue 21, item 14): urls is a
// list and null is refused; k and limit have a minimum of 1 and a default
// that an absent argument takes (0 is refused, not read as the default);
// errors are sentences naming the argument.
func TestToolSchemasMatchBehaviour(t *testing.T) {
	b := newFakeBackend(map[string]int{"a": 1})
	cs := connect(t, New(b, Options{DefaultCollection: "a"}))
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]map[string]any{}
	for _, tool := range tools.Tools {
		raw, _ := json.Marshal(tool.InputSchema)
		var sc struct {
			Properties map[string]any `json:"properties"`
		}
		_ = json.Unmarshal(raw, &sc)
		props[tool.Name] = sc.Properties
	}
	prop := func(tool, name string) map[string]any { return props[tool][name].(map[string]any) }
	for _, tool := range tools.Tools {
		for _, schema := range []any{tool.InputSchema, tool.OutputSchema} {
			if raw, _ := json.Marshal(schema); strings.Contains(string(raw), `"type":[`) {
				t.Errorf("%s: a property of several types: %s", tool.Name, raw)
			}
		}
	}
	if typ := prop("ingest", "urls")["type"]; typ != "array" {
		t.Errorf("ingest urls type %v", typ)
	}
	if k := prop("search", "k"); k["minimum"] != 1.0 || k["default"] != 10.0 || k["maximum"] != 100.0 {
		t.Errorf("search k schema %v", k)
	}
	if l := prop("graph", "limit"); l["minimum"] != 1.0 || l["default"] != 100.0 || l["maximum"] != 1000.0 {
		t.Errorf("graph limit schema %v", l)
	}
	text := func(res *sdk.CallToolResult) string { return res.Content[0].(*sdk.TextContent).Text }
	call := func(tool string, args map[string]any) *sdk.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s %v: %v", tool, args, err)
		}
		return res
	}
	if res := call("search", map[string]any{"query": "x"}); res.IsError || b.lastK != 10 {
		t.Errorf("search without k: %s, backend k %d", text(res), b.lastK)
	}
	if res := call("graph", map[string]any{"s": "Lumen"}); res.IsError || b.lastLim != 100 {
		t.Errorf("graph without limit: %s, backend limit %d", text(res), b.lastLim)
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"search", map[string]any{"query": "x", "k": 0}, "INVALID_ARGUMENT: k must be between 1 and 100, not 0"},
		{"search", map[string]any{"query": "x", "k": 500}, "INVALID_ARGUMENT: k must be between 1 and 100, not 500"},
		{"search", map[string]any{"query": "x", "k": "3"}, `INVALID_ARGUMENT: k must be an integer, not the string "3"`},
		{"search", map[string]any{"query": "x", "k": 1.5}, "INVALID_ARGUMENT: k must be an integer, not the number 1.5"},
		{"search", map[string]any{"query": "x", "mode": "fuzzy"}, `INVALID_ARGUMENT: mode must be one of hybrid, keyword, dense, not "fuzzy"`},
		{"search", map[string]any{"query": ""}, "INVALID_ARGUMENT: query must not be empty"},
		{"search", map[string]any{"k": 3}, "INVALID_ARGUMENT: query is required"},
		{"search", map[string]any{"query": "x", "top": 3}, `INVALID_ARGUMENT: unknown argument "top" (this tool takes: query, collection, k, mode)`},
		{"graph", map[string]any{"s": "Lumen", "limit": 0}, "INVALID_ARGUMENT: limit must be between 1 and 1000, not 0"},
		{"ingest", map[string]any{"urls": nil}, "INVALID_ARGUMENT: urls must be an array, not null"},
		{"ingest", map[string]any{"urls": []any{}}, "INVALID_ARGUMENT: urls needs at least 1 item(s)"},
		{"ingest", map[string]any{"urls": []any{"https://x.example/"}, "exclude": nil}, "INVALID_ARGUMENT: exclude must be an array, not null"},
		{"ingest", map[string]any{"urls": []any{1}}, "INVALID_ARGUMENT: urls[0] must be a string, not the number 1"},
		{"ingest", map[string]any{"urls": []any{"https://x.example/"}, "max_pages": 0}, "INVALID_ARGUMENT: max_pages must be at least 1, not 0"},
		{"ask", map[string]any{"question": strings.Repeat("x", 40000)}, "TOO_LARGE: question is 40000 characters long, over the limit of 10240"},
	} {
		res := call(tc.tool, tc.args)
		if !res.IsError || text(res) != tc.want {
			t.Errorf("%s %v: %q, want %q", tc.tool, tc.args, text(res), tc.want)
		}
	}
}
