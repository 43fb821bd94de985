package openai

import (
	"encoding/json"

	"github.com/kgagent/kgagent/llm"
)

// ChatRequest is the body of POST /chat/completions as this client sends it.
// It is exported so that test servers and the gateway's OpenAI-compatible
// endpoint can decode exactly what clients send.
type ChatRequest struct {
	Model         string            `json:"model"`
	Messages      []llm.ChatMessage `json:"messages"`
	Stream        bool              `json:"stream"`
	StreamOptions *StreamOptions    `json:"stream_options,omitempty"`
	Stop          []string          `json:"stop,omitempty"`
	Temperature   *float64          `json:"temperature,omitempty"`
	MaxTokens     int               `json:"max_tokens,omitempty"`
	// Tools are offered for native tool calls (protocol tools).
	Tools []ToolDef `json:"tools,omitempty"`
	// ToolChoice is "required" when the step must call a tool.
	ToolChoice string `json:"tool_choice,omitempty"`
	// ResponseFormat constrains the reply (protocol json: a json_schema).
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
}

// ToolDef is one tool of a ChatRequest: {"type": "function", "function": ...}.
type ToolDef struct {
	Type     string      `json:"type"`
	Function FunctionDef `json:"function"`
}

// FunctionDef describes a function tool.
type FunctionDef struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Parameters  any    `json:"parameters"`
}

// ResponseFormat is {"type": "json_schema", "json_schema": {...}}.
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema names a schema the reply must match.
type JSONSchema struct {
	Name   string `json:"name"`
	Strict bool   `json:"strict"`
	Schema any    `json:"schema"`
}

// ToolCall is a tool call of a reply; in a stream its pieces come as deltas
// with the same Index, Arguments in fragments.
type ToolCall struct {
	Index    int          `json:"index"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function and arguments (a JSON text) of a ToolCall.
type FunctionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// StreamOptions asks a streaming server to append a usage chunk.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ChatChunk is one server-sent event of a streamed completion
// ("object": "chat.completion.chunk").
type ChatChunk struct {
	ID      string        `json:"id,omitempty"`
	Object  string        `json:"object,omitempty"`
	Created int64         `json:"created,omitempty"`
	Model   string        `json:"model,omitempty"`
	Choices []ChunkChoice `json:"choices"`
	Usage   *Usage        `json:"usage,omitempty"`
	// Error is set by servers that report a failure inside the stream.
	Error *APIError `json:"error,omitempty"`
}

// ChunkChoice is one choice of a ChatChunk.
type ChunkChoice struct {
	Index        int         `json:"index"`
	Delta        ChunkDelta  `json:"delta"`
	FinishReason *string     `json:"finish_reason"`
	Text         string      `json:"text,omitempty"` // legacy completion servers
	Message      *ChunkDelta `json:"message,omitempty"`
}

// ChunkDelta is the new text (or tool call pieces) of a choice.
type ChunkDelta struct {
	Role      string     `json:"role,omitempty"`
	Content   string     `json:"content,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// ChatCompletion is the body of a non-streamed completion
// ("object": "chat.completion").
type ChatCompletion struct {
	ID      string       `json:"id,omitempty"`
	Object  string       `json:"object,omitempty"`
	Created int64        `json:"created,omitempty"`
	Model   string       `json:"model,omitempty"`
	Choices []ChatChoice `json:"choices"`
	Usage   *Usage       `json:"usage,omitempty"`
}

// ChatChoice is one choice of a ChatCompletion.
type ChatChoice struct {
	Index        int             `json:"index"`
	Message      ResponseMessage `json:"message"`
	FinishReason string          `json:"finish_reason"`
}

// ResponseMessage is the message of a ChatChoice.
type ResponseMessage struct {
	Role      string     `json:"role"`
	Content   string     `json:"content"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// Usage is the token count an OpenAI-compatible server reports.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// ErrorResponse is the body of an error answer: {"error": {...}}.
type ErrorResponse struct {
	Error APIError `json:"error"`
}

// APIError is the error object of an OpenAI-compatible server. Code is a
// string for OpenAI and a number for some local servers, hence RawMessage.
type APIError struct {
	Message string          `json:"message"`
	Type    string          `json:"type,omitempty"`
	Param   json.RawMessage `json:"param,omitempty"`
	Code    json.RawMessage `json:"code,omitempty"`
}

// CodeString returns Code as a string whether the server sent a string or a
// number, and "" when it sent none.
func (e APIError) CodeString() string {
	if len(e.Code) == 0 || string(e.Code) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(e.Code, &s) == nil {
		return s
	}
	return string(e.Code)
}

// ModelList is the body of GET /models.
type ModelList struct {
	Object string  `json:"object"`
	Data   []Model `json:"data"`
}

// Model is one entry of a ModelList.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	OwnedBy string `json:"owned_by,omitempty"`
}

// EmbeddingRequest is the body of POST /embeddings, as the Embedder sends
// it. Input is a string or a list of strings on the wire (the Embedder sends
// a list); Inputs normalizes it.
type EmbeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format,omitempty"`
	Dimensions     int             `json:"dimensions,omitempty"`
	// InputType is "input_type" (query or document), for the servers that
	// take it (Cohere, Voyage, Nomic); EmbedConfig sets it.
	InputType string `json:"input_type,omitempty"`
}

// Inputs returns the request's input as a list; false when it is neither a
// string nor a list of strings.
func (r EmbeddingRequest) Inputs() ([]string, bool) {
	var one string
	if json.Unmarshal(r.Input, &one) == nil {
		return []string{one}, true
	}
	var many []string
	if json.Unmarshal(r.Input, &many) == nil {
		return many, true
	}
	return nil, false
}

// EmbeddingResponse is the body of an embeddings answer.
type EmbeddingResponse struct {
	Object string      `json:"object"`
	Data   []Embedding `json:"data"`
	Model  string      `json:"model"`
	Usage  *Usage      `json:"usage,omitempty"`
}

// Embedding is one vector of an EmbeddingResponse, in input order by Index.
type Embedding struct {
	Object    string    `json:"object"`
	Index     int       `json:"index"`
	Embedding []float32 `json:"embedding"`
}
