package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/kgagent/kgagent"
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
