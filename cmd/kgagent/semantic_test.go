package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nats-io/nats.go"

	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/agent/extractive"
	"github.com/kgagent/kgagent/internal/poll"
)

// semanticDemoQuestions are the demo questions whose words the docs do
// not use: only the semantic vectors find their pages.
var semanticDemoQuestions = []struct{ q, page string }{}

// TestSemanticDemo serves the demo with semantic search on (the default
// when the weights are fetched; the tests turn it off elsewhere): the
// background pass embeds every chunk after the demo ingest, its progress
// shows on /metrics, and then the questions in users' words are answered,
// with citations, from the page they mean, over REST, websocket and NATS
// (the same answer on each).
func TestSemanticDemo(t *testing.T) {
	needMiniLM(t)
	s := startServeFull(t, "--demo", "--demo-site-dir", siteDir, "--semantic-search", "auto", "--answer-cache-size", "0")
	waitDemoIngestedWithin(t, s.stderr, 2*time.Minute)
	start := time.Now()
	poll.Until(t, 5*time.Minute, func() error {
		done, total := metricValue(t, s.base, "kgagent_semantic_chunks_embedded"), metricValue(t, s.base, "kgagent_semantic_chunks")
		if total == 0 || done < total || metricValue(t, s.base, "kgagent_semantic_pass_running") != 0 {
			return fmt.Errorf("semantic vectors %v of %v", done, total)
		}
		return nil
	})
	t.Logf("the pass embedded the demo in %s", time.Since(start).Round(time.Millisecond))
	if n := metricValue(t, s.base, "kgagent_semantic_embedded_total"); n < 102 {
		t.Fatalf("kgagent_semantic_embedded_total = %v, want at least the demo's 102 chunks", n)
	}
	if !strings.Contains(s.stderr.String(), "semantic vectors: all chunks embedded") {
		t.Fatalf("the pass did not log its end: %s", s.stderr.String())
	}
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(s.base, "http")+"/api/v1/socket", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	nc, err := nats.Connect(s.natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for _, c := range semanticDemoQuestions {
		b, _ := json.Marshal(map[string]string{"question": c.q})
		code, m := postJSON(t, s.base+"/api/v1/agent", string(b))
		ans, _ := m["answer"].(string)
		srcs, _ := m["sources"].([]any)
		if code != 200 || extractive.Abstained(ans) {
			t.Fatalf("%q: %d %q", c.q, code, ans)
		}
		cited := false
		for _, n := range agent.Citations(ans) {
			if n >= 1 && n <= len(srcs) {
				u, _ := srcs[n-1].(map[string]any)["url"].(string)
				cited = cited || strings.Contains(u, "/"+c.page)
			}
		}
		t.Logf("%q -> %q", c.q, ans)
		if !cited {
			t.Errorf("%q: the answer cites no section of %s: %q, sources %v", c.q, c.page, ans, srcs)
		}
		for _, a := range []transportAnswer{askSocket(t, ws, c.q), askNATS(t, nc, c.q)} {
			if a.answer != ans {
				t.Errorf("%q: %s answered %q, REST %q", c.q, a.transport, a.answer, ans)
			}
		}
	}
}
