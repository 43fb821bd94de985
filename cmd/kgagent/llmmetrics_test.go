package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kgagent/kgagent/openai/openaitest"
)

// sampleSum adds up every sample of a metric whose labels contain match.
func sampleSum(body, name, match string) float64 {
	var sum float64
	for _, m := range regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+`(\{[^}]*\})? (\S+)$`).FindAllStringSubmatch(body, -1) {
		if strings.Contains(m[1], match) {
			v, _ := strconv.ParseFloat(m[2], 64)
			sum += v
		}
	}
	return sum
}

// TestLLMObservability serves the demo with an OpenAI-compatible stand-in
// LLM that first writes a malformed step: /metrics counts the calls, their
// tokens, the malformed output and the runs by outcome (a failed run too),
// and the debug log has a line per call.
func TestLLMObservability(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Reply("I think the port is somewhere"),
		openaitest.Reply("Ask Func[fixie_query_corpus]: default port").WithUsage(300, 8),
		openaitest.Reply("A: The default port is 8086 [1].").WithUsage(500, 9),
	)
	base, logs := startServe(t, "--demo", "--demo-site-dir", siteDir, "--log-level", "debug",
		"--llm", "openai", "--llm-base-url", srv.URL, "--llm-model", "scripted", "--answer-cache-size", "0", "--llm-protocol", "text")
	waitDemoIngested(t, logs)
	code, ans := postJSON(t, base+"/api/v1/agent", `{"question":"What is the default HTTP port of the Lumen server?"}`)
	if code != 200 || !strings.Contains(ans["answer"].(string), "8086") {
		t.Fatalf("%d %v", code, ans)
	}
	// The script is spent: the next run fails and is counted.
	if code, _ := postJSON(t, base+"/api/v1/agent", `{"question":"And the gRPC port?"}`); code == 200 {
		t.Fatalf("a run with a failing LLM answered")
	}
	body := scrape(t, base)
	if n := sampleSum(body, "kgagent_llm_call_duration_seconds_count", ""); n < 4 {
		t.Errorf("%v LLM calls observed, want 4 or more:\n%s", n, body)
	}
	if n := sampleSum(body, "kgagent_llm_call_tokens_sum", `kind="prompt"`); n < 800 {
		t.Errorf("prompt tokens %v, want 800 or more", n)
	}
	if n := sampleSum(body, "kgagent_llm_malformed_outputs_total", ""); n != 1 {
		t.Errorf("malformed outputs %v, want 1", n)
	}
	if ok, failed := sampleSum(body, "kgagent_agent_runs_total", `outcome="ok"`), sampleSum(body, "kgagent_agent_runs_total", ""); ok != 1 || failed != 2 {
		t.Errorf("runs ok %v, all %v, want 1 and 2", ok, failed)
	}
	if n := sampleSum(body, "kgagent_agent_iterations_count", ""); n != 2 {
		t.Errorf("iterations histogram has %v runs, want 2 (the failed one too)", n)
	}
	l := logs.String()
	if !strings.Contains(l, "llm call") || !strings.Contains(l, "prompt_tokens=300") || !strings.Contains(l, "malformed model output") {
		t.Errorf("debug log lacks the LLM call lines:\n%s", l)
	}
}
