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
