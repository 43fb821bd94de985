package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/gorilla/websocket"
	"github.com/kgagent/kgagent"
)

// jwtFixture is a gateway with API keys (authConfig plus key askA, owned
// as itself, and ingest keys restricted to collections) and JWTs signed by
// priv, with daily limit limit.
func jwtFixture(t *testing.T, limit int) (*fixture, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, jwks(t, "k1", pub), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := authConfig()
	cfg.DailyLimit = limit
	cfg.JWT = JWTConfig{JWKSFile: file, Audience: []string{"kg"}}
	cfg.APIKeys = append(cfg.APIKeys,
		APIKey{Name: "askA", Hash: HashKey("askA-key"), Scopes: []Scope{ScopeAsk}, DailyLimit: 1000},
		APIKey{Name: "tenantc", Hash: HashKey("tenantc-key"), Scopes: []Scope{ScopeIngest, ScopeAsk}, Collections: []string{"tenantc"}, DailyLimit: 1000},
		APIKey{Name: "other", Hash: HashKey("other-key"), Scopes: []Scope{ScopeAsk}, Collections: []string{"other"}, DailyLimit: 1000},
		APIKey{Name: "docsonly", Hash: HashKey("docs-key"), Scopes: []Scope{ScopeAsk}, Collections: []string{"docs"}, DailyLimit: 1000},
	)
	return newFixture(t, cfg), priv
}

func claims(c jwt.MapClaims) jwt.MapClaims {
	c["aud"], c["exp"] = "kg", time.Now().Add(time.Hour).Unix()
	return c
}

// TestAgentProtocolHonoursKeyCollections is issue 21 item 4: a key limited
// to collection other calling a func of an agent that reads collection
// docs gets 403 (nothing run, nothing charged); a key limited to docs and
// an unrestricted key are served.
func TestAgentProtocolHonoursKeyCollections(t *testing.T) {
	cfg := authConfig() // API keys only: with a JWKS the protocol takes JWTs, which carry no collections
	cfg.DailyLimit = 1000
	cfg.APIKeys = append(cfg.APIKeys,
		APIKey{Name: "other", Hash: HashKey("other-key"), Scopes: []Scope{ScopeAsk}, Collections: []string{"other"}},
		APIKey{Name: "docsonly", Hash: HashKey("docs-key"), Scopes: []Scope{ScopeAsk}, Collections: []string{"docs"}})
	f := newFixture(t, cfg)
	status, m, _ := do(t, "POST", f.ts.URL+"/agents/docs/echo", "other-key", `{"message":{"text":"hi"}}`)
	e, _ := m["error"].(map[string]any)
	if status != http.StatusForbidden || e["code"] != kgagent.EFORBIDDEN || toText(m["message"]) == "hi" {
		t.Fatalf("key limited to other on agent docs: %d %v", status, m)
	}
	for _, key := range []string{"docs-key", "ask-key"} {
		if status, m, _ := do(t, "POST", f.ts.URL+"/agents/docs/echo", key, `{"message":{"text":"hi"}}`); status != 200 {
			t.Errorf("%s on agent docs: %d %v", key, status, m)
		}
	}
}

func toText(v any) string {
	m, _ := v.(map[string]any)
	s, _ := m["text"].(string)
	return s
}

// TestOwnersCannotCollide is issue 21 item 5: a JWT whose sub is
// "key:askA" or "agent:<aid>" is not the API key askA nor the anonymous
// agent aid: it lists none of their sessions, reads none, resumes none of
// their websocket streams, and its MCP owner (Calls.Owner, which binds MCP
// sessions) differs.
func TestOwnersCannotCollide(t *testing.T) {
	f, priv := jwtFixture(t, 1000)
	forgedKey := sign(t, priv, "k1", claims(jwt.MapClaims{"sub": "key:askA"}))
	agentTok := sign(t, priv, "k1", claims(jwt.MapClaims{"aid": "a1"}))
	forgedAgent := sign(t, priv, "k1", claims(jwt.MapClaims{"sub": "agent:a1"}))
	for _, victim := range []struct{ name, cred, forged string }{{"key askA", "askA-key", forgedKey}, {"agent a1", agentTok, forgedAgent}} {
		status, sess, _ := do(t, "POST", f.ts.URL+"/api/v1/sessions", victim.cred, `{"title":"mine"}`)
		if status != 201 {
			t.Fatalf("%s creates a session: %d %v", victim.name, status, sess)
		}
		id := sess["id"].(string)
		if status, list, _ := do(t, "GET", f.ts.URL+"/api/v1/sessions", victim.forged, ""); status != 200 || len(list["sessions"].([]any)) != 0 {
			t.Errorf("a JWT posing as %s lists its sessions: %d %v", victim.name, status, list)
		}
		if status, m, _ := do(t, "GET", f.ts.URL+"/api/v1/sessions/"+id, victim.forged, ""); status != 404 {
			t.Errorf("a JWT posing as %s reads its session: %d %v", victim.name, status, m)
		}
		if status, m, _ := do(t, "POST", f.ts.URL+"/api/v1/agent", victim.forged, `{"question":"q","session_id":"`+id+`"}`); status != 404 {
			t.Errorf("a JWT posing as %s continues its session: %d %v", victim.name, status, m)
		}
		// The websocket stream of the victim, resumed without a token.
		a := dialSocket(t, f.ts.URL, victim.cred)
		send(t, a, `{"id":"s1","service":"agent","request":{"question":"victim's secret question"}}`)
		readUntilComplete(t, a, "s1")
		b := dialSocket(t, f.ts.URL, victim.forged)
		send(t, b, `{"id":"s1","resume":{"last_seq":0}}`)
		if fr := readFrame(t, b); fr.Error == nil || fr.Error.Type != kgagent.ENOTFOUND {
			t.Errorf("a JWT posing as %s resumed its stream: %+v", victim.name, fr)
		}
		// The MCP owner.
		c := f.srv.Calls()
		ctxOf := func(cred string) context.Context {
			ctx, err := c.Authenticate(context.Background(), http.Header{"Authorization": {"Bearer " + cred}}, ScopeAsk)
			if err != nil {
				t.Fatal(err)
			}
			return ctx
		}
		if o, v := c.Owner(ctxOf(victim.forged)), c.Owner(ctxOf(victim.cred)); o == v || o == "" || v == "" {
			t.Errorf("MCP owner of a JWT posing as %s: %q, the victim's %q", victim.name, o, v)
		}
	}
}

// TestAnonymousJWTWithoutAidIsBoundToItsToken is issue 21 item 6: two
// anonymous JWTs without aid do not share an owner: neither lists, reads
// or continues the other's sessions, and an unrelated API key cannot use
// the MCP session of either (their MCP owners differ and are not empty).
func TestAnonymousJWTWithoutAidIsBoundToItsToken(t *testing.T) {
	f, priv := jwtFixture(t, 1000)
	a := sign(t, priv, "k1", claims(jwt.MapClaims{"jti": "a"}))
	b := sign(t, priv, "k1", claims(jwt.MapClaims{"jti": "b"}))
	status, sess, _ := do(t, "POST", f.ts.URL+"/api/v1/sessions", a, `{"title":"a's"}`)
	if status != 201 {
		t.Fatalf("create: %d %v", status, sess)
	}
	id := sess["id"].(string)
	for _, cred := range []string{b, "askA-key"} {
		if status, list, _ := do(t, "GET", f.ts.URL+"/api/v1/sessions", cred, ""); status != 200 || len(list["sessions"].([]any)) != 0 {
			t.Errorf("another caller lists the anonymous session: %d %v", status, list)
		}
		if status, m, _ := do(t, "DELETE", f.ts.URL+"/api/v1/sessions/"+id, cred, ""); status != 404 {
			t.Errorf("another caller deletes the anonymous session: %d %v", status, m)
		}
	}
	if status, list, _ := do(t, "GET", f.ts.URL+"/api/v1/sessions", a, ""); status != 200 || len(list["sessions"].([]any)) != 1 {
		t.Errorf("the token's own sessions: %d %v", status, list)
	}
	c := f.srv.Calls()
	owner := func(cred string) string {
		ctx, err := c.Authenticate(context.Background(), http.Header{"Authorization": {"Bearer " + cred}}, ScopeAsk)
		if err != nil {
			t.Fatal(err)
		}
		return c.Owner(ctx)
	}
	if oa, ob, ok := owner(a), owner(b), owner("askA-key"); oa == "" || ob == "" || oa == ob || oa == ok {
		t.Errorf("MCP owners: token a %q, token b %q, key askA %q", oa, ob, ok)
	}
}

// TestJobsFilteredByKeyCollections is issue 21 item 7: a key limited to
// tenantc does not see the admin's job in secretcol (list) and gets 404 for
// it (GET and MCP's ingest_status), but sees its own.
func TestJobsFilteredByKeyCollections(t *testing.T) {
	f, _ := jwtFixture(t, 1000)
	status, m, _ := do(t, "POST", f.ts.URL+"/api/v1/corpora", "admin-key", `{"collection":"secretcol","urls":["https://secret.example/internal/*"]}`)
	if status != 202 {
		t.Fatalf("admin submits: %d %v", status, m)
	}
	secret := m["job"].(map[string]any)["id"].(string)
	status, m, _ = do(t, "POST", f.ts.URL+"/api/v1/corpora", "tenantc-key", `{"collection":"tenantc","urls":["https://tenantc.example/*"]}`)
	if status != 202 {
		t.Fatalf("tenantc submits: %d %v", status, m)
	}
	own := m["job"].(map[string]any)["id"].(string)
	status, list, _ := do(t, "GET", f.ts.URL+"/api/v1/jobs", "tenantc-key", "")
	jobs, _ := list["jobs"].([]any)
	if status != 200 || len(jobs) != 1 || jobs[0].(map[string]any)["id"] != own || strings.Contains(toJSONString(list), "secret") {
		t.Errorf("tenantc lists %d %v", status, list)
	}
	if status, m, _ := do(t, "GET", f.ts.URL+"/api/v1/jobs/"+secret, "tenantc-key", ""); status != 404 || strings.Contains(toJSONString(m), "secret.example") {
		t.Errorf("tenantc reads the admin's job: %d %v", status, m)
	}
	if status, _, _ := do(t, "GET", f.ts.URL+"/api/v1/jobs/"+own, "tenantc-key", ""); status != 200 {
		t.Errorf("tenantc reads its own job: %d", status)
	}
	if status, list, _ := do(t, "GET", f.ts.URL+"/api/v1/jobs", "admin-key", ""); status != 200 || len(list["jobs"].([]any)) != 2 {
		t.Errorf("admin lists %d %v", status, list)
	}
	c := f.srv.Calls()
	ctx, err := c.Authenticate(context.Background(), http.Header{"Authorization": {"Bearer tenantc-key"}}, ScopeIngest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Job(ctx, secret); kgagent.ErrorCode(err) != kgagent.ENOTFOUND {
		t.Errorf("MCP ingest_status of the admin's job: %v", err)
	}
}

// TestAnonymousBudgetAcrossAddressesAndTransports is issue 21 item 8: one
// anonymous JWT (no sub) with a daily limit of 3 gets 3 queries in all,
// whether they come from 127.0.0.1, 127.0.0.2, 127.0.0.3, NATS or MCP.
func TestAnonymousBudgetAcrossAddressesAndTransports(t *testing.T) {
	for _, aid := range []string{"", "a1"} {
		f, priv := jwtFixture(t, 3)
		c := jwt.MapClaims{"jti": "x"}
		if aid != "" {
			c["aid"] = aid
		}
		tok := sign(t, priv, "k1", claims(c))
		from := func(ip string) int {
			t.Helper()
			hc := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext}}
			req, _ := http.NewRequest("POST", f.ts.URL+"/api/v1/search", strings.NewReader(`{"query":"q"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if got := from("127.0.0.1"); got != 200 {
			t.Fatalf("aid %q: first query: %d", aid, got)
		}
		if got := from("127.0.0.2"); got != 200 {
			t.Fatalf("aid %q: second query from 127.0.0.2: %d", aid, got)
		}
		// The third over MCP (Calls authenticates as "mcp").
		calls := f.srv.Calls()
		ctx, err := calls.Authenticate(context.Background(), http.Header{"Authorization": {"Bearer " + tok}}, ScopeAsk)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := calls.Search(ctx, "q", "", 3, ""); err != nil {
			t.Fatalf("aid %q: third query over MCP: %v", aid, err)
		}
		// The budget is spent: NATS (as natsapi authenticates), MCP and a
		// third address are refused.
		p, err := f.srv.Authenticate(context.Background(), tok, "nats")
		if err != nil {
			t.Fatal(err)
		}
		var last Frame
		f.srv.Run(context.Background(), Call{ID: "n", Service: ServiceSearch, Request: Request{Question: "q"}, Principal: p}, func(fr Frame) { last = fr })
		if last.Error == nil || last.Error.Type != kgagent.ERATELIMIT {
			t.Errorf("aid %q: NATS past the budget: %+v", aid, last)
		}
		if _, err := calls.Search(ctx, "q", "", 3, ""); kgagent.ErrorCode(err) != kgagent.ERATELIMIT {
			t.Errorf("aid %q: MCP past the budget: %v", aid, err)
		}
		if got := from("127.0.0.3"); got != http.StatusTooManyRequests {
			t.Errorf("aid %q: 127.0.0.3 past the budget: %d", aid, got)
		}
	}
}

// TestAPIKeyQueryParameterOnlyOnWebsocket is issue 21 item 9 (first part):
// ?api_key= authenticates the websocket upgrade and nothing else.
func TestAPIKeyQueryParameterOnlyOnWebsocket(t *testing.T) {
	f, _ := jwtFixture(t, 1000)
	for _, tc := range []struct{ method, path, body string }{
		{"DELETE", "/api/v1/collections/python?api_key=admin-key", ""},
		{"GET", "/api/v1/collections?api_key=admin-key", ""},
		{"POST", "/api/v1/agent?api_key=admin-key", `{"question":"q"}`},
		{"GET", "/api/v1/socket?api_key=admin-key", ""}, // not an upgrade
	} {
		if status, m, _ := do(t, tc.method, f.ts.URL+tc.path, "", tc.body); status != http.StatusUnauthorized {
			t.Errorf("%s %s: %d %v", tc.method, tc.path, status, m)
		}
	}
	if len(f.search.deleted) != 0 {
		t.Fatalf("deleted through ?api_key=: %v", f.search.deleted)
	}
	// The websocket upgrade takes it (browsers cannot set its headers).
	ws, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(f.ts.URL, "http")+"/api/v1/socket?api_key=ask-key", nil)
	if err != nil {
		t.Fatalf("websocket with ?api_key=: %v %v", err, resp)
	}
	send(t, ws, `{"id":"w","service":"search","request":{"query":"q"}}`)
	if fr := readUntilComplete(t, ws, "w")["w"]; fr[len(fr)-1].Error != nil {
		t.Errorf("websocket with ?api_key=: %+v", fr[len(fr)-1].Error)
	}
	ws.Close()
}

func toJSONString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestJWTClaimTypes is issue 21 item 9 (second part): a JWT whose sub (or
// aid) is not a string is refused (401 on the API, 403 on the agent
// protocol), not taken as anonymous.
func TestJWTClaimTypes(t *testing.T) {
	f, priv := jwtFixture(t, 1000)
	for _, c := range []jwt.MapClaims{{"sub": 12345}, {"sub": true}, {"aid": 7}, {"sub": map[string]any{"x": 1}}} {
		tok := sign(t, priv, "k1", claims(c))
		if status, m, _ := do(t, "POST", f.ts.URL+"/api/v1/search", tok, `{"query":"q"}`); status != http.StatusUnauthorized {
			t.Errorf("claims %v on the API: %d %v", c, status, m)
		}
		if status, m, _ := do(t, "POST", f.ts.URL+"/agents/docs/echo", tok, `{"message":{"text":"hi"}}`); status != http.StatusForbidden {
			t.Errorf("claims %v on the agent protocol: %d %v", c, status, m)
		}
	}
	if status, m, _ := do(t, "POST", f.ts.URL+"/api/v1/search", sign(t, priv, "k1", claims(jwt.MapClaims{"sub": "12345"})), `{"query":"q"}`); status != 200 {
		t.Errorf("a string sub: %d %v", status, m)
	}
}
