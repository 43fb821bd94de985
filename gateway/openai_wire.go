package gateway

// The wire of the OpenAI-compatible API: the request kgagent reads and its
// decoding, the response objects, and the errors in OpenAI's shape.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/kgagent/kgagent"
)

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
