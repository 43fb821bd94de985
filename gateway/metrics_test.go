package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestMetrics(t *testing.T) {
	f := newFixture(t, Config{})
	do(t, "POST", f.ts.URL+"/api/v1/agent", "", `{"question":"q"}`)
	do(t, "POST", f.ts.URL+"/api/v1/agent", "", `{"question":`)
	f.srv.Metrics().AddCrawlPages("indexed", 7)
	resp, err := http.Get(f.ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	body := string(data)
	for _, want := range []string{
		`kgagent_http_requests_total{route="POST /api/v1/agent",status="200"} 1`,
		`kgagent_http_requests_total{route="POST /api/v1/agent",status="400"} 1`,
		`kgagent_http_request_duration_seconds_bucket{route="POST /api/v1/agent"`,
		`kgagent_http_requests_in_flight 1`, // this request
		`kgagent_calls_total{code="OK",service="agent"} 1`,
		`kgagent_agent_iterations_sum 2`,
		`kgagent_llm_tokens_total{kind="prompt"} 10`,
		`kgagent_llm_tokens_total{kind="completion"} 5`,
		`kgagent_crawl_pages_total{outcome="indexed"} 7`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestPrivateMetrics(t *testing.T) {
	cfg := authConfig()
	cfg.PrivateMetrics = true
	f := newFixture(t, cfg)
	for _, tt := range []struct {
		token  string
		status int
	}{{"", 401}, {"ask-key", 403}, {"admin-key", 200}} {
		req, _ := http.NewRequest("GET", f.ts.URL+"/metrics", nil)
		if tt.token != "" {
			req.Header.Set("Authorization", "Bearer "+tt.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("token %q: %d, want %d", tt.token, resp.StatusCode, tt.status)
		}
	}
}

// callSeries returns the kgagent_calls_total series of the server's
// metrics, by their label text.
func callSeries(t *testing.T, base string) map[string]bool {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	out := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "kgagent_calls_total{"); ok {
			labels, _, _ := strings.Cut(rest, "}")
			out[labels] = true
		}
	}
	return out
}

// TestUnknownServicesBoundMetrics is finding 11 of issue 21: websocket
// frames naming random services are refused (ENOTFOUND) before the name
// reaches a metrics label, so they create no kgagent_calls_total series;
// the one label of refused calls is service="unknown".
func TestUnknownServicesBoundMetrics(t *testing.T) {
	f := newFixture(t, Config{})
	c := dialSocket(t, f.ts.URL, "")
	for i := 0; i < 20; i++ {
		send(t, c, fmt.Sprintf(`{"id":"r%d","service":"svc-%d-%x","request":{"question":"q"}}`, i, i, i*7919))
		fr := readFrame(t, c)
		if fr.Error == nil || fr.Error.Type != "NOT_FOUND" || !fr.Complete {
			t.Fatalf("frame for an unknown service: %+v", fr)
		}
	}
	// Run, as NATS calls it, refuses an unknown service too.
	var got []Frame
	f.srv.Run(context.Background(), Call{ID: "n1", Service: "nats-random-1"}, func(fr Frame) { got = append(got, fr) })
	if len(got) != 1 || got[0].Error == nil || got[0].Error.Type != "NOT_FOUND" {
		t.Fatalf("Run with an unknown service: %+v", got)
	}
	for labels := range callSeries(t, f.ts.URL) {
		if strings.Contains(labels, "svc-") || strings.Contains(labels, "nats-random") {
			t.Errorf("a client-chosen service became a label: kgagent_calls_total{%s}", labels)
		}
	}
	send(t, c, `{"id":"ok","service":"agent","request":{"question":"q"}}`)
	f.asker.unblock()
	readUntilComplete(t, c, "ok")
	series := callSeries(t, f.ts.URL)
	if !series[`code="OK",service="agent"`] || len(series) > 3 {
		t.Errorf("kgagent_calls_total series: %v", series)
	}
}
