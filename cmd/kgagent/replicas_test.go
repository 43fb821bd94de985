package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/kgagent/kgagent/internal/poll"
)

// TestCacheInvalidatedAcrossReplicas: two serve replicas on one external
// NATS server, each with its own data dir. Replica B answers a question
// from its answer cache; a write on replica A (deleting a collection) makes
// B's next answer a fresh one within a second, although nothing changed in
// B's own stores.
func TestCacheInvalidatedAcrossReplicas(t *testing.T) {
	ns := startJetStream(t)
	a, _ := startServe(t, "--nats-url", ns.ClientURL())
	b, logsB := startServe(t, "--nats-url", ns.ClientURL(), "--demo", "--demo-site-dir", siteDir)
	waitDemoIngested(t, logsB)
	q := `{"question":"What is the default HTTP port of the Lumen server?"}`
	if code, m := postJSON(t, b+"/api/v1/agent", q); code != 200 {
		t.Fatalf("ask B: %d %v", code, m)
	}
	// B's own ingestion reaches the shared generation a moment after it
	// ends: ask until the answer comes from the cache.
	hits := metricValue(t, b, "kgagent_answer_cache_hits_total")
	poll.Until(t, 5*time.Second, func() error {
		postJSON(t, b+"/api/v1/agent", q)
		if h := metricValue(t, b, "kgagent_answer_cache_hits_total"); h == hits {
			return fmt.Errorf("B's answer is not cached (hits %v)", h)
		}
		return nil
	})
	hits = metricValue(t, b, "kgagent_answer_cache_hits_total")

	req, _ := http.NewRequest("DELETE", a+"/api/v1/collections/other", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("delete on A: %d", resp.StatusCode)
	}
	wrote := time.Now()
	for {
		postJSON(t, b+"/api/v1/agent", q)
		h := metricValue(t, b, "kgagent_answer_cache_hits_total")
		if h == hits {
			break // answered afresh
		}
		hits = h
		if time.Since(wrote) > time.Second {
			t.Fatalf("B still answers from its cache %s after a write on A", time.Since(wrote))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("B's cached answer retired %s after the write on A", time.Since(wrote).Round(time.Millisecond))
}
