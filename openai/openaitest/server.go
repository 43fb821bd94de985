// Package openaitest is an in-process OpenAI-compatible chat server for
// tests: it replays a script of completions over real HTTP and server-sent
// events, answers errors (429 with Retry-After, 500, 401, quota exhausted),
// hangs until the client goes away, and records every request it received so
// tests can assert on the prompt and the stop sequences. It also lists
// models (GET /v1/models) and answers POST /v1/embeddings with deterministic
// word-hash vectors (see Vector), for tests of embeddings clients.
//
// A script is a list of Steps, one per chat completion request, consumed in
// order. Like a real server, the text of a step is cut at the first of the
// request's stop sequences unless the step says IgnoreStop.
//
//	srv := openaitest.New(t,
//		openaitest.RateLimited(10*time.Millisecond),
//		openaitest.Reply("Ask Func[weather]: Paris\nFunc[weather] says: sunny"),
//		openaitest.Reply("A: It is sunny."),
//	)
//	client, _ := openai.New(openai.Config{BaseURL: srv.URL})
package openaitest

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/kgagent/kgagent/openai"
)

// Step is the server's answer to one chat completion request.
type Step struct {
	// Chunks are the pieces of text streamed, one SSE event each. A
	// non-streamed request gets them joined.
	Chunks []string
	// Delay is waited before each chunk (and before the headers of an error
	// answer).
	Delay time.Duration
	// Usage is reported in the usage chunk; nil computes one (whitespace
	// words of the prompt, number of chunks sent).
	Usage *openai.Usage
	// FinishReason is sent with the last chunk; default "stop".
	FinishReason string
	// IgnoreStop streams the chunks whole, as servers that do not honour
	// stop sequences do.
	IgnoreStop bool

	// Status, when not 0 or 200, answers with this status and an error body
	// of ErrorType, ErrorCode and ErrorMessage.
	Status       int
	ErrorType    string
	ErrorCode    string
	ErrorMessage string
	// RetryAfter is sent as Retry-After (whole seconds, rounded up) and
	// retry-after-ms when Status is set.
	RetryAfter time.Duration
	// StreamError is sent as an error event after the chunks.
	StreamError *openai.APIError

	// Hang sends the headers and the chunks, then blocks until the client
	// goes away or the server closes.
	Hang bool
	// Raw, when not empty, is written as the whole body of a 200
	// text/event-stream answer, as is.
	Raw string
	// Respond, when set, is called with the request and its Step is served
	// instead of this one (for answers that depend on the prompt).
	Respond func(Request) Step
	// ToolCalls are sent after the chunks, each streamed as a first piece
	// (id and name) and its arguments in two fragments.
	ToolCalls []openai.ToolCall
}

// Calls answers with native tool calls (name and JSON arguments pairs),
// finish reason "tool_calls".
func Calls(nameArgs ...string) Step {
	st := Step{FinishReason: "tool_calls"}
	for i := 0; i+1 < len(nameArgs); i += 2 {
		st.ToolCalls = append(st.ToolCalls, openai.ToolCall{Index: i / 2, ID: fmt.Sprintf("call_%d", i/2), Type: "function",
			Function: openai.FunctionCall{Name: nameArgs[i], Arguments: nameArgs[i+1]}})
	}
	return st
}

// Reply streams text in word-sized chunks.
func Reply(text string) Step { return Step{Chunks: SplitTokens(text)} }

// Chunks streams the given pieces as they are.
func Chunks(pieces ...string) Step { return Step{Chunks: pieces} }

// RateLimited answers 429 with a Retry-After of d.
func RateLimited(d time.Duration) Step {
	return Step{Status: http.StatusTooManyRequests, RetryAfter: d, ErrorType: "requests", ErrorCode: "rate_limit_exceeded", ErrorMessage: "Rate limit reached"}
}

// ServerError answers 500.
func ServerError() Step {
	return Step{Status: http.StatusInternalServerError, ErrorType: "server_error", ErrorMessage: "The server had an error"}
}

// Unauthorized answers 401 as OpenAI does for a bad key.
func Unauthorized() Step {
	return Step{Status: http.StatusUnauthorized, ErrorType: "invalid_request_error", ErrorCode: "invalid_api_key", ErrorMessage: "Incorrect API key provided"}
}

// QuotaExceeded answers 429 insufficient_quota as OpenAI does when the
// account has no credit left.
func QuotaExceeded() Step {
	return Step{Status: http.StatusTooManyRequests, ErrorType: "insufficient_quota", ErrorCode: "insufficient_quota", ErrorMessage: "You exceeded your current quota"}
}

// Hang streams the pieces, then blocks until the client cancels.
func Hang(pieces ...string) Step { return Step{Chunks: pieces, Hang: true} }

// Raw writes body as the whole text/event-stream answer.
func Raw(body string) Step { return Step{Raw: body} }

// WithDelay returns s waiting d before each chunk.
func (s Step) WithDelay(d time.Duration) Step { s.Delay = d; return s }

// WithUsage returns s reporting the given token counts.
func (s Step) WithUsage(prompt, completion int) Step {
	s.Usage = &openai.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	return s
}

// IgnoringStop returns s streamed without cutting at stop sequences.
func (s Step) IgnoringStop() Step { s.IgnoreStop = true; return s }

// SplitTokens splits text into word-sized pieces that join back to text:
// each piece is a run of spaces followed by a run of non-spaces, or a
// newline, the way model tokens often fall.
func SplitTokens(text string) []string {
	var out []string
	start := 0
	inWord := false
	for i, r := range text {
		switch {
		case r == '\n':
			if i > start {
				out = append(out, text[start:i])
			}
			out = append(out, "\n")
			start, inWord = i+1, false
		case unicode.IsSpace(r):
			if inWord {
				out = append(out, text[start:i])
				start, inWord = i, false
			}
		default:
			inWord = true
		}
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// Request is a request the server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	// Body is the decoded chat request (zero for other paths).
	Body openai.ChatRequest
	// Raw is the body as received.
	Raw []byte
	// Step is the index of the script step that answered, -1 for none.
	Step int
}

// Prompt returns the contents of the request's messages joined by "\n".
func (r Request) Prompt() string {
	parts := make([]string, len(r.Body.Messages))
	for i, m := range r.Body.Messages {
		parts[i] = m.Content
	}
	return strings.Join(parts, "\n")
}

// Server is a running scripted server. Its methods are safe for concurrent
// use.
type Server struct {
	// URL is the API base URL, ending in /v1, for openai.Config.BaseURL.
	URL string

	srv  *httptest.Server
	done chan struct{}
	once sync.Once

	mu                  sync.Mutex
	script              []Step
	next                int
	fallback            *Step
	requests            []Request
	apiKey              string
	models              []string
	rejectStreamOptions bool
	ignoreStreamOptions bool
	exhausted           int
	active              int
	embedDim            int
	embedErrors         []Step
	rejectTools         bool
	rejectFormat        bool
}

// RejectTools answers requests that offer tools with a 400, as Ollama does
// for a model whose template does not render tools.
func (s *Server) RejectTools() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejectTools = true
}

// RejectResponseFormat answers requests with a response_format with a 400,
// as servers without structured output do.
func (s *Server) RejectResponseFormat() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejectFormat = true
}

// New starts a server replaying steps and closes it when the test ends.
func New(tb testing.TB, steps ...Step) *Server {
	tb.Helper()
	s := NewServer(steps...)
	tb.Cleanup(s.Close)
	return s
}

// NewServer starts a server replaying steps; call Close when done.
func NewServer(steps ...Step) *Server {
	s := &Server{done: make(chan struct{}), script: steps, models: []string{"scripted"}, embedDim: 16}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.srv.URL + "/v1"
	return s
}

// Close releases hanging requests and stops the server.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// SetDefault serves step for every request after the script is used up;
// without a default such requests get a 500 "script exhausted" answer.
func (s *Server) SetDefault(step Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallback = &step
}

// RequireKey makes the server answer 401 to requests without
// "Authorization: Bearer key" (the script is not consumed).
func (s *Server) RequireKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apiKey = key
}

// SetModels sets the ids GET /v1/models lists (default ["scripted"]).
func (s *Server) SetModels(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = ids
}

// RejectStreamOptions makes the server answer 400 to requests carrying
// stream_options, as some older local servers do.
func (s *Server) RejectStreamOptions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejectStreamOptions = true
}

// IgnoreStreamOptions makes the server never send a usage chunk.
func (s *Server) IgnoreStreamOptions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ignoreStreamOptions = true
}

// SetEmbeddingDim sets the length of the vectors /v1/embeddings returns
// (default 16).
func (s *Server) SetEmbeddingDim(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.embedDim = n
}

// FailEmbeddings makes the next embeddings requests answer these error
// steps (Status, RetryAfter, ErrorType...), one each, before vectors again.
func (s *Server) FailEmbeddings(steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.embedErrors = append(s.embedErrors, steps...)
}

// EmbeddingRequests returns the embeddings requests received so far.
func (s *Server) EmbeddingRequests() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if strings.HasSuffix(r.Path, "/embeddings") {
			out = append(out, r)
		}
	}
	return out
}

// Vector is the deterministic embedding the server returns for text: each
// lower-cased word hashed (FNV-1a) into one of dim buckets, then scaled to
// unit length, so texts sharing words are near each other. An empty text
// gets the zero vector.
func Vector(text string, dim int) []float32 {
	v := make([]float32, dim)
	if dim <= 0 {
		return v
	}
	for _, w := range strings.Fields(strings.ToLower(text)) {
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%uint32(dim)]++
	}
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n > 0 {
		inv := float32(1 / math.Sqrt(n))
		for i := range v {
			v[i] *= inv
		}
	}
	return v
}

func serveEmbeddings(w http.ResponseWriter, raw []byte, dim int) {
	var req openai.EmbeddingRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		writeError(w, Step{Status: http.StatusBadRequest, ErrorType: "invalid_request_error", ErrorMessage: "body is not JSON"})
		return
	}
	inputs, ok := req.Inputs()
	if !ok || len(inputs) == 0 {
		writeError(w, Step{Status: http.StatusBadRequest, ErrorType: "invalid_request_error", ErrorMessage: "input must be a string or a non-empty list of strings"})
		return
	}
	if req.Dimensions > 0 {
		dim = req.Dimensions
	}
	resp := openai.EmbeddingResponse{Object: "list", Model: req.Model, Usage: &openai.Usage{}}
	for i, in := range inputs {
		resp.Data = append(resp.Data, openai.Embedding{Object: "embedding", Index: i, Embedding: Vector(in, dim)})
		resp.Usage.PromptTokens += len(strings.Fields(in))
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	writeJSON(w, http.StatusOK, resp)
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ChatRequests returns the chat completion requests received so far.
func (s *Server) ChatRequests() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if strings.HasSuffix(r.Path, "/chat/completions") {
			out = append(out, r)
		}
	}
	return out
}

// Remaining returns how many script steps are not used yet.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script) - s.next
}

// Exhausted returns how many requests came after the script was used up
// and no default was set.
func (s *Server) Exhausted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exhausted
}

// Active returns how many requests are being answered right now; after a
// client cancels a stream it drops to 0 once the server saw the connection
// close.
func (s *Server) Active() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.active++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.active--
		s.mu.Unlock()
	}()
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	rec := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw, Step: -1}
	isChat := strings.HasSuffix(r.URL.Path, "/chat/completions")
	isModels := strings.HasSuffix(r.URL.Path, "/models")
	isEmbed := strings.HasSuffix(r.URL.Path, "/embeddings")
	if isChat {
		_ = json.Unmarshal(raw, &rec.Body)
	}

	s.mu.Lock()
	key, models := s.apiKey, s.models
	if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
		s.requests = append(s.requests, rec)
		s.mu.Unlock()
		writeError(w, Unauthorized())
		return
	}
	switch {
	case isModels && r.Method == http.MethodGet:
		s.requests = append(s.requests, rec)
		s.mu.Unlock()
		ml := openai.ModelList{Object: "list"}
		for _, id := range models {
			ml.Data = append(ml.Data, openai.Model{ID: id, Object: "model", OwnedBy: "openaitest"})
		}
		writeJSON(w, http.StatusOK, ml)
		return
	case isEmbed && r.Method == http.MethodPost:
		s.requests = append(s.requests, rec)
		var errStep *Step
		if len(s.embedErrors) > 0 {
			errStep = &s.embedErrors[0]
			s.embedErrors = s.embedErrors[1:]
		}
		dim := s.embedDim
		s.mu.Unlock()
		if errStep != nil {
			if s.sleep(r.Context(), errStep.Delay) {
				writeError(w, *errStep)
			}
			return
		}
		serveEmbeddings(w, raw, dim)
		return
	case !isChat || r.Method != http.MethodPost:
		s.requests = append(s.requests, rec)
		s.mu.Unlock()
		writeError(w, Step{Status: http.StatusNotFound, ErrorType: "invalid_request_error", ErrorMessage: "unknown path " + r.URL.Path})
		return
	}
	var bad string
	switch {
	case json.Valid(raw) && len(rec.Body.Messages) == 0:
		bad = "messages must not be empty"
	case !json.Valid(raw):
		bad = "body is not JSON"
	case s.rejectStreamOptions && rec.Body.StreamOptions != nil:
		bad = "Unrecognized request argument supplied: stream_options"
	case s.rejectTools && len(rec.Body.Tools) > 0:
		bad = "registry.ollama.ai/library/" + rec.Body.Model + " does not support tools"
	case s.rejectFormat && rec.Body.ResponseFormat != nil:
		bad = "Unrecognized request argument supplied: response_format"
	}
	if bad != "" {
		s.requests = append(s.requests, rec)
		s.mu.Unlock()
		writeError(w, Step{Status: http.StatusBadRequest, ErrorType: "invalid_request_error", ErrorMessage: bad})
		return
	}
	var step Step
	switch {
	case s.next < len(s.script):
		step = s.script[s.next]
		rec.Step = s.next
		s.next++
	case s.fallback != nil:
		step = *s.fallback
	default:
		s.exhausted++
		s.requests = append(s.requests, rec)
		s.mu.Unlock()
		writeError(w, Step{Status: http.StatusInternalServerError, ErrorType: "script_exhausted", ErrorMessage: "openaitest: script exhausted"})
		return
	}
	s.requests = append(s.requests, rec)
	withUsage := rec.Body.StreamOptions != nil && rec.Body.StreamOptions.IncludeUsage && !s.ignoreStreamOptions
	s.mu.Unlock()

	if step.Respond != nil {
		step = step.Respond(rec)
	}
	s.serveStep(w, r.Context(), rec, step, withUsage)
}

func (s *Server) serveStep(w http.ResponseWriter, ctx context.Context, rec Request, step Step, withUsage bool) {
	if step.Status != 0 && step.Status != http.StatusOK {
		if !s.sleep(ctx, step.Delay) {
			return
		}
		writeError(w, step)
		return
	}
	chunks := step.Chunks
	finish := step.FinishReason
	if finish == "" {
		finish = "stop"
	}
	if !step.IgnoreStop {
		chunks = cutAtStop(chunks, rec.Body.Stop)
	}
	usage := step.Usage
	if usage == nil {
		p := 0
		for _, m := range rec.Body.Messages {
			p += len(strings.Fields(m.Content))
		}
		usage = &openai.Usage{PromptTokens: p, CompletionTokens: len(chunks), TotalTokens: p + len(chunks)}
	}
	const id = "chatcmpl-openaitest"
	model := rec.Body.Model
	if !rec.Body.Stream {
		for range chunks {
			if !s.sleep(ctx, step.Delay) {
				return
			}
		}
		writeJSON(w, http.StatusOK, openai.ChatCompletion{
			ID: id, Object: "chat.completion", Created: time.Now().Unix(), Model: model,
			Choices: []openai.ChatChoice{{Message: openai.ResponseMessage{Role: "assistant", Content: strings.Join(chunks, ""), ToolCalls: step.ToolCalls}, FinishReason: finish}},
			Usage:   usage,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	flush := func() {
		if fl != nil {
			fl.Flush()
		}
	}
	flush()
	if step.Raw != "" {
		_, _ = io.WriteString(w, step.Raw)
		flush()
		return
	}
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		flush()
		return true
	}
	chunk := func(delta openai.ChunkDelta, fin *string) openai.ChatChunk {
		return openai.ChatChunk{ID: id, Object: "chat.completion.chunk", Created: time.Now().Unix(), Model: model,
			Choices: []openai.ChunkChoice{{Delta: delta, FinishReason: fin}}}
	}
	if !send(chunk(openai.ChunkDelta{Role: "assistant"}, nil)) {
		return
	}
	for _, c := range chunks {
		if !s.sleep(ctx, step.Delay) {
			return
		}
		if !send(chunk(openai.ChunkDelta{Content: c}, nil)) {
			return
		}
	}
	if step.Hang {
		select {
		case <-ctx.Done():
		case <-s.done:
		}
		return
	}
	if step.StreamError != nil {
		send(map[string]any{"error": step.StreamError})
		return
	}
	for _, tc := range step.ToolCalls {
		first := tc
		first.Function.Arguments = ""
		half := len(tc.Function.Arguments) / 2
		for _, piece := range []openai.ToolCall{first,
			{Index: tc.Index, Function: openai.FunctionCall{Arguments: tc.Function.Arguments[:half]}},
			{Index: tc.Index, Function: openai.FunctionCall{Arguments: tc.Function.Arguments[half:]}}} {
			if !send(chunk(openai.ChunkDelta{ToolCalls: []openai.ToolCall{piece}}, nil)) {
				return
			}
		}
	}
	send(chunk(openai.ChunkDelta{}, &finish))
	if withUsage {
		send(openai.ChatChunk{ID: id, Object: "chat.completion.chunk", Model: model, Choices: []openai.ChunkChoice{}, Usage: usage})
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	flush()
}

// sleep waits d; false when the client went away or the server closed.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.done:
	}
	return false
}

// cutAtStop cuts the chunks' text before the earliest stop sequence,
// keeping the chunk boundaries before it.
func cutAtStop(chunks []string, stops []string) []string {
	text := strings.Join(chunks, "")
	cut := -1
	for _, st := range stops {
		if st == "" {
			continue
		}
		if i := strings.Index(text, st); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut < 0 {
		return chunks
	}
	var out []string
	n := 0
	for _, c := range chunks {
		if n+len(c) >= cut {
			if rest := c[:cut-n]; rest != "" {
				out = append(out, rest)
			}
			break
		}
		out = append(out, c)
		n += len(c)
	}
	return out
}

func writeError(w http.ResponseWriter, st Step) {
	if st.RetryAfter > 0 || st.Status == http.StatusTooManyRequests && st.ErrorType != "insufficient_quota" {
		w.Header().Set("Retry-After", fmt.Sprint(int(math.Ceil(st.RetryAfter.Seconds()))))
		w.Header().Set("Retry-After-Ms", fmt.Sprint(st.RetryAfter.Milliseconds()))
	}
	e := openai.APIError{Message: st.ErrorMessage, Type: st.ErrorType}
	if st.ErrorCode != "" {
		e.Code, _ = json.Marshal(st.ErrorCode)
	}
	writeJSON(w, st.Status, openai.ErrorResponse{Error: e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
