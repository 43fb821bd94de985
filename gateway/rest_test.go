package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
)

// do sends a request with an optional bearer token and decodes the JSON
// answer into a map (nil when the body is empty).
func do(t testing.TB, method, url, token, body string) (int, map[string]any, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s %s: body is not a JSON object: %q", method, url, data)
		}
	}
	return resp.StatusCode, m, resp.Header
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func errReason(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	r, _ := d["reason"].(string)
	return r
}

func TestRESTQuestions(t *testing.T) {
	f := newFixture(t, Config{})
	tests := []struct {
		name, method, path, body string
		status                   int
		check                    func(t *testing.T, m map[string]any)
	}{
		{"agent", "POST", "/api/v1/agent", `{"question":"What does NASA stand for?"}`, 200, func(t *testing.T, m map[string]any) {
			if m["answer"] != "Answer to: What does NASA stand for?" {
				t.Errorf("answer = %v", m["answer"])
			}
			src, _ := m["sources"].([]any)
			if len(src) != 1 || src[0].(map[string]any)["url"] != "https://docs.example.org/guide.html#install-section" {
				t.Errorf("sources = %v", m["sources"])
			}
		}},
		{"flow agent", "POST", "/api/v1/flow/default/service/agent", `{"question":"q","agent":"docs","collection":"python","plan":"x"}`, 200, func(t *testing.T, m map[string]any) {
			if m["agent"] != "docs" || m["answer"] != "Answer to: q" {
				t.Errorf("got %v", m)
			}
		}},
		{"flow search", "POST", "/api/v1/flow/default/service/search", `{"question":"gil","collection":"python"}`, 200, func(t *testing.T, m map[string]any) {
			hits, _ := m["hits"].([]any)
			if len(hits) != 1 || hits[0].(map[string]any)["text"] != "hit for gil" {
				t.Errorf("hits = %v", m["hits"])
			}
		}},
		{"flow graph-rag", "POST", "/api/v1/flow/default/service/graph-rag", `{"question":"gil?"}`, 200, func(t *testing.T, m map[string]any) {
			if m["answer"] != "graph answer to gil?" {
				t.Errorf("got %v", m)
			}
		}},
		{"flow triples", "POST", "/api/v1/flow/default/service/triples", `{"collection":"python","s":"python"}`, 200, func(t *testing.T, m map[string]any) {
			if ts, _ := m["triples"].([]any); len(ts) != 1 {
				t.Errorf("got %v", m)
			}
		}},
		{"search", "POST", "/api/v1/search", `{"query":"gil","k":3,"mode":"keyword"}`, 200, nil},
		{"graph-rag", "POST", "/api/v1/graph-rag", `{"question":"gil?","collection":"python"}`, 200, nil},
		{"triples", "GET", "/api/v1/triples?collection=python&s=python&limit=5", "", 200, func(t *testing.T, m map[string]any) {
			ts, _ := m["triples"].([]any)
			if len(ts) != 1 || ts[0].(map[string]any)["collection"] != "python" {
				t.Errorf("got %v", m)
			}
		}},
		{"unknown agent", "POST", "/api/v1/agent", `{"question":"q","agent":"nope"}`, 404, nil},
		{"unknown flow", "POST", "/api/v1/flow/other/service/agent", `{"question":"q"}`, 404, nil},
		{"unknown service", "POST", "/api/v1/flow/default/service/llm", `{"question":"q"}`, 404, nil},
		{"internal error hides cause", "POST", "/api/v1/agent", `{"question":"boom"}`, 500, func(t *testing.T, m map[string]any) {
			if strings.Contains(jsonString(m), "secret") {
				t.Errorf("internal cause leaked: %v", m)
			}
		}},
		{"panic", "POST", "/api/v1/agent", `{"question":"panic now"}`, 500, nil},
		{"bad limit", "GET", "/api/v1/triples?limit=x", "", 400, nil},
		{"unknown route", "GET", "/api/v1/nothing", "", 404, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, m, h := do(t, tt.method, f.ts.URL+tt.path, "", tt.body)
			if status != tt.status {
				t.Fatalf("status = %d, want %d; body %v", status, tt.status, m)
			}
			if h.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id")
			}
			if status >= 400 && errCode(m) == "" {
				t.Errorf("error body without code: %v", m)
			}
			if tt.check != nil {
				tt.check(t, m)
			}
		})
	}
}

func TestRESTBadInput(t *testing.T) {
	f := newFixture(t, Config{MaxBodyBytes: 1024})
	tests := []struct {
		name, body string
		status     int
		code       string
		reason     string
	}{
		{"invalid json", `{"question":`, 400, "INVALID_ARGUMENT", ReasonInvalidJSON},
		{"not an object", `[1,2]`, 400, "INVALID_ARGUMENT", ReasonWrongType},
		{"wrong type", `{"question":42}`, 400, "INVALID_ARGUMENT", ReasonWrongType},
		{"invalid utf8", "{\"question\":\"\xff\xfe\"}", 400, "INVALID_ARGUMENT", ReasonInvalidUTF8},
		{"missing question", `{"collection":"python"}`, 400, "INVALID_ARGUMENT", ReasonMissingField},
		{"blank question", `{"question":"   "}`, 400, "INVALID_ARGUMENT", ReasonMissingField},
		{"empty body", ``, 400, "INVALID_ARGUMENT", ReasonInvalidJSON},
		{"trailing data", `{"question":"a"} {}`, 400, "INVALID_ARGUMENT", ReasonInvalidJSON},
		{"bad embed", `{"question":"a","embeds":{"1":{"content_type":"text/plain","uri":"file:///etc/passwd"}}}`, 400, "INVALID_ARGUMENT", ReasonUnknownValue},
		{"too large", `{"question":"` + strings.Repeat("a", 2000) + `"}`, 413, "TOO_LARGE", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, m, _ := do(t, "POST", f.ts.URL+"/api/v1/agent", "", tt.body)
			if status != tt.status || errCode(m) != tt.code || errReason(m) != tt.reason {
				t.Errorf("got %d %s %s, want %d %s %s (%v)", status, errCode(m), errReason(m), tt.status, tt.code, tt.reason, m)
			}
		})
	}
	// A body that says it is not JSON.
	req, _ := http.NewRequest("POST", f.ts.URL+"/api/v1/agent", strings.NewReader("question=x"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 415 {
		t.Errorf("form body: %d, want 415", resp.StatusCode)
	}
	// The server still answers after all that.
	if status, m, _ := do(t, "POST", f.ts.URL+"/api/v1/agent", "", `{"question":"ok?"}`); status != 200 || m["answer"] != "Answer to: ok?" {
		t.Fatalf("after bad input: %d %v", status, m)
	}
}

func TestRESTJobsCollectionsHealth(t *testing.T) {
	f := newFixture(t, Config{})
	status, m, h := do(t, "POST", f.ts.URL+"/api/v1/corpora", "", `{"collection":"python","urls":["https://docs.python.org/3/*"]}`)
	if status != 202 {
		t.Fatalf("corpora: %d %v", status, m)
	}
	job := m["job"].(map[string]any)
	id := job["id"].(string)
	if h.Get("Location") != "/api/v1/jobs/"+id {
		t.Errorf("Location = %q", h.Get("Location"))
	}
	if status, m, _ := do(t, "GET", f.ts.URL+"/api/v1/jobs/"+id, "", ""); status != 200 || m["state"] != "queued" {
		t.Errorf("job: %d %v", status, m)
	}
	if status, m, _ := do(t, "GET", f.ts.URL+"/api/v1/jobs/nope", "", ""); status != 404 || errCode(m) != "NOT_FOUND" {
		t.Errorf("unknown job: %d %v", status, m)
	}
	if status, m, _ := do(t, "GET", f.ts.URL+"/api/v1/jobs", "", ""); status != 200 || len(m["jobs"].([]any)) != 1 {
		t.Errorf("jobs: %d %v", status, m)
	}
	if status, m, _ := do(t, "POST", f.ts.URL+"/api/v1/corpora", "", `{"collection":"python"}`); status != 400 {
		t.Errorf("spec without urls: %d %v", status, m)
	}
	if status, m, _ := do(t, "GET", f.ts.URL+"/api/v1/collections", "", ""); status != 200 || len(m["collections"].([]any)) != 2 {
		t.Errorf("collections: %d %v", status, m)
	}
	if status, m, _ := do(t, "GET", f.ts.URL+"/api/v1/collections/go", "", ""); status != 200 || m["chunks"] != 5.0 {
		t.Errorf("collection: %d %v", status, m)
	}
	if status, _, _ := do(t, "DELETE", f.ts.URL+"/api/v1/collections/go", "", ""); status != 204 {
		t.Errorf("delete: %d", status)
	}
	if status, _, _ := do(t, "GET", f.ts.URL+"/api/v1/collections/go", "", ""); status != 404 {
		t.Errorf("deleted collection still there: %d", status)
	}
	if status, m, _ := do(t, "GET", f.ts.URL+"/healthz", "", ""); status != 200 || m["status"] != "ok" {
		t.Errorf("healthz: %d %v", status, m)
	}
	if status, m, _ := do(t, "GET", f.ts.URL+"/readyz", "", ""); status != 200 || m["checks"].(map[string]any)["store"] != "ok" {
		t.Errorf("readyz: %d %v", status, m)
	}
}

func TestReadyzFailing(t *testing.T) {
	srv, err := New(Config{}, Backends{Ready: []Check{{Name: "nats", Check: func(ctx context.Context) error { return errors.New("no route") }}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	status, m, _ := do(t, "GET", ts.URL+"/readyz", "", "")
	if status != 503 || m["checks"].(map[string]any)["nats"] != "internal error" {
		t.Errorf("readyz: %d %v", status, m)
	}
	// Unconfigured backends answer 503.
	if status, m, _ := do(t, "POST", ts.URL+"/api/v1/agent", "", `{"question":"q"}`); status != 503 || errCode(m) != "UNAVAILABLE" {
		t.Errorf("no asker: %d %v", status, m)
	}
}

func TestSessionsREST(t *testing.T) {
	f := newFixture(t, Config{})
	status, m, _ := do(t, "POST", f.ts.URL+"/api/v1/sessions", "", `{"agent":"docs","title":"t"}`)
	if status != 201 {
		t.Fatalf("create: %d %v", status, m)
	}
	id := m["id"].(string)
	status, m, _ = do(t, "POST", f.ts.URL+"/api/v1/sessions/"+id+"/messages", "", `{"text":"hello?"}`)
	if status != 201 || m["role"] != "agent" || m["text"] != "Answer to: hello?" {
		t.Fatalf("post message: %d %v", status, m)
	}
	f.asker.mu.Lock()
	last := f.asker.reqs[len(f.asker.reqs)-1]
	f.asker.mu.Unlock()
	if last.SessionID != id || last.Agent != "docs" {
		t.Errorf("asker got %+v", last)
	}
	status, m, _ = do(t, "GET", f.ts.URL+"/api/v1/sessions/"+id+"/messages", "", "")
	if ms, _ := m["messages"].([]any); status != 200 || len(ms) != 2 || ms[0].(map[string]any)["role"] != "user" {
		t.Fatalf("messages: %d %v", status, m)
	}
	if status, m, _ := do(t, "GET", f.ts.URL+"/api/v1/sessions", "", ""); status != 200 || len(m["sessions"].([]any)) != 1 {
		t.Errorf("list: %d %v", status, m)
	}
	if status, _, _ := do(t, "DELETE", f.ts.URL+"/api/v1/sessions/"+id, "", ""); status != 204 {
		t.Errorf("delete: %d", status)
	}
	if status, _, _ := do(t, "GET", f.ts.URL+"/api/v1/sessions/"+id, "", ""); status != 404 {
		t.Errorf("deleted session: %d", status)
	}
	if status, _, _ := do(t, "POST", f.ts.URL+"/api/v1/sessions/"+id+"/messages", "", `{"text":"x"}`); status != 404 {
		t.Errorf("message to deleted session: %d", status)
	}
}

func TestRequestIDPropagates(t *testing.T) {
	f := newFixture(t, Config{})
	req, _ := http.NewRequest("POST", f.ts.URL+"/api/v1/agent", strings.NewReader(`{"question":"q"}`))
	req.Header.Set("X-Request-Id", "abc-123")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	if resp.Header.Get("X-Request-Id") != "abc-123" || m["request_id"] != "abc-123" {
		t.Errorf("request id: header %q body %v", resp.Header.Get("X-Request-Id"), m["request_id"])
	}
	_ = time.Now
}

func TestWrongMethodNamesAllowed(t *testing.T) {
	f := newFixture(t, Config{})
	status, m, h := do(t, "GET", f.ts.URL+"/api/v1/agent", "", "")
	if status != 405 || errCode(m) != "METHOD_NOT_ALLOWED" || h.Get("Allow") != "POST" {
		t.Errorf("GET /api/v1/agent: %d %v Allow=%q", status, m, h.Get("Allow"))
	}
	// TRACE and PUT are 405 too (issue 11, finding 9: TRACE was 404).
	for _, method := range []string{"PUT", "TRACE"} {
		if status, _, h := do(t, method, f.ts.URL+"/api/v1/collections/x", "", ""); status != 405 || h.Get("Allow") != "GET, DELETE" {
			t.Errorf("%s collection: %d Allow=%q", method, status, h.Get("Allow"))
		}
	}
	if status, m, _ := do(t, "GET", f.ts.URL+"/api/v1/nothing", "", ""); status != 404 || errCode(m) != "NOT_FOUND" {
		t.Errorf("unknown path: %d %v", status, m)
	}
}

func TestBindAddr(t *testing.T) {
	open := Config{}
	authed := Config{APIKeys: []APIKey{{Name: "k", Hash: HashKey("k"), Scopes: []Scope{ScopeAsk}}}}
	tests := []struct {
		cfg        Config
		addr, want string
		note       bool
	}{
		{open, ":8080", "127.0.0.1:8080", true},
		{open, "0.0.0.0:9", "127.0.0.1:9", true},
		{open, "127.0.0.1:9", "127.0.0.1:9", true},
		{open, "[::1]:9", "[::1]:9", true},
		{authed, ":8080", ":8080", false},
	}
	for _, tt := range tests {
		got, note := tt.cfg.BindAddr(tt.addr)
		if got != tt.want || (note != "") != tt.note {
			t.Errorf("BindAddr(%q) = %q, %q; want %q", tt.addr, got, note, tt.want)
		}
	}
}

func TestSessionIDMustBeOwned(t *testing.T) {
	cfg := authConfig()
	f := newFixture(t, cfg)
	_, m, _ := do(t, "POST", f.ts.URL+"/api/v1/sessions", "ask-key", `{"agent":"docs"}`)
	id := m["id"].(string)
	if status, m, _ := do(t, "POST", f.ts.URL+"/api/v1/agent", "py-key", `{"question":"q","session_id":"`+id+`"}`); status != 404 {
		t.Errorf("other key used alice's session: %d %v", status, m)
	}
	if status, m, _ := do(t, "POST", f.ts.URL+"/api/v1/agent", "ask-key", `{"question":"q","session_id":"`+id+`"}`); status != 200 {
		t.Errorf("owner: %d %v", status, m)
	}
	c := dialSocket(t, f.ts.URL, "py-key")
	send(t, c, `{"id":"s","service":"agent","request":{"question":"q","session_id":"`+id+`"}}`)
	if fr := readFrame(t, c); fr.Error == nil || fr.Error.Type != "NOT_FOUND" {
		t.Errorf("socket with another's session: %+v", fr)
	}
}

// TestTriplesLimitOneBound (issue 22 item 4: exported limits, checked at
// admission): a triples limit over graphrag.MaxFindLimit is 400
// INVALID_ARGUMENT, as MCP's graph tool refuses it, instead of 200 with
// the graph service's silent cut at 1000 (REST admitted up to 10000).
func TestTriplesLimitOneBound(t *testing.T) {
	f := newFixture(t, Config{})
	for _, tt := range []struct {
		limit  int
		status int
	}{{graphrag.MaxFindLimit, http.StatusOK}, {graphrag.MaxFindLimit + 1, http.StatusBadRequest}, {10000, http.StatusBadRequest}} {
		status, m, _ := do(t, "GET", fmt.Sprintf("%s/api/v1/triples?s=x&limit=%d", f.ts.URL, tt.limit), "", "")
		if status != tt.status {
			t.Errorf("limit %d: %d %v, want %d", tt.limit, status, m, tt.status)
		}
		if tt.status != http.StatusOK && errCode(m) != kgagent.EINVALID {
			t.Errorf("limit %d: code %q", tt.limit, errCode(m))
		}
	}
}
