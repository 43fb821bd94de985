package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"golang.org/x/sync/errgroup"
)

// EmbedConfig configures an Embedder. Only Dimensions is needed for a
// model whose size is not known here; the zero value otherwise works against
// api.openai.com with text-embedding-3-small.
type EmbedConfig struct {
	BaseURL    string // default DefaultBaseURL (the part before /embeddings)
	APIKey     string // sent as a bearer token when set
	Model      string // default text-embedding-3-small
	Dimensions int    // vector length every response must have; default known per OpenAI model
	// SendDimensions asks the server to shorten vectors to Dimensions (the
	// "dimensions" parameter of text-embedding-3 models).
	SendDimensions bool
	BatchSize      int           // texts per request (default 32)
	Concurrency    int           // most requests in flight, across Embed calls (default 2); lowered while the server is overloaded
	MaxRetries     int           // retries of a 429/5xx/408/409/timeout/network failure (default 5; -1 for none)
	MinBackoff     time.Duration // first retry delay (default 250ms), doubled each time with jitter
	MaxBackoff     time.Duration // cap of a backoff delay (default 20s)
	MaxRetryAfter  time.Duration // longest Retry-After waited for; a longer one fails at once (default DefaultMaxRetryAfter)
	Timeout        time.Duration // per request (default DefaultEmbedTimeout)
	HTTPClient     *http.Client  // default: a client with no overall timeout (Timeout applies per request)
	// QueryPrefix and DocumentPrefix are put before search queries and
	// documents (E5 models want "query: " and "passage: ").
	QueryPrefix, DocumentPrefix string
	// QueryInputType and DocumentInputType are sent as "input_type" with
	// queries and documents when set (e.g. search_query/search_document,
	// query/document, as Cohere, Voyage and Nomic servers take).
	QueryInputType, DocumentInputType string
	// Progress, when set, is called after every request that succeeded.
	Progress func(EmbedProgress)
}

// EmbedProgress is a running count of an Embedder's work, for progress reports.
type EmbedProgress struct {
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

// Embedder is a corpus.Embedder backed by an OpenAI-compatible embeddings
// API.
//
// Embedding requests are batched and share one adaptive limit on requests
// in flight across every Embed call of an Embedder (the crawler embeds
// several pages at once): a timeout, 429 or 503 halves the limit (down to
// one), a run of successes raises it again up to Concurrency, and retries
// wait for a slot like any request, so a slow server that does one
// inference at a time is never sent more than it can take. A batch that
// timed out is split in two for its retry.
type Embedder struct {
	cfg EmbedConfig
	t   *transport
	lim *limiter

	texts, requests, retries atomic.Int64
}

var _ corpus.Embedder = (*Embedder)(nil)

// NewEmbedder returns an Embedder for cfg. It fails with EINVALID when the
// vector length is neither configured nor known for the model, or BaseURL is
// bad.
func NewEmbedder(cfg EmbedConfig) (*Embedder, error) {
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
		cfg.BatchSize = DefaultEmbedBatchSize
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultEmbedConcurrency
	}
	t, err := newTransport(embedServer, cfg.BaseURL, cfg.APIKey, cfg.HTTPClient)
	if err != nil {
		return nil, err
	}
	t.retries = orDefault(cfg.MaxRetries, 5)
	t.minBackoff = durOr(cfg.MinBackoff, 250*time.Millisecond)
	t.maxBackoff = max(durOr(cfg.MaxBackoff, DefaultMaxBackoff), t.minBackoff)
	t.maxRetryAfter = durOr(cfg.MaxRetryAfter, DefaultMaxRetryAfter)
	t.tryTimeout = durOr(cfg.Timeout, DefaultEmbedTimeout)
	return &Embedder{cfg: cfg, t: t, lim: newLimiter(cfg.Concurrency)}, nil
}

// Defaults of EmbedConfig.
const (
	DefaultEmbedBatchSize   = 32
	DefaultEmbedConcurrency = 2
	DefaultEmbedTimeout     = 60 * time.Second
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

// Embed embeds documents: one vector per text, in order, with the document
// prefix and input type. Errors, as the chat client's for the same answers:
// EUNAUTH or EFORBIDDEN for rejected credentials, ERATELIMIT when the quota
// is spent or retries of 429 ran out, the answer's own code when its
// Retry-After asks for more than MaxRetryAfter, EUNAVAILABLE when the server kept failing or timing out,
// ENOTFOUND for a wrong base URL, EINVALID when the server rejects the
// request or returns vectors of the wrong length, CANCELED or TIMEOUT when
// ctx ends.
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
	input, err := json.Marshal(texts)
	if err != nil {
		return kgagent.WrapError(kgagent.EINTERNAL, err, "encode request")
	}
	req := EmbeddingRequest{Model: e.cfg.Model, Input: input, EncodingFormat: "float", InputType: inputType}
	if e.cfg.SendDimensions {
		req.Dimensions = e.cfg.Dimensions
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return kgagent.WrapError(kgagent.EINTERNAL, err, "encode request")
	}
	for ; ; attempt++ {
		if err := e.lim.acquire(ctx); err != nil {
			return ctxError(embedServer, ctx)
		}
		var resp EmbeddingResponse
		hr, err := e.t.send(ctx, http.MethodPost, "/embeddings", payload, "")
		if err == nil {
			err = e.t.decode(hr, 256<<20, &resp)
		}
		var f *failure
		isFailure := errors.As(err, &f)
		e.lim.release(isFailure && f.overload)
		if err == nil {
			return e.store(resp, texts, out)
		}
		if isFailure {
			e.t.explain(f)
		}
		if _, ok := e.t.again(attempt, err); !ok {
			return plain(err)
		}
		e.retries.Add(1)
		if f.timeout && len(texts) > 1 {
			// Smaller requests finish within the timeout.
			half := len(texts) / 2
			g, gctx := errgroup.WithContext(ctx)
			g.Go(func() error { return e.batch(gctx, texts[:half], out[:half], inputType, attempt+1) })
			g.Go(func() error { return e.batch(gctx, texts[half:], out[half:], inputType, attempt+1) })
			return g.Wait()
		}
		if err := e.t.retry(ctx, attempt, err); err != nil {
			return err
		}
	}
}

// store checks a response and puts its vectors into out.
func (e *Embedder) store(resp EmbeddingResponse, texts []string, out [][]float32) error {
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
		e.cfg.Progress(EmbedProgress{Texts: n, Requests: r, Retries: e.retries.Load(), Limit: e.lim.current()})
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
