// Package openai is an llm.LLM over any OpenAI-compatible chat completions
// API: OpenAI itself, Ollama, vLLM, the llama.cpp server, LM Studio.
//
// It streams with server-sent events (stream=true), asks for a usage chunk
// (stream_options.include_usage) and falls back without it for servers that
// reject the field, sends the request's stop sequences and also enforces them
// on the client (servers limit their number or ignore them), retries 429 and
// 5xx answers with exponential backoff and jitter honouring Retry-After, but
// only before the first byte of a stream, and fails fast on bad keys and
// exhausted quotas. The wire format is small and stable, so it is written
// here on net/http rather than taken from an SDK: no SDK in go.mod, and the
// SDKs hide the retry and stop behaviour this package must control.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/httpstatus"
	"github.com/kgagent/kgagent/internal/text"
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
	// MaxRetries is how many times a 429, 5xx or connection failure is
	// retried. Default DefaultMaxRetries; negative means never.
	MaxRetries int
	// MinBackoff and MaxBackoff bound the exponential backoff between
	// retries. Defaults DefaultMinBackoff and DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// MaxRetryAfter is the longest Retry-After the client waits for; a
	// longer one fails at once with RATE_LIMITED. Default DefaultMaxRetryAfter.
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
	cfg      Config
	endpoint string
	hc       *http.Client
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
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, kgagent.Errorf(kgagent.EINVALID, "LLM base URL %q is not an http(s) URL", cfg.BaseURL)
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = cfg.MinBackoff
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if cfg.MaxStop <= 0 {
		cfg.MaxStop = DefaultMaxStop
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	return &Client{cfg: cfg, endpoint: cfg.BaseURL + "/chat/completions", hc: hc}, nil
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
		cctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
	}
	stops := cleanStops(req.Stop)
	refused := map[string]bool{} // protocols this request's server refused
	proto := c.protocol(req, refused)
	for attempt := 0; ; attempt++ {
		body, withOpts := c.body(req, stops, proto)
		resp, err := c.post(cctx, body)
		if err != nil {
			if cctx.Err() != nil {
				cancel()
				return nil, ctxError(ctx, cctx)
			}
			err = kgagent.WrapError(kgagent.EUNAVAILABLE, err, "LLM server unreachable")
			if attempt >= c.cfg.MaxRetries {
				cancel()
				return nil, err
			}
			if werr := c.wait(ctx, cctx, c.backoff(attempt)); werr != nil {
				cancel()
				return nil, werr
			}
			continue
		}
		if resp.StatusCode/100 == 2 {
			var st *structured
			if proto != llm.ProtocolText {
				st = &structured{proto: proto, tools: req.Tools}
			}
			return c.openStream(ctx, cctx, cancel, resp, stops, st)
		}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp.StatusCode == http.StatusBadRequest && withOpts && bytes.Contains(raw, []byte("stream_options")) {
			// A server that does not know stream_options: go on without it.
			c.noStreamOpts.Store(true)
			attempt--
			continue
		}
		if resp.StatusCode == http.StatusBadRequest && req.Protocol == llm.ProtocolAuto && proto != llm.ProtocolText {
			// Protocol auto: a request the server refuses in one step
			// protocol gets the next one; a server that says it refuses
			// tools or a response format gets the next one from now on.
			low := bytes.ToLower(raw)
			switch {
			case proto == llm.ProtocolTools && bytes.Contains(low, []byte("tool")):
				c.noTools.Store(true)
			case proto == llm.ProtocolJSON && (bytes.Contains(low, []byte("response_format")) || bytes.Contains(low, []byte("json_schema")) || bytes.Contains(low, []byte("format"))):
				c.noJSON.Store(true)
			}
			refused[proto] = true
			if next := c.protocol(req, refused); next != proto {
				c.cfg.Logger.Warn("the LLM server refused a step protocol; trying the next", "model", c.model(req), "protocol", proto, "next", next,
					"status", resp.StatusCode, "server_message", serverMessage(raw, c.cfg.APIKey))
				proto = next
				attempt--
				continue
			}
		}
		herr, retry := classify(resp.StatusCode, raw)
		c.explain(herr, req, proto, raw)
		if !retry || attempt >= c.cfg.MaxRetries {
			cancel()
			return nil, herr
		}
		delay := c.backoff(attempt)
		if ra, ok := httpstatus.RetryAfter(resp.Header, time.Now()); ok {
			if ra > c.cfg.MaxRetryAfter {
				cancel()
				herr.Message += fmt.Sprintf("; retry after %s", ra.Round(time.Second))
				herr.Details["retry_after_s"] = ra.Seconds()
				return nil, herr
			}
			delay = ra + rand.N(ra/10+1)
		}
		if werr := c.wait(ctx, cctx, delay); werr != nil {
			cancel()
			return nil, werr
		}
	}
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
	msg := serverMessage(raw, c.cfg.APIKey)
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
	if msg != "" {
		herr.Message += ": " + msg
	}
}

// serverMessage is the error message of a server's error answer, shortened,
// with key (when set) cut out.
func serverMessage(raw []byte, key string) string {
	var er ErrorResponse
	_ = json.Unmarshal(raw, &er)
	msg := strings.TrimSpace(firstNonEmpty(er.Error.Message, string(raw)))
	if key != "" {
		msg = strings.ReplaceAll(msg, key, "[key]")
	}
	return text.Truncate(msg, 200)
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

func (c *Client) post(ctx context.Context, body []byte) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	if c.cfg.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	return c.hc.Do(hr)
}

// backoff is exponential backoff with "equal jitter": a random duration in
// [d/2, d] with d = MinBackoff·2^attempt capped at MaxBackoff.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.cfg.MinBackoff
	for i := 0; i < attempt && d < c.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.cfg.MaxBackoff)
	half := d / 2
	return half + rand.N(half+1)
}

// wait sleeps d unless a context ends first.
func (c *Client) wait(parent, ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctxError(parent, ctx)
	}
}

// openStream wraps a 2xx answer: SSE when the server streams, a single piece
// when it ignored stream=true and sent a whole chat.completion.
func (c *Client) openStream(parent, ctx context.Context, cancel context.CancelFunc, resp *http.Response, stops []string, st *structured) (llm.Stream, error) {
	s := &stream{parent: parent, ctx: ctx, cancel: cancel, body: resp.Body, stops: stops, st: st}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "application/json" {
		s.sse = NewSSEReader(resp.Body)
		return s, nil
	}
	defer s.Close()
	var cc ChatCompletion
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&cc); err != nil {
		if ctx.Err() != nil {
			return nil, ctxError(parent, ctx)
		}
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "LLM server sent a malformed completion")
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
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.BaseURL+"/models", nil)
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EINVALID, err, "bad models request")
	}
	if c.cfg.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.hc.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctxError(ctx, ctx)
		}
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "LLM server unreachable")
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode/100 != 2 {
		herr, _ := classify(resp.StatusCode, raw)
		if herr.Code == kgagent.ENOTFOUND || herr.Code == kgagent.EINVALID {
			if msg := serverMessage(raw, c.cfg.APIKey); msg != "" {
				herr.Message += ": " + msg
			}
		}
		return nil, herr
	}
	var ml ModelList
	if err := json.Unmarshal(raw, &ml); err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "LLM server sent a malformed model list")
	}
	ids := make([]string, 0, len(ml.Data))
	for _, m := range ml.Data {
		ids = append(ids, m.ID)
	}
	return ids, nil
}

// quotaCodes are error types/codes meaning that retrying cannot help.
var quotaCodes = map[string]bool{
	"insufficient_quota":         true,
	"billing_hard_limit_reached": true,
	"quota_exceeded":             true,
}

// classify maps an error answer to a kgagent error and whether to retry.
// The server's own message goes into the wrapped cause (logged, never shown
// to callers: it may echo part of the key).
func classify(status int, raw []byte) (*kgagent.Error, bool) {
	var er ErrorResponse
	_ = json.Unmarshal(raw, &er)
	cause := fmt.Errorf("HTTP %d: %s", status, text.Truncate(strings.TrimSpace(firstNonEmpty(er.Error.Message, string(raw))), 300))
	details := map[string]any{"status": status}
	if er.Error.Type != "" {
		details["type"] = er.Error.Type
	}
	code := er.Error.CodeString()
	if code != "" {
		details["code"] = code
	}
	mk := func(c, msg string) *kgagent.Error {
		return &kgagent.Error{Code: c, Message: msg, Details: details, Err: cause}
	}
	ecode := httpstatus.Code(status)
	switch {
	case quotaCodes[er.Error.Type] || quotaCodes[code]:
		return mk(kgagent.ERATELIMIT, "LLM quota exhausted"), false
	case status == http.StatusUnauthorized:
		return mk(ecode, "LLM server rejected the API key"), false
	case status == http.StatusForbidden:
		return mk(ecode, "LLM server refused the API key access"), false
	case status == http.StatusTooManyRequests:
		return mk(ecode, "LLM server rate limit"), true
	case status >= 500:
		return mk(ecode, fmt.Sprintf("LLM server failed (HTTP %d)", status)), true
	case status == http.StatusRequestTimeout || status == http.StatusConflict:
		// no code of their own: transient on an LLM server, so retried
		return mk(kgagent.EUNAVAILABLE, fmt.Sprintf("LLM server failed (HTTP %d)", status)), true
	case status == http.StatusNotFound:
		return mk(ecode, "LLM model or endpoint not found"), false
	case status == http.StatusRequestEntityTooLarge:
		return mk(ecode, "prompt too large for the LLM server"), false
	}
	return mk(kgagent.EINVALID, fmt.Sprintf("LLM server rejected the request (HTTP %d)", status)), false
}

// streamError maps an error object sent inside a stream.
func streamError(e *APIError) *kgagent.Error {
	raw, _ := json.Marshal(ErrorResponse{Error: *e})
	status := http.StatusInternalServerError
	if n, err := strconv.Atoi(e.CodeString()); err == nil && n >= 400 && n < 600 {
		status = n
	}
	herr, _ := classify(status, raw)
	return herr
}

// ctxError maps the end of ctx (derived from parent with the client's
// timeout) to CANCELED or TIMEOUT.
func ctxError(parent, ctx context.Context) error {
	if err := parent.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return kgagent.WrapError(kgagent.ETIMEOUT, err, "deadline exceeded waiting for the LLM")
		}
		return kgagent.WrapError(kgagent.ECANCELED, err, "LLM call canceled")
	}
	return kgagent.WrapError(kgagent.ETIMEOUT, ctx.Err(), "LLM call timed out")
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

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
