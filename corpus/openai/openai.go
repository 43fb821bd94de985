// Package openai adapts OpenAI-compatible HTTP APIs to the corpus: an
// Embedder over POST /v1/embeddings (OpenAI, Azure-style proxies, Ollama,
// vLLM, llama.cpp server, LM Studio, TEI's OpenAI route) and a Reranker over
// a Cohere/Jina-style or TEI-style POST /rerank.
//
// Requests are batched, run with bounded concurrency and retried with
// exponential backoff (honouring Retry-After) on 429 and 5xx; 401, 403 and
// insufficient_quota fail at once, since retrying cannot help.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
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
	BatchSize      int           // texts per request (default 64)
	Concurrency    int           // requests in flight (default 4)
	MaxRetries     int           // retries of a 429/5xx/network failure (default 5; -1 for none)
	MinBackoff     time.Duration // first retry delay (default 250ms), doubled each time with jitter
	MaxBackoff     time.Duration // cap of a retry delay, Retry-After included (default 20s)
	Timeout        time.Duration // per request (default 60s)
	HTTPClient     *http.Client  // default: a client with no overall timeout (Timeout applies per request)
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
		cfg.BatchSize = 64
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	c, err := newClient(cfg.BaseURL, cfg.APIKey, cfg.MaxRetries, cfg.MinBackoff, cfg.MaxBackoff, cfg.Timeout, cfg.HTTPClient)
	if err != nil {
		return nil, err
	}
	return &Embedder{cfg: cfg, c: c}, nil
}

// Dimension is the vector length.
func (e *Embedder) Dimension() int { return e.cfg.Dimensions }

// Name identifies model and dimension, e.g. "openai:text-embedding-3-small-1536".
func (e *Embedder) Name() string { return fmt.Sprintf("openai:%s-%d", e.cfg.Model, e.cfg.Dimensions) }

type embedRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

type embedResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// Embed returns one vector per text, in order. Errors: EUNAUTH or EFORBIDDEN
// for rejected credentials, ERATELIMIT when the quota is spent or retries of
// 429 ran out, EUNAVAILABLE when the server kept failing, EINVALID when the
// server rejects the request or returns vectors of the wrong length.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(e.cfg.Concurrency)
	for lo := 0; lo < len(texts); lo += e.cfg.BatchSize {
		hi := min(len(texts), lo+e.cfg.BatchSize)
		g.Go(func() error {
			batch := make([]string, hi-lo)
			for i, t := range texts[lo:hi] {
				if strings.TrimSpace(t) == "" {
					t = " " // the API rejects empty strings
				}
				batch[i] = t
			}
			req := embedRequest{Model: e.cfg.Model, Input: batch, EncodingFormat: "float"}
			if e.cfg.SendDimensions {
				req.Dimensions = e.cfg.Dimensions
			}
			var resp embedResponse
			if err := e.c.post(ctx, "/embeddings", req, &resp); err != nil {
				return err
			}
			if len(resp.Data) != len(batch) {
				return kgagent.Errorf(kgagent.EUNAVAILABLE, "embeddings API returned %d vectors for %d texts", len(resp.Data), len(batch))
			}
			for i, d := range resp.Data {
				idx := d.Index
				if idx < 0 || idx >= len(batch) {
					idx = i
				}
				if len(d.Embedding) != e.cfg.Dimensions {
					return &kgagent.Error{Code: kgagent.EINVALID, Message: fmt.Sprintf("embedding model %q returned %d-dimensional vectors, configured %d", e.cfg.Model, len(d.Embedding), e.cfg.Dimensions),
						Details: map[string]any{"want": e.cfg.Dimensions, "got": len(d.Embedding)}}
				}
				out[lo+idx] = d.Embedding
			}
			return nil
		})
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
		timeout = 60 * time.Second
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

func (c client) post(ctx context.Context, path string, body, out any) error {
	payload, err := json.Marshal(body)
	if err != nil {
		return kgagent.WrapError(kgagent.EINTERNAL, err, "encode request")
	}
	var last error
	for attempt := 0; ; attempt++ {
		retryAfter, err := c.once(ctx, path, payload, out)
		if err == nil {
			return nil
		}
		var re *retryable
		if !errors.As(err, &re) {
			return err
		}
		last = re.err
		if attempt >= c.retries {
			return last
		}
		d := c.minBackoff << attempt
		d = d/2 + time.Duration(rand.Int64N(int64(d/2)+1)) // jitter
		if retryAfter > 0 {
			d = retryAfter
		}
		d = min(d, c.maxBackoff)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// retryable marks a failure worth retrying.
type retryable struct{ err error }

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
		return 0, &retryable{kgagent.WrapError(kgagent.EUNAVAILABLE, err, "API %s unreachable", path)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return 0, &retryable{kgagent.WrapError(kgagent.EUNAVAILABLE, err, "read API response")}
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
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return 0, kgagent.Errorf(kgagent.EUNAUTH, "API rejected the key: %s", msg)
	case resp.StatusCode == http.StatusForbidden:
		return 0, kgagent.Errorf(kgagent.EFORBIDDEN, "API refused access: %s", msg)
	case code == "insufficient_quota" || ae.Error.Type == "insufficient_quota":
		return 0, kgagent.Errorf(kgagent.ERATELIMIT, "API quota exhausted: %s", msg)
	case resp.StatusCode == http.StatusTooManyRequests:
		return retryAfter(resp.Header), &retryable{kgagent.Errorf(kgagent.ERATELIMIT, "API rate limit: %s", msg)}
	case resp.StatusCode >= 500:
		return retryAfter(resp.Header), &retryable{kgagent.Errorf(kgagent.EUNAVAILABLE, "API error %d: %s", resp.StatusCode, msg)}
	}
	return 0, kgagent.Errorf(kgagent.EINVALID, "API rejected the request (%d): %s", resp.StatusCode, msg)
}

// retryAfter reads Retry-After (seconds or an HTTP date) or retry-after-ms.
func retryAfter(h http.Header) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("retry-after-ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// RerankConfig configures a Reranker.
type RerankConfig struct {
	BaseURL string // e.g. https://api.cohere.com/v2, https://api.jina.ai/v1, http://tei:8080
	APIKey  string
	Model   string // sent for the "cohere" style
	// Style is "cohere" (POST /rerank {model, query, documents} ->
	// {results: [{index, relevance_score}]}, as Cohere, Jina and vLLM serve)
	// or "tei" (POST /rerank {query, texts} -> [{index, score}], Hugging Face
	// text-embeddings-inference). Default "cohere".
	Style       string
	MaxRetries  int
	MinBackoff  time.Duration
	MaxBackoff  time.Duration
	Timeout     time.Duration
	HTTPClient  *http.Client
	MaxDocument int // passages are cut to this many bytes (default 4000)
}

// Reranker is a corpus.Reranker backed by a rerank API.
type Reranker struct {
	cfg RerankConfig
	c   client
}

var _ corpus.Reranker = (*Reranker)(nil)

// NewReranker returns a Reranker for cfg; EINVALID for an unknown style or a
// bad base URL.
func NewReranker(cfg RerankConfig) (*Reranker, error) {
	if cfg.Style == "" {
		cfg.Style = "cohere"
	}
	if cfg.Style != "cohere" && cfg.Style != "tei" {
		return nil, kgagent.Errorf(kgagent.EINVALID, "rerank style %q (cohere or tei)", cfg.Style)
	}
	if cfg.BaseURL == "" {
		return nil, kgagent.Errorf(kgagent.EINVALID, "rerank base URL is required")
	}
	if cfg.MaxDocument <= 0 {
		cfg.MaxDocument = 4000
	}
	c, err := newClient(cfg.BaseURL, cfg.APIKey, cfg.MaxRetries, cfg.MinBackoff, cfg.MaxBackoff, cfg.Timeout, cfg.HTTPClient)
	if err != nil {
		return nil, err
	}
	return &Reranker{cfg: cfg, c: c}, nil
}

// Rerank scores texts against query, one score per text, in order.
func (r *Reranker) Rerank(ctx context.Context, query string, texts []string) ([]float64, error) {
	docs := make([]string, len(texts))
	for i, t := range texts {
		if len(t) > r.cfg.MaxDocument {
			t = t[:r.cfg.MaxDocument]
		}
		docs[i] = t
	}
	scores := make([]float64, len(texts))
	got := make([]bool, len(texts))
	set := func(i int, s float64) error {
		if i < 0 || i >= len(texts) {
			return kgagent.Errorf(kgagent.EUNAVAILABLE, "rerank API returned index %d for %d passages", i, len(texts))
		}
		scores[i], got[i] = s, true
		return nil
	}
	if r.cfg.Style == "tei" {
		var out []struct {
			Index int     `json:"index"`
			Score float64 `json:"score"`
		}
		if err := r.c.post(ctx, "/rerank", map[string]any{"query": query, "texts": docs, "truncate": true}, &out); err != nil {
			return nil, err
		}
		for _, o := range out {
			if err := set(o.Index, o.Score); err != nil {
				return nil, err
			}
		}
	} else {
		var out struct {
			Results []struct {
				Index          int     `json:"index"`
				RelevanceScore float64 `json:"relevance_score"`
			} `json:"results"`
		}
		body := map[string]any{"query": query, "documents": docs, "top_n": len(docs)}
		if r.cfg.Model != "" {
			body["model"] = r.cfg.Model
		}
		if err := r.c.post(ctx, "/rerank", body, &out); err != nil {
			return nil, err
		}
		for _, o := range out.Results {
			if err := set(o.Index, o.RelevanceScore); err != nil {
				return nil, err
			}
		}
	}
	for i, ok := range got {
		if !ok {
			return nil, kgagent.Errorf(kgagent.EUNAVAILABLE, "rerank API gave no score for passage %d", i)
		}
	}
	return scores, nil
}
