package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent/cite"
	"github.com/kgagent/kgagent/agent/extractive"
	"github.com/kgagent/kgagent/graphrag"
	graphsqlite "github.com/kgagent/kgagent/graphrag/sqlite"
	"github.com/kgagent/kgagent/internal/testdep"
	"github.com/kgagent/kgagent/llm"
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
	out := []string{llm.ProtocolJSON, llm.ProtocolText}
	if resp.StatusCode == 200 {
		out = append([]string{llm.ProtocolTools}, out...)
	}
	return out
}

// ollamaRun is what one question over one transport ended with.
type ollamaRun struct {
	answer     string
	sources    []ollamaSource
	citations  string // the answer's "citations": model, attributed, unsupported
	iterations int
	err        string
	took       time.Duration
	valid      int // citations in range whose source page holds the cited sentence's words
}

type ollamaSource struct {
	URL string `json:"url"`
}

// TestOllamaDemoQuestions serves the demo with a real small LLM (SmolLM2-135M
// on Ollama) in every step protocol the server takes and asks demo questions
// over REST and the websocket. Each run must end within the iteration limit
// and the question's deadline with an answer that has at least one valid
// citation: every [n] names a source of the answer, and at least one names a
// source whose page holds the words (and every number) of the sentence it
// ends. The citations may be the model's or kgagent's (search first,
// attribution: the answer's "citations" field says which; the BENCH line
// counts them); the test logs, not asserts, whether the answer is right.
//
// For every model (KGAGENT_TEST_OLLAMA_MODELS, make test: SmolLM2 and
// Gemma-3) and protocol, no answer shows protocol syntax, echoed
// instructions or a small model's junk start; every sentence kgagent
// attributed has the URLs, code and numbers it names verbatim in the cited
// page; and a question the docs do not cover (Helm) abstains.
func TestOllamaDemoQuestions(t *testing.T) {
	base, model := ollamaServer(t)
	models := strings.Fields(os.Getenv("KGAGENT_TEST_OLLAMA_MODELS"))
	if len(models) == 0 {
		models = []string{model}
	}
	for _, model := range models {
		t.Run(model, func(t *testing.T) { ollamaDemoQuestions(t, base, model) })
	}
}

// notCovered is a demo question the docs do not answer: every model and
// protocol must abstain on it (the abstention alone, or after "The model
// gave no answer (…)." when the model gave none).
const notCovered = "How do I deploy Lumen with a Helm chart on Kubernetes?"

func ollamaDemoQuestions(t *testing.T, base, model string) {
	const maxIter = 3
	// One question over each transport in each protocol keeps the suite
	// within a few minutes (make test); KGAGENT_TEST_OLLAMA_QUESTIONS runs
	// the benchmark.
	questions := []string{"What is the default HTTP port of the Lumen server?", notCovered}
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
					if q == notCovered && transport == "websocket" {
						continue // the abstention is the same on both; one keeps the suite short
					}
					var r ollamaRun
					start := time.Now()
					if transport == "rest" {
						r = ollamaREST(t, srv, q)
					} else {
						r = ollamaSocket(t, srv, fmt.Sprintf("q%d", i), q)
					}
					r.took = time.Since(start)
					if r.err == "" {
						r.valid = validCitations(t, r)
					}
					runs = append(runs, r)
					t.Logf("%s %s %q: %s, %d iterations, %d sources, citations %s (%d valid), answer %q %s", proto, transport, q, r.took.Round(time.Millisecond), r.iterations, len(r.sources), r.citations, r.valid, r.answer, r.err)
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
					for _, n := range cite.Numbers(r.answer) {
						if n < 1 || n > len(r.sources) {
							t.Errorf("%s: answer cites [%d] with %d sources: %q", transport, n, len(r.sources), r.answer)
						}
					}
					if r.valid == 0 {
						t.Errorf("%s %s %q: no valid citation (citations %q) in %q", proto, transport, q, r.citations, r.answer)
					}
					if junk := protocolJunk(r.answer); junk != "" {
						t.Errorf("%s %s %q: the answer shows %q: %q", proto, transport, q, junk, r.answer)
					}
					if r.citations == kgagent.CitationsAttributed {
						for _, miss := range notVerbatim(t, r) {
							t.Errorf("%s %s %q: attributed %s", proto, transport, q, miss)
						}
					}
					if q == notCovered && !strings.Contains(r.answer, extractive.Abstention) && !strings.Contains(r.answer, extractive.NotFound) {
						t.Errorf("%s %s %q: the docs do not cover it, but the answer is %q (citations %s)", proto, transport, q, r.answer, r.citations)
					}
				}
			}
		})
	}
}

// summarizeRuns is the benchmark line of one model and protocol: runs that
// ended in an answer with a valid citation, by who cited it (the model;
// kgagent attributing the model's sentences; kgagent adding what the docs
// say to an answer no source supports; kgagent answering with what the docs
// say when the model gave no answer), median and p95 time per question,
// mean iterations (websocket runs).
func summarizeRuns(model, proto string, runs []ollamaRun) string {
	if len(runs) == 0 {
		return model + " " + proto + ": no runs"
	}
	valid, iters, counted := 0, 0, 0
	by := map[string]int{}
	var took []time.Duration
	for _, r := range runs {
		if r.err == "" && r.valid > 0 {
			valid++
			by[r.citations]++
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
	return fmt.Sprintf("BENCH %s %s: %d/%d runs answered with a valid citation (model %d, attributed %d, unsupported+docs %d, no model answer+docs %d), time per question median %s p95 %s, mean iterations %.1f",
		model, proto, valid, len(runs), by[kgagent.CitationsModel], by[kgagent.CitationsAttributed], by[kgagent.CitationsUnsupported], by[kgagent.CitationsFallback],
		at(0.5), at(0.95), float64(iters)/float64(max(counted, 1)))
}

// validCitations counts the citations of r's answer that name one of its
// sources whose page (fetched from the demo site) holds the words of the
// sentence the citation ends (or follows, after its full stop): at least two of its words of three letters or
// more that are not stop words (all of them when it has fewer), and every
// word with a digit.
func validCitations(t *testing.T, r ollamaRun) int {
	t.Helper()
	page := pageTexts(t)
	valid := 0
	prev := 0
	for _, m := range regexp.MustCompile(`\[(\d+(?:, *\d+)*)\]`).FindAllStringSubmatchIndex(r.answer, -1) {
		// A citation after its sentence's full stop ("… query(). [1]")
		// cites that sentence, as kgagent reads it (cite.Text.Check).
		sentence := strings.TrimRight(strings.TrimRight(r.answer[prev:m[0]], " "), ".!?")
		for _, end := range []string{". ", "! ", "? ", "\n"} {
			if i := strings.LastIndex(sentence, end); i >= 0 {
				sentence = sentence[i+len(end):]
			}
		}
		prev = m[1]
		for _, num := range strings.Split(r.answer[m[2]:m[3]], ",") {
			n, _ := strconv.Atoi(strings.TrimSpace(num))
			if n < 1 || n > len(r.sources) {
				continue
			}
			if supports(page(r.sources[n-1].URL), sentence) {
				valid++
			}
		}
	}
	return valid
}

// protocolJunk returns the protocol syntax, echoed instruction or junk
// start an answer shows, "" when it shows none.
func protocolJunk(answer string) string {
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`Ask (?:Func|Agent)\[[^\]]*\]`), regexp.MustCompile(`(?:Func|Agent)\[[^\]]*\] says`),
		regexp.MustCompile(`(?m)^\s*(?:A|Q|Thought|Action|Observation):`), regexp.MustCompile(`Reply with one line|You must answer now`),
		regexp.MustCompile(`\{\s*"(?:thought|action|input)"\s*:`),
		regexp.MustCompile(`^(?i)(?:[a-z]\s*\n|a\s+nswer\b|answer\s*(?:\[\d+\])?\s*\.?\s*$)`),
	} {
		if m := re.FindString(answer); m != "" {
			return m
		}
	}
	return ""
}

// notVerbatim lists, for an attributed answer, each cited sentence's URL,
// inline code or number that the cited page does not hold verbatim.
func notVerbatim(t *testing.T, r ollamaRun) []string {
	t.Helper()
	page := pageTexts(t)
	var out []string
	prev := 0
	items := regexp.MustCompile("https?://[^\\s)\\]`'\"<>]+|`[^`\n]+`|[A-Za-z0-9._:/-]*[0-9][A-Za-z0-9._:/-]*")
	for _, m := range regexp.MustCompile(`\[(\d+(?:, *\d+)*)\]`).FindAllStringSubmatchIndex(r.answer, -1) {
		// A citation after its sentence's full stop ("… query(). [1]")
		// cites that sentence, as kgagent reads it (cite.Text.Check).
		sentence := strings.TrimRight(strings.TrimRight(r.answer[prev:m[0]], " "), ".!?")
		for _, end := range []string{". ", "! ", "? ", "\n"} {
			if i := strings.LastIndex(sentence, end); i >= 0 {
				sentence = sentence[i+len(end):]
			}
		}
		prev = m[1]
		for _, num := range strings.Split(r.answer[m[2]:m[3]], ",") {
			n, _ := strconv.Atoi(strings.TrimSpace(num))
			if n < 1 || n > len(r.sources) {
				continue
			}
			text := page(r.sources[n-1].URL)
			for _, it := range items.FindAllString(sentence, -1) {
				it = strings.ToLower(strings.Trim(strings.TrimRight(it, ".,;:"), "`"))
				if it != "" && !strings.Contains(text, it) {
					out = append(out, fmt.Sprintf("%q [%d] names %q, which %s does not hold", sentence, n, it, r.sources[n-1].URL))
				}
			}
		}
	}
	return out
}

// pageTexts returns a function giving the lower-cased text of a page (HTML
// tags removed), fetched once per URL (the anchor left out).
func pageTexts(t *testing.T) func(url string) string {
	pages := map[string]string{}
	return func(u string) string {
		u, _, _ = strings.Cut(u, "#")
		if p, ok := pages[u]; ok {
			return p
		}
		resp, err := http.Get(u)
		if err != nil {
			t.Errorf("page %s: %v", u, err)
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		pages[u] = strings.ToLower(html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(string(b), " ")))
		return pages[u]
	}
}

// supports reports whether text holds sentence's words (validCitations).
func supports(text, sentence string) bool {
	stop := map[string]bool{"the": true, "and": true, "for": true, "with": true, "that": true, "this": true, "are": true, "you": true, "your": true, "from": true, "can": true, "its": true, "was": true, "has": true, "have": true, "not": true, "but": true, "which": true, "use": true}
	have := map[string]bool{}
	for _, w := range regexp.MustCompile(`[a-z0-9_]+`).FindAllString(text, -1) {
		have[w] = true
	}
	var ws []string
	for _, w := range regexp.MustCompile(`[a-z0-9_]+`).FindAllString(strings.ToLower(sentence), -1) {
		if len(w) >= 3 && !stop[w] || strings.ContainsAny(w, "0123456789") {
			ws = append(ws, w)
		}
	}
	found := 0
	for _, w := range ws {
		// A plural or verb form of the page's word counts ("points" for "point").
		ok := have[w] || have[strings.TrimSuffix(w, "s")] || have[w+"s"]
		if ok {
			found++
		} else if strings.ContainsAny(w, "0123456789") {
			return false
		}
	}
	return len(ws) > 0 && found >= min(2, len(ws))
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
		Answer     string         `json:"answer"`
		Sources    []ollamaSource `json:"sources"`
		Citations  string         `json:"citations"`
		Iterations int            `json:"iterations"`
		Error      any            `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != 200 {
		return ollamaRun{err: fmt.Sprintf("HTTP %d: %v %v", resp.StatusCode, err, a.Error)}
	}
	return ollamaRun{answer: a.Answer, sources: a.Sources, citations: a.Citations, iterations: a.Iterations}
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
				Answer    string         `json:"answer"`
				Action    string         `json:"action"`
				Delta     bool           `json:"delta"`
				Sources   []ollamaSource `json:"sources"`
				Citations string         `json:"citations"`
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
			r.answer, r.sources, r.citations = f.Response.Answer, f.Response.Sources, f.Response.Citations
			// Actions count the iterations that acted; the answer is one more.
			r.iterations++
			return r
		}
	}
}

// TestOllamaTripleExtractor ingests a few demo pages with --extractor llm
// against the real model, and the same pages with the built-in extractor
// alone: the LLM ingest completes with no failed page, and every triple the
// rules do not produce (the LLM's) is grounded in its page: its subject, and
// its object or definition, are words of the page. It logs how many the LLM
// added: SmolLM2-135M and Gemma-3-270M add none that survive the grounding
// check (they invent names and definitions, which the extractor drops).
func TestOllamaTripleExtractor(t *testing.T) {
	base, model := ollamaServer(t)
	site := httptest.NewServer(http.FileServer(http.Dir(siteDir)))
	defer site.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ingest := func(dir string, extra ...string) map[string]float64 {
		var out, errb syncBuffer
		args := append([]string{"ingest", "--data-dir", dir, "--json", "--crawl-max-pages", "3"}, extra...)
		if code := run(ctx, append(args, site.URL+"/configuration/*"), &out, &errb, testEnv()); code != 0 {
			t.Fatalf("ingest %v: %s", extra, errb.String())
		}
		sum := summaryCounts(t, []byte(out.String()))
		if sum["pages"] < 1 || sum["failed"] != 0 || sum["triples"] == 0 {
			t.Fatalf("ingest %v summary %q", extra, out.String())
		}
		return sum
	}
	triples := func(dir string) []kgagent.Triple {
		st, err := graphsqlite.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		ts, err := st.Find(ctx, graphrag.Pattern{Collection: "default", Limit: 100000})
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	start := time.Now()
	llmDir, rulesDir := t.TempDir(), t.TempDir()
	sum := ingest(llmDir, "--llm", "openai", "--llm-base-url", base, "--llm-model", model, "--extractor", "llm")
	took := time.Since(start)
	ingest(rulesDir)
	key := func(x kgagent.Triple) string {
		return strings.Join([]string{x.Subject.ID, x.Predicate, x.Object.ID, x.Literal, x.SourceURL}, "\x00")
	}
	byRules := map[string]bool{}
	for _, x := range triples(rulesDir) {
		byRules[key(x)] = true
	}
	pageText := pageTexts(t)
	added, grounded := 0, 0
	var examples []string
	for _, x := range triples(llmDir) {
		if byRules[key(x)] {
			continue
		}
		added++
		obj := x.Literal
		if obj == "" {
			obj = x.Object.Name
		}
		text := pageText(x.DocURL)
		if supports(text, x.Subject.Name) && supports(text, obj) {
			grounded++
		}
		if len(examples) < 5 {
			examples = append(examples, fmt.Sprintf("(%s, %s, %s)", x.Subject.Name, x.Predicate, obj))
		}
	}
	t.Logf("LLM extraction: %v pages, %v triples in %s; %d triples not produced by the rules, %d of them grounded in their page, e.g. %s",
		sum["pages"], sum["triples"], took.Round(time.Millisecond), added, grounded, strings.Join(examples, "; "))
	if grounded != added {
		t.Errorf("the LLM added %d triples beyond the rules', only %d grounded in their page", added, grounded)
	}
}

// TestProtocolJunk: the real-LLM suite's check catches what the issue saw
// the small models write, and passes a clean answer.
func TestProtocolJunk(t *testing.T) {
	for answer, want := range map[string]string{
		"a\nThe default HTTP port is 8086 [1].":   "a\n",
		"a nswer: The default HTTP port is 8086.": "a nswer",
		"A: answer [1]": "A:",
		"Reply with one line: Ask Func[name]: input, or A: answer.":      "Ask Func[name]",
		"The port is 8086.\nFunc[fixie_query_corpus] says: [1] HTTP API": "Func[fixie_query_corpus] says",
		`{"thought": "", "action": "answer", "input": "8086"}`:           `{"thought":`,
		"The Lumen server listens on port 8086 by default [1].":          "",
	} {
		if got := protocolJunk(answer); got != want {
			t.Errorf("protocolJunk(%q) = %q, want %q", answer, got, want)
		}
	}
}
