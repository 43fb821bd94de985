package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kgagent/kgagent/agent/extractive"
)

// backupQuestion is answered by the demo site's backup guide; it must keep
// answering after a failed ingest into the same collection.
const backupQuestion = "How do I back up a Lumen database?"

// demoSiteURL is the demo site's base URL, from serve's "demo site
// ingested" log line.
func demoSiteURL(t *testing.T, logs string) string {
	t.Helper()
	m := regexp.MustCompile(`demo site ingested"? site=(http://\S+)`).FindStringSubmatch(logs)
	if m == nil {
		t.Fatalf("no demo site URL in the log: %s", logs)
	}
	return m[1]
}

// defaultDocuments is the document count of collection default.
func defaultDocuments(t *testing.T, base string) int {
	t.Helper()
	code, body := get(t, base+"/api/v1/collections")
	var cs struct {
		Collections []struct {
			Name      string `json:"name"`
			Documents int    `json:"documents"`
		} `json:"collections"`
	}
	if err := json.Unmarshal([]byte(body), &cs); code != 200 || err != nil {
		t.Fatalf("GET /api/v1/collections: %d %s", code, body)
	}
	for _, c := range cs.Collections {
		if c.Name == "default" {
			return c.Documents
		}
	}
	return 0
}

// checkStillAnswers asks the backup question over REST: it must answer,
// not abstain.
func checkStillAnswers(t *testing.T, base string) {
	t.Helper()
	code, m := postJSON(t, base+"/api/v1/agent", `{"question":"`+backupQuestion+`"}`)
	ans, _ := m["answer"].(string)
	if code != 200 || ans == "" || extractive.Abstained(ans) {
		t.Fatalf("%q after the failed ingest: %d %q", backupQuestion, code, ans)
	}
}

// TestFailedIngestKeepsCollectionREST is issue 21's data loss over REST:
// serve --demo (the sample site in collection default), then POST
// /api/v1/corpora with one demo URL, which the API refuses to crawl
// (FORBIDDEN: loopback). The job fails, removes nothing, says it kept the
// pages and why, and the demo still answers.
func TestFailedIngestKeepsCollectionREST(t *testing.T) {
	base, logs := startServe(t, "--demo", "--demo-site-dir", siteDir)
	waitDemoIngested(t, logs)
	site := demoSiteURL(t, logs.String())
	before := defaultDocuments(t, base)
	if before < 30 {
		t.Fatalf("the demo collection holds %d documents", before)
	}
	checkStillAnswers(t, base)

	id := submit(t, base, `{"collection":"default","urls":["`+site+`/faq.html"]}`)
	st := waitJob(t, base, id)
	c, _ := st["counters"].(map[string]any)
	errs, _ := st["errors"].([]any)
	if st["state"] != "failed" || len(errs) != 1 || !strings.Contains(toJSON(errs[0]), "FORBIDDEN") {
		t.Fatalf("job: %v", st)
	}
	if c["removed"] != 0.0 || c["kept"] != float64(before) {
		t.Fatalf("job removed %v and kept %v of %d pages: %v", c["removed"], c["kept"], before, st)
	}
	reason, _ := st["kept_reason"].(string)
	if !strings.Contains(reason, "outside this spec's URLs") || !strings.Contains(reason, "failed") {
		t.Errorf("kept_reason %q does not say why", reason)
	}
	if after := defaultDocuments(t, base); after != before {
		t.Fatalf("collection default went from %d to %d documents", before, after)
	}
	checkStillAnswers(t, base)
}

// TestFailedIngestKeepsCollectionMCP is the same case through the MCP
// ingest tool over Streamable HTTP; it also checks that the tool's
// annotations and description say it can remove pages, and when.
func TestFailedIngestKeepsCollectionMCP(t *testing.T) {
	base, logs := startServe(t, "--demo", "--demo-site-dir", siteDir)
	waitDemoIngested(t, logs)
	site := demoSiteURL(t, logs.String())
	before := defaultDocuments(t, base)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := newMCPClient(&progressLog{}).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ingest *sdk.Tool
	for _, tl := range tools.Tools {
		if tl.Name == "ingest" {
			ingest = tl
		}
	}
	if ingest == nil || ingest.Annotations == nil || ingest.Annotations.DestructiveHint == nil || !*ingest.Annotations.DestructiveHint {
		t.Fatalf("ingest tool does not say it is destructive: %+v", ingest)
	}
	if d := ingest.Description; !strings.Contains(d, "404 or 410") || !strings.Contains(d, "complete crawl") || !strings.Contains(d, "never removed") {
		t.Errorf("ingest description does not say when pages are removed: %q", d)
	}

	res := callTool(t, cs, "ingest", map[string]any{"collection": "default", "urls": []string{site + "/faq.html"}, "wait": true}, nil)
	var job struct {
		State      string         `json:"state"`
		Counters   map[string]any `json:"counters"`
		KeptReason string         `json:"kept_reason"`
		Errors     []struct {
			Code string `json:"code"`
		} `json:"errors"`
	}
	structured(t, res, &job)
	if job.State != "failed" || len(job.Errors) != 1 || job.Errors[0].Code != "FORBIDDEN" {
		t.Fatalf("job: %+v", job)
	}
	if job.Counters["removed"] != 0.0 || job.Counters["kept"] != float64(before) || !strings.Contains(job.KeptReason, "outside this spec's URLs") {
		t.Fatalf("job removed %v, kept %v of %d (%q)", job.Counters["removed"], job.Counters["kept"], before, job.KeptReason)
	}
	if after := defaultDocuments(t, base); after != before {
		t.Fatalf("collection default went from %d to %d documents", before, after)
	}
	checkStillAnswers(t, base)
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
