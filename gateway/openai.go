package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/kgagent/kgagent"
)

// The OpenAI-compatible API, so existing chat UIs can use each agent as a
// model: GET /v1/models lists "kgagent" (the router) and every agent of the
// registry; POST /v1/chat/completions answers the last user message with
// that agent, as one JSON completion or, with "stream": true, as SSE chunks
// ending with "data: [DONE]". Citations are appended to the content as a
// Markdown list and also given in the extra field "sources".

// RouterModel is the model name that lets the router choose the agent.
const RouterModel = "kgagent"

// ChatCompletionRequest is the subset of OpenAI's request kgagent reads.
type ChatCompletionRequest struct {
	Model      string        `json:"model"`
	Messages   []ChatMessage `json:"messages"`
	Stream     bool          `json:"stream,omitempty"`
	User       string        `json:"user,omitempty"`
	Collection string        `json:"collection,omitempty"` // kgagent extension
	// Accepted and ignored: the agent decides.
	Temperature *float64 `json:"temperature,omitempty"`
	MaxTokens   *int     `json:"max_tokens,omitempty"`
}

// ChatMessage is one message; content is a string or a list of
// {"type":"text","text":...} parts.
type ChatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func (m ChatMessage) text() (string, error) {
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", invalid(ReasonWrongType, "messages.content", "content must be a string or a list of text parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

var chatRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true}

// DecodeChatCompletion decodes a chat completion request and returns it
// with the question (the last user message). Errors: EINVALID.
func DecodeChatCompletion(data []byte) (ChatCompletionRequest, string, error) {
	var req ChatCompletionRequest
	if err := decodeJSON(data, &req); err != nil {
		return req, "", err
	}
	for i, m := range req.Messages {
		if !chatRoles[m.Role] {
			return req, "", invalid(ReasonUnknownValue, fmt.Sprintf("messages[%d].role", i), "role must be system, developer, user, assistant or tool")
		}
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			q, err := req.Messages[i].text()
			if err != nil {
				return req, "", err
			}
			if strings.TrimSpace(q) == "" {
				break
			}
			return req, q, nil
		}
	}
	return req, "", invalid(ReasonMissingField, "messages", "messages must end with a non-empty user message")
}

func (s *Server) openAIRoutes() {
	s.handle("GET", "/v1/models", ScopeAsk, s.listModels)
	s.handle("POST", "/v1/chat/completions", ScopeAsk, s.chatCompletions)
}

func (s *Server) models(r *http.Request) ([]string, error) {
	names := []string{RouterModel}
	if s.b.Registry != nil {
		agents, err := s.b.Registry.ListAgents(r.Context())
		if err != nil {
			return nil, err
		}
		for _, a := range agents {
			names = append(names, a.Name)
		}
	}
	return names, nil
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	names, err := s.models(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	data := make([]map[string]any, 0, len(names))
	for _, n := range names {
		data = append(data, map[string]any{"id": n, "object": "model", "created": 0, "owned_by": "kgagent"})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func citations(src []kgagent.Source) string {
	if len(src) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\nSources:\n")
	for i, s := range src {
		title := s.Title
		if title == "" {
			title = s.URL
		}
		// Numbered as the answer cites them: [n] is the n-th source.
		fmt.Fprintf(&b, "%d. [%s](%s)\n", i+1, title, s.URL)
	}
	return b.String()
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	data, err := s.readJSONBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req, question, err := DecodeChatCompletion(data)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	model := req.Model
	if model == "" {
		model = RouterModel
	}
	agentName := model
	if model == RouterModel {
		agentName = ""
	}
	p := principalFrom(r.Context())
	areq := Request{Question: question, Agent: agentName, Collection: req.Collection}
	ctx, cancel, err := s.admit(r.Context(), p, admission{scope: ScopeAsk, service: ServiceAgent, req: &areq, charge: true})
	defer cancel()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	r = r.WithContext(ctx)
	id := "chatcmpl-" + requestID(r.Context())
	created := time.Now().Unix()
	call := Call{ID: requestID(r.Context()), Service: ServiceAgent, Request: areq, Caller: s.callerOf(p)}
	if !req.Stream {
		ans, err := s.ask(r.Context(), call, func(kgagent.Event) {})
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []map[string]any{{"index": 0, "message": map[string]any{"role": "assistant", "content": ans.Answer + citations(ans.Sources)}, "finish_reason": "stop"}},
			"usage":   map[string]int{"prompt_tokens": ans.Usage.PromptTokens, "completion_tokens": ans.Usage.CompletionTokens, "total_tokens": ans.Usage.PromptTokens + ans.Usage.CompletionTokens},
			"sources": nonNil(ans.Sources),
		})
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	rc := http.NewResponseController(w)
	var mu sync.Mutex
	open := true
	streamed := false
	chunk := func(delta map[string]any, finish any, extra map[string]any) {
		m := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}}
		for k, v := range extra {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		mu.Lock()
		defer mu.Unlock()
		if !open {
			return
		}
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		_ = rc.Flush()
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	ans, err := s.ask(r.Context(), call, func(ev kgagent.Event) {
		if ev.Kind == kgagent.EventAnswer && ev.Delta {
			mu.Lock()
			streamed = true
			mu.Unlock()
			chunk(map[string]any{"content": ev.Text}, nil, nil)
		}
	})
	if err != nil {
		e := toError(err)
		b, _ := json.Marshal(errorBody{Error: e})
		mu.Lock()
		_, _ = fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
		open = false
		mu.Unlock()
		return
	}
	rest := citations(ans.Sources)
	mu.Lock()
	tokens := streamed
	mu.Unlock()
	if !tokens {
		rest = ans.Answer + rest
	}
	if rest != "" {
		chunk(map[string]any{"content": rest}, nil, nil)
	}
	chunk(map[string]any{}, "stop", map[string]any{"sources": nonNil(ans.Sources)})
	mu.Lock()
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	_ = rc.Flush()
	open = false
	mu.Unlock()
}

func nonNil(s []kgagent.Source) []kgagent.Source {
	if s == nil {
		return []kgagent.Source{}
	}
	return s
}
