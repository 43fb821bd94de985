package main

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent/internal/poll"
)

// scrape returns the server's /metrics page.
func scrape(t *testing.T, base string) string {
	t.Helper()
	code, body := get(t, base+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	return body
}

// metricValue reads one unlabelled sample from /metrics.
func metricValue(t *testing.T, base, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(scrape(t, base))
	if m == nil {
		t.Fatalf("/metrics has no %s", name)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestAnswerCacheOverREST asks the served demo the same question twice: the
// second answer comes from the answer cache (the metrics say so) and is the
// same. Deleting the collection changes the stores, so the next ask is not
// answered from the cache: it finds nothing to cite.
func TestAnswerCacheOverREST(t *testing.T) {
	base, logs := startServe(t, "--demo", "--demo-site-dir", siteDir)
	waitDemoIngested(t, logs)
	q := `{"question":"What is the default HTTP port of the Lumen server?"}`
	code, first := postJSON(t, base+"/api/v1/agent", q)
	if srcs, _ := first["sources"].([]any); code != 200 || len(srcs) == 0 {
		t.Fatalf("no answer with sources: %d %v", code, first)
	}
	hits := metricValue(t, base, "kgagent_answer_cache_hits_total")
	_, again := postJSON(t, base+"/api/v1/agent", q)
	if again["answer"] != first["answer"] || len(again["sources"].([]any)) != len(first["sources"].([]any)) {
		t.Fatalf("cached answer differs:\n%v\n%v", first, again)
	}
	if h := metricValue(t, base, "kgagent_answer_cache_hits_total"); h != hits+1 {
		t.Fatalf("cache hits %v after asking again, want %v", h, hits+1)
	}
	hits++

	req, _ := http.NewRequest("DELETE", base+"/api/v1/collections/default", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("delete collection: %d", resp.StatusCode)
	}
	code, after := postJSON(t, base+"/api/v1/agent", q)
	if h := metricValue(t, base, "kgagent_answer_cache_hits_total"); h != hits {
		t.Errorf("answered from the cache after the collection was deleted (hits %v)", h)
	}
	if srcs, _ := after["sources"].([]any); code == 200 && len(srcs) > 0 && strings.Contains(after["answer"].(string), "8086") {
		t.Errorf("answer still cites the deleted collection: %v", after)
	}
}

// waitDemoIngested waits (60 s at most) until serve --demo logged that the
// sample site is ingested. The ingest takes 0.4-1.5 s on a quiet box; the
// limit is for a -race build on two loaded cores, where 15 s once ran out.
func waitDemoIngested(t *testing.T, logs *syncBuffer) {
	t.Helper()
	waitDemoIngestedWithin(t, logs, 60*time.Second)
}

// waitDemoIngestedWithin is waitDemoIngested with another time limit.
func waitDemoIngestedWithin(t *testing.T, logs *syncBuffer, limit time.Duration) {
	t.Helper()
	poll.Until(t, limit, func() error {
		if !strings.Contains(logs.String(), "demo site ingested") {
			return fmt.Errorf("the demo site is not ingested yet; serve logged: %s", logs.String())
		}
		return nil
	})
}
