package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nats-io/nats.go"

	"github.com/kgagent/kgagent/agent/cite"
	"github.com/kgagent/kgagent/agent/extractive"
)

// transportAnswer is one answer as a transport delivered it.
type transportAnswer struct {
	transport string
	answer    string
	sources   int    // sources listed with it
	first     string // URL of the first source, where the transport lists URLs
	streamed  string // the deltas joined, where the transport streams them
}

// contractQuestions are asked on every transport: a "how do I" question
// whose answer must carry the command, one the demo docs cannot answer,
// and a plain fact.
var contractQuestions = []struct {
	q       string
	abstain bool
	want    string // in the answer
}{
	{q: "How do I restore a backup?", want: "lumen backup restore --input /backups/2026-06-01 --db demo --new-name demo_restored"},
	{q: "What is the codename of Lumen 3.0?", abstain: true},
	{q: "What is the default HTTP port of the Lumen server?", want: "8086"},
}

// checkContract checks one answer: citations in range, the command kept,
// abstention where the docs do not say.
func checkContract(t *testing.T, q string, abstain bool, want string, a transportAnswer) {
	t.Helper()
	for _, n := range cite.Numbers(a.answer) {
		if n < 1 || n > a.sources {
			t.Errorf("%s: %q: citation [%d] with %d sources: %q", a.transport, q, n, a.sources, a.answer)
		}
	}
	if abstain != extractive.Abstained(a.answer) {
		t.Errorf("%s: %q: abstained=%v, want %v: %q", a.transport, q, !abstain, abstain, a.answer)
	}
	if want != "" && !strings.Contains(a.answer, want) {
		t.Errorf("%s: %q: answer lacks %q: %q", a.transport, q, want, a.answer)
	}
	if a.streamed != "" && strings.TrimSpace(a.streamed) != strings.TrimSpace(a.answer) {
		t.Errorf("%s: %q: the streamed deltas %q differ from the final answer %q", a.transport, q, a.streamed, a.answer)
	}
}

// TestAnswerContractEveryTransport asks the demo site's questions over
// REST, websocket, NATS and the OpenAI API of one `serve --demo` (answer
// cache off, so every transport computes its answer) and checks the answer
// contract on each, and that all transports give the same answer text.
func TestAnswerContractEveryTransport(t *testing.T) {
	s := startServeFull(t, "--demo", "--demo-site-dir", siteDir, "--answer-cache-size", "0")
	waitDemoIngested(t, s.stderr)
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
	for _, c := range contractQuestions {
		got := []transportAnswer{askREST(t, s.base, c.q), askSocket(t, ws, c.q), askNATS(t, nc, c.q)}
		got = append(got, askOpenAI(t, s.base, c.q, false), askOpenAI(t, s.base, c.q, true))
		t.Logf("%q -> %q (%d sources)", c.q, got[0].answer, got[0].sources)
		for _, a := range got {
			checkContract(t, c.q, c.abstain, c.want, a)
			if a.answer != got[0].answer {
				t.Errorf("%q: %s answered %q, REST %q", c.q, a.transport, a.answer, got[0].answer)
			}
		}
	}
}

// TestAnswerContractCLI asks the same questions with `kgagent ask` over an
// index built by `kgagent ingest`.
func TestAnswerContractCLI(t *testing.T) {
	site := httptest.NewServer(http.FileServer(http.Dir(siteDir)))
	defer site.Close()
	dir := t.TempDir()
	var out, errb syncBuffer
	if code := run(context.Background(), []string{"ingest", "--data-dir", dir, "--json", site.URL + "/*"}, &out, &errb, testEnv()); code != 0 {
		t.Fatalf("ingest exited %d: %s", code, errb.String())
	}
	for _, c := range contractQuestions {
		// Plain output: the answer, then "[n] title url" per source.
		var out, errb syncBuffer
		if code := run(context.Background(), []string{"ask", "--data-dir", dir, c.q}, &out, &errb, testEnv()); code != 0 {
			t.Fatalf("ask exited %d: %s", code, errb.String())
		}
		text := out.String()
		i := strings.Index(text, "\n[1] ")
		if i < 0 {
			t.Fatalf("ask printed no numbered sources: %q", text)
		}
		listed := regexp.MustCompile(`(?m)^\[\d+\] `).FindAllString(text[i+1:], -1)
		checkContract(t, c.q, c.abstain, c.want, transportAnswer{transport: "cli", answer: text[:i], sources: len(listed)})
	}
}

func askREST(t *testing.T, base, q string) transportAnswer {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"question": q})
	code, m := postJSON(t, base+"/api/v1/agent", string(b))
	if code != 200 {
		t.Fatalf("REST %q: %d %v", q, code, m)
	}
	ans, _ := m["answer"].(string)
	srcs, _ := m["sources"].([]any)
	return transportAnswer{transport: "rest", answer: ans, sources: len(srcs), first: firstURL(srcs)}
}

// streamFrame is a websocket or NATS response frame.
type streamFrame struct {
	ID       string `json:"id"`
	Response struct {
		Answer  string `json:"answer"`
		Delta   bool   `json:"delta"`
		Sources []any  `json:"sources"`
	} `json:"response"`
	Error    any  `json:"error"`
	Complete bool `json:"complete"`
}

// collect reads frames until the complete one: the final answer, its
// sources and the deltas joined.
func collect(t *testing.T, transport string, next func() ([]byte, error)) transportAnswer {
	t.Helper()
	a := transportAnswer{transport: transport}
	var deltas strings.Builder
	for {
		raw, err := next()
		if err != nil {
			t.Fatalf("%s: %v", transport, err)
		}
		var f streamFrame
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatalf("%s: bad frame %s: %v", transport, raw, err)
		}
		if f.Error != nil {
			t.Fatalf("%s: error frame %s", transport, raw)
		}
		if f.Response.Delta {
			deltas.WriteString(f.Response.Answer)
		}
		if f.Complete {
			a.answer, a.sources, a.streamed = f.Response.Answer, len(f.Response.Sources), deltas.String()
			a.first = firstURL(f.Response.Sources)
			return a
		}
	}
}

// firstURL is the url of the first of sources (JSON objects), or "".
func firstURL(sources []any) string {
	if len(sources) == 0 {
		return ""
	}
	m, _ := sources[0].(map[string]any)
	u, _ := m["url"].(string)
	return u
}

func askSocket(t *testing.T, ws *websocket.Conn, q string) transportAnswer {
	t.Helper()
	id := "q" + time.Now().Format("150405.000000")
	if err := ws.WriteJSON(map[string]any{"id": id, "service": "agent", "flow": "default", "request": map[string]string{"question": q}}); err != nil {
		t.Fatal(err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	return collect(t, "websocket", func() ([]byte, error) {
		_, b, err := ws.ReadMessage()
		return b, err
	})
}

func askNATS(t *testing.T, nc *nats.Conn, q string) transportAnswer {
	t.Helper()
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	b, _ := json.Marshal(map[string]any{"id": "n1", "service": "agent", "flow": "default", "request": map[string]string{"question": q}})
	if err := nc.PublishRequest("kgagent.request.agent", inbox, b); err != nil {
		t.Fatal(err)
	}
	return collect(t, "nats", func() ([]byte, error) {
		m, err := sub.NextMsg(30 * time.Second)
		if err != nil {
			return nil, err
		}
		return m.Data, nil
	})
}

// askOpenAI asks over the OpenAI-compatible API; the content is the answer
// followed by "Sources:" and a numbered list, which is what a chat client
// shows, so citations are checked against that list.
func askOpenAI(t *testing.T, base, q string, stream bool) transportAnswer {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "default", "stream": stream, "messages": []map[string]string{{"role": "user", "content": q}}})
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("openai %q: HTTP %d", q, resp.StatusCode)
	}
	var content string
	name := "openai"
	if !stream {
		var r struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || len(r.Choices) == 0 {
			t.Fatalf("openai %q: %v %+v", q, err, r)
		}
		content = r.Choices[0].Message.Content
	} else {
		name = "openai-stream"
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || line == "[DONE]" {
				continue
			}
			var c struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(line), &c); err == nil && len(c.Choices) > 0 {
				b.WriteString(c.Choices[0].Delta.Content)
			}
		}
		content = b.String()
	}
	answer, list, ok := strings.Cut(content, "\n\nSources:\n")
	if !ok {
		t.Fatalf("%s %q: no Sources list in %q", name, q, content)
	}
	n := len(regexp.MustCompile(`(?m)^\d+\. \[`).FindAllString(list, -1))
	return transportAnswer{transport: name, answer: answer, sources: n}
}
