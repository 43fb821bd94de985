package gateway

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
)

func TestOpenAIModels(t *testing.T) {
	f := newFixture(t, Config{})
	status, m, _ := do(t, "GET", f.ts.URL+"/v1/models", "", "")
	if status != 200 || m["object"] != "list" {
		t.Fatalf("models: %d %v", status, m)
	}
	var ids []string
	for _, d := range m["data"].([]any) {
		ids = append(ids, d.(map[string]any)["id"].(string))
	}
	if strings.Join(ids, ",") != "kgagent,docs" {
		t.Errorf("models = %v", ids)
	}
}

func TestOpenAIChatCompletion(t *testing.T) {
	f := newFixture(t, Config{})
	tests := []struct {
		name, body string
		status     int
		content    string
		agent      string
	}{
		{"string content", `{"model":"docs","messages":[{"role":"system","content":"be nice"},{"role":"user","content":"What is X?"}]}`, 200, "Answer to: What is X?", "docs"},
		{"parts content", `{"model":"kgagent","messages":[{"role":"user","content":[{"type":"text","text":"What is Y?"}]}]}`, 200, "Answer to: What is Y?", ""},
		{"no user message", `{"model":"docs","messages":[{"role":"system","content":"x"}]}`, 400, "", ""},
		{"bad content", `{"model":"docs","messages":[{"role":"user","content":5}]}`, 400, "", ""},
		{"unknown model", `{"model":"nope","messages":[{"role":"user","content":"q"}]}`, 404, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, m, _ := do(t, "POST", f.ts.URL+"/v1/chat/completions", "", tt.body)
			if status != tt.status {
				t.Fatalf("status = %d, want %d (%v)", status, tt.status, m)
			}
			if status != 200 {
				return
			}
			msg := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
			content := msg["content"].(string)
			if !strings.HasPrefix(content, tt.content) || !strings.Contains(content, "(https://docs.example.org/guide.html#install-section)") {
				t.Errorf("content = %q", content)
			}
			if m["object"] != "chat.completion" || m["usage"].(map[string]any)["total_tokens"] != 15.0 {
				t.Errorf("response = %v", m)
			}
			f.asker.mu.Lock()
			last := f.asker.reqs[len(f.asker.reqs)-1]
			f.asker.mu.Unlock()
			if last.Agent != tt.agent {
				t.Errorf("agent = %q, want %q", last.Agent, tt.agent)
			}
		})
	}
}

func TestOpenAIChatCompletionStream(t *testing.T) {
	f := newFixture(t, Config{})
	resp, err := http.Post(f.ts.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"docs","stream":true,"messages":[{"role":"user","content":"Stream?"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var content strings.Builder
	var chunks int
	var done bool
	var finish string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an SSE data line: %q", line)
		}
		if data == "[DONE]" {
			done = true
			break
		}
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta        map[string]string `json:"delta"`
				FinishReason *string           `json:"finish_reason"`
			} `json:"choices"`
			Sources []kgagent.Source `json:"sources"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatal(err)
		}
		chunks++
		if c.Object != "chat.completion.chunk" {
			t.Errorf("object = %q", c.Object)
		}
		content.WriteString(c.Choices[0].Delta["content"])
		if c.Choices[0].FinishReason != nil {
			finish = *c.Choices[0].FinishReason
			if len(c.Sources) != 1 {
				t.Errorf("final chunk sources = %v", c.Sources)
			}
		}
	}
	if !done || finish != "stop" {
		t.Errorf("done %v finish %q", done, finish)
	}
	if chunks < 4 {
		t.Errorf("only %d chunks: not streamed token by token", chunks)
	}
	if !strings.HasPrefix(content.String(), "Answer to: Stream?\n\nSources:\n1. [Install](") {
		t.Errorf("content = %q", content.String())
	}
}

func FuzzDecodeChatCompletion(f *testing.F) {
	for _, s := range []string{`{"model":"m","messages":[{"role":"user","content":"q"}]}`, `{"messages":[{"role":"user","content":[{"type":"text","text":"q"}]}]}`, `{"messages":[]}`, `{"messages":[{"role":"user","content":null}]}`, "\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, q, err := DecodeChatCompletion(data)
		if err != nil {
			if kgagent.ErrorCode(err) != kgagent.EINVALID {
				t.Fatalf("code %q", kgagent.ErrorCode(err))
			}
			return
		}
		if strings.TrimSpace(q) == "" {
			t.Fatalf("accepted empty question from %q", data)
		}
	})
}

// sseEvents reads an SSE body's data lines up to [DONE].
func sseEvents(t *testing.T, resp *http.Response) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			return out
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		out = append(out, m)
	}
	t.Fatal("no [DONE]")
	return nil
}

func postChat(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// Every OpenAI parameter kgagent does not honour is refused with OpenAI's
// error shape before the agent runs; those it honours change the reply
// (issue 21, item 15).
func TestOpenAIParameters(t *testing.T) {
	f := newFixture(t, Config{})
	u := f.ts.URL
	asked := func() int { f.asker.mu.Lock(); defer f.asker.mu.Unlock(); return len(f.asker.reqs) }
	const msgs = `"messages":[{"role":"user","content":"What is X?"}]`
	for _, tc := range []struct{ param, body string }{
		{"tools", `{"model":"docs",` + msgs + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`},
		{"tool_choice", `{"model":"docs",` + msgs + `,"tool_choice":"required"}`},
		{"tool_choice", `{"model":"docs",` + msgs + `,"tool_choice":{"type":"function","function":{"name":"f"}}}`},
		{"functions", `{"model":"docs",` + msgs + `,"functions":[{"name":"f","parameters":{}}]}`},
		{"function_call", `{"model":"docs",` + msgs + `,"function_call":"auto"}`},
		{"n", `{"model":"docs",` + msgs + `,"n":2}`},
		{"stop", `{"model":"docs",` + msgs + `,"stop":["\n"]}`},
		{"stop", `{"model":"docs",` + msgs + `,"stop":"END","stream":true}`},
		{"logprobs", `{"model":"docs",` + msgs + `,"logprobs":true}`},
		{"response_format", `{"model":"docs",` + msgs + `,"response_format":{"type":"yaml"}}`},
		{"response_format", `{"model":"docs",` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}}}`},
	} {
		before := asked()
		status, m, _ := do(t, "POST", u+"/v1/chat/completions", "", tc.body)
		e, _ := m["error"].(map[string]any)
		if status != 400 || e["code"] != "unsupported_parameter" || e["param"] != tc.param || e["type"] != "invalid_request_error" || e["message"] == "" {
			t.Errorf("%s: %d %v", tc.body, status, m)
		}
		if asked() != before {
			t.Errorf("%s: the agent ran", tc.param)
		}
	}
	// Values OpenAI itself refuses are plain invalid arguments.
	for _, tc := range []struct{ param, body string }{
		{"n", `{` + msgs + `,"n":0}`}, {"max_tokens", `{` + msgs + `,"max_tokens":0}`},
	} {
		status, m, _ := do(t, "POST", u+"/v1/chat/completions", "", tc.body)
		if e, _ := m["error"].(map[string]any); status != 400 || e["code"] != "INVALID_ARGUMENT" || e["param"] != tc.param {
			t.Errorf("%s: %d %v", tc.body, status, m)
		}
	}

	content := func(m map[string]any) (string, string) {
		c := m["choices"].([]any)[0].(map[string]any)
		return c["message"].(map[string]any)["content"].(string), c["finish_reason"].(string)
	}
	// Accepted as OpenAI means them.
	for _, body := range []string{
		`{"model":"docs",` + msgs + `,"n":1,"tool_choice":"none","response_format":{"type":"text"},"stop":null,"tools":[],"temperature":0.2,"top_p":1}`,
	} {
		status, m, _ := do(t, "POST", u+"/v1/chat/completions", "", body)
		if c, fin := content(m); status != 200 || !strings.HasPrefix(c, "Answer to: What is X?") || fin != "stop" {
			t.Errorf("%s: %d %v", body, status, m)
		}
	}
	// response_format: the answer object as JSON.
	for _, rf := range []string{
		`{"type":"json_object"}`,
		`{"type":"json_schema","json_schema":{"name":"doc_answer","strict":true,"schema":{"type":"object","properties":{"answer":{"type":"string"},"sources":{"type":"array","items":{"type":"object","properties":{"url":{"type":"string"},"title":{"type":"string"}},"required":["url","title"]}}},"required":["answer","sources"],"additionalProperties":false}}}`,
		// As LangChain's with_structured_output writes a strict Pydantic model.
		`{"type":"json_schema","json_schema":{"name":"DocAnswer","strict":true,"schema":{"$defs":{"Source":{"type":"object","properties":{"url":{"type":"string"},"title":{"type":"string"}},"required":["url","title"],"additionalProperties":false}},"type":"object","properties":{"answer":{"type":"string"},"sources":{"type":"array","items":{"$ref":"#/$defs/Source"}}},"required":["answer","sources"],"additionalProperties":false}}}`,
	} {
		status, m, _ := do(t, "POST", u+"/v1/chat/completions", "", `{"model":"docs",`+msgs+`,"response_format":`+rf+`}`)
		c, _ := content(m)
		var obj map[string]any
		if status != 200 || json.Unmarshal([]byte(c), &obj) != nil || obj["answer"] != "Answer to: What is X?" || len(obj["sources"].([]any)) != 1 {
			t.Errorf("%s: %d %q", rf, status, c)
		}
		if strings.Contains(rf, "additionalProperties") && len(obj) != 2 {
			t.Errorf("%s: properties the schema forbids: %v", rf, obj)
		}
		if strings.Contains(rf, "$defs") && len(obj["sources"].([]any)[0].(map[string]any)) != 2 {
			t.Errorf("%s: source properties the schema forbids: %v", rf, obj)
		}
	}
	// max_tokens cuts the content (4 bytes a token), streamed or not.
	status, m, _ := do(t, "POST", u+"/v1/chat/completions", "", `{"model":"docs",`+msgs+`,"max_tokens":3}`)
	if c, fin := content(m); status != 200 || c != "Answer to: W" || fin != "length" {
		t.Errorf("max_tokens 3: %d %q %q", status, c, fin)
	}
	var streamed strings.Builder
	finish := ""
	for _, ch := range sseEvents(t, postChat(t, u, `{"model":"docs",`+msgs+`,"max_completion_tokens":4,"stream":true}`)) {
		c := ch["choices"].([]any)[0].(map[string]any)
		if d, ok := c["delta"].(map[string]any)["content"].(string); ok {
			streamed.WriteString(d)
		}
		if fr, ok := c["finish_reason"].(string); ok {
			finish = fr
		}
	}
	if streamed.String() != "Answer to: What " || finish != "length" {
		t.Errorf("streamed max_completion_tokens 4: %q %q", streamed.String(), finish)
	}
}

// GET /v1/models/{id} for each listed model; usage is never zero, a
// cached answer's included; a stream asked for with include_usage ends
// with the usage chunk; an unknown model is 404 before a stream starts
// (issue 21, item 15).
func TestOpenAIModelsUsageAndStreams(t *testing.T) {
	f := newFixture(t, Config{})
	u := f.ts.URL
	for _, id := range []string{"kgagent", "docs"} {
		if status, m, _ := do(t, "GET", u+"/v1/models/"+id, "", ""); status != 200 || m["id"] != id || m["object"] != "model" {
			t.Errorf("model %s: %d %v", id, status, m)
		}
	}
	if status, m, _ := do(t, "GET", u+"/v1/models/nope", "", ""); status != 404 || m["error"].(map[string]any)["type"] != "not_found_error" {
		t.Errorf("unknown model: %d %v", status, m)
	}

	status, m, _ := do(t, "POST", u+"/v1/chat/completions", "", `{"model":"docs","messages":[{"role":"user","content":"cached question"}]}`)
	usage, _ := m["usage"].(map[string]any)
	if status != 200 || usage["prompt_tokens"].(float64) < 1 || usage["completion_tokens"].(float64) < 1 ||
		usage["total_tokens"] != usage["prompt_tokens"].(float64)+usage["completion_tokens"].(float64) {
		t.Errorf("usage of a cached answer: %d %v", status, m)
	}

	chunks := sseEvents(t, postChat(t, u, `{"model":"docs","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Stream?"}]}`))
	last := chunks[len(chunks)-1]
	if choices := last["choices"].([]any); len(choices) != 0 || last["usage"].(map[string]any)["total_tokens"] != 15.0 {
		t.Errorf("last chunk with include_usage: %v", last)
	}
	for _, c := range chunks[:len(chunks)-1] {
		if u, ok := c["usage"]; !ok || u != nil {
			t.Errorf("chunk before the usage chunk: %v", c)
		}
	}
	chunks = sseEvents(t, postChat(t, u, `{"model":"docs","stream":true,"messages":[{"role":"user","content":"Stream?"}]}`))
	for _, c := range chunks {
		if _, ok := c["usage"]; ok {
			t.Errorf("usage without include_usage: %v", c)
		}
	}

	resp := postChat(t, u, `{"model":"nope","stream":true,"messages":[{"role":"user","content":"q"}]}`)
	var e map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&e)
	if resp.StatusCode != 404 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || e["error"].(map[string]any)["param"] != "model" {
		t.Errorf("streamed unknown model: %d %s %v", resp.StatusCode, resp.Header.Get("Content-Type"), e)
	}
}

// FuzzChatOptions: whatever parameters a request carries, they are
// honoured or refused as INVALID_ARGUMENT, never a panic or another code.
func FuzzChatOptions(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"q"}],"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object","properties":{"answer":{"type":"string"}},"additionalProperties":false}}}}`,
		`{"messages":[{"role":"user","content":"q"}],"response_format":{"type":"json_schema","json_schema":{"schema":{"$ref":"http://x/y"}}}}`,
		`{"messages":[{"role":"user","content":"q"}],"tools":[{}],"n":3,"stop":"x","max_tokens":-1}`,
		`{"messages":[{"role":"user","content":"q"}],"tool_choice":{"type":"function"},"response_format":"json"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, _, err := DecodeChatCompletion(data)
		if err != nil {
			return
		}
		o, err := chatOptionsOf(req)
		if err != nil {
			if kgagent.ErrorCode(err) != kgagent.EINVALID {
				t.Fatalf("code %q for %s", kgagent.ErrorCode(err), data)
			}
			return
		}
		if o.schema != nil {
			if _, err := o.answerJSON(kgagent.Answer{Answer: "a", Sources: []kgagent.Source{{URL: "u", Title: "t"}}}); err != nil {
				t.Fatalf("an accepted schema refuses an answer: %s: %v", data, err)
			}
		}
	})
}
