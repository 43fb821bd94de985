package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/crawler"
)

// A Mounted handler sits behind the gateway's credentials and scope, and
// its CORS preflight names the MCP headers.
func TestMount(t *testing.T) {
	f := newFixture(t, authConfig())
	f.srv.Mount("/mounted", ScopeAsk, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	do := func(method, key string, hdr map[string]string) *http.Response {
		req, _ := http.NewRequest(method, f.ts.URL+"/mounted", nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for key, want := range map[string]int{"": 401, "wrong": 401, "ingest-key": 403, "ask-key": http.StatusTeapot} {
		if got := do("GET", key, nil).StatusCode; got != want {
			t.Errorf("key %q: %d, want %d", key, got, want)
		}
	}
	resp := do("OPTIONS", "", map[string]string{"Origin": "https://docs.example.org", "Access-Control-Request-Method": "POST"})
	if allow := resp.Header.Get("Access-Control-Allow-Headers"); !strings.Contains(allow, "Mcp-Session-Id") || !strings.Contains(allow, "Mcp-Protocol-Version") {
		t.Errorf("preflight allows %q", allow)
	}
	resp = do("GET", "ask-key", map[string]string{"Origin": "https://docs.example.org"})
	if exp := resp.Header.Get("Access-Control-Expose-Headers"); !strings.Contains(exp, "Mcp-Session-Id") {
		t.Errorf("exposed headers %q", exp)
	}
}

// Calls authenticate from headers and apply the key's scope, collections
// and limit, as REST does.
func TestCalls(t *testing.T) {
	f := newFixture(t, authConfig())
	c := f.srv.Calls()
	ctx := context.Background()
	as := func(key string) context.Context {
		t.Helper()
		cctx, err := c.Authenticate(ctx, http.Header{"Authorization": {"Bearer " + key}}, ScopeAsk)
		if err != nil {
			t.Fatalf("authenticate %s: %v", key, err)
		}
		return cctx
	}
	if _, err := c.Authenticate(ctx, http.Header{"Authorization": {"Bearer nope"}}, ScopeAsk); kgagent.ErrorCode(err) != kgagent.EUNAUTH {
		t.Fatalf("wrong key: %v", err)
	}
	if _, err := c.Authenticate(ctx, http.Header{"X-Api-Key": {"ingest-key"}}, ScopeAsk); kgagent.ErrorCode(err) != kgagent.EFORBIDDEN {
		t.Fatalf("ingest key for ask: %v", err)
	}
	py := as("py-key")
	cols, err := c.Collections(py)
	if err != nil || len(cols) != 1 || cols[0].Name != "python" {
		t.Fatalf("restricted key's collections: %+v %v", cols, err)
	}
	if col, err := c.Collection(py, ""); err != nil || col != "python" {
		t.Fatalf("restricted key's default collection: %q %v", col, err)
	}
	if _, err := c.Search(py, "q", "go", 3, ""); kgagent.ErrorCode(err) != kgagent.EFORBIDDEN {
		t.Fatalf("search another collection: %v", err)
	}
	if _, err := c.Search(py, "q", "python", 1001, ""); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Fatalf("k 1001: %v", err)
	}
	if _, err := c.Documents(py, "python", "", 10); kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
		t.Fatalf("documents without a reader: %v", err)
	}
	if _, err := c.Documents(py, "python__entities", "", 10); kgagent.ErrorCode(err) != kgagent.EINVALID && kgagent.ErrorCode(err) != kgagent.EFORBIDDEN {
		t.Fatalf("an internal collection: %v", err)
	}
	if _, err := c.Ingest(py, crawler.Spec{Collection: "python", URLs: []string{"https://x/*"}}); kgagent.ErrorCode(err) != kgagent.EFORBIDDEN {
		t.Fatalf("ingest with an ask key: %v", err)
	}
	if got := c.Owner(as("ask-key")); got != "user:alice" {
		t.Fatalf("owner %q", got)
	}
	// py-key's daily limit is 3: two searches were refused before charging
	// or charged; keep searching until the limit answers.
	var last error
	for i := 0; i < 5 && kgagent.ErrorCode(last) != kgagent.ERATELIMIT; i++ {
		_, last = c.Search(py, "q", "python", 3, "")
	}
	if kgagent.ErrorCode(last) != kgagent.ERATELIMIT {
		t.Fatalf("no RATE_LIMITED after 5 searches on a limit of 3: %v", last)
	}
}
