package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent/gateway"
	"github.com/kgagent/kgagent/internal/testdep"
)

// Third-party clients, installed from PyPI and npm by
// deploy/testenv/80-pyclients.sh and 81-mcpnode.sh, run against a real
// serve (or `kgagent mcp`) the way their users run them (issue 21).

// pyClients returns the python of KGAGENT_TEST_PYCLIENTS (a venv with
// openai, langchain-openai, fastmcp and gql), or skips (fails with
// KGAGENT_REQUIRE_PYCLIENTS=1).
func pyClients(t *testing.T) string {
	t.Helper()
	py := os.Getenv("KGAGENT_TEST_PYCLIENTS")
	if py == "" || exec.Command(py, "-c", "import openai, langchain_openai, fastmcp, gql").Run() != nil {
		testdep.Missing(t, "KGAGENT_REQUIRE_PYCLIENTS",
			fmt.Sprintf("KGAGENT_TEST_PYCLIENTS (%q) is not a python with openai, langchain-openai, fastmcp and gql (deploy/testenv/80-pyclients.sh installs one)", py))
	}
	return py
}

// runReport runs a client program and decodes the JSON object it prints.
func runReport(t *testing.T, v any, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stderr syncBuffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\nstdout: %s\nstderr: %s", name, args, err, out, stderr.String())
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("%s printed %q: %v\nstderr: %s", name, out, err, stderr.String())
	}
}

// keysFile writes an API keys file with one key of the given scopes.
func keysFile(t *testing.T, key string, scopes string) string {
	t.Helper()
	keys := filepath.Join(t.TempDir(), "keys.yaml")
	if err := os.WriteFile(keys, []byte("keys:\n  - name: client\n    hash: "+gateway.HashKey(key)+"\n    scopes: ["+scopes+"]\n    daily_limit: 100000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return keys
}

// apiError is what testdata/openai_clients.py reports for a failed call.
type apiError struct {
	Error   string `json:"error"`
	Status  int    `json:"status"`
	Code    string `json:"code"`
	Param   string `json:"param"`
	Type    string `json:"type"`
	Message string `json:"message"`
}

// TestPythonAPIClients drives serve --demo's /v1 with the `openai` SDK and
// langchain-openai (testdata/openai_clients.py) and its /graphql with gql
// (testdata/gql_client.py), with an API key.
func TestPythonAPIClients(t *testing.T) {
	py := pyClients(t)
	base, logs := startServe(t, "--demo", "--demo-site-dir", siteDir, "--api-keys-file", keysFile(t, "py-key", "ask"))
	waitDemoIngested(t, logs)

	t.Run("openai", func(t *testing.T) {
		var r map[string]json.RawMessage
		runReport(t, &r, py, "testdata/openai_clients.py", base, "py-key")
		get := func(key string, v any) {
			t.Helper()
			if err := json.Unmarshal(r[key], v); err != nil {
				t.Fatalf("%s: %s (%v)", key, r[key], err)
			}
		}
		var models []string
		var retrieved string
		get("models", &models)
		get("retrieve", &retrieved)
		if len(models) < 2 || models[0] != "kgagent" || retrieved != "kgagent" {
			t.Errorf("models %s, retrieve %s", r["models"], r["retrieve"])
		}
		var plain struct {
			Content, Finish string
			Usage, Sources  int
		}
		get("plain", &plain)
		if !strings.Contains(plain.Content, "8086") || plain.Finish != "stop" || plain.Usage == 0 || plain.Sources == 0 {
			t.Errorf("chat completion: %s", r["plain"])
		}
		var stream, withUsage struct {
			Content, Finish string
			Usage           *int
			Chunks          int
			UsageChunks     int `json:"usage_chunks"`
		}
		get("stream", &stream)
		get("stream_usage", &withUsage)
		if stream.Content != plain.Content || stream.Finish != "stop" || stream.Usage != nil || stream.Chunks < 3 {
			t.Errorf("stream: %s\nplain: %s", r["stream"], plain.Content)
		}
		if withUsage.Content != plain.Content || withUsage.Usage == nil || *withUsage.Usage == 0 || withUsage.UsageChunks != 1 {
			t.Errorf("stream with include_usage: %s", r["stream_usage"])
		}
		var tools apiError
		get("tools", &tools)
		if tools.Error != "BadRequestError" || tools.Status != 400 || tools.Code != "unsupported_parameter" || tools.Param != "tools" || tools.Type != "invalid_request_error" {
			t.Errorf("tools: %s", r["tools"])
		}

		var invoke, streamed string
		get("lc_invoke", &invoke)
		get("lc_stream", &streamed)
		if invoke != plain.Content || streamed != plain.Content {
			t.Errorf("langchain invoke %s, stream %s", r["lc_invoke"], r["lc_stream"])
		}
		for _, method := range []string{"lc_structured", "lc_json_mode"} {
			var doc struct {
				Answer  string
				Sources []struct{ URL, Title string }
			}
			get(method, &doc)
			if !strings.Contains(doc.Answer, "8086") || len(doc.Sources) == 0 || !strings.HasPrefix(doc.Sources[0].URL, "http://127.0.0.1:") {
				t.Errorf("langchain with_structured_output (%s): %s", method, r[method])
			}
		}
		var fc apiError
		get("lc_function_calling", &fc)
		if fc.Status != 400 || fc.Code != "unsupported_parameter" || fc.Param != "tools" || !strings.Contains(fc.Message, "response_format json_schema") {
			t.Errorf("langchain with_structured_output(function_calling): %s", r["lc_function_calling"])
		}
	})

	t.Run("gql", func(t *testing.T) {
		var r struct {
			Types, Mutations []string
			Agents           []struct{ Name string }
			SessionTitle     string   `json:"session_title"`
			BadQuery         string   `json:"bad_query"`
			GetStatus        int      `json:"get_status"`
			GetSessions      []string `json:"get_sessions"`
		}
		runReport(t, &r, py, "testdata/gql_client.py", base, "py-key")
		if strings.Join(r.Types, ",") != "Agent,Boolean,Float,ID,Int,Message,Mutation,Query,Session,Source,String" ||
			strings.Join(r.Mutations, ",") != "createSession,deleteSession,postMessage,registerAgent" {
			t.Errorf("schema fetched by introspection: types %v, mutations %v", r.Types, r.Mutations)
		}
		if len(r.Agents) == 0 || r.SessionTitle != "gql" || !strings.Contains(r.BadQuery, "Cannot query field 'nothing'") {
			t.Errorf("gql: %+v", r)
		}
		if r.GetStatus != 200 || len(r.GetSessions) != 1 || r.GetSessions[0] != "gql" {
			t.Errorf("GET /graphql: %d %v", r.GetStatus, r.GetSessions)
		}
	})
}

// fastmcpReport is what testdata/fastmcp_client.py prints.
type fastmcpReport struct {
	Tools     []string `json:"tools"`
	Resources []string `json:"resources"`
	Calls     map[string]struct {
		Error      bool           `json:"error"`
		Text       string         `json:"text"`
		Structured map[string]any `json:"structured"`
	} `json:"calls"`
	Links     []string `json:"links"`
	CitedText string   `json:"cited_text"`
}

// TestFastMCPClient drives kgagent with fastmcp (PyPI) over stdio
// (`kgagent mcp`; fastmcp 4 refused the "cacheScope":"" resources/list
// sent before issue 21) and over serve's /mcp: it lists the tools and the
// resources, calls every tool, and reads the section ask cites.
func TestFastMCPClient(t *testing.T) {
	py := pyClients(t)
	bin := buildBinary(t)
	// What ingest is asked to crawl: a page that is gone, in a collection
	// of its own, so the job fails and nothing else changes.
	gone := httptest.NewServer(http.NotFoundHandler())
	defer gone.Close()
	check := func(t *testing.T, r fastmcpReport, coll string) {
		t.Helper()
		if strings.Join(r.Tools, ",") != "ask,collections,graph,ingest,ingest_status,search" {
			t.Fatalf("tools %v", r.Tools)
		}
		if len(r.Resources) < 10 || r.Resources[0] != "kgagent://collections/"+coll {
			t.Errorf("resources (%d): %.300v", len(r.Resources), r.Resources)
		}
		for _, name := range []string{"collections", "search", "graph", "ask", "ingest", "ingest_status"} {
			c, ok := r.Calls[name]
			if !ok || c.Error {
				t.Errorf("%s: called %v, error %v: %s", name, ok, c.Error, c.Text)
			}
		}
		if hits, _ := r.Calls["search"].Structured["hits"].([]any); len(hits) == 0 {
			t.Errorf("search found nothing: %s", r.Calls["search"].Text)
		}
		if facts, _ := r.Calls["graph"].Structured["triples"].([]any); len(facts) == 0 {
			t.Errorf("graph found no facts about lumen backup: %s", r.Calls["graph"].Text)
		}
		if !strings.Contains(r.Calls["ask"].Text, "8086") || len(r.Links) == 0 || !strings.Contains(r.CitedText, "8086") {
			t.Errorf("ask: %q, links %v, cited text %q", r.Calls["ask"].Text, r.Links, r.CitedText)
		}
		job := r.Calls["ingest"].Structured["job_id"]
		if job == nil || r.Calls["ingest_status"].Structured["job_id"] != job || r.Calls["ingest"].Structured["collection"] != "scratch" {
			t.Errorf("ingest %v, then ingest_status %v", r.Calls["ingest"].Structured, r.Calls["ingest_status"].Structured)
		}
	}
	t.Run("stdio", func(t *testing.T) {
		dir, _ := ingestSite(t, bin)
		var r fastmcpReport
		runReport(t, &r, py, "testdata/fastmcp_client.py", "stdio", gone.URL+"/gone.html", bin, "mcp", "--data-dir", dir, "--collection", "docs", "--allow-private-ingest")
		check(t, r, "docs")
	})
	t.Run("http", func(t *testing.T) {
		base, logs := startServe(t, "--demo", "--demo-site-dir", siteDir, "--api-keys-file", keysFile(t, "fm-key", "ask, ingest"), "--allow-private-ingest")
		waitDemoIngested(t, logs)
		var r fastmcpReport
		runReport(t, &r, py, "testdata/fastmcp_client.py", "http", gone.URL+"/gone.html", base+"/mcp", "fm-key")
		check(t, r, "default")
	})
}

// mcpNode returns Node 22 and the entry points of the MCP Inspector CLI
// and the MCP conformance suite (deploy/testenv/81-mcpnode.sh installs
// them), or skips (fails with KGAGENT_REQUIRE_MCP_NODE=1).
func mcpNode(t *testing.T) (node, inspector, conformance string) {
	t.Helper()
	node = os.Getenv("KGAGENT_TEST_NODE")
	bin := func(pkgDir, name string) string {
		var pkg struct {
			Bin map[string]string `json:"bin"`
		}
		b, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
		if err != nil || json.Unmarshal(b, &pkg) != nil || pkg.Bin[name] == "" {
			return ""
		}
		return filepath.Join(pkgDir, pkg.Bin[name])
	}
	inspector = bin(os.Getenv("KGAGENT_TEST_MCP_INSPECTOR"), "mcp-inspector")
	conformance = bin(os.Getenv("KGAGENT_TEST_MCP_CONFORMANCE"), "conformance")
	if node == "" || exec.Command(node, "--version").Run() != nil || inspector == "" || conformance == "" {
		testdep.Missing(t, "KGAGENT_REQUIRE_MCP_NODE",
			"KGAGENT_TEST_NODE, KGAGENT_TEST_MCP_INSPECTOR and KGAGENT_TEST_MCP_CONFORMANCE do not name Node 22 and the npm packages @modelcontextprotocol/inspector and @modelcontextprotocol/conformance (deploy/testenv/81-mcpnode.sh installs them)")
	}
	return node, inspector, conformance
}

// nodeCmd runs node with args, HOME in a temp dir (the Inspector keeps a
// catalog there), and returns stdout, stderr and the exit code.
func nodeCmd(t *testing.T, node string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "MCP_CATALOG_PATH="+filepath.Join(home, "mcp.json"), "NO_COLOR=1")
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return stdout.String(), stderr.String(), code
}

// TestMCPInspectorCLI runs the MCP Inspector's CLI (npm
// @modelcontextprotocol/inspector) against `kgagent mcp` (stdio) and
// serve's /mcp with a key: tools/list with --strict reports no schema
// portability problem at all (no error, no warning), and resources/list,
// resources/read and tools/call answer.
func TestMCPInspectorCLI(t *testing.T) {
	node, inspector, _ := mcpNode(t)
	bin := buildBinary(t)
	dir, _ := ingestSite(t, bin)
	base, logs := startServe(t, "--demo", "--demo-site-dir", siteDir, "--api-keys-file", keysFile(t, "insp-key", "ask"))
	waitDemoIngested(t, logs)
	targets := map[string][]string{
		"stdio": {"--", bin, "mcp", "--data-dir", dir, "--collection", "docs"},
		"http":  {"--transport", "http", "--header", "Authorization: Bearer insp-key", "--", base + "/mcp"},
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			run := func(args ...string) map[string]any {
				t.Helper()
				out, errOut, code := nodeCmd(t, node, append(append([]string{inspector, "--cli"}, args...), target...)...)
				var m map[string]any
				if code != 0 || json.Unmarshal([]byte(out), &m) != nil {
					t.Fatalf("inspector %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
				}
				for _, l := range strings.Split(errOut, "\n") {
					if strings.HasPrefix(l, "Warning:") || strings.HasPrefix(l, "Error:") {
						t.Errorf("inspector %v reports: %s", args, errOut)
						break
					}
				}
				return m
			}
			tools, _ := run("--strict", "--method", "tools/list")["tools"].([]any)
			if len(tools) != 6 {
				t.Errorf("tools/list: %v", tools)
			}
			res, _ := run("--method", "resources/list")["resources"].([]any)
			if len(res) < 2 {
				t.Fatalf("resources/list: %v", res)
			}
			uri := res[1].(map[string]any)["uri"].(string)
			if c, _ := run("--method", "resources/read", "--uri", uri)["contents"].([]any); len(c) != 1 || !strings.Contains(fmt.Sprint(c), "Source: http://127.0.0.1:") {
				t.Errorf("resources/read %s: %v", uri, c)
			}
			call := run("--method", "tools/call", "--tool-name", "search", "--tool-arg", "query=default port", "k=2")
			if hits, _ := call["structuredContent"].(map[string]any)["hits"].([]any); call["isError"] == true || len(hits) != 2 {
				t.Errorf("tools/call search: %v", call)
			}
		})
	}
}

// conformanceNotApplicable are the scenarios of the MCP conformance suite
// that need fixtures of the suite's reference server which kgagent, a
// documentation server, does not have, and why; each must fail for that
// reason only (the error the suite reports names what is missing).
var conformanceNotApplicable = map[string]string{
	"completion-complete":           "method not found",      // no argument completion offered
	"tools-call-simple-text":        `unknown tool "test_`,   // the suite's test_* tools
	"tools-call-image":              `unknown tool "test_`,   //
	"tools-call-audio":              `unknown tool "test_`,   //
	"tools-call-embedded-resource":  `unknown tool "test_`,   //
	"tools-call-mixed-content":      `unknown tool "test_`,   //
	"tools-call-with-logging":       `unknown tool "test_`,   //
	"tools-call-error":              `unknown tool "test_`,   //
	"tools-call-with-progress":      `unknown tool "test_`,   //
	"tools-call-sampling":           `unknown tool "test_`,   //
	"tools-call-elicitation":        `unknown tool "test_`,   //
	"elicitation-sep1034-defaults":  `unknown tool "test_`,   //
	"elicitation-sep1330-enums":     `unknown tool "test_`,   //
	"resources-read-text":           "Resource not found",    // the suite's test:// resources
	"resources-read-binary":         "Resource not found",    //
	"resources-templates-read":      "Resource not found",    //
	"resources-subscribe":           "method not found",      // no resource subscriptions offered
	"resources-unsubscribe":         "method not found",      //
	"prompts-get-simple":            `unknown prompt "test_`, // kgagent has no prompts
	"prompts-get-with-args":         `unknown prompt "test_`, //
	"prompts-get-embedded-resource": `unknown prompt "test_`, //
	"prompts-get-with-image":        `unknown prompt "test_`, //
}

// conformanceDir matches the directory of one scenario's results:
// server-<scenario>-<timestamp>.
var conformanceDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T`)

// TestMCPConformance runs the official MCP conformance suite (npm
// @modelcontextprotocol/conformance, server scenarios, active suite)
// against serve's /mcp: every scenario passes but those named in
// conformanceNotApplicable, which fail only for the fixture they need.
func TestMCPConformance(t *testing.T) {
	node, _, conformance := mcpNode(t)
	base, _ := startServe(t) // open (no keys): the suite sends no credentials
	out := t.TempDir()
	stdout, stderr, code := nodeCmd(t, node, conformance, "server", "--url", base+"/mcp", "-o", out)
	if code == -1 {
		t.Fatalf("conformance did not run: %s\n%s", stdout, stderr)
	}
	dirs, _ := os.ReadDir(out)
	passed := 0
	seen := map[string]bool{}
	for _, d := range dirs {
		m := conformanceDir.FindStringSubmatch(d.Name())
		if m == nil {
			continue
		}
		name := m[1]
		b, err := os.ReadFile(filepath.Join(out, d.Name(), "checks.json"))
		var checks []struct {
			ID, Status, ErrorMessage string
		}
		if err != nil || json.Unmarshal(b, &checks) != nil || len(checks) == 0 {
			t.Errorf("%s: no checks (%v)", name, err)
			continue
		}
		seen[name] = true
		failed := []string{}
		for _, c := range checks {
			if c.Status == "FAILURE" {
				failed = append(failed, c.ID+": "+c.ErrorMessage)
			}
		}
		why, na := conformanceNotApplicable[name]
		switch {
		case !na && len(failed) > 0:
			t.Errorf("conformance scenario %s failed: %s", name, strings.Join(failed, "; "))
		case !na:
			passed++
		case len(failed) == 0:
			t.Errorf("conformance scenario %s, listed as not applicable, passes: take it off the list", name)
		case !strings.Contains(strings.Join(failed, "; "), why):
			t.Errorf("conformance scenario %s (not applicable: %s) failed otherwise: %s", name, why, strings.Join(failed, "; "))
		}
	}
	for name := range conformanceNotApplicable {
		if !seen[name] {
			t.Errorf("not-applicable scenario %s did not run", name)
		}
	}
	if passed < 8 {
		t.Errorf("only %d scenarios passed\n%s\n%s", passed, stdout, stderr)
	}
	t.Logf("conformance: %d scenarios passed, %d not applicable", passed, len(conformanceNotApplicable))
}
