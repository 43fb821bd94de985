package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent/internal/poll"
)

// waitJob polls GET /api/v1/jobs/{id} until the job is finished.
func waitJob(t *testing.T, base, id string) map[string]any {
	t.Helper()
	var st map[string]any
	poll.Until(t, 60*time.Second, func() error {
		resp, err := http.Get(base + "/api/v1/jobs/" + id)
		if err != nil {
			t.Fatal(err)
		}
		st = nil
		_ = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if j, ok := st["job"].(map[string]any); ok {
			st = j
		}
		switch st["state"] {
		case "succeeded", "failed", "canceled":
			return nil
		}
		return fmt.Errorf("job %s is not finished: %v", id, st)
	})
	return st
}

func submit(t *testing.T, base, body string) string {
	t.Helper()
	resp, err := http.Post(base+"/api/v1/corpora", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&st)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /api/v1/corpora: %d %v", resp.StatusCode, st)
	}
	if j, ok := st["job"].(map[string]any); ok {
		st = j
	}
	id, _ := st["id"].(string)
	if id == "" {
		t.Fatalf("no job id in %v", st)
	}
	return id
}

// TestIngestionJobOverAPI submits a corpus over REST: the job runs on the
// JetStream queue, its status is readable, the pages become searchable and
// /metrics counts them, and the job leaves current snapshots of the
// collection's search copy and graph name index behind.
func TestIngestionJobOverAPI(t *testing.T) {
	site := httptest.NewServer(http.FileServer(http.Dir(siteDir)))
	defer site.Close()
	srv := startServeFull(t, "--allow-private-ingest")
	base := srv.base
	id := submit(t, base, `{"collection":"lumen","urls":["`+site.URL+`/*"],"exclude":["*/api/*"]}`)
	st := waitJob(t, base, id)
	c, _ := st["counters"].(map[string]any)
	if st["state"] != "succeeded" || c["indexed"].(float64) < 20 || c["failed"].(float64) != 0 {
		t.Fatalf("job: %v", st)
	}
	for _, snap := range []string{"index.db-snap", "graph.db-snap"} {
		if _, err := os.Stat(filepath.Join(srv.dir, snap, hex.EncodeToString([]byte("lumen")))); err != nil {
			t.Errorf("no snapshot after the job: %v", err)
		}
	}

	code, m := postJSON(t, base+"/api/v1/search", `{"query":"default retention period","collection":"lumen"}`)
	hits, _ := m["hits"].([]any)
	if code != 200 || len(hits) == 0 {
		t.Fatalf("search after job: %d %v", code, m)
	}
	if len(hits) != 10 && len(hits) == 0 {
		t.Fatalf("search without k: %d hits", len(hits))
	}
	for _, h := range hits {
		if u := h.(map[string]any)["url"].(string); strings.Contains(u, "/api/") {
			t.Fatalf("excluded page indexed: %s", u)
		}
	}
	_, body := get(t, base+"/metrics")
	if !strings.Contains(body, `kgagent_crawl_pages_total{outcome="indexed"}`) {
		t.Fatalf("/metrics has no crawl page counter:\n%s", body)
	}
}

// TestAPIIngestionRefusesLoopback: without allow_private_ingest, a corpus on
// a loopback address fails page by page with a clear reason and indexes
// nothing.
func TestAPIIngestionRefusesLoopback(t *testing.T) {
	site := httptest.NewServer(http.FileServer(http.Dir(siteDir)))
	defer site.Close()
	base, _ := startServe(t)
	id := submit(t, base, `{"collection":"ssrf","urls":["`+site.URL+`/*"]}`)
	st := waitJob(t, base, id)
	c, _ := st["counters"].(map[string]any)
	if c["indexed"].(float64) != 0 {
		t.Fatalf("loopback pages were indexed: %v", st)
	}
	b, _ := json.Marshal(st)
	if !strings.Contains(strings.ToLower(string(b)), "loopback") && !strings.Contains(strings.ToLower(string(b)), "private") {
		t.Fatalf("job status does not say why: %s", b)
	}
}
