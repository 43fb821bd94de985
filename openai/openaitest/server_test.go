package openaitest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/kgagent/kgagent/llm"
	"github.com/kgagent/kgagent/openai"
)

func TestSplitTokensJoinsBack(t *testing.T) {
	for _, s := range []string{"", "a", "Ask Func[x]: q\nFunc[x] says: y", "  lead and trail  ", "a\n\nb", "héllo wörld"} {
		got := SplitTokens(s)
		if strings.Join(got, "") != s {
			t.Errorf("SplitTokens(%q) = %q does not join back", s, got)
		}
	}
	if got := SplitTokens("one two\nthree"); strings.Join(got, "|") != "one| two|\n|three" {
		t.Errorf("pieces = %q", got)
	}
}

func TestCutAtStop(t *testing.T) {
	tests := []struct {
		chunks []string
		stops  []string
		want   []string
	}{
		{[]string{"a", "b\nQ", ": x"}, []string{"\nQ:"}, []string{"a", "b"}},
		{[]string{"ab"}, nil, []string{"ab"}},
		{[]string{"x\nFunc[y]"}, []string{"\nQ:", "\nFunc["}, []string{"x"}},
		{[]string{"\nQ: at once"}, []string{"\nQ:"}, nil},
		{[]string{"ab", "\nQ:"}, []string{"\nQ:"}, []string{"ab"}},
	}
	for _, tt := range tests {
		got := cutAtStop(tt.chunks, tt.stops)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("cutAtStop(%q, %q) = %q, want %q", tt.chunks, tt.stops, got, tt.want)
		}
	}
}

func post(t *testing.T, url string, body openai.ChatRequest) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url+"/chat/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestNonStreamingAndScriptEnd(t *testing.T) {
	srv := New(t, Reply("Hello there\nQ: more"), Step{Respond: func(r Request) Step {
		return Reply("echo: " + r.Body.Messages[len(r.Body.Messages)-1].Content)
	}})
	msgs := []llm.ChatMessage{{Role: "user", Content: "hi you"}}
	resp := post(t, srv.URL, openai.ChatRequest{Model: "m", Messages: msgs, Stop: []string{"\nQ:"}})
	var cc openai.ChatCompletion
	if err := json.NewDecoder(resp.Body).Decode(&cc); err != nil {
		t.Fatal(err)
	}
	if cc.Choices[0].Message.Content != "Hello there" || cc.Usage == nil || cc.Usage.PromptTokens != 2 {
		t.Errorf("completion = %+v", cc)
	}
	resp = post(t, srv.URL, openai.ChatRequest{Messages: msgs})
	json.NewDecoder(resp.Body).Decode(&cc)
	if cc.Choices[0].Message.Content != "echo: hi you" {
		t.Errorf("Respond step: %+v", cc)
	}
	if srv.Remaining() != 0 {
		t.Errorf("remaining = %d", srv.Remaining())
	}
	resp = post(t, srv.URL, openai.ChatRequest{Messages: msgs})
	if resp.StatusCode != http.StatusInternalServerError || srv.Exhausted() != 1 {
		t.Errorf("after the script: %d, exhausted %d", resp.StatusCode, srv.Exhausted())
	}
	srv.SetDefault(Reply("default"))
	resp = post(t, srv.URL, openai.ChatRequest{Messages: msgs})
	json.NewDecoder(resp.Body).Decode(&cc)
	if cc.Choices[0].Message.Content != "default" {
		t.Errorf("default step: %+v", cc)
	}
	if resp := post(t, srv.URL, openai.ChatRequest{}); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("no messages: %d", resp.StatusCode)
	}
	if n := len(srv.ChatRequests()); n != 5 {
		t.Errorf("recorded %d requests, want 5", n)
	}
	if p := srv.ChatRequests()[0].Prompt(); p != "hi you" {
		t.Errorf("prompt %q", p)
	}
}

func TestEmbeddings(t *testing.T) {
	srv := New(t)
	srv.FailEmbeddings(RateLimited(0))
	body := []byte(`{"model":"e","input":["the cat sat","the cat sat",""]}`)
	resp, err := http.Post(srv.URL+"/embeddings", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("first answer %d, want the scripted 429", resp.StatusCode)
	}
	resp, err = http.Post(srv.URL+"/embeddings", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var er openai.EmbeddingResponse
	if err := json.NewDecoder(resp.Body).Decode(&er); err != nil {
		t.Fatal(err)
	}
	if len(er.Data) != 3 || len(er.Data[0].Embedding) != 16 || er.Data[2].Index != 2 {
		t.Fatalf("response %+v", er)
	}
	var norm float32
	for i, x := range er.Data[0].Embedding {
		norm += x * x
		if x != er.Data[1].Embedding[i] || er.Data[2].Embedding[i] != 0 {
			t.Fatalf("vectors not deterministic or empty text not zero: %v", er.Data)
		}
	}
	if norm < 0.999 || norm > 1.001 {
		t.Errorf("squared norm %v, want 1", norm)
	}
	if n := len(srv.EmbeddingRequests()); n != 2 {
		t.Errorf("%d embedding requests recorded", n)
	}
	bad, err := http.Post(srv.URL+"/embeddings", "application/json", strings.NewReader(`{"input":3}`))
	if err != nil {
		t.Fatal(err)
	}
	bad.Body.Close()
	if bad.StatusCode != http.StatusBadRequest {
		t.Errorf("bad input: %d", bad.StatusCode)
	}
}
