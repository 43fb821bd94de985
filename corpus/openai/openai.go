// Package openai adapts OpenAI-compatible HTTP APIs to the corpus: an
// Embedder over POST /v1/embeddings (OpenAI, Azure-style proxies, Ollama,
// vLLM, llama.cpp server, LM Studio, TEI's OpenAI route).
//
// Embedding requests are batched and share one adaptive limit on requests
// in flight across every Embed call of an Embedder (the crawler embeds
// several pages at once): a timeout, 429 or 503 halves the limit (down to
// one), a run of successes raises it again up to Concurrency, and retries
// wait for a slot like any request, so a slow server that does one
// inference at a time is never sent more than it can take. A batch that
// timed out is split in two for its retry. Failures are retried with
// exponential backoff (honouring Retry-After) on 429, 5xx and timeouts;
// 401, 403 and insufficient_quota fail at once, since retrying cannot help.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/internal/httpstatus"
	"golang.org/x/sync/errgroup"
)

// Config configures the embeddings client. Only Dimensions is needed for a
// model whose size is not known here; the zero value otherwise works against
// api.openai.com with text-embedding-3-small.
type Config struct {
	BaseURL    string // default https://api.openai.com/v1 (the part before /embeddings)
	APIKey     string // sent as a bearer token when set
	Model      string // default text-embedding-3-small
	Dimensions int    // vector length every response must have; default known per OpenAI model
	// SendDimensions asks the server to shorten vectors to Dimensions (the
	// "dimensions" parameter of text-embedding-3 models).
	SendDimensions bool
	BatchSize      int           // texts per request (default 32)
	Concurrency    int           // most requests in flight, across Embed calls (default 2); lowered while the server is overloaded
	MaxRetries     int           // retries of a 429/5xx/timeout/network failure (default 5; -1 for none)
	MinBackoff     time.Duration // first retry delay (default 250ms), doubled each time with jitter
	MaxBackoff     time.Duration // cap of a retry delay, Retry-After included (default 20s)
	Timeout        time.Duration // per request (default 60s)
	HTTPClient     *http.Client  // default: a client with no overall timeout (Timeout applies per request)
	// QueryPrefix and DocumentPrefix are put before search queries and
	// documents (E5 models want "query: " and "passage: ").
	QueryPrefix, DocumentPrefix string
	// QueryInputType and DocumentInputType are sent as "input_type" with
	// queries and documents when set (e.g. search_query/search_document,
	// query/document, as Cohere, Voyage and Nomic servers take).
	QueryInputType, DocumentInputType string
	// Progress, when set, is called after every request that succeeded.
	Progress func(Progress)
}

// Progress is a running count of an Embedder's work, for progress reports.
type Progress struct {
	Texts    int64 // texts embedded so far
	Requests int64 // requests that succeeded
	Retries  int64 // requests retried (timeouts, 429, 5xx, network)
	Limit    int   // requests allowed in flight now
}

var knownDims = map[string]int{
	"text-embedding-3-small": 1536,
	"text-embedding-3-large": 3072,
	"text-embedding-ada-002": 1536,
}

// Embedder is a corpus.Embedder backed by an OpenAI-compatible embeddings API.
type Embedder struct {
	cfg Config
	c   client
	lim *limiter

	texts, requests, retries atomic.Int64
}

var _ corpus.Embedder = (*Embedder)(nil)

// New returns an Embedder for cfg. It fails with EINVALID when the vector
// length is neither configured nor known for the model, or BaseURL is bad.
func New(cfg Config) (*Embedder, error) {
	if cfg.Model == "" {
		cfg.Model = "text-embedding-3-small"
	}
	if cfg.Dimensions <= 0 {
		cfg.Dimensions = knownDims[cfg.Model]
	}
	if cfg.Dimensions <= 0 {
		return nil, kgagent.Errorf(kgagent.EINVALID, "embedding model %q: set the vector dimension", cfg.Model)
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	c, err := newClient(cfg.BaseURL, cfg.APIKey, cfg.MaxRetries, cfg.MinBackoff, cfg.MaxBackoff, cfg.Timeout, cfg.HTTPClient)
	if err != nil {
		return nil, err
	}
	return &Embedder{cfg: cfg, c: c, lim: newLimiter(cfg.Concurrency)}, nil
}

// Defaults of Config.
const (
	DefaultBatchSize   = 32
	DefaultConcurrency = 2
	DefaultTimeout     = 60 * time.Second
)

// Dimension is the vector length.
func (e *Embedder) Dimension() int { return e.cfg.Dimensions }

// Name identifies model and dimension, e.g. "openai:text-embedding-3-small-1536",
// and the query/document prefixes and input types when any is set (they
// change the vectors).
func (e *Embedder) Name() string {
	n := fmt.Sprintf("openai:%s-%d", e.cfg.Model, e.cfg.Dimensions)
	if e.cfg.QueryPrefix != "" || e.cfg.DocumentPrefix != "" || e.cfg.QueryInputType != "" || e.cfg.DocumentInputType != "" {
		h := fnv.New32a()
		fmt.Fprintf(h, "%q %q %q %q", e.cfg.QueryPrefix, e.cfg.DocumentPrefix, e.cfg.QueryInputType, e.cfg.DocumentInputType)
		n += fmt.Sprintf("-asym%08x", h.Sum32())
	}
	return n
}

type embedRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions,omitempty"`
	InputType      string   `json:"input_type,omitempty"`
}

type embedResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// Embed embeds documents: one vector per text, in order, with the document
// prefix and input type. Errors: EUNAUTH or EFORBIDDEN for rejected
// credentials, ERATELIMIT when the quota is spent or retries of 429 ran out,
// EUNAVAILABLE when the server kept failing or timing out, EINVALID when the
// server rejects the request or returns vectors of the wrong length.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return e.embed(ctx, texts, e.cfg.DocumentPrefix, e.cfg.DocumentInputType)
}

// EmbedQuery embeds search queries, with the query prefix and input type
// (corpus.QueryEmbedder). Errors as for Embed.
func (e *Embedder) EmbedQuery(ctx context.Context, texts []string) ([][]float32, error) {
	return e.embed(ctx, texts, e.cfg.QueryPrefix, e.cfg.QueryInputType)
}

func (e *Embedder) embed(ctx context.Context, texts []string, prefix, inputType string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	g, ctx := errgroup.WithContext(ctx)
	for lo := 0; lo < len(texts); lo += e.cfg.BatchSize {
		hi := min(len(texts), lo+e.cfg.BatchSize)
		batch := make([]string, hi-lo)
		for i, t := range texts[lo:hi] {
			if strings.TrimSpace(t) == "" {
				t = " " // the API rejects empty strings
			}
			batch[i] = prefix + t
		}
		g.Go(func() error { return e.batch(ctx, batch, out[lo:hi], inputType, 0) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for i, v := range out {
		if v == nil {
			return nil, kgagent.Errorf(kgagent.EUNAVAILABLE, "embeddings API returned no vector for text %d", i)
		}
	}
	return out, nil
}

// batch embeds texts into out, each request holding a slot of the shared
// limiter; attempt counts the tries so far (a split batch inherits it).
func (e *Embedder) batch(ctx context.Context, texts []string, out [][]float32, inputType string, attempt int) error {
	req := embedRequest{Model: e.cfg.Model, Input: texts, EncodingFormat: "float", InputType: inputType}
	if e.cfg.SendDimensions {
		req.Dimensions = e.cfg.Dimensions
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return kgagent.WrapError(kgagent.EINTERNAL, err, "encode request")
	}
	for ; ; attempt++ {
		if err := e.lim.acquire(ctx); err != nil {
			return err
		}
		var resp embedResponse
		wait, err := e.c.once(ctx, "/embeddings", payload, &resp)
		var re *retryable
		isRetry := errors.As(err, &re)
		e.lim.release(isRetry && re.overload)
		if err == nil {
			return e.store(resp, texts, out)
		}
		if !isRetry {
			return err
		}
		if attempt >= e.c.retries {
			return re.err
		}
		e.retries.Add(1)
		if re.timeout && len(texts) > 1 {
			// Smaller requests finish within the timeout.
			half := len(texts) / 2
			g, gctx := errgroup.WithContext(ctx)
			g.Go(func() error { return e.batch(gctx, texts[:half], out[:half], inputType, attempt+1) })
			g.Go(func() error { return e.batch(gctx, texts[half:], out[half:], inputType, attempt+1) })
			return g.Wait()
		}
		if err := e.c.sleep(ctx, attempt, wait); err != nil {
			return err
		}
	}
}

// store checks a response and puts its vectors into out.
func (e *Embedder) store(resp embedResponse, texts []string, out [][]float32) error {
	if len(resp.Data) != len(texts) {
		return kgagent.Errorf(kgagent.EUNAVAILABLE, "embeddings API returned %d vectors for %d texts", len(resp.Data), len(texts))
	}
	for i, d := range resp.Data {
		idx := d.Index
		if idx < 0 || idx >= len(texts) {
			idx = i
		}
		if len(d.Embedding) != e.cfg.Dimensions {
			return &kgagent.Error{Code: kgagent.EINVALID, Message: fmt.Sprintf("embedding model %q returned %d-dimensional vectors, configured %d", e.cfg.Model, len(d.Embedding), e.cfg.Dimensions),
				Details: map[string]any{"want": e.cfg.Dimensions, "got": len(d.Embedding)}}
		}
		out[idx] = d.Embedding
	}
	n := e.texts.Add(int64(len(texts)))
	r := e.requests.Add(1)
	if e.cfg.Progress != nil {
		e.cfg.Progress(Progress{Texts: n, Requests: r, Retries: e.retries.Load(), Limit: e.lim.current()})
	}
	return nil
}

// limiter bounds requests in flight with a limit that adapts to the server:
// halved on overload (timeouts, 429, 503), raised by one after a run of
// successes as long as the limit, up to max.
type limiter struct {
	mu               sync.Mutex
	limit, max       int
	inflight, streak int
	wake             chan struct{}
}

func newLimiter(n int) *limiter {
	return &limiter{limit: n, max: n, wake: make(chan struct{})}
}

func (l *limiter) acquire(ctx context.Context) error {
	for {
		l.mu.Lock()
		if l.inflight < l.limit {
			l.inflight++
			l.mu.Unlock()
			return nil
		}
		wake := l.wake
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		}
	}
}

func (l *limiter) release(overload bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inflight--
	if overload {
		l.limit = max(1, l.limit/2)
		l.streak = 0
	} else if l.streak++; l.streak >= l.limit && l.limit < l.max {
		l.limit++
		l.streak = 0
	}
	close(l.wake)
	l.wake = make(chan struct{})
}

func (l *limiter) current() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit
}

// client posts JSON with retries.
type client struct {
	base       string
	key        string
	retries    int
	minBackoff time.Duration
	maxBackoff time.Duration
	timeout    time.Duration
	http       *http.Client
}

func newClient(base, key string, retries int, minB, maxB, timeout time.Duration, hc *http.Client) (client, error) {
	if base == "" {
		base = "https://api.openai.com/v1"
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return client{}, kgagent.Errorf(kgagent.EINVALID, "base URL %q must be http(s)", base)
	}
	if retries == 0 {
		retries = 5
	}
	if retries < 0 {
		retries = 0
	}
	if minB <= 0 {
		minB = 250 * time.Millisecond
	}
	if maxB <= 0 {
		maxB = 20 * time.Second
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if hc == nil {
		hc = &http.Client{}
	}
	return client{base: strings.TrimRight(base, "/"), key: key, retries: retries, minBackoff: minB, maxBackoff: maxB, timeout: timeout, http: hc}, nil
}

// apiError is the error body of OpenAI-compatible APIs.
type apiError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	} `json:"error"`
}

// sleep waits before retry attempt+1: exponential backoff with jitter, or
// the server's Retry-After, capped at maxBackoff.
func (c client) sleep(ctx context.Context, attempt int, retryAfter time.Duration) error {
	d := c.minBackoff << min(attempt, 20)
	d = d/2 + time.Duration(rand.Int64N(int64(d/2)+1)) // jitter
	if retryAfter > 0 {
		d = retryAfter
	}
	d = min(d, c.maxBackoff)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryable marks a failure worth retrying; overload marks one that says
// the server has more than it can take (a timeout, 429, 503), timeout one
// where the request ran out of time.
type retryable struct {
	err      error
	overload bool
	timeout  bool
}

func (r *retryable) Error() string { return r.err.Error() }

func (c client) once(parent context.Context, path string, payload []byte, out any) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(parent, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(payload))
	if err != nil {
		return 0, kgagent.WrapError(kgagent.EINVALID, err, "build request")
	}
	req.Header.Set("Content-Type", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if parent.Err() != nil {
			return 0, parent.Err() // the caller gave up; a request timeout is retried
		}
		if ctx.Err() != nil {
			return 0, &retryable{err: kgagent.Errorf(kgagent.EUNAVAILABLE, "API %s timed out after %s", path, c.timeout), overload: true, timeout: true}
		}
		return 0, &retryable{err: kgagent.WrapError(kgagent.EUNAVAILABLE, err, "API %s unreachable", path)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		if parent.Err() != nil {
			return 0, parent.Err()
		}
		return 0, &retryable{err: kgagent.WrapError(kgagent.EUNAVAILABLE, err, "read API response"), overload: ctx.Err() != nil, timeout: ctx.Err() != nil}
	}
	if resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(data, out); err != nil {
			return 0, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "API returned malformed JSON")
		}
		return 0, nil
	}
	var ae apiError
	_ = json.Unmarshal(data, &ae)
	msg := ae.Error.Message
	if msg == "" {
		msg = strings.TrimSpace(string(data[:min(len(data), 200)]))
	}
	code := fmt.Sprint(ae.Error.Code)
	ecode := httpstatus.Code(resp.StatusCode)
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return 0, kgagent.Errorf(ecode, "API rejected the key: %s", msg)
	case resp.StatusCode == http.StatusForbidden:
		return 0, kgagent.Errorf(ecode, "API refused access: %s", msg)
	case code == "insufficient_quota" || ae.Error.Type == "insufficient_quota":
		return 0, kgagent.Errorf(kgagent.ERATELIMIT, "API quota exhausted: %s", msg)
	case resp.StatusCode == http.StatusTooManyRequests:
		ra, _ := httpstatus.RetryAfter(resp.Header, time.Now())
		return ra, &retryable{err: kgagent.Errorf(ecode, "API rate limit: %s", msg), overload: true}
	case resp.StatusCode >= 500:
		ra, _ := httpstatus.RetryAfter(resp.Header, time.Now())
		return ra, &retryable{err: kgagent.Errorf(ecode, "API error %d: %s", resp.StatusCode, msg), overload: resp.StatusCode == http.StatusServiceUnavailable}
	case ecode == "":
		ecode = kgagent.EINVALID
	}
	return 0, kgagent.Errorf(ecode, "API rejected the request (%d): %s", resp.StatusCode, msg)
}
