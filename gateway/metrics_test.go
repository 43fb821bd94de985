package gateway

import (
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
