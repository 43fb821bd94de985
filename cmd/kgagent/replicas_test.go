package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/kgagent/kgagent/gateway"
	"github.com/kgagent/kgagent/internal/poll"
)

// TestCacheInvalidatedAcrossReplicas: two serve replicas on one external
// NATS server, each with its own data dir. Replica B answers a question
// from its answer cache; a write on replica A (deleting a collection) makes
// B's next answer a fresh one within a second, although nothing changed in
// B's own stores.
func TestCacheInvalidatedAcrossReplicas(t *testing.T) {
	ns := startJetStream(t)
	a, _ := startServe(t, "--nats-url", ns.ClientURL(), "--job-secret", testJobSecret)
	b, logsB := startServe(t, "--nats-url", ns.ClientURL(), "--job-secret", testJobSecret, "--demo", "--demo-site-dir", siteDir)
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

// TestLimitsExactAcrossReplicas: two serve replicas on one external NATS
// server and one API key with a daily limit of 10: of 30 concurrent
// questions spread over both replicas exactly 10 are answered and 20 get
// 429, i.e. the limit holds in total, not per replica.
func TestLimitsExactAcrossReplicas(t *testing.T) {
	ns := startJetStream(t)
	keys := filepath.Join(t.TempDir(), "keys.yaml")
	const key = "replica-test-key"
	if err := os.WriteFile(keys, []byte("keys:\n  - name: team\n    hash: "+gateway.HashKey(key)+"\n    scopes: [ask]\n    daily_limit: 10\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var bases []string
	for range 2 {
		b, _ := startServe(t, "--nats-url", ns.ClientURL(), "--job-secret", testJobSecret, "--api-keys-file", keys)
		bases = append(bases, b)
	}
	codes := make([]int, 30)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			req, _ := http.NewRequest("POST", bases[i%2]+"/api/v1/agent", strings.NewReader(`{"question":"What port does Lumen use?"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-API-Key", key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		}(i)
	}
	wg.Wait()
	count := map[int]int{}
	for _, c := range codes {
		count[c]++
	}
	if count[200] != 10 || count[429] != 20 {
		t.Errorf("status codes %v, want 10 × 200 and 20 × 429", count)
	}
}

// TestResumeAcrossReplicas: a websocket client asks replica A, reads the
// first two frames, drops the connection, and resumes the stream on
// replica B with its last seq and the resume token: B sends every remaining
// frame exactly once, in order, to the complete one.
func TestResumeAcrossReplicas(t *testing.T) {
	ns := startJetStream(t)
	a, logsA := startServe(t, "--nats-url", ns.ClientURL(), "--job-secret", testJobSecret, "--demo", "--demo-site-dir", siteDir, "--answer-cache-size", "0")
	b, _ := startServe(t, "--nats-url", ns.ClientURL(), "--job-secret", testJobSecret)
	waitDemoIngested(t, logsA)
	dial := func(base string) *websocket.Conn {
		ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/api/v1/socket", nil)
		if err != nil {
			t.Fatal(err)
		}
		return ws
	}
	type frame struct {
		ID          string         `json:"id"`
		Seq         int64          `json:"seq"`
		Complete    bool           `json:"complete"`
		ResumeToken string         `json:"resume_token"`
		Error       map[string]any `json:"error"`
	}
	read := func(ws *websocket.Conn) frame {
		t.Helper()
		_ = ws.SetReadDeadline(time.Now().Add(20 * time.Second))
		var f frame
		if err := ws.ReadJSON(&f); err != nil {
			t.Fatal(err)
		}
		if f.Error != nil {
			t.Fatalf("error frame: %+v", f)
		}
		return f
	}
	wsA := dial(a)
	if err := wsA.WriteJSON(map[string]any{"id": "q1", "service": "agent", "request": map[string]any{"question": "How do I change the HTTP port of Lumen?"}}); err != nil {
		t.Fatal(err)
	}
	first, second := read(wsA), read(wsA)
	if first.Seq != 1 || second.Seq != 2 || first.ResumeToken == "" || second.Complete {
		t.Fatalf("first frames on A: %+v %+v", first, second)
	}
	wsA.Close()

	wsB := dial(b)
	defer wsB.Close()
	if err := wsB.WriteJSON(map[string]any{"id": "q1", "resume": map[string]any{"last_seq": 2, "token": first.ResumeToken}}); err != nil {
		t.Fatal(err)
	}
	want := int64(3)
	for {
		f := read(wsB)
		if f.ID != "q1" || f.Seq != want {
			t.Fatalf("frame from B: %+v, want seq %d", f, want)
		}
		if f.Complete {
			break
		}
		want++
	}
	t.Logf("resumed on B after seq 2: frames 3..%d, each once", want)
	// Nothing follows the complete frame.
	_ = wsB.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var extra frame
	if err := wsB.ReadJSON(&extra); err == nil {
		t.Errorf("frame after the complete one: %+v", extra)
	}
}

// testJobSecret is the job_secret the tests' processes sharing one NATS
// server set, as the README asks: it seals their jobs' tokens and their
// shared websocket streams.
const testJobSecret = "the tests' shared job secret"
