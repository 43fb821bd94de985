package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/internal/testdep"
)

// ollamaServer returns the base URL (ending in /v1) and model of the real
// Ollama server make test starts (deploy/testenv/70-ollama.sh).
func ollamaServer(t *testing.T) (string, string) {
	t.Helper()
	return testdep.Env(t, "KGAGENT_TEST_OLLAMA_URL", "KGAGENT_REQUIRE_OLLAMA", "KGAGENT_TEST_OLLAMA_URL not set: no Ollama server (make test starts one)"),
		testdep.Env(t, "KGAGENT_TEST_OLLAMA_MODEL", "KGAGENT_REQUIRE_OLLAMA", "KGAGENT_TEST_OLLAMA_MODEL not set: no Ollama model")
}

// ollamaProtocols are the step protocols the server takes for model: json
// and text always; tools when a request that offers one is accepted.
func ollamaProtocols(t *testing.T, base, model string) []string {
	t.Helper()
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}],"max_tokens":1,
		"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"input":{"type":"string"}}}}}]}`, model)
	resp, err := http.Post(base+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	out := []string{agent.ProtocolJSON, agent.ProtocolText}
	if resp.StatusCode == 200 {
		out = append([]string{agent.ProtocolTools}, out...)
	}
	return out
}

// ollamaRun is what one question over one transport ended with.
type ollamaRun struct {
	answer     string
	sources    int
	iterations int
	err        string
	took       time.Duration
}

// TestOllamaDemoQuestions serves the demo with a real small LLM (SmolLM2-135M
// on Ollama) in every step protocol the server takes and asks demo questions
// over REST and the websocket. It asserts what must hold whatever the model
// says: each run ends within the iteration limit and the question's
// deadline with an answer, and every citation in it names a source of the
// answer; it logs, not asserts, whether the answer is right.
func TestOllamaDemoQuestions(t *testing.T) {
	base, model := ollamaServer(t)
	const maxIter = 3
	// One question over each transport in each protocol keeps the suite
	// within a few minutes (make test); KGAGENT_TEST_OLLAMA_QUESTIONS runs
	// the benchmark.
	questions := []string{"What is the default HTTP port of the Lumen server?"}
	if f := os.Getenv("KGAGENT_TEST_OLLAMA_QUESTIONS"); f != "" {
		// The benchmark: a JSONL question set ({"question": …} a line).
		questions = nil
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var q struct {
				Question string `json:"question"`
			}
			if err := json.Unmarshal([]byte(line), &q); err != nil {
				t.Fatal(err)
			}
			questions = append(questions, q.Question)
		}
	}
	for _, proto := range ollamaProtocols(t, base, model) {
		t.Run(proto, func(t *testing.T) {
			srv, logs := startServe(t, "--demo", "--demo-site-dir", siteDir, "--llm", "openai", "--llm-base-url", base,
				"--llm-model", model, "--llm-protocol", proto, "--max-iterations", fmt.Sprint(maxIter),
				"--llm-max-tokens", "96", "--llm-observation-tokens", "250", "--answer-cache-size", "0")
			waitDemoIngested(t, logs)
			var runs []ollamaRun
			defer func() { t.Log(summarizeRuns(model, proto, runs)) }()
			for i, q := range questions {
				for _, transport := range []string{"rest", "websocket"} {
					var r ollamaRun
					start := time.Now()
					if transport == "rest" {
						r = ollamaREST(t, srv, q)
					} else {
						r = ollamaSocket(t, srv, fmt.Sprintf("q%d", i), q)
					}
					r.took = time.Since(start)
					runs = append(runs, r)
					t.Logf("%s %s %q: %s, %d iterations, %d sources, answer %q %s", proto, transport, q, r.took.Round(time.Millisecond), r.iterations, r.sources, r.answer, r.err)
					if r.err != "" || strings.TrimSpace(r.answer) == "" {
						t.Errorf("%s %s %q: no answer: %s", proto, transport, q, r.err)
						continue
					}
					if r.iterations > maxIter {
						t.Errorf("%s: %d iterations, limit %d", transport, r.iterations, maxIter)
					}
					if r.took > 2*time.Minute+10*time.Second {
						t.Errorf("%s: took %s, past the 2 min question deadline", transport, r.took)
					}
					for _, n := range agent.Citations(r.answer) {
						if n < 1 || n > r.sources {
							t.Errorf("%s: answer cites [%d] with %d sources: %q", transport, n, r.sources, r.answer)
						}
					}
				}
			}
		})
	}
}

// summarizeRuns is the benchmark line of one model and protocol: runs that
// ended in an answer with at least one source (and those whose answer cites
// one as [n]), median and p95 time per
// question, mean iterations (websocket runs).
func summarizeRuns(model, proto string, runs []ollamaRun) string {
	if len(runs) == 0 {
		return model + " " + proto + ": no runs"
	}
	sourced, cited, iters, counted := 0, 0, 0, 0
	var took []time.Duration
	for _, r := range runs {
		if r.err == "" && strings.TrimSpace(r.answer) != "" && r.sources > 0 {
			sourced++
			if slices.ContainsFunc(agent.Citations(r.answer), func(n int) bool { return n >= 1 && n <= r.sources }) {
				cited++
			}
		}
		if r.iterations > 0 { // the websocket's; REST does not report them
			iters += r.iterations
			counted++
		}
		took = append(took, r.took)
	}
	slices.Sort(took)
	at := func(p float64) time.Duration {
		return took[min(len(took)-1, int(p*float64(len(took))))].Round(100 * time.Millisecond)
	}
	return fmt.Sprintf("BENCH %s %s: %d/%d runs answered with sources, %d citing one as [n], time per question median %s p95 %s, mean iterations %.1f",
		model, proto, sourced, len(runs), cited, at(0.5), at(0.95), float64(iters)/float64(max(counted, 1)))
}

func ollamaREST(t *testing.T, srv, q string) ollamaRun {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"question": q})
	resp, err := http.Post(srv+"/api/v1/agent", "application/json", bytes.NewReader(b))
	if err != nil {
		return ollamaRun{err: err.Error()}
	}
	defer resp.Body.Close()
	var a struct {
		Answer     string           `json:"answer"`
		Sources    []map[string]any `json:"sources"`
		Iterations int              `json:"iterations"`
		Error      any              `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != 200 {
		return ollamaRun{err: fmt.Sprintf("HTTP %d: %v %v", resp.StatusCode, err, a.Error)}
	}
	return ollamaRun{answer: a.Answer, sources: len(a.Sources), iterations: a.Iterations}
}

func ollamaSocket(t *testing.T, srv, id, q string) ollamaRun {
	t.Helper()
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv, "http")+"/api/v1/socket", nil)
	if err != nil {
		return ollamaRun{err: err.Error()}
	}
	defer conn.Close()
	req, _ := json.Marshal(map[string]any{"id": id, "service": "agent", "flow": "default", "request": map[string]string{"question": q}})
	if err := conn.WriteMessage(websocket.TextMessage, req); err != nil {
		return ollamaRun{err: err.Error()}
	}
	_ = conn.SetReadDeadline(time.Now().Add(3 * time.Minute))
	var r ollamaRun
	for {
		var f struct {
			Complete bool `json:"complete"`
			Error    any  `json:"error"`
			Response struct {
				Answer  string           `json:"answer"`
				Action  string           `json:"action"`
				Delta   bool             `json:"delta"`
				Sources []map[string]any `json:"sources"`
			} `json:"response"`
		}
		if err := conn.ReadJSON(&f); err != nil {
			r.err = err.Error()
			return r
		}
		if f.Response.Action != "" {
			r.iterations++
		}
		if f.Complete {
			if f.Error != nil {
				r.err = fmt.Sprint(f.Error)
			}
			r.answer, r.sources = f.Response.Answer, len(f.Response.Sources)
			// Actions count the iterations that acted; the answer is one more.
			r.iterations++
			return r
		}
	}
}

// TestOllamaTripleExtractor ingests a few demo pages with --extractor llm
// against the real model: the ingest completes with no failed page and the
// graph holds triples.
func TestOllamaTripleExtractor(t *testing.T) {
	base, model := ollamaServer(t)
	site := httptest.NewServer(http.FileServer(http.Dir(siteDir)))
	defer site.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out, errb syncBuffer
	args := []string{"ingest", "--data-dir", t.TempDir(), "--json", "--llm", "openai", "--llm-base-url", base, "--llm-model", model,
		"--extractor", "llm", "--crawl-max-pages", "3", site.URL + "/configuration/*"}
	start := time.Now()
	if code := run(ctx, args, &out, &errb, nil); code != 0 {
		t.Fatalf("ingest: %s", errb.String())
	}
	var sum map[string]float64
	if err := json.Unmarshal([]byte(out.String()), &sum); err != nil || sum["pages"] < 1 || sum["failed"] != 0 || sum["triples"] == 0 {
		t.Fatalf("ingest summary %q: %v", out.String(), err)
	}
	t.Logf("LLM extraction: %v pages, %v triples in %s", sum["pages"], sum["triples"], time.Since(start).Round(time.Millisecond))
}
