package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/llm"
)

// Defaults used for zero Config fields.
const (
	DefaultBaseURL       = "https://api.openai.com/v1"
	DefaultModel         = "gpt-4o-mini"
	DefaultTimeout       = 2 * time.Minute
	DefaultMaxRetries    = 3
	DefaultMinBackoff    = 500 * time.Millisecond
	DefaultMaxBackoff    = 20 * time.Second
	DefaultMaxRetryAfter = time.Minute
	// DefaultMaxStop is how many stop sequences are sent to the server
	// (OpenAI accepts at most 4); the client enforces all of them anyway.
	DefaultMaxStop = 4
)

// Config configures a Client. Its zero value talks to OpenAI with no key.
type Config struct {
	// BaseURL is the API root including its version, e.g.
	// http://localhost:11434/v1 for Ollama. Default DefaultBaseURL.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>" when set.
	APIKey string
	// Model is used when a request names none. Default DefaultModel.
	Model string
	// ForceModel sends Model for every request, whatever the request names
	// (for local servers that serve one model).
	ForceModel bool
	// Temperature is used when a request's temperature is 0.
	Temperature float64
	// MaxTokens is used when a request's max tokens is 0; 0 leaves it to the
	// server.
	MaxTokens int
	// Timeout bounds one Complete call, its retries and its whole stream.
	// Default DefaultTimeout; negative means none (the context still rules).
	Timeout time.Duration
	// MaxRetries is how many times a 408, 409, 429, 5xx or connection
	// failure is retried. Default DefaultMaxRetries; negative means never.
	MaxRetries int
	// MinBackoff and MaxBackoff bound the exponential backoff between
	// retries. Defaults DefaultMinBackoff and DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// MaxRetryAfter is the longest Retry-After the client waits for; a
	// longer one fails at once with the answer's own code (RATE_LIMITED for
	// a 429, UNAVAILABLE for a 503). Default DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// MaxStop is how many stop sequences are sent to the server. Default
	// DefaultMaxStop.
	MaxStop int
	// NoStreamOptions never sends stream_options (usage then comes only
	// from servers that send it unasked).
	NoStreamOptions bool
	// HTTPClient is used for requests. Default: a client on a clone of
	// http.DefaultTransport with no overall timeout (streams are long).
	HTTPClient *http.Client
	// Logger gets a warning, with the server's own message, when protocol
	// auto moves on from a step protocol the server refused. Default: none.
	Logger *slog.Logger
}

// Client is an llm.LLM over an OpenAI-compatible API. It is safe for
// concurrent use.
type Client struct {
	cfg Config
	t   *transport
	// noStreamOpts is set once a server rejected stream_options.
	noStreamOpts atomic.Bool
	// noTools and noJSON are set once the server refused tools or a
	// response_format asked for by protocol auto.
	noTools, noJSON atomic.Bool
}

var _ llm.LLM = (*Client)(nil)

// New returns a Client for cfg, filling defaults. It fails with EINVALID
// when BaseURL is not an http(s) URL. It does not connect.
func New(cfg Config) (*Client, error) {
	t, err := newTransport(llmServer, cfg.BaseURL, cfg.APIKey, cfg.HTTPClient)
	if err != nil {
		return nil, err
	}
	cfg.BaseURL, cfg.HTTPClient = t.base, t.hc
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	cfg.MaxRetries = orDefault(cfg.MaxRetries, DefaultMaxRetries)
	cfg.MinBackoff = durOr(cfg.MinBackoff, DefaultMinBackoff)
	cfg.MaxBackoff = max(durOr(cfg.MaxBackoff, DefaultMaxBackoff), cfg.MinBackoff)
	cfg.MaxRetryAfter = durOr(cfg.MaxRetryAfter, DefaultMaxRetryAfter)
	t.retries, t.minBackoff, t.maxBackoff, t.maxRetryAfter = cfg.MaxRetries, cfg.MinBackoff, cfg.MaxBackoff, cfg.MaxRetryAfter
	if cfg.MaxStop <= 0 {
		cfg.MaxStop = DefaultMaxStop
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Client{cfg: cfg, t: t}, nil
}

// Config returns the client's configuration with defaults filled in.
func (c *Client) Config() Config { return c.cfg }

// Complete starts a streamed completion. Errors, from Complete or from the
// stream's Recv: EINVALID for an empty prompt or a request the server
// rejects, EUNAUTH for a rejected key (401), EFORBIDDEN for a key without
// access (403), RATE_LIMITED for an exhausted quota or a rate limit that outlasts the retries, UNAVAILABLE for
// a server that keeps failing or cannot be reached, TIMEOUT when
// Config.Timeout or the context's deadline passes, CANCELED when ctx is
// canceled; cancellation mid-stream closes the connection at once.
func (c *Client) Complete(ctx context.Context, req llm.CompletionRequest) (llm.Stream, error) {
	if len(req.Messages) == 0 {
		return nil, kgagent.Errorf(kgagent.EINVALID, "completion request has no messages")
	}
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if c.cfg.Timeout > 0 {
		cctx, cancel = context.WithTimeoutCause(ctx, c.cfg.Timeout, errCallTimeout)
	}
	stops := cleanStops(req.Stop)
	refused := map[string]bool{} // protocols this request's server refused
	proto := c.protocol(req, refused)
	for attempt := 0; ; attempt++ {
		body, withOpts := c.body(req, stops, proto)
		resp, err := c.t.send(cctx, http.MethodPost, "/chat/completions", body, "text/event-stream")
		if err == nil {
			var st *structured
			if proto != llm.ProtocolText {
				st = &structured{proto: proto, tools: req.Tools}
			}
			return c.openStream(cctx, cancel, resp, stops, st)
		}
		var f *failure
		if errors.As(err, &f) && f.status == http.StatusBadRequest {
			if withOpts && bytes.Contains(f.raw, []byte("stream_options")) {
				// A server that does not know stream_options: go on without it.
				c.noStreamOpts.Store(true)
				attempt--
				continue
			}
			if next, ok := c.refuse(req, proto, refused, f.raw); ok {
				proto = next
				attempt--
				continue
			}
		}
		if f != nil {
			c.explain(f.err, req, proto, f.raw)
		}
		if err := c.t.retry(cctx, attempt, err); err != nil {
			cancel()
			return nil, err
		}
	}
}

// refuse handles protocol auto's 400 (body raw) to a request in a step
// protocol: the request gets the next protocol (ok); a server that says it
// refuses tools or a response format gets the next one from now on.
func (c *Client) refuse(req llm.CompletionRequest, proto string, refused map[string]bool, raw []byte) (next string, ok bool) {
	if req.Protocol != llm.ProtocolAuto || proto == llm.ProtocolText {
		return "", false
	}
	low := bytes.ToLower(raw)
	switch {
	case proto == llm.ProtocolTools && bytes.Contains(low, []byte("tool")):
		c.noTools.Store(true)
	case proto == llm.ProtocolJSON && (bytes.Contains(low, []byte("response_format")) || bytes.Contains(low, []byte("json_schema")) || bytes.Contains(low, []byte("format"))):
		c.noJSON.Store(true)
	}
	refused[proto] = true
	if next = c.protocol(req, refused); next == proto {
		return "", false
	}
	c.cfg.Logger.Warn("the LLM server refused a step protocol; trying the next", "model", c.model(req), "protocol", proto, "next", next,
		"status", http.StatusBadRequest, "server_message", serverMessage(raw, c.cfg.APIKey))
	return next, true
}

// protocol resolves the request's step protocol: auto is json, else tools,
// else text, leaving out what this server refused before and what it
// refused for this request (refused); no tools means text.
func (c *Client) protocol(req llm.CompletionRequest, refused map[string]bool) string {
	if len(req.Tools) == 0 {
		return llm.ProtocolText
	}
	switch req.Protocol {
	case llm.ProtocolTools, llm.ProtocolJSON:
		return req.Protocol
	case llm.ProtocolAuto:
		// A schema-constrained step first: the server enforces it while
		// decoding, so even a small model emits a valid step, where native
		// tool calls depend on the model (SmolLM2 never made one).
		if !c.noJSON.Load() && !refused[llm.ProtocolJSON] {
			return llm.ProtocolJSON
		}
		if !c.noTools.Load() && !refused[llm.ProtocolTools] {
			return llm.ProtocolTools
		}
	}
	return llm.ProtocolText
}

// model is the model a request goes to.
func (c *Client) model(req llm.CompletionRequest) string {
	if req.Model == "" || c.cfg.ForceModel {
		return c.cfg.Model
	}
	return req.Model
}

// explain adds to a rejected request's error what the caller needs to fix
// it: for a 404 the model asked for, for a 400 the step protocol and the
// server's own reason (Ollama: "… does not support tools"), with the API
// key, should the server echo it, cut out.
func (c *Client) explain(herr *kgagent.Error, req llm.CompletionRequest, proto string, raw []byte) {
	switch herr.Code {
	case kgagent.ENOTFOUND:
		herr.Message = fmt.Sprintf("LLM model %q or endpoint not found at %s", c.model(req), c.cfg.BaseURL)
		herr.Details["model"] = c.model(req)
	case kgagent.EINVALID:
		if proto != llm.ProtocolText {
			herr.Message += fmt.Sprintf(" in step protocol %s", proto)
			herr.Details["protocol"] = proto
		}
	default:
		return
	}
	c.t.withServerMessage(herr, raw)
}

// body encodes the request; withOpts tells whether stream_options was sent.
func (c *Client) body(req llm.CompletionRequest, stops []string, proto string) ([]byte, bool) {
	model := req.Model
	if model == "" || c.cfg.ForceModel {
		model = c.cfg.Model
	}
	temp := req.Temperature
	if temp == 0 {
		temp = c.cfg.Temperature
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = c.cfg.MaxTokens
	}
	cr := ChatRequest{
		Model:       model,
		Messages:    req.Messages,
		Stream:      true,
		Temperature: &temp,
		MaxTokens:   maxTokens,
	}
	if len(stops) > 0 {
		cr.Stop = stops[:min(len(stops), c.cfg.MaxStop)]
	}
	switch {
	case proto == llm.ProtocolTools && !req.AnswerOnly:
		cr.Tools = toolDefs(req.Tools)
	case proto == llm.ProtocolJSON && req.AnswerOnly:
		cr.ResponseFormat = stepFormat(nil, true) // the only action left is "answer"
	case proto == llm.ProtocolJSON:
		cr.ResponseFormat = stepFormat(req.Tools, !req.ActionOnly)
	}
	if cr.Tools != nil && req.ActionOnly {
		cr.ToolChoice = "required"
	}
	withOpts := !c.cfg.NoStreamOptions && !c.noStreamOpts.Load()
	if withOpts {
		cr.StreamOptions = &StreamOptions{IncludeUsage: true}
	}
	b, err := json.Marshal(cr)
	if err != nil {
		// Only a func schema could fail to encode; send it without tools.
		cr.Tools, cr.ResponseFormat = nil, nil
		b, _ = json.Marshal(cr)
	}
	return b, withOpts
}

// openStream wraps a 2xx answer: SSE when the server streams, a single piece
// when it ignored stream=true and sent a whole chat.completion.
func (c *Client) openStream(ctx context.Context, cancel context.CancelFunc, resp *http.Response, stops []string, st *structured) (llm.Stream, error) {
	s := &stream{ctx: ctx, cancel: cancel, body: resp.Body, stops: stops, st: st}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "application/json" {
		s.sse = NewSSEReader(resp.Body)
		return s, nil
	}
	defer s.Close()
	var cc ChatCompletion
	if err := c.t.decode(resp, 16<<20, &cc); err != nil {
		return nil, plain(err)
	}
	text, reason := "", ""
	if len(cc.Choices) > 0 {
		text, reason = cc.Choices[0].Message.Content, cc.Choices[0].FinishReason
	}
	s.usage = toUsage(cc.Usage)
	if st != nil {
		st.content.WriteString(text)
		if len(cc.Choices) > 0 {
			st.calls = cc.Choices[0].Message.ToolCalls
		}
		out, steps := st.result()
		s.done = true
		s.queued = &llm.Delta{Text: out, Usage: s.usage, FinishReason: reason, Steps: steps}
		return s, nil
	}
	out, _ := s.feed(text)
	if !s.stopped {
		out += s.pending
	}
	s.pending = ""
	s.done = true
	if s.stopped {
		reason = "stop"
	}
	s.queued = &llm.Delta{Text: out, Usage: s.usage, FinishReason: reason}
	return s, nil
}

// Models lists the model ids the server offers (GET /models). Errors as for
// Complete, without retries.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	resp, err := c.t.send(ctx, http.MethodGet, "/models", nil, "")
	if err != nil {
		var f *failure
		if errors.As(err, &f) {
			c.t.explain(f)
		}
		return nil, plain(err)
	}
	var ml ModelList
	if err := c.t.decode(resp, 16<<20, &ml); err != nil {
		return nil, plain(err)
	}
	ids := make([]string, 0, len(ml.Data))
	for _, m := range ml.Data {
		ids = append(ids, m.ID)
	}
	return ids, nil
}

// streamError maps an error object sent inside a stream.
func streamError(e *APIError) *kgagent.Error {
	raw, _ := json.Marshal(ErrorResponse{Error: *e})
	status := http.StatusInternalServerError
	if n, err := strconv.Atoi(e.CodeString()); err == nil && n >= 400 && n < 600 {
		status = n
	}
	return classify(llmServer, status, raw).err
}

func cleanStops(stops []string) []string {
	out := make([]string, 0, len(stops))
	for _, s := range stops {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func toUsage(u *Usage) *kgagent.Usage {
	if u == nil {
		return nil
	}
	return &kgagent.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
}
