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
