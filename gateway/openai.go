package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/kgagent/kgagent"
)

// The OpenAI-compatible API, so existing chat UIs and SDKs can use each
// agent as a model: GET /v1/models lists "kgagent" (the router) and every
// agent of the registry, GET /v1/models/{id} returns one; POST
// /v1/chat/completions answers the last user message with that agent, as
// one JSON completion or, with "stream": true, as SSE chunks ending with
// "data: [DONE]". Citations are appended to the content as a Markdown list
// and also given in the extra field "sources".
//
// Every request parameter is honoured or refused: tools, tool_choice
// (other than "none" and "auto"), functions, function_call, n > 1, stop and
// logprobs are 400 with the OpenAI error shape (param, code
// "unsupported_parameter"); response_format json_object and json_schema
// return the answer object as JSON (a json_schema that object cannot
// satisfy is refused before the agent runs); max_tokens and
// max_completion_tokens cut the content (4 bytes a token, finish_reason
// "length"); stream_options.include_usage adds the usage chunk. Errors of
// these routes carry OpenAI's fields (message, type, param, code) beside
// kgagent's details.

// RouterModel is the model name that lets the router choose the agent.
const RouterModel = "kgagent"

// ChatCompletionRequest is OpenAI's chat completion request as kgagent
// reads it. The RawMessage fields are the parameters kgagent refuses or
// interprets; they are checked by chatOptionsOf.
type ChatCompletionRequest struct {
	Model      string        `json:"model"`
	Messages   []ChatMessage `json:"messages"`
	Stream     bool          `json:"stream,omitempty"`
	User       string        `json:"user,omitempty"`
	Collection string        `json:"collection,omitempty"` // kgagent extension
	// Accepted and ignored: the agent decides how it samples.
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	// The content is cut after this many tokens (4 bytes each).
	MaxTokens           *int `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int `json:"max_completion_tokens,omitempty"`
	// 1 or absent; more is refused.
	N *int `json:"n,omitempty"`
	// Include usage: a last chunk with the usage and no choices.
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options,omitempty"`
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	Tools          json.RawMessage `json:"tools,omitempty"`
	ToolChoice     json.RawMessage `json:"tool_choice,omitempty"`
	Functions      json.RawMessage `json:"functions,omitempty"`
	FunctionCall   json.RawMessage `json:"function_call,omitempty"`
	Stop           json.RawMessage `json:"stop,omitempty"`
	Logprobs       *bool           `json:"logprobs,omitempty"`
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
	s.handle("GET", "/v1/models/{id}", ScopeAsk, s.getModel)
	s.handle("POST", "/v1/chat/completions", scopeAtAdmission, s.chatCompletions)
}

// ReasonUnsupportedParameter is the reason (and, on /v1, the OpenAI error
// code) of a request parameter kgagent does not honour.
const ReasonUnsupportedParameter = "unsupported_parameter"

func unsupportedParam(param, format string, args ...any) *kgagent.Error {
	return invalid(ReasonUnsupportedParameter, param, format, args...)
}

// openAIError is the error body of the /v1 routes: OpenAI's fields
// (message, type, param, code) with kgagent's details. code is kgagent's
// stable code, or "unsupported_parameter".
type openAIError struct {
	Message string         `json:"message"`
	Type    string         `json:"type"`
	Param   *string        `json:"param"`
	Code    string         `json:"code"`
	Details map[string]any `json:"details,omitempty"`
}

// The response objects of the /v1 routes: OpenAI's, plus kgagent's
// sources. Fields are in the order of their JSON names (the wire format
// OpenAI's SDKs and TestOpenAIWireFormat read).

// ChatCompletion is a chat completion that does not stream
// (object "chat.completion").
type ChatCompletion struct {
	Choices []ChatChoice     `json:"choices"`
	Created int64            `json:"created"`
	ID      string           `json:"id"`
	Model   string           `json:"model"`
	Object  string           `json:"object"`
	Sources []kgagent.Source `json:"sources"`
	Usage   ChatUsage        `json:"usage"`
}

// ChatChunk is one event of a streamed chat completion
// (object "chat.completion.chunk"); Sources is on the last.
type ChatChunk struct {
	Choices []ChatChoice     `json:"choices"`
	Created int64            `json:"created"`
	ID      string           `json:"id"`
	Model   string           `json:"model"`
	Object  string           `json:"object"`
	Sources []kgagent.Source `json:"sources,omitzero"`
}

// chatChunkUsage is a ChatChunk of a stream that asked for usage
// (stream_options.include_usage): every chunk has "usage", null but on
// the last.
type chatChunkUsage struct {
	ChatChunk
	Usage *ChatUsage `json:"usage"`
}

// ChatChoice is the one choice of a completion (Message) or of a chunk
// (Delta). FinishReason is null until the last chunk.
type ChatChoice struct {
	Delta        *ChatText `json:"delta,omitempty"`
	FinishReason *string   `json:"finish_reason"`
	Index        int       `json:"index"`
	Message      *ChatText `json:"message,omitempty"`
}

// ChatText is a choice's message or delta: the assistant's content
// (sent, even empty, when set) and role.
type ChatText struct {
	Content *string `json:"content,omitempty"`
	Role    string  `json:"role,omitempty"`
}

// ChatUsage counts a completion's tokens.
type ChatUsage struct {
	CompletionTokens int `json:"completion_tokens"`
	PromptTokens     int `json:"prompt_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Model is an entry of GET /v1/models: "kgagent" (the router) or an agent.
type Model struct {
	Created int64  `json:"created"`
	ID      string `json:"id"`
	Object  string `json:"object"`
	OwnedBy string `json:"owned_by"`
}

// ModelList is the body of GET /v1/models.
type ModelList struct {
	Data   []Model `json:"data"`
	Object string  `json:"object"`
}

// openAIErrorBody is the body of a /v1 error.
type openAIErrorBody struct {
	Error openAIError `json:"error"`
}

func openAIErrorOf(err error) openAIError {
	e := toError(err)
	status := kgagent.HTTPStatus(e.Code)
	o := openAIError{Message: e.Message, Type: "invalid_request_error", Code: e.Code, Details: e.Details}
	switch {
	case status == http.StatusUnauthorized:
		o.Type = "authentication_error"
	case status == http.StatusForbidden:
		o.Type = "permission_error"
	case status == http.StatusNotFound:
		o.Type = "not_found_error"
	case status == http.StatusTooManyRequests:
		o.Type = "rate_limit_error"
	case status >= 500:
		o.Type = "server_error"
	}
	if f, ok := e.Details["field"].(string); ok {
		o.Param = &f
	}
	if e.Details["reason"] == ReasonUnsupportedParameter {
		o.Code = ReasonUnsupportedParameter
	}
	return o
}

// writeOpenAIError writes err in the shape OpenAI's SDKs read, through
// writeErrorAs.
func (s *Server) writeOpenAIError(w http.ResponseWriter, r *http.Request, err error) {
	s.writeErrorAs(w, r, 0, err, func(e *kgagent.Error) any {
		o := openAIErrorOf(e)
		return openAIErrorBody{o}
	})
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

func modelObject(id string) Model {
	return Model{ID: id, Object: "model", OwnedBy: "kgagent"}
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	names, err := s.models(r)
	if err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	data := make([]Model, 0, len(names))
	for _, n := range names {
		data = append(data, modelObject(n))
	}
	writeJSON(w, http.StatusOK, ModelList{Data: data, Object: "list"})
}

// checkModel returns ENOTFOUND unless id is a model of /v1/models.
func (s *Server) checkModel(r *http.Request, id string) error {
	names, err := s.models(r)
	if err != nil {
		return err
	}
	if !slices.Contains(names, id) {
		e := kgagent.Errorf(kgagent.ENOTFOUND, "no model %q (GET /v1/models lists them)", id)
		e.Details = map[string]any{"field": "model"}
		return e
	}
	return nil
}

func (s *Server) getModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.checkModel(r, id); err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, modelObject(id))
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

// chatOptions are the parameters of a chat completion kgagent honours.
type chatOptions struct {
	json         bool                 // content is the answer object as JSON
	schema       *jsonschema.Resolved // that object must validate against it (json_schema)
	rawSchema    map[string]any       // that schema, to drop what it forbids
	maxBytes     int                  // the content is cut after this many bytes (0: not cut)
	includeUsage bool
}

// bytesPerToken is how kgagent counts tokens where a model did not: 4
// bytes each, as the agent estimates them.
const bytesPerToken = 4

// chatOptionsOf checks the parameters kgagent does not simply accept and
// returns what it honours. Errors: EINVALID with reason
// unsupported_parameter and the parameter as field, or a bad value.
func chatOptionsOf(req ChatCompletionRequest) (chatOptions, error) {
	var o chatOptions
	present := func(raw json.RawMessage) bool {
		t := strings.TrimSpace(string(raw))
		return t != "" && t != "null" && t != "[]" && t != `""`
	}
	if present(req.Tools) || present(req.Functions) {
		param := "tools"
		if !present(req.Tools) {
			param = "functions"
		}
		return o, unsupportedParam(param, "%s is not supported: kgagent's agents call their own functions and answer in text (ask without %s, or use response_format json_schema for structured output)", param, param)
	}
	if present(req.ToolChoice) {
		var choice string
		if json.Unmarshal(req.ToolChoice, &choice) != nil || (choice != "none" && choice != "auto") {
			return o, unsupportedParam("tool_choice", `tool_choice is not supported (only "none" and "auto" without tools): kgagent's agents do not call the caller's tools`)
		}
	}
	if present(req.FunctionCall) {
		return o, unsupportedParam("function_call", "function_call is not supported: kgagent's agents do not call the caller's functions")
	}
	if req.N != nil && *req.N != 1 {
		if *req.N < 1 {
			return o, invalid(ReasonUnknownValue, "n", "n must be at least 1, not %d", *req.N)
		}
		return o, unsupportedParam("n", "n = %d is not supported: kgagent gives one answer per request (n = 1)", *req.N)
	}
	if present(req.Stop) {
		return o, unsupportedParam("stop", "stop is not supported: kgagent's answers end where the agent ends them (max_tokens cuts them)")
	}
	if req.Logprobs != nil && *req.Logprobs {
		return o, unsupportedParam("logprobs", "logprobs is not supported")
	}
	for _, mt := range []struct {
		name string
		v    *int
	}{{"max_tokens", req.MaxTokens}, {"max_completion_tokens", req.MaxCompletionTokens}} {
		if mt.v == nil {
			continue
		}
		if *mt.v < 1 {
			return o, invalid(ReasonUnknownValue, mt.name, "%s must be at least 1, not %d", mt.name, *mt.v)
		}
		if b := *mt.v * bytesPerToken; o.maxBytes == 0 || b < o.maxBytes {
			o.maxBytes = b
		}
	}
	if req.StreamOptions != nil {
		o.includeUsage = req.StreamOptions.IncludeUsage
	}
	if present(req.ResponseFormat) {
		var rf struct {
			Type       string `json:"type"`
			JSONSchema *struct {
				Name   string          `json:"name"`
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		}
		if err := json.Unmarshal(req.ResponseFormat, &rf); err != nil {
			return o, invalid(ReasonWrongType, "response_format", "response_format must be an object with a type")
		}
		switch rf.Type {
		case "text":
		case "json_object":
			o.json = true
		case "json_schema":
			o.json = true
			if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 {
				return o, invalid(ReasonMissingField, "response_format", "response_format json_schema needs json_schema.schema")
			}
			if err := o.setSchema(rf.JSONSchema.Schema); err != nil {
				return o, err
			}
		default:
			return o, unsupportedParam("response_format", `response_format type %q is not supported (text, json_object or json_schema)`, rf.Type)
		}
	}
	return o, nil
}

// answerObjectDoc says what the JSON content of a json response_format is.
const answerObjectDoc = `{"answer": string, "sources": [{"url", "title", "score", "heading_path"?}], "agent"?: string, "citations"?: string}`

// setSchema takes a json_schema response format: kgagent returns its
// answer object, keeping only the properties the schema names when it
// allows no others, and refuses a schema such an object cannot satisfy
// (checked on a sample answer, before the agent runs).
func (o *chatOptions) setSchema(raw json.RawMessage) error {
	var sc jsonschema.Schema
	if err := json.Unmarshal(raw, &sc); err != nil {
		return invalid(ReasonWrongType, "response_format", "response_format json_schema.schema is not a JSON Schema: %v", err)
	}
	rs, err := sc.Resolve(nil)
	if err != nil {
		return unsupportedParam("response_format", "response_format json_schema.schema cannot be used: %v", err)
	}
	o.schema = rs
	_ = json.Unmarshal(raw, &o.rawSchema)
	sample := kgagent.Answer{Answer: "An answer [1].", Agent: "docs", Citations: kgagent.CitationsModel,
		Sources: []kgagent.Source{{URL: "https://docs.example/page#section", Title: "Page", Score: 1, HeadingPath: []string{"Page", "Section"}}}}
	if _, err := o.answerJSON(sample); err != nil {
		return unsupportedParam("response_format", "kgagent answers with the object %s; this json_schema does not accept it (%v), so it cannot be honoured", answerObjectDoc, err)
	}
	return nil
}

// answerJSON renders ans as the content of a json response format.
func (o *chatOptions) answerJSON(ans kgagent.Answer) (string, error) {
	src := make([]map[string]any, len(ans.Sources))
	for i, s := range ans.Sources {
		src[i] = map[string]any{"url": s.URL, "title": s.Title, "score": s.Score}
		if len(s.HeadingPath) > 0 {
			src[i]["heading_path"] = s.HeadingPath
		}
	}
	obj := map[string]any{"answer": ans.Answer, "sources": src}
	if ans.Agent != "" {
		obj["agent"] = ans.Agent
	}
	if ans.Citations != "" {
		obj["citations"] = ans.Citations
	}
	if o.schema == nil {
		b, err := json.Marshal(obj)
		return string(b), err
	}
	// The schema sees the object as JSON decodes it.
	b, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	var v any
	_ = json.Unmarshal(b, &v)
	v = project(v, o.rawSchema, o.rawSchema, 0)
	if err := o.schema.Validate(v); err != nil {
		return "", err
	}
	b, err = json.Marshal(v)
	return string(b), err
}

// project drops from v, at every level, the object properties that the
// schema sch (part of root) forbids with additionalProperties: false, so
// that a strict schema naming some of the answer's fields accepts it.
func project(v any, sch, root map[string]any, depth int) any {
	if depth > 32 || sch == nil {
		return v
	}
	for i := 0; i < 8; i++ { // follow local $refs ("#/$defs/Source")
		ref, ok := sch["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#/") {
			break
		}
		var at any = root
		for _, part := range strings.Split(ref[2:], "/") {
			m, _ := at.(map[string]any)
			at = m[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]
		}
		next, ok := at.(map[string]any)
		if !ok {
			return v
		}
		sch = next
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := sch["properties"].(map[string]any)
		if ap, ok := sch["additionalProperties"].(bool); ok && !ap {
			for k := range x {
				if _, ok := props[k]; !ok {
					delete(x, k)
				}
			}
		}
		for k, val := range x {
			if ps, ok := props[k].(map[string]any); ok {
				x[k] = project(val, ps, root, depth+1)
			}
		}
	case []any:
		if is, ok := sch["items"].(map[string]any); ok {
			for i := range x {
				x[i] = project(x[i], is, root, depth+1)
			}
		}
	}
	return v
}

// cut returns content cut to o.maxBytes (at a rune boundary) and whether
// it was cut.
func (o *chatOptions) cut(content string) (string, bool) {
	if o.maxBytes == 0 || len(content) <= o.maxBytes {
		return content, false
	}
	n := o.maxBytes
	for n > 0 && !utf8.RuneStart(content[n]) {
		n--
	}
	return content[:n], true
}

// chatUsage is the usage of a completion: the run's LLM tokens, or, when
// none were spent (an answer from the cache), the prompt and the reply
// counted at 4 bytes a token, so that clients never see zero.
func chatUsage(u kgagent.Usage, req ChatCompletionRequest, content string) ChatUsage {
	if u.PromptTokens == 0 && u.CompletionTokens == 0 {
		n := 0
		for _, m := range req.Messages {
			t, _ := m.text()
			n += len(t)
		}
		u.PromptTokens = (n + bytesPerToken - 1) / bytesPerToken
		u.CompletionTokens = (len(content) + bytesPerToken - 1) / bytesPerToken
	}
	return ChatUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	data, err := s.readJSONBody(w, r)
	if err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	req, question, err := DecodeChatCompletion(data)
	if err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	opts, err := chatOptionsOf(req)
	if err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	model := req.Model
	if model == "" {
		model = RouterModel
	}
	// An unknown model is 404 before anything is charged or streamed.
	if err := s.checkModel(r, model); err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	agentName := model
	if model == RouterModel {
		agentName = ""
	}
	p := principalFrom(r.Context())
	areq := Request{Question: question, Agent: agentName, Collection: req.Collection}
	rid := requestID(r.Context())
	id := "chatcmpl-" + rid
	created := time.Now().Unix()
	// content returns the whole content of ans as the options want it,
	// and the finish reason.
	content := func(ans kgagent.Answer) (string, string, error) {
		text := ans.Answer + citations(ans.Sources)
		if opts.json {
			var err error
			if text, err = opts.answerJSON(ans); err != nil {
				return "", "", kgagent.WrapError(kgagent.EINTERNAL, err, "the answer does not fit the response_format json_schema")
			}
		}
		text, cut := opts.cut(text)
		if cut {
			return text, "length", nil
		}
		return text, "stop", nil
	}
	var mu sync.Mutex
	open := true     // the stream takes writes
	started := false // the event stream's header is written: errors go in the stream
	// write sends one chunk of the stream; usage is on the last one of a
	// stream that asked for it.
	rc := http.NewResponseController(w)
	write := func(c ChatChunk, usage *ChatUsage) {
		var v any = c
		if opts.includeUsage {
			v = chatChunkUsage{c, usage}
		}
		b, _ := json.Marshal(v)
		if !open {
			return
		}
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		_ = rc.Flush()
	}
	// head is every chunk's header; chunk adds a choice to it.
	head := ChatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model}
	chunk := func(delta ChatText, finish *string) ChatChunk {
		c := head
		c.Choices = []ChatChoice{{Index: 0, Delta: &delta, FinishReason: finish}}
		return c
	}
	err = s.call(r.Context(), p, admission{id: rid, scope: ScopeAsk, service: ServiceAgent, req: &areq, charge: true, slot: true}, func(ctx context.Context) error {
		ask := Call{ID: rid, Request: areq, Caller: s.callerOf(p)}.agentRequest()
		if !req.Stream {
			ans, err := s.b.Asker.Ask(ctx, ask, func(kgagent.Event) {})
			s.metrics.observeAnswer(ans)
			if err != nil {
				return err
			}
			text, finish, err := content(ans)
			if err != nil {
				return err
			}
			writeJSON(w, http.StatusOK, ChatCompletion{
				ID: id, Object: "chat.completion", Created: created, Model: model,
				Choices: []ChatChoice{{Index: 0, Message: &ChatText{Role: "assistant", Content: &text}, FinishReason: &finish}},
				Usage:   chatUsage(ans.Usage, req, text),
				Sources: nonNil(ans.Sources),
			})
			return nil
		}

		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Accel-Buffering", "no")
		sent := 0          // content bytes sent so far
		streamed := false  // answer deltas were sent
		truncated := false // max_tokens cut them
		mu.Lock()
		started = true
		write(chunk(ChatText{Role: "assistant", Content: Text("")}, nil), nil)
		mu.Unlock()
		ans, err := s.b.Asker.Ask(ctx, ask, func(ev kgagent.Event) {
			if ev.Kind != kgagent.EventAnswer || !ev.Delta || opts.json {
				return // JSON content is sent whole at the end
			}
			mu.Lock()
			defer mu.Unlock()
			streamed = true
			text := ev.Text
			if opts.maxBytes > 0 {
				cut := true
				if sent < opts.maxBytes {
					text, cut = (&chatOptions{maxBytes: opts.maxBytes - sent}).cut(text)
				}
				truncated = truncated || cut
				if sent >= opts.maxBytes {
					return
				}
			}
			if text == "" {
				return
			}
			sent += len(text)
			write(chunk(ChatText{Content: &text}, nil), nil)
		})
		s.metrics.observeAnswer(ans)
		if err != nil {
			return err
		}
		text, finish, err := content(ans)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		// What the deltas did not carry: the whole content when none came,
		// else the citations after the answer, within max_tokens.
		rest := text
		if streamed {
			rest, finish = citations(ans.Sources), "stop"
			if opts.maxBytes > 0 {
				cut := truncated
				if !cut {
					rest, cut = (&chatOptions{maxBytes: opts.maxBytes - sent}).cut(rest)
				} else {
					rest = ""
				}
				if cut {
					finish = "length"
				}
			}
		}
		if rest != "" {
			write(chunk(ChatText{Content: &rest}, nil), nil)
		}
		last := chunk(ChatText{}, &finish)
		last.Sources = nonNil(ans.Sources)
		write(last, nil)
		if opts.includeUsage {
			u, c := chatUsage(ans.Usage, req, text), head
			c.Choices = []ChatChoice{} // the usage chunk has no choice
			write(c, &u)
		}
		_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
		_ = rc.Flush()
		open = false
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if err == nil || !open {
		open = false
		return
	}
	open = false
	if !started {
		s.writeOpenAIError(w, r, err)
		return
	}
	// The stream is under way (a panic included): the error is its last
	// event.
	o := openAIErrorOf(err)
	b, _ := json.Marshal(openAIErrorBody{o})
	_, _ = fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
}

func nonNil(s []kgagent.Source) []kgagent.Source {
	if s == nil {
		return []kgagent.Source{}
	}
	return s
}
