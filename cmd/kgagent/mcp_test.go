package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
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

	var stderr syncBuffer
	cmd := exec.Command(bin, "mcp", "--data-dir", dir, "--collection", "docs")
	cmd.Stderr = &stderr
	prog := &progressLog{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := newMCPClient(prog).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer func() {
		if err := cs.Close(); err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("close: %v", err)
		}
	}()
	checkMCPSession(t, cs, prog, "docs", siteURL)

	// The data dir is held: a second `kgagent mcp` says where to go instead.
	out, err := exec.Command(bin, "mcp", "--data-dir", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "is in use by") || !strings.Contains(string(out), "/mcp") {
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
	wantToolError(t, callTool(t, cs, "ingest_status", map[string]any{"job_id": "nope"}, nil), "NOT_FOUND")
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}}); err == nil {
		t.Fatal("an unknown tool is not a protocol error")
	}

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
	cmd := exec.Command(bin, "mcp", "--data-dir", dir, "--allow-private-ingest")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	prog := &progressLog{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := newMCPClient(prog).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
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
		t.Fatalf("ingest: %+v\n%s", job, stderr.String())
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
