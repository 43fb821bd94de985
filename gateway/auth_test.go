package gateway

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/kgagent/kgagent"
)

func authConfig() Config {
	return Config{
		DailyLimit: 5,
		APIKeys: []APIKey{
			{Name: "asker", Hash: HashKey("ask-key"), Scopes: []Scope{ScopeAsk}, UserID: "alice"},
			{Name: "restricted", Hash: HashKey("py-key"), Scopes: []Scope{ScopeAsk}, Collections: []string{"python"}, DailyLimit: 3},
			{Name: "ingester", Hash: HashKey("ingest-key"), Scopes: []Scope{ScopeIngest}},
			{Name: "admin", Hash: HashKey("admin-key"), Scopes: []Scope{ScopeAdmin}},
			{Name: "alice2", Hash: HashKey("alice-2"), Scopes: []Scope{ScopeAsk}, UserID: "alice", DailyLimit: 100},
		},
		CORSOrigins: []string{"https://docs.example.org"},
	}
}

func TestAuthScopes(t *testing.T) {
	cfg := authConfig()
	cfg.DailyLimit = 1000
	if !cfg.AuthEnabled() || (Config{}).AuthEnabled() {
		t.Fatal("AuthEnabled wrong")
	}
	f := newFixture(t, cfg)
	tests := []struct {
		name, method, path, token, body string
		status                          int
	}{
		{"no key", "POST", "/api/v1/agent", "", `{"question":"q"}`, 401},
		{"bad key", "POST", "/api/v1/agent", "nope", `{"question":"q"}`, 401},
		{"ask", "POST", "/api/v1/agent", "ask-key", `{"question":"q"}`, 200},
		{"ingest key cannot ask", "POST", "/api/v1/agent", "ingest-key", `{"question":"q"}`, 403},
		{"admin can ask", "POST", "/api/v1/agent", "admin-key", `{"question":"q"}`, 200},
		{"ask key cannot ingest", "POST", "/api/v1/corpora", "ask-key", `{"collection":"python","urls":["https://x.example/*"]}`, 403},
		{"ingest", "POST", "/api/v1/corpora", "ingest-key", `{"collection":"python","urls":["https://x.example/*"]}`, 202},
		{"ask key cannot delete", "DELETE", "/api/v1/collections/go", "ask-key", "", 403},
		{"restricted: other collection", "POST", "/api/v1/agent", "py-key", `{"question":"q","collection":"go"}`, 403},
		{"restricted: own collection", "POST", "/api/v1/agent", "py-key", `{"question":"q","collection":"python"}`, 200},
		{"admin deletes", "DELETE", "/api/v1/collections/go", "admin-key", "", 204},
		{"health is public", "GET", "/healthz", "", "", 200},
		{"page is public", "GET", "/", "", "", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, f.ts.URL+tt.path, nil)
			if tt.body != "" {
				status, m, _ := do(t, tt.method, f.ts.URL+tt.path, tt.token, tt.body)
				if status != tt.status {
					t.Errorf("status = %d, want %d (%v)", status, tt.status, m)
				}
				return
			}
			if tt.token != "" {
				req.Header.Set("X-API-Key", tt.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.status)
			}
		})
	}
	// The restricted key sees only its collection and its questions default to it.
	if status, m, _ := do(t, "GET", f.ts.URL+"/api/v1/collections", "py-key", ""); status != 200 || len(m["collections"].([]any)) != 1 {
		t.Errorf("restricted collections: %d %v", status, m)
	}
	do(t, "POST", f.ts.URL+"/api/v1/agent", "py-key", `{"question":"which collection?"}`)
	f.asker.mu.Lock()
	last := f.asker.reqs[len(f.asker.reqs)-1]
	f.asker.mu.Unlock()
	if last.Collection != "python" || last.Caller.Token != "" {
		t.Errorf("asker got collection %q token %q (API keys must not be forwarded)", last.Collection, last.Caller.Token)
	}
	// Websocket: a key in the query string (browsers cannot set headers).
	u := "ws" + f.ts.URL[len("http"):] + "/api/v1/socket"
	if _, resp, err := websocket.DefaultDialer.Dial(u, nil); err == nil || resp.StatusCode != 401 {
		t.Errorf("socket without key: err %v", err)
	}
	c, _, err := websocket.DefaultDialer.Dial(u+"?api_key=ask-key", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send(t, c, `{"id":"w","service":"agent","request":{"question":"q"}}`)
	readUntilComplete(t, c, "w")
}

func TestDailyLimits(t *testing.T) {
	f := newFixture(t, authConfig())
	now := time.Date(2026, 3, 1, 23, 0, 0, 0, time.UTC)
	f.srv.now = func() time.Time { return now }
	ask := func(token string) (int, http.Header, map[string]any) {
		status, m, h := do(t, "POST", f.ts.URL+"/api/v1/agent", token, `{"question":"q","collection":"python"}`)
		return status, h, m
	}
	// Per-key limit (3).
	for i := 0; i < 3; i++ {
		if status, _, m := ask("py-key"); status != 200 {
			t.Fatalf("query %d: %d %v", i, status, m)
		}
	}
	status, h, m := ask("py-key")
	if status != 429 || errCode(m) != "RATE_LIMITED" {
		t.Fatalf("over limit: %d %v", status, m)
	}
	if ra, _ := strconv.Atoi(h.Get("Retry-After")); ra < 3500 || ra > 3601 {
		t.Errorf("Retry-After = %q, want about an hour", h.Get("Retry-After"))
	}
	// Per-user limit (5) across two keys of alice.
	for i := 0; i < 5; i++ {
		token := "ask-key"
		if i%2 == 1 {
			token = "alice-2"
		}
		if status, _, m := ask(token); status != 200 {
			t.Fatalf("alice query %d: %d %v", i, status, m)
		}
	}
	if status, _, _ := ask("alice-2"); status != 429 {
		t.Errorf("alice over user limit via second key: %d", status)
	}
	// The socket counts too, and errors only that id.
	c := dialSocket(t, f.ts.URL, "ask-key")
	send(t, c, `{"id":"l","service":"agent","request":{"question":"q"}}`)
	if fr := readFrame(t, c); fr.Error == nil || fr.Error.Type != "RATE_LIMITED" {
		t.Errorf("socket over limit: %+v", fr)
	}
	// A new UTC day resets.
	now = now.Add(2 * time.Hour)
	if status, _, _ := ask("py-key"); status != 200 {
		t.Errorf("next day: %d", status)
	}
}

func TestCORS(t *testing.T) {
	f := newFixture(t, authConfig())
	req, _ := http.NewRequest("OPTIONS", f.ts.URL+"/api/v1/agent", nil)
	req.Header.Set("Origin", "https://docs.example.org")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "https://docs.example.org" || resp.Header.Get("Access-Control-Allow-Headers") == "" {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	req.Header.Set("Origin", "https://evil.example")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("evil origin allowed")
	}
	// A websocket from a foreign origin is refused.
	u := "ws" + f.ts.URL[len("http"):] + "/api/v1/socket?api_key=ask-key"
	if _, resp, err := websocket.DefaultDialer.Dial(u, http.Header{"Origin": {"https://evil.example"}}); err == nil || resp.StatusCode != 403 {
		t.Errorf("foreign-origin socket: %v", err)
	}
	c, _, err := websocket.DefaultDialer.Dial(u, http.Header{"Origin": {"https://docs.example.org"}})
	if err != nil {
		t.Fatalf("allowed-origin socket: %v", err)
	}
	c.Close()
}

func TestNewRejectsBadKeys(t *testing.T) {
	for _, k := range []APIKey{{Name: "short", Hash: "abc"}, {Name: "nothex", Hash: HashKey("x")[:63] + "z"}, {Name: "scope", Hash: HashKey("x"), Scopes: []Scope{"root"}}} {
		if _, err := New(Config{APIKeys: []APIKey{k}}, Backends{}); err == nil {
			t.Errorf("key %+v accepted", k)
		}
	}
	if _, err := New(Config{JWT: JWTConfig{JWKSFile: "/nonexistent/jwks.json"}}, Backends{}); err == nil {
		t.Error("missing JWKS file accepted")
	}
}

// callCount is kgagent_calls_total{service, code} of srv.
func callCount(t *testing.T, srv *Server, service, code string) float64 {
	t.Helper()
	mfs, err := srv.Metrics().Registry().Gather()
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

// TestScopeCheckedOnceAtAdmission (issue 22, item 4): a route whose handler
// is one service call leaves the scope to the call's admission, so it is
// checked once. A key without the ask scope gets 403 FORBIDDEN, and the
// refusal is the admission's: counted in kgagent_calls_total, and on the
// OpenAI route in OpenAI's error shape. Before, the route refused first
// (counted nowhere, in the REST shape) and the admission checked again.
func TestScopeCheckedOnceAtAdmission(t *testing.T) {
	f := newFixture(t, authConfig())
	for _, tt := range []struct{ method, path, body, service string }{
		{"POST", "/api/v1/agent", `{"question":"q"}`, ServiceAgent},
		{"POST", "/api/v1/flow/default/service/search", `{"query":"q"}`, ServiceSearch},
		{"POST", "/api/v1/search", `{"query":"q"}`, ServiceSearch},
		{"POST", "/api/v1/graph-rag", `{"question":"q"}`, ServiceGraphRAG},
		{"GET", "/api/v1/triples?s=x", "", ServiceTriples},
		{"POST", "/v1/chat/completions", `{"model":"kgagent","messages":[{"role":"user","content":"q"}]}`, ServiceAgent},
		// Refused before the body is read: an unknown model (404) or a
		// malformed body (400) would tell a key without the scope more.
		{"POST", "/v1/chat/completions", `{"model":"no-such-agent","messages":[{"role":"user","content":"q"}]}`, ServiceAgent},
		{"POST", "/v1/chat/completions", `{"model":`, ServiceAgent},
		{"POST", "/api/v1/search", `{"query":`, ServiceSearch},
		{"GET", "/api/v1/triples?limit=999999", "", ServiceTriples},
	} {
		before := callCount(t, f.srv, tt.service, kgagent.EFORBIDDEN)
		status, m, _ := do(t, tt.method, f.ts.URL+tt.path, "ingest-key", tt.body)
		if status != http.StatusForbidden || errCode(m) != kgagent.EFORBIDDEN {
			t.Errorf("%s %s with an ingest-only key: %d %v", tt.method, tt.path, status, m)
		}
		if n := callCount(t, f.srv, tt.service, kgagent.EFORBIDDEN) - before; n != 1 {
			t.Errorf("%s %s: kgagent_calls_total{service=%q,code=FORBIDDEN} grew by %v, want 1 (refused at admission)", tt.method, tt.path, tt.service, n)
		}
		if strings.HasPrefix(tt.path, "/v1/") {
			if e, _ := m["error"].(map[string]any); e["type"] != "permission_error" {
				t.Errorf("%s: not OpenAI's error shape: %v", tt.path, m)
			}
		}
	}
	// The key that holds the scope is admitted.
	if status, m, _ := do(t, "POST", f.ts.URL+"/api/v1/search", "ask-key", `{"query":"q"}`); status != http.StatusOK {
		t.Errorf("ask key: %d %v", status, m)
	}
}

// TestOneErrorWriterEveryRoute (issue 22, item 4: one HTTP error writer):
// a daily-limit refusal answers 429 with Retry-After on REST, the OpenAI
// API and the agent protocol alike, each in its protocol's body. Before,
// the agent protocol's writer set no Retry-After (and logged by other
// rules than REST's and OpenAI's).
func TestOneErrorWriterEveryRoute(t *testing.T) {
	cfg := Config{}
	for _, k := range []string{"rest", "openai", "fixie"} {
		cfg.APIKeys = append(cfg.APIKeys, APIKey{Name: k, Hash: HashKey(k + "-key"), Scopes: []Scope{ScopeAsk}, DailyLimit: 1})
	}
	f := newFixture(t, cfg)
	for _, tt := range []struct{ key, path, body string }{
		{"rest", "/api/v1/agent", `{"question":"q"}`},
		{"openai", "/v1/chat/completions", `{"model":"kgagent","messages":[{"role":"user","content":"q"}]}`},
		{"fixie", "/agents/docs/echo", `{"message":{"text":"q"}}`},
	} {
		if status, m, _ := do(t, "POST", f.ts.URL+tt.path, tt.key+"-key", tt.body); status != http.StatusOK {
			t.Fatalf("%s: first call %d %v", tt.path, status, m)
		}
		status, m, h := do(t, "POST", f.ts.URL+tt.path, tt.key+"-key", tt.body)
		if status != http.StatusTooManyRequests || errCode(m) != kgagent.ERATELIMIT {
			t.Errorf("%s: over the limit %d %v", tt.path, status, m)
		}
		if ra, err := strconv.Atoi(h.Get("Retry-After")); err != nil || ra < 1 || ra > 86401 {
			t.Errorf("%s: Retry-After %q", tt.path, h.Get("Retry-After"))
		}
	}
}
