package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/gorilla/websocket"
	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// do sends one request with the given headers and returns the status and
// body.
func doH(t *testing.T, method, url, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestDNSRebindingAndCrossSite is finding 3 of issue 11: in open mode a
// foreign Host (a rebound name) is refused on reads, deletes and the
// websocket; a foreign Origin cannot change state; JSON endpoints refuse
// other content types.
func TestDNSRebindingAndCrossSite(t *testing.T) {
	f := newFixture(t, Config{})
	evil := map[string]string{"Host": "evil.example"}
	for _, tt := range []struct{ method, path, body string }{
		{"GET", "/api/v1/collections", ""},
		{"DELETE", "/api/v1/collections/python", ""},
		{"POST", "/api/v1/agent", `{"question":"q"}`},
	} {
		h := map[string]string{"Host": "evil.example", "Content-Type": "application/json"}
		if code, body := doH(t, tt.method, f.ts.URL+tt.path, tt.body, h); code != 403 || !strings.Contains(body, "host_not_allowed") {
			t.Errorf("%s %s with Host evil.example: %d %s", tt.method, tt.path, code, body)
		}
	}
	if len(f.search.deleted) != 0 {
		t.Fatalf("collection deleted through a rebound name: %v", f.search.deleted)
	}
	u := "ws" + strings.TrimPrefix(f.ts.URL, "http") + "/api/v1/socket"
	d := websocket.Dialer{}
	hdr := http.Header{"Host": {"evil.example"}}
	if c, resp, err := d.Dial(u, hdr); err == nil {
		c.Close()
		t.Error("websocket upgraded for Host evil.example")
	} else if resp == nil || resp.StatusCode != 403 {
		t.Errorf("websocket with a foreign Host: %v %v", resp, err)
	}
	_ = evil

	// Loopback names are served.
	for _, host := range []string{"localhost", strings.TrimPrefix(f.ts.URL, "http://"), "[::1]:8080", "app.localhost"} {
		if code, body := doH(t, "GET", f.ts.URL+"/api/v1/collections", "", map[string]string{"Host": host}); code != 200 {
			t.Errorf("Host %s: %d %s", host, code, body)
		}
	}

	// A foreign Origin may read (CORS keeps the answer from it) but not
	// change state, upload, or open the socket.
	origin := map[string]string{"Origin": "http://evil.example", "Content-Type": "application/json"}
	for _, tt := range []struct{ method, path, body string }{
		{"DELETE", "/api/v1/collections/python", ""},
		{"POST", "/api/v1/agent", `{"question":"q"}`},
		{"POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"q"}]}`},
		{"POST", "/agents/docs/fixie_query_corpus", `{"message":{"text":"q"}}`},
		{"POST", "/api/v1/embeds", "text"},
	} {
		if code, body := doH(t, tt.method, f.ts.URL+tt.path, tt.body, origin); code != 403 || !strings.Contains(body, "origin_not_allowed") {
			t.Errorf("%s %s from a foreign origin: %d %s", tt.method, tt.path, code, body)
		}
	}
	if c, resp, err := d.Dial(u, http.Header{"Origin": {"http://evil.example"}}); err == nil {
		c.Close()
		t.Error("websocket upgraded for a foreign Origin")
	} else if resp == nil || resp.StatusCode != 403 {
		t.Errorf("websocket from a foreign Origin: %v %v", resp, err)
	}
	if len(f.search.deleted) != 0 {
		t.Fatalf("collection deleted from a foreign origin: %v", f.search.deleted)
	}
	// Same origin is fine.
	if code, body := doH(t, "POST", f.ts.URL+"/api/v1/agent", `{"question":"q"}`, map[string]string{"Origin": f.ts.URL, "Content-Type": "application/json"}); code != 200 {
		t.Errorf("same origin: %d %s", code, body)
	}

	// Every JSON endpoint wants application/json: text/plain, forms,
	// multipart and no type at all are 415.
	for _, path := range []string{"/api/v1/agent", "/v1/chat/completions", "/agents/docs/fixie_query_corpus", "/api/v1/corpora", "/graphql"} {
		for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""} {
			h := map[string]string{}
			if ct != "" {
				h["Content-Type"] = ct
			}
			code, body := doH(t, "POST", f.ts.URL+path, `{"question":"q","messages":[{"role":"user","content":"q"}],"message":{"text":"q"}}`, h)
			if code != 415 || !strings.Contains(body, kgagent.EUNSUPPORTED) {
				t.Errorf("POST %s as %q: %d %s", path, ct, code, body)
			}
		}
	}
}

// TestAllowedHosts: configured names are served in open mode, others not.
func TestAllowedHosts(t *testing.T) {
	f := newFixture(t, Config{AllowedHosts: []string{"docs.internal"}})
	if code, _ := doH(t, "GET", f.ts.URL+"/healthz", "", map[string]string{"Host": "docs.internal:8080"}); code != 200 {
		t.Errorf("allowed host: %d", code)
	}
	if code, _ := doH(t, "GET", f.ts.URL+"/healthz", "", map[string]string{"Host": "other.internal"}); code != 403 {
		t.Errorf("other host: %d", code)
	}
}

// TestCollectionNameRule is finding 7 of issue 11: one rule on every
// endpoint, and internal names (x__entities) cannot be named.
func TestCollectionNameRule(t *testing.T) {
	f := newFixture(t, Config{})
	json := map[string]string{"Content-Type": "application/json"}
	bad := []string{"default__entities", strings.Repeat("c", 300), " ", "a b", "x\\u0000y", "é"}
	for _, name := range bad {
		for _, tt := range []struct{ method, path, body string }{
			{"POST", "/api/v1/corpora", `{"collection":"` + name + `","urls":["https://docs.example.org/"]}`},
			{"POST", "/api/v1/search", `{"query":"q","collection":"` + name + `"}`},
			{"POST", "/api/v1/agent", `{"question":"q","collection":"` + name + `"}`},
			{"POST", "/api/v1/graph-rag", `{"question":"q","collection":"` + name + `"}`},
			{"POST", "/v1/chat/completions", `{"collection":"` + name + `","messages":[{"role":"user","content":"q"}]}`},
		} {
			if code, body := doH(t, tt.method, f.ts.URL+tt.path, tt.body, json); code != 400 || !strings.Contains(body, `"field":"collection"`) {
				t.Errorf("%s %s collection %q: %d %s", tt.method, tt.path, name, code, body)
			}
		}
	}
	for _, name := range []string{"default__entities", strings.Repeat("c", 300), "a%20b", "%20"} {
		if code, body := doH(t, "GET", f.ts.URL+"/api/v1/triples?collection="+name, "", nil); code != 400 {
			t.Errorf("triples %q: %d %s", name, code, body)
		}
		for _, m := range []string{"GET", "DELETE"} {
			if code, body := doH(t, m, f.ts.URL+"/api/v1/collections/"+name, "", nil); code != 400 {
				t.Errorf("%s collection %q: %d %s", m, name, code, body)
			}
		}
	}
	if len(f.search.deleted) != 0 || f.jobs.n != 0 {
		t.Errorf("a bad name reached a store: deleted %v, jobs %v", f.search.deleted, f.jobs.n)
	}
	// good names pass
	if code, body := doH(t, "POST", f.ts.URL+"/api/v1/search", `{"query":"q","collection":"python-3.12_docs"}`, json); code != 200 {
		t.Errorf("good name: %d %s", code, body)
	}
}

// TestAnonymousStreamsArePrivate is the stream half of finding 5 of issue
// 11: on an open server, socket B cannot replay socket A's stream by its
// id; only A's resume token opens it.
func TestAnonymousStreamsArePrivate(t *testing.T) {
	f := newFixture(t, Config{})
	a := dialSocket(t, f.ts.URL, "")
	send(t, a, `{"id":"q1","service":"agent","request":{"question":"my private question"}}`)
	frames := readUntilComplete(t, a, "q1")["q1"]
	tok := frames[0].ResumeToken
	if tok == "" {
		t.Fatalf("no resume token in the first frame: %+v", frames[0])
	}
	b := dialSocket(t, f.ts.URL, "")
	for _, resume := range []string{`{"last_seq":0}`, `{"last_seq":0,"token":"0000"}`, `{"last_seq":0,"token":""}`} {
		send(t, b, `{"id":"q1","resume":`+resume+`}`)
		fr := readFrame(t, b)
		if fr.Error == nil || fr.Error.Type != kgagent.ENOTFOUND || strings.Contains(fmt.Sprint(fr.Response), "private") {
			t.Errorf("resume %s by another socket: %+v", resume, fr)
		}
	}
	// B may use the same id for its own request.
	send(t, b, `{"id":"q1","service":"agent","request":{"question":"b's question"}}`)
	got := readUntilComplete(t, b, "q1")["q1"]
	if ans := textOf(got[len(got)-1].Response.Answer); ans != "Answer to: b's question" {
		t.Errorf("b's own q1: %v", ans)
	}
	// With the token, the stream replays (A reconnecting).
	send(t, b, `{"id":"q1","resume":{"last_seq":0,"token":"`+tok+`"}}`)
	replay := readUntilComplete(t, b, "q1")["q1"]
	if ans := textOf(replay[len(replay)-1].Response.Answer); ans != "Answer to: my private question" {
		t.Errorf("replay with the token: %v", ans)
	}
}

// TestAnonymousJWTSessionsArePrivate is the session half of finding 5:
// two anonymous JWTs of different agents (aid) do not see each other's
// sessions.
func TestAnonymousJWTSessionsArePrivate(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, jwks(t, "k1", pub), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, Config{JWT: JWTConfig{JWKSFile: file, Audience: []string{"kg"}}})
	exp := time.Now().Add(time.Hour).Unix()
	a := sign(t, priv, "k1", jwt.MapClaims{"aid": "agent-a", "aud": "kg", "exp": exp})
	b := sign(t, priv, "k1", jwt.MapClaims{"aid": "agent-b", "aud": "kg", "exp": exp})
	status, sess, _ := do(t, "POST", f.ts.URL+"/api/v1/sessions", a, `{"title":"a's"}`)
	if status != 201 {
		t.Fatalf("create: %d %v", status, sess)
	}
	id := sess["id"].(string)
	status, list, _ := do(t, "GET", f.ts.URL+"/api/v1/sessions", b, "")
	if status != 200 || len(list["sessions"].([]any)) != 0 {
		t.Errorf("b lists a's sessions: %d %v", status, list)
	}
	for _, path := range []string{"/api/v1/sessions/" + id, "/api/v1/sessions/" + id + "/messages"} {
		if status, m, _ := do(t, "GET", f.ts.URL+path, b, ""); status != 404 {
			t.Errorf("b reads %s: %d %v", path, status, m)
		}
	}
	if status, list, _ := do(t, "GET", f.ts.URL+"/api/v1/sessions", a, ""); status != 200 || len(list["sessions"].([]any)) != 1 {
		t.Errorf("a's own sessions: %d %v", status, list)
	}
}

// TestLimitsOnEveryTransport is finding 4 of issue 11: one pipeline
// charges every transport — API keys on the agent protocol included — and
// JWTs without sub are counted per agent id and address.
func TestLimitsOnEveryTransport(t *testing.T) {
	cfg := authConfig()
	cfg.DailyLimit = 100
	cfg.APIKeys = append(cfg.APIKeys, APIKey{Name: "five", Hash: HashKey("five-key"), Scopes: []Scope{ScopeAsk}, DailyLimit: 5})
	f := newFixture(t, cfg)
	// One query on each transport, with the same key.
	if status, m, _ := do(t, "POST", f.ts.URL+"/api/v1/agent", "five-key", `{"question":"q"}`); status != 200 {
		t.Fatalf("rest: %d %v", status, m)
	}
	if status, m, _ := do(t, "POST", f.ts.URL+"/agents/docs/echo", "five-key", `{"message":{"text":"hi"}}`); status != 200 {
		t.Fatalf("agent protocol: %d %v", status, m)
	}
	if status, m, _ := do(t, "POST", f.ts.URL+"/v1/chat/completions", "five-key", `{"messages":[{"role":"user","content":"q"}]}`); status != 200 {
		t.Fatalf("openai: %d %v", status, m)
	}
	c := dialSocket(t, f.ts.URL, "five-key")
	send(t, c, `{"id":"s","service":"search","request":{"query":"q"}}`)
	if fr := readUntilComplete(t, c, "s")["s"]; fr[len(fr)-1].Error != nil {
		t.Fatalf("socket: %+v", fr[len(fr)-1].Error)
	}
	_, sess, _ := do(t, "POST", f.ts.URL+"/api/v1/sessions", "five-key", `{}`)
	gql := `{"query":"mutation { postMessage(sessionId: \"` + sess["id"].(string) + `\", text: \"q\") { text } }"}`
	if status, m, _ := do(t, "POST", f.ts.URL+"/graphql", "five-key", gql); status != 200 || m["errors"] != nil {
		t.Fatalf("graphql: %d %v", status, m)
	}
	// The sixth, on any transport, is over the limit.
	if status, m, _ := do(t, "POST", f.ts.URL+"/agents/docs/echo", "five-key", `{"message":{"text":"hi"}}`); status != 429 {
		t.Errorf("agent protocol past the limit: %d %v", status, m)
	}
	if status, _, _ := do(t, "POST", f.ts.URL+"/api/v1/search", "five-key", `{"query":"q"}`); status != 429 {
		t.Errorf("rest past the limit: %d", status)
	}

	// Anonymous JWTs are counted per aid and address.
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, jwks(t, "k1", pub), 0o600); err != nil {
		t.Fatal(err)
	}
	g := newFixture(t, Config{DailyLimit: 2, JWT: JWTConfig{JWKSFile: file, Audience: []string{"kg"}}})
	exp := time.Now().Add(time.Hour).Unix()
	anon := sign(t, priv, "k1", jwt.MapClaims{"aid": "agent-a", "aud": "kg", "exp": exp})
	other := sign(t, priv, "k1", jwt.MapClaims{"aid": "agent-b", "aud": "kg", "exp": exp})
	for i := 0; i < 2; i++ {
		if status, m, _ := do(t, "POST", g.ts.URL+"/agents/docs/echo", anon, `{"message":{"text":"hi"}}`); status != 200 {
			t.Fatalf("anonymous JWT %d: %d %v", i, status, m)
		}
	}
	if status, _, _ := do(t, "POST", g.ts.URL+"/api/v1/agent", anon, `{"question":"q"}`); status != 429 {
		t.Errorf("anonymous JWT past its limit: %d", status)
	}
	if status, _, _ := do(t, "POST", g.ts.URL+"/api/v1/agent", other, `{"question":"q"}`); status != 200 {
		t.Errorf("another agent's anonymous JWT: %d", status)
	}
}

// TestSocketBurst is finding 8 of issue 11: a burst of 500 requests on one
// socket is served (back-pressure), every id completes, and the socket is
// never dropped without a close frame.
func TestSocketBurst(t *testing.T) {
	f := newFixture(t, Config{})
	c := dialSocket(t, f.ts.URL, "")
	const n = 500
	var ids []string
	go func() {
		for i := 0; i < n; i++ {
			_ = c.WriteMessage(websocket.TextMessage, []byte(fmt.Sprintf(`{"id":"b%d","service":"agent","request":{"question":"q%d"}}`, i, i)))
		}
	}()
	for i := 0; i < n; i++ {
		ids = append(ids, fmt.Sprintf("b%d", i))
	}
	got := readUntilComplete(t, c, ids...)
	for _, id := range ids {
		fr := got[id]
		if last := fr[len(fr)-1]; last.Error != nil {
			t.Fatalf("%s: %+v", id, last.Error)
		}
	}
}

// TestSocketNotReadingGetsCloseFrame: a client that never reads is closed
// with 1013 and a reason, not dropped silently.
func TestSocketNotReadingGetsCloseFrame(t *testing.T) {
	f := newFixture(t, Config{SendBuffer: 4, MaxInFlight: 64})
	c := dialSocket(t, f.ts.URL, "")
	for i := 0; i < 200; i++ {
		if err := c.WriteMessage(websocket.TextMessage, []byte(fmt.Sprintf(`{"id":"n%d","service":"search","request":{"query":"q"}}`, i))); err != nil {
			break
		}
	}
	// Now read: the queued frames, then the close frame.
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		if !websocket.IsCloseError(err, websocket.CloseTryAgainLater) {
			t.Errorf("closed with %v, want close 1013", err)
		}
		return
	}
}

// bigSearch answers every search with k hits of 1 KB each.
type bigSearch struct{ fakeSearch }

func (b *bigSearch) Search(ctx context.Context, req corpus.SearchRequest) ([]corpus.Hit, error) {
	text := strings.Repeat("y", 1000)
	hits := make([]corpus.Hit, req.K)
	for i := range hits {
		hits[i] = corpus.Hit{Chunk: kgagent.Chunk{ID: fmt.Sprint("c", i), URL: "https://docs.example.org/a", Text: text}, Score: 1}
	}
	return hits, nil
}

// TestSocketRetentionByteBudget is finding 6 of issue 11 scaled down: one
// well-behaved client sends 1,000 searches of k=100 (about 100 MB of
// frames); the kept events stay within the byte budget and the heap does
// not keep them (before, every frame was kept for two minutes).
func TestSocketRetentionByteBudget(t *testing.T) {
	const budget = 8 << 20
	srv, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxStreamBytes: budget}, Backends{Search: &bigSearch{}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	c := dialSocket(t, ts.URL, "")
	const n = 1000
	go func() {
		for i := 0; i < n; i++ {
			if c.WriteMessage(websocket.TextMessage, []byte(fmt.Sprintf(`{"id":"s%d","service":"search","request":{"query":"q","k":100}}`, i))) != nil {
				return
			}
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Minute))
	total := 0
	for done := 0; done < n; {
		_, data, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("after %d answers: %v", done, err)
		}
		total += len(data)
		if strings.Contains(string(data), `"complete":true`) {
			done++
		}
	}
	ms := srv.streams.(*memStreams)
	ms.mu.Lock()
	kept := ms.bytes
	ms.mu.Unlock()
	if kept > budget {
		t.Errorf("%d bytes of events kept, over the %d budget", kept, budget)
	}
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	t.Logf("%d MB of frames sent, %d KB kept, heap in use %d MB", total>>20, kept>>10, m.HeapInuse>>20)
	if m.HeapInuse > uint64(total/2) {
		t.Errorf("heap in use %d MB after %d MB of frames: events are not bounded", m.HeapInuse>>20, total>>20)
	}
}

// TestCallerJWTNotForwarded is part of finding 9 of issue 11: the caller's
// JWT reaches the agent (and so remote agents and funcs) only when
// ForwardCallerToken is set.
func TestCallerJWTNotForwarded(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, jwks(t, "k1", pub), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := sign(t, priv, "k1", jwt.MapClaims{"sub": "u1", "aud": "kg", "exp": time.Now().Add(time.Hour).Unix()})
	for _, forward := range []bool{false, true} {
		f := newFixture(t, Config{JWT: JWTConfig{JWKSFile: file, Audience: []string{"kg"}}, ForwardCallerToken: forward})
		status, m, _ := do(t, "POST", f.ts.URL+"/agents/docs/echo", tok, `{"message":{"text":"hi"}}`)
		if status != 200 {
			t.Fatalf("forward=%v: %d %v", forward, status, m)
		}
		text := m["message"].(map[string]any)["text"].(string)
		if got := strings.Contains(text, "token=forwarded"); got != forward {
			t.Errorf("forward=%v: the agent saw the token: %v (%q)", forward, got, text)
		}
	}
}
