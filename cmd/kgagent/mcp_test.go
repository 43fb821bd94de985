package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent/internal/testdep"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kgagent/kgagent/gateway"
)

// progressLog collects the progress notifications a client receives.
type progressLog struct {
	mu   sync.Mutex
	msgs []string
}

func (p *progressLog) handler(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, req.Params.Message)
}

func (p *progressLog) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.msgs...)
}

func (p *progressLog) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = nil
}

// count returns how many messages start with prefix, waiting up to 5 s
// for one: notifications are handled concurrently with the call's result.
func (p *progressLog) count(prefix string) int {
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := 0
		for _, m := range p.all() {
			if strings.HasPrefix(m, prefix) {
				n++
			}
		}
		if n > 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func newMCPClient(prog *progressLog) *sdk.Client {
	return sdk.NewClient(&sdk.Implementation{Name: "kgagent-test", Version: "1"}, &sdk.ClientOptions{ProgressNotificationHandler: prog.handler})
}

// callTool calls a tool, failing the test on a protocol error.
func callTool(t *testing.T, cs *sdk.ClientSession, name string, args any, meta sdk.Meta) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return res
}

func resultText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// structured decodes a result's structured content into v.
func structured(t *testing.T, res *sdk.CallToolResult, v any) {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", resultText(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}

// wantToolError checks that a call failed as a tool error with code.
func wantToolError(t *testing.T, res *sdk.CallToolResult, code string) {
	t.Helper()
	if !res.IsError || !strings.HasPrefix(resultText(res), code+": ") {
		t.Fatalf("want a %s tool error, got isError=%v %q", code, res.IsError, resultText(res))
	}
}

// startMCPStdio launches bin with args as an MCP client does and connects
// the Go SDK's client over its stdin/stdout; the session closes (and the
// process ends) when the test ends.
func startMCPStdio(t *testing.T, prog *progressLog, bin string, args ...string) *sdk.ClientSession {
	t.Helper()
	var stderr syncBuffer
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := newMCPClient(prog).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to %v: %v\n%s", args, err, stderr.String())
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("close: %v", err)
		}
	})
	return cs
}

// ingestSite ingests the sample site into collection docs of a new data
// dir with the real binary and returns the dir and the site's URL.
func ingestSite(t *testing.T, bin string) (string, string) {
	t.Helper()
	site := httptest.NewServer(http.FileServer(http.Dir(siteDir)))
	t.Cleanup(site.Close)
	dir := t.TempDir()
	out, err := exec.Command(bin, "ingest", "--data-dir", dir, "--collection", "docs", "--json", site.URL+"/*").CombinedOutput()
	if err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	return dir, site.URL
}

// TestMCPStdio launches the real binary as MCP clients do (`kgagent mcp`
// over stdin/stdout) with the Go SDK's client, lists and calls the tools,
// reads the cited sections as resources, and checks that bad arguments are
// tool errors with kgagent's codes while the session lives on.
func TestMCPStdio(t *testing.T) {
	bin := buildBinary(t)
	dir, siteURL := ingestSite(t, bin)

	prog := &progressLog{}
	cs := startMCPStdio(t, prog, bin, "mcp", "--data-dir", dir, "--collection", "docs")
	checkMCPSession(t, cs, prog, "docs", siteURL)
	wantToolError(t, callTool(t, cs, "ingest_status", map[string]any{"job_id": "nope"}, nil), "NOT_FOUND")

	// The data dir is held: a second `kgagent mcp` names the holder (with a
	// serve, its /mcp URL: TestMCPHeldDataDirHint).
	out, err := exec.Command(bin, "mcp", "--data-dir", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "is in use by") || !strings.Contains(string(out), "(kgagent mcp,") {
		t.Fatalf("second mcp on a held data dir: %v %s", err, out)
	}
}

// checkMCPSession runs the checks every transport must pass on a session
// whose collection coll holds the sample site served at siteURL.
func checkMCPSession(t *testing.T, cs *sdk.ClientSession, prog *progressLog, coll, siteURL string) {
	t.Helper()
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*sdk.Tool{}
	for _, tool := range tools.Tools {
		byName[tool.Name] = tool
	}
	for _, name := range []string{"ask", "search", "graph", "ingest", "ingest_status", "collections"} {
		tool := byName[name]
		if tool == nil {
			t.Fatalf("tool %s not listed (have %v)", name, tools.Tools)
		}
		if len(tool.Description) < 40 || tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Fatalf("tool %s lacks a description or schemas: %+v", name, tool)
		}
	}
	schema, _ := json.Marshal(byName["search"].InputSchema)
	for _, want := range []string{`"query"`, `"k"`, `"mode"`, `"collection"`, `"required":["query"]`, `"hybrid"`} {
		if !strings.Contains(string(schema), want) {
			t.Fatalf("search schema lacks %s: %s", want, schema)
		}
	}

	// collections
	var colls struct {
		Collections []struct {
			Name      string `json:"name"`
			Documents int    `json:"documents"`
			Resource  string `json:"resource"`
		} `json:"collections"`
		Default string `json:"default"`
	}
	structured(t, callTool(t, cs, "collections", map[string]any{}, nil), &colls)
	if len(colls.Collections) != 1 || colls.Collections[0].Name != coll || colls.Collections[0].Documents < 20 || colls.Default != coll {
		t.Fatalf("collections: %+v", colls)
	}

	// search
	var found struct {
		Hits []struct {
			URL      string  `json:"url"`
			Text     string  `json:"text"`
			Score    float64 `json:"score"`
			Resource string  `json:"resource"`
		} `json:"hits"`
	}
	res := callTool(t, cs, "search", map[string]any{"query": "default HTTP port of the Lumen server", "k": 5}, nil)
	structured(t, res, &found)
	if len(found.Hits) == 0 || len(found.Hits) > 5 || !strings.HasPrefix(found.Hits[0].URL, siteURL) {
		t.Fatalf("search hits: %+v", found.Hits)
	}
	links := 0
	for _, c := range res.Content {
		if l, ok := c.(*sdk.ResourceLink); ok && strings.HasPrefix(l.URI, "kgagent://collections/"+coll+"/documents/") {
			links++
		}
	}
	if links != len(found.Hits) {
		t.Fatalf("search returned %d resource links for %d hits", links, len(found.Hits))
	}
	keyword := callTool(t, cs, "search", map[string]any{"query": "port", "mode": "keyword", "k": 2, "collection": coll}, nil)
	structured(t, keyword, &found)
	if len(found.Hits) == 0 || len(found.Hits) > 2 {
		t.Fatalf("keyword search: %+v", found.Hits)
	}

	// Reading a hit's resource returns the stored text of that section.
	hit := found.Hits[0]
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: hit.Resource})
	if err != nil {
		t.Fatalf("read %s: %v", hit.Resource, err)
	}
	if len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, firstWords(hit.Text, 8)) || !strings.Contains(rr.Contents[0].Text, hit.URL) {
		t.Fatalf("read %s: %+v, want the text of %q", hit.Resource, rr.Contents, hit.Text)
	}
	// The collection resource lists its pages.
	rr, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: colls.Collections[0].Resource})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "kgagent://collections/"+coll+"/documents/") {
		t.Fatalf("read collection: %v %+v", err, rr)
	}
	// resources/list: the collection, then its pages.
	listed, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed.Resources) < 20 || listed.Resources[0].URI != "kgagent://collections/"+coll {
		t.Fatalf("resources/list: %d, first %+v", len(listed.Resources), listed.Resources[0])
	}
	// An unknown resource is the protocol's "resource not found".
	_, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "kgagent://collections/" + coll + "/documents/http%3A%2F%2Fnowhere%2Fx"})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("unknown resource: %v", err)
	}

	// Bad arguments are INVALID_ARGUMENT tool errors; the session lives on.
	wantToolError(t, callTool(t, cs, "search", map[string]any{"query": "x", "k": "five"}, nil), "INVALID_ARGUMENT")
	wantToolError(t, callTool(t, cs, "search", map[string]any{"query": "x", "k": 1000}, nil), "INVALID_ARGUMENT")
	wantToolError(t, callTool(t, cs, "search", map[string]any{"query": "x", "mode": "psychic"}, nil), "INVALID_ARGUMENT")
	wantToolError(t, callTool(t, cs, "search", map[string]any{"query": "x", "bogus": 1}, nil), "INVALID_ARGUMENT")
	wantToolError(t, callTool(t, cs, "search", map[string]any{}, nil), "INVALID_ARGUMENT")
	wantToolError(t, callTool(t, cs, "search", map[string]any{"query": "port", "collection": "no-such"}, nil), "NOT_FOUND")
	wantToolError(t, callTool(t, cs, "graph", map[string]any{}, nil), "INVALID_ARGUMENT")
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}}); !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("an unknown tool: %v", err)
	}
	t.Logf("protocol %s", cs.InitializeResult().ProtocolVersion)

	// ask: the answer, its sources as resource links, progress on the way.
	prog.reset()
	var ans struct {
		Answer  string `json:"answer"`
		Sources []struct {
			N        int    `json:"n"`
			URL      string `json:"url"`
			Resource string `json:"resource"`
		} `json:"sources"`
	}
	res = callTool(t, cs, "ask", map[string]any{"question": "What is the default HTTP port of the Lumen server?"}, sdk.Meta{"progressToken": "ask-1"})
	structured(t, res, &ans)
	if !strings.Contains(ans.Answer, "8086") || len(ans.Sources) == 0 || !strings.HasPrefix(ans.Sources[0].URL, siteURL) {
		t.Fatalf("ask: %+v", ans)
	}
	var link *sdk.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(*sdk.ResourceLink); ok && link == nil {
			link = l
		}
	}
	if link == nil || link.URI != ans.Sources[0].Resource {
		t.Fatalf("ask content has no resource link for source 1: %+v", res.Content)
	}
	if rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: link.URI}); err != nil || !strings.Contains(rr.Contents[0].Text, "8086") {
		t.Fatalf("read the cited section %s: %v %+v", link.URI, err, rr)
	}
	if prog.count("thought: ") == 0 || prog.count("observation: ") == 0 {
		t.Fatalf("ask sent no thought and observation progress: %q", prog.all())
	}

	// graph: facts with their source sections.
	var facts struct {
		Triples []struct {
			S, P, O   string
			SourceURL string `json:"source_url"`
		} `json:"triples"`
	}
	structured(t, callTool(t, cs, "graph", map[string]any{"entity": "Lumen", "limit": 20}, nil), &facts)
	if len(facts.Triples) == 0 || len(facts.Triples) > 20 || !strings.HasPrefix(facts.Triples[0].SourceURL, siteURL) {
		t.Fatalf("graph: %+v", facts)
	}
	// The examples the graph tool's schema gives find facts (issue 21,
	// item 14: its example predicate once matched nothing).
	var graphSchema struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	raw, _ := json.Marshal(byName["graph"].InputSchema)
	_ = json.Unmarshal(raw, &graphSchema)
	for _, arg := range []string{"p", "entity"} {
		m := regexp.MustCompile(`e\.g\. '([^']+)'`).FindStringSubmatch(graphSchema.Properties[arg].Description)
		if m == nil {
			t.Fatalf("graph %s has no example: %q", arg, graphSchema.Properties[arg].Description)
		}
		var got struct {
			Triples []struct{ P string } `json:"triples"`
		}
		structured(t, callTool(t, cs, "graph", map[string]any{arg: m[1], "limit": 5}, nil), &got)
		if len(got.Triples) == 0 || (arg == "p" && got.Triples[0].P != m[1]) {
			t.Errorf("graph %s=%q (the schema's example) finds %+v", arg, m[1], got.Triples)
		}
	}
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		f = f[:n]
	}
	return strings.Join(f, " ")
}

// TestMCPStdioIngest ingests over MCP and waits, with progress, until done.
func TestMCPStdioIngest(t *testing.T) {
	bin := buildBinary(t)
	site := httptest.NewServer(http.FileServer(http.Dir(siteDir)))
	defer site.Close()
	dir := t.TempDir()
	// API-requested ingestion may not fetch loopback unless allowed.
	prog := &progressLog{}
	cs := startMCPStdio(t, prog, bin, "mcp", "--data-dir", dir, "--allow-private-ingest")
	var job struct {
		JobID    string `json:"job_id"`
		State    string `json:"state"`
		Counters struct {
			Indexed int `json:"indexed"`
			Done    int `json:"done"`
		} `json:"counters"`
	}
	start := time.Now()
	structured(t, callTool(t, cs, "ingest", map[string]any{"urls": []string{site.URL + "/*"}, "collection": "lumen", "wait": true}, sdk.Meta{"progressToken": 7}), &job)
	t.Logf("ingest with wait: %+v in %s, %d progress notifications", job, time.Since(start), len(prog.all()))
	if job.State != "succeeded" || job.Counters.Indexed < 20 || job.JobID == "" {
		t.Fatalf("ingest: %+v", job)
	}
	if prog.count("succeeded: ")+prog.count("running: ") == 0 {
		t.Fatalf("ingest with wait sent no progress: %q", prog.all())
	}
	structured(t, callTool(t, cs, "ingest_status", map[string]any{"job_id": job.JobID}, nil), &job)
	if job.State != "succeeded" {
		t.Fatalf("ingest_status: %+v", job)
	}
	var found struct {
		Hits []struct{ URL string } `json:"hits"`
	}
	structured(t, callTool(t, cs, "search", map[string]any{"query": "backup restore", "collection": "lumen"}, nil), &found)
	if len(found.Hits) == 0 {
		t.Fatal("nothing found in the ingested collection")
	}
	wantToolError(t, callTool(t, cs, "ingest", map[string]any{"urls": []string{}}, nil), "INVALID_ARGUMENT")
	wantToolError(t, callTool(t, cs, "ingest", map[string]any{"urls": []string{site.URL + "/*"}, "max_pages": -1}, nil), "INVALID_ARGUMENT")
	wantToolError(t, callTool(t, cs, "ingest", map[string]any{"urls": nil}, nil), "INVALID_ARGUMENT")
}

// bearer adds an API key to every request.
type bearer struct {
	key  string
	base http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.base.RoundTrip(r)
}

// TestMCPStreamableHTTP connects the Go SDK's client to serve's /mcp on a
// real loopback server with API keys: the same session checks as stdio on
// protocol 2026-07-28 (sessionless), the key's scope (no ingest with an ask
// key), its daily limit, the gateway's Host and Origin checks on /mcp, and
// a 2025-11-25 session bound to the key that opened it.
func TestMCPStreamableHTTP(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys.yaml")
	yaml := "keys:\n" +
		"  - name: asker\n    hash: " + gateway.HashKey("ask-key") + "\n    scopes: [ask]\n    daily_limit: 1000\n" +
		"  - name: tiny\n    hash: " + gateway.HashKey("tiny-key") + "\n    scopes: [ask]\n    daily_limit: 2\n"
	if err := os.WriteFile(keys, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	base, logs := startServe(t, "--demo", "--demo-site-dir", siteDir, "--api-keys-file", keys)
	waitDemoIngested(t, logs)
	connect := func(key string, prog *progressLog, version string) (*sdk.ClientSession, error) {
		hc := &http.Client{Transport: bearer{key, http.DefaultTransport}}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return newMCPClient(prog).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	}

	if cs, err := connect("wrong-key", &progressLog{}, ""); err == nil {
		cs.Close()
		t.Fatal("connected with a wrong key")
	}
	prog := &progressLog{}
	cs, err := connect("ask-key", prog, "")
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, logs.String())
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" || cs.ID() != "" {
		t.Fatalf("the Go SDK's client got protocol %s, session %q", v, cs.ID())
	}
	checkMCPSession(t, cs, prog, "default", "http://127.0.0.1:")
	wantToolError(t, callTool(t, cs, "ingest", map[string]any{"urls": []string{"https://example.com/*"}}, nil), "FORBIDDEN")

	tiny, err := connect("tiny-key", &progressLog{}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer tiny.Close()
	for i := 0; i < 2; i++ {
		if res := callTool(t, tiny, "search", map[string]any{"query": "port"}, nil); res.IsError {
			t.Fatalf("search %d: %s", i, resultText(res))
		}
	}
	wantToolError(t, callTool(t, tiny, "search", map[string]any{"query": "port"}, nil), "RATE_LIMITED")

	// The gateway's request checks hold on /mcp as on REST.
	post := func(host, origin, key string) int {
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("", "", ""); code != http.StatusUnauthorized {
		t.Fatalf("no key: %d", code)
	}
	if code := post("", "https://evil.example", "ask-key"); code != http.StatusForbidden {
		t.Fatalf("foreign Origin: %d", code)
	}
	if code := post("", "", "ask-key"); code != http.StatusOK {
		t.Fatalf("plain initialize: %d", code)
	}
	// A session (before 2026-07-28) belongs to the key that opened it.
	legacy, err := connect("ask-key", &progressLog{}, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	defer legacy.Close()
	hijack := func(key string) int {
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"collections","arguments":{}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Mcp-Session-Id", legacy.ID())
		req.Header.Set("Mcp-Protocol-Version", legacy.InitializeResult().ProtocolVersion)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if legacy.ID() == "" {
		t.Fatal("no session id over Streamable HTTP on 2025-11-25")
	}
	if code := hijack("tiny-key"); code != http.StatusForbidden {
		t.Fatalf("another key on the session: %d", code)
	}
	if code := hijack("ask-key"); code != http.StatusOK {
		t.Fatalf("the session's own key: %d", code)
	}
}

// TestMCPHostCheckOpen: an open (no keys) serve answers /mcp only for
// loopback Host names, so a DNS-rebound page cannot drive it.
func TestMCPHostCheckOpen(t *testing.T) {
	base, _ := startServe(t)
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Host = "evil.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("Host evil.example: %d", resp.StatusCode)
	}
	cs, err := newMCPClient(&progressLog{}).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		t.Fatalf("loopback connect: %v", err)
	}
	defer cs.Close()
	var colls struct {
		Collections []any `json:"collections"`
	}
	structured(t, callTool(t, cs, "collections", map[string]any{}, nil), &colls)
}

// pythonReport is what testdata/mcp_client.py prints.
type pythonReport struct {
	Server     string         `json:"server"`
	Protocol   string         `json:"protocol"`
	Tools      []string       `json:"tools"`
	Schemas    map[string]any `json:"schemas"`
	SearchErr  bool           `json:"search_error"`
	SearchHits []struct {
		URL      string `json:"url"`
		Resource string `json:"resource"`
	} `json:"search_hits"`
	Progress []struct {
		Progress float64 `json:"progress"`
		Message  string  `json:"message"`
	} `json:"progress"`
	AskErr       bool     `json:"ask_error"`
	Answer       string   `json:"answer"`
	Links        []string `json:"links"`
	ResourceText string   `json:"resource_text"`
	BadErr       bool     `json:"bad_error"`
	BadText      string   `json:"bad_text"`
	AfterBad     []string `json:"after_bad"`
}

// TestMCPPythonClient drives kgagent with a real MCP client of another
// implementation, the Python `mcp` package (PyPI), over stdio (`kgagent
// mcp` on the demo site's data) and over Streamable HTTP (`serve --demo`'s
// /mcp with an API key): it lists the tools, calls search and ask, sees the
// ask's thought and observation progress notifications, reads a cited
// section, and gets INVALID_ARGUMENT for a bad call with the session alive.
// The client is the python of KGAGENT_TEST_MCP_PYTHON (make test installs
// it: deploy/testenv/50-mcp.sh); with KGAGENT_REQUIRE_MCP_PYTHON=1 a
// missing client fails the test instead of skipping it.
func TestMCPPythonClient(t *testing.T) {
	python := os.Getenv("KGAGENT_TEST_MCP_PYTHON")
	if python == "" || exec.Command(python, "-c", "import mcp").Run() != nil {
		testdep.Missing(t, "KGAGENT_REQUIRE_MCP_PYTHON",
			fmt.Sprintf("KGAGENT_TEST_MCP_PYTHON (%q) is not a python with the mcp package (deploy/testenv/50-mcp.sh installs one)", python))
	}
	bin := buildBinary(t)
	script, err := filepath.Abs("testdata/mcp_client.py")
	if err != nil {
		t.Fatal(err)
	}
	runClient := func(t *testing.T, args ...string) pythonReport {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var stderr syncBuffer
		cmd := exec.CommandContext(ctx, python, append([]string{script}, args...)...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("python client %v: %v\nstdout: %s\nstderr: %s", args, err, out, stderr.String())
		}
		var r pythonReport
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("python client printed %q: %v", out, err)
		}
		return r
	}
	check := func(t *testing.T, r pythonReport) {
		t.Helper()
		if r.Server != "kgagent" || strings.Join(r.Tools, ",") != "ask,collections,graph,ingest,ingest_status,search" {
			t.Fatalf("server %q tools %v", r.Server, r.Tools)
		}
		if s, _ := json.Marshal(r.Schemas["ask"]); !strings.Contains(string(s), `"question"`) {
			t.Fatalf("ask schema as the client sees it: %s", s)
		}
		if r.SearchErr || len(r.SearchHits) == 0 || len(r.SearchHits) > 3 || !strings.HasPrefix(r.SearchHits[0].Resource, "kgagent://collections/default/documents/") {
			t.Fatalf("search: error %v hits %+v", r.SearchErr, r.SearchHits)
		}
		if r.AskErr || !strings.Contains(r.Answer, "8086") || len(r.Links) == 0 || !strings.Contains(r.ResourceText, "8086") {
			t.Fatalf("ask: error %v answer %q links %v resource %q", r.AskErr, r.Answer, r.Links, r.ResourceText)
		}
		var thoughts, observations int
		last := 0.0
		for _, p := range r.Progress {
			if p.Progress <= last {
				t.Fatalf("progress does not increase: %+v", r.Progress)
			}
			last = p.Progress
			switch {
			case strings.HasPrefix(p.Message, "thought: "):
				thoughts++
			case strings.HasPrefix(p.Message, "observation: "):
				observations++
			}
		}
		if thoughts == 0 || observations == 0 {
			t.Fatalf("the client saw %d thought and %d observation progress notifications: %+v", thoughts, observations, r.Progress)
		}
		if !r.BadErr || !strings.HasPrefix(r.BadText, "INVALID_ARGUMENT: ") || len(r.AfterBad) != 1 {
			t.Fatalf("bad call: error %v %q, then collections %v", r.BadErr, r.BadText, r.AfterBad)
		}
	}

	t.Run("stdio", func(t *testing.T) {
		// The demo's data: the sample site ingested into the default collection.
		site := httptest.NewServer(http.FileServer(http.Dir(siteDir)))
		defer site.Close()
		dir := t.TempDir()
		if out, err := exec.Command(bin, "ingest", "--data-dir", dir, "--json", site.URL+"/*").CombinedOutput(); err != nil {
			t.Fatalf("ingest: %v\n%s", err, out)
		}
		r := runClient(t, "stdio", bin, "mcp", "--data-dir", dir)
		check(t, r)
		t.Logf("stdio: protocol %s, %d progress notifications", r.Protocol, len(r.Progress))
	})
	t.Run("http", func(t *testing.T) {
		keys := filepath.Join(t.TempDir(), "keys.yaml")
		if err := os.WriteFile(keys, []byte("keys:\n  - name: py\n    hash: "+gateway.HashKey("py-key")+"\n    scopes: [ask]\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		base, logs := startServe(t, "--demo", "--demo-site-dir", siteDir, "--api-keys-file", keys)
		waitDemoIngested(t, logs)
		r := runClient(t, "http", base+"/mcp", "py-key")
		check(t, r)
		t.Logf("http: protocol %s, %d progress notifications", r.Protocol, len(r.Progress))
	})
}

// TestMCPReadmeConfig reads the README's MCP client configuration and uses
// it as a client would: the stdio entry's command and arguments (with this
// test's binary and data dir) and the HTTP entry's URL path and header.
func TestMCPReadmeConfig(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), "```json\n{\n  \"mcpServers\"")
	if i < 0 {
		t.Fatal("README has no mcpServers configuration")
	}
	block := string(b)[i+len("```json\n"):]
	block = block[:strings.Index(block, "```")]
	var conf struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(block), &conf); err != nil {
		t.Fatalf("README mcpServers JSON: %v\n%s", err, block)
	}
	stdio, web := conf.MCPServers["kgagent"], conf.MCPServers["kgagent-http"]
	if stdio.Command != "kgagent" || len(stdio.Args) == 0 || stdio.Args[0] != "mcp" || web.Type != "http" || !strings.HasPrefix(web.Headers["Authorization"], "Bearer ") {
		t.Fatalf("README configuration: %+v", conf)
	}

	bin := buildBinary(t)
	dir, _ := ingestSite(t, bin)
	args := slices.Clone(stdio.Args)
	for j := range args {
		if j > 0 && args[j-1] == "--data-dir" {
			args[j] = dir
		}
		if j > 0 && args[j-1] == "--collection" {
			args[j] = "docs" // the collection ingestSite filled
		}
	}
	cs := startMCPStdio(t, &progressLog{}, bin, args...)
	var found struct {
		Hits []struct{ URL string } `json:"hits"`
	}
	structured(t, callTool(t, cs, "search", map[string]any{"query": "port"}, nil), &found)
	if len(found.Hits) == 0 {
		t.Fatal("stdio as configured found nothing")
	}

	keys := filepath.Join(t.TempDir(), "keys.yaml")
	key := strings.TrimPrefix(web.Headers["Authorization"], "Bearer ")
	if err := os.WriteFile(keys, []byte("keys:\n  - name: readme\n    hash: "+gateway.HashKey(key)+"\n    scopes: [ask]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _ := startServe(t, "--api-keys-file", keys)
	u, err := url.Parse(web.URL)
	if err != nil || u.Host != "127.0.0.1:8080" {
		t.Fatalf("README url %q: %v", web.URL, err)
	}
	hc := &http.Client{Transport: bearer{key, http.DefaultTransport}}
	web2, err := newMCPClient(&progressLog{}).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: base + u.Path, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("HTTP as configured: %v", err)
	}
	defer web2.Close()
	structured(t, callTool(t, web2, "collections", map[string]any{}, nil), &struct{}{})
}

// TestMCPHeldDataDirHint: `kgagent mcp` on a data dir that serve holds
// points at the /mcp of the address serve really listens on (issue 21,
// item 14), not at the default --addr; on a dir another command holds, it
// names no endpoint.
func TestMCPHeldDataDirHint(t *testing.T) {
	s := startServeFull(t)
	var out, errb syncBuffer
	if code := run(context.Background(), []string{"mcp", "--data-dir", s.dir}, &out, &errb, testEnv()); code == 0 {
		t.Fatal("mcp ran on a data dir serve holds")
	}
	if msg := errb.String(); !strings.Contains(msg, "("+s.base+"/mcp)") || strings.Contains(msg, ":8080") {
		t.Fatalf("serve on %s; mcp said: %s", s.base, msg)
	}

	dir := t.TempDir()
	l, err := lockDataDir(dir, "ingest")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var errb2 syncBuffer
	if code := run(context.Background(), []string{"mcp", "--data-dir", dir}, &out, &errb2, testEnv()); code == 0 || strings.Contains(errb2.String(), "/mcp") || !strings.Contains(errb2.String(), "kgagent ingest") {
		t.Fatalf("dir held by ingest: %d %s", code, errb2.String())
	}
}
