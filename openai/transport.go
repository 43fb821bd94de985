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
	"net/url"
	"strings"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/httpstatus"
	"github.com/kgagent/kgagent/internal/text"
)

// The servers' names in errors: which client failed.
const (
	llmServer   = "LLM server"
	embedServer = "embedding server"
)

// transport is the one HTTP path of the package's clients: it builds every
// request (base URL, bearer key, JSON body), maps every failure (an HTTP
// status through internal/httpstatus and the API's error body, a dropped
// connection, a timeout) to a stable code and says whether it is worth
// retrying, and decides and waits each retry (exponential backoff with
// jitter, or the server's Retry-After up to maxRetryAfter). The chat client
// and the embedder differ only in what they send and read.
type transport struct {
	noun          string // the server, in messages: llmServer or embedServer
	base          string // API root with its version, no trailing slash
	key           string // bearer token; "" sends none
	hc            *http.Client
	retries       int           // retries of a failure that may pass
	minBackoff    time.Duration // first retry delay, doubled each time up to maxBackoff
	maxBackoff    time.Duration
	maxRetryAfter time.Duration // a longer Retry-After fails at once
	// tryTimeout bounds each request (embeddings: a timed-out request is
	// retried); 0 leaves the bound to the caller's context (chat: the
	// timeout covers the call, its retries and its stream).
	tryTimeout time.Duration
}

// newTransport checks base (an http(s) URL; DefaultBaseURL when empty).
// The retry fields are the caller's, with its defaults filled.
func newTransport(noun, base, key string, hc *http.Client) (*transport, error) {
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, kgagent.Errorf(kgagent.EINVALID, "%s base URL %q is not an http(s) URL", noun, base)
	}
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	return &transport{noun: noun, base: strings.TrimRight(base, "/"), key: key, hc: hc}, nil
}

// orDefault is n, or def when n is 0; a negative n means none (0).
func orDefault(n, def int) int {
	if n == 0 {
		return def
	}
	return max(n, 0)
}

// durOr is d, or def when d is not positive.
func durOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// failure is a request that got no 2xx answer: err is what the caller
// returns, retry whether trying again may pass, overload whether the
// server said it has more than it can take (429, 503, a timed-out
// request), timeout whether the request ran out of tryTimeout, after the
// server's Retry-After (hasAfter when it sent one that parses).
type failure struct {
	err      *kgagent.Error
	status   int    // 0 when no answer came
	raw      []byte // the answer's body, up to 64 KiB
	retry    bool
	overload bool
	timeout  bool
	after    time.Duration
	hasAfter bool
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// plain is err as callers get it: a failure's *kgagent.Error.
func plain(err error) error {
	if f, ok := err.(*failure); ok {
		return f.err
	}
	return err
}

// errTryTimeout is the cause of a request that ran out of tryTimeout.
var errTryTimeout = errors.New("request timed out")

// send makes one request: method to path with body (JSON; nil sends none)
// and an Accept header when accept is set. A 2xx answer comes back with
// its body to read and close; anything else is a *failure, or the end of
// ctx as ctxError.
func (t *transport) send(ctx context.Context, method, path string, body []byte, accept string) (*http.Response, error) {
	rctx, cancel := ctx, context.CancelFunc(func() {})
	if t.tryTimeout > 0 {
		rctx, cancel = context.WithTimeoutCause(ctx, t.tryTimeout, errTryTimeout)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	hr, err := http.NewRequestWithContext(rctx, method, t.base+path, rd)
	if err != nil {
		cancel()
		return nil, kgagent.WrapError(kgagent.EINVALID, err, "bad %s request", t.noun)
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if accept != "" {
		hr.Header.Set("Accept", accept)
	}
	if t.key != "" {
		hr.Header.Set("Authorization", "Bearer "+t.key)
	}
	resp, err := t.hc.Do(hr)
	if err != nil {
		cancel()
		return nil, t.broken(ctx, rctx, err, "%s unreachable", t.noun)
	}
	resp.Body = &tryBody{ReadCloser: resp.Body, ctx: ctx, rctx: rctx, cancel: cancel}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	f := classify(t.noun, resp.StatusCode, raw)
	f.after, f.hasAfter = httpstatus.RetryAfter(resp.Header, time.Now())
	return nil, f
}

// broken maps a request that failed without an answer (err): the end of
// ctx, a request past tryTimeout (rctx), or a connection that failed. The
// last two are retried.
func (t *transport) broken(ctx, rctx context.Context, err error, format string, args ...any) error {
	if ctx.Err() != nil {
		return ctxError(t.noun, ctx)
	}
	if errors.Is(context.Cause(rctx), errTryTimeout) {
		return &failure{err: kgagent.WrapError(kgagent.EUNAVAILABLE, err, "%s timed out after %s", t.noun, t.tryTimeout), retry: true, overload: true, timeout: true}
	}
	return &failure{err: kgagent.WrapError(kgagent.EUNAVAILABLE, err, format, args...), retry: true}
}

// tryBody is a 2xx answer's body: closing it frees the request's timeout.
type tryBody struct {
	io.ReadCloser
	ctx, rctx context.Context
	cancel    context.CancelFunc
}

func (b *tryBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// decode reads a 2xx answer of send (up to limit bytes) into out and closes
// it. A body cut off is a failure as in send; one that is not JSON fails
// with UNAVAILABLE, not retried.
func (t *transport) decode(resp *http.Response, limit int64, out any) error {
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		if b, ok := resp.Body.(*tryBody); ok {
			return t.broken(b.ctx, b.rctx, err, "%s answer cut off", t.noun)
		}
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "%s answer cut off", t.noun)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "%s sent malformed JSON", t.noun)
	}
	return nil
}

// again is err's failure when another try may follow try attempt (from 0):
// a failure that may pass, with retries left.
func (t *transport) again(attempt int, err error) (*failure, bool) {
	var f *failure
	if !errors.As(err, &f) || !f.retry || attempt >= t.retries {
		return nil, false
	}
	return f, true
}

// retry decides what follows err, the failure of try attempt: nil after
// waiting before the next try, or the error to return. It waits the
// server's Retry-After (plus up to a tenth, so that clients told the same
// do not come back together) or else exponential backoff; a Retry-After
// over maxRetryAfter, a failure that cannot pass and one past the retries
// are returned at once.
func (t *transport) retry(ctx context.Context, attempt int, err error) error {
	f, ok := t.again(attempt, err)
	if !ok {
		return plain(err)
	}
	delay := t.backoff(attempt)
	if f.hasAfter {
		if f.after > t.maxRetryAfter {
			f.err.Message += fmt.Sprintf("; retry after %s", f.after.Round(time.Second))
			if f.err.Details == nil {
				f.err.Details = map[string]any{}
			}
			f.err.Details["retry_after_s"] = f.after.Seconds()
			return f.err
		}
		delay = f.after + rand.N(f.after/10+1)
	}
	tm := time.NewTimer(delay)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctxError(t.noun, ctx)
	}
}

// backoff is exponential backoff with "equal jitter": a random duration in
// [d/2, d] with d = minBackoff·2^attempt capped at maxBackoff.
func (t *transport) backoff(attempt int) time.Duration {
	d := t.minBackoff
	for i := 0; i < attempt && d < t.maxBackoff; i++ {
		d *= 2
	}
	d = min(d, t.maxBackoff)
	half := d / 2
	return half + rand.N(half+1)
}

// explain adds the server's own reason to the error of a request it
// rejected as bad or aimed at nothing (INVALID, NOT_FOUND).
func (t *transport) explain(f *failure) {
	if f.err.Code == kgagent.EINVALID || f.err.Code == kgagent.ENOTFOUND {
		t.withServerMessage(f.err, f.raw)
	}
}

// withServerMessage adds the server's own reason (from its error body raw,
// the key cut out) to a rejected request's error.
func (t *transport) withServerMessage(herr *kgagent.Error, raw []byte) {
	if msg := serverMessage(raw, t.key); msg != "" {
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

// quotaCodes are error types/codes meaning that retrying cannot help.
var quotaCodes = map[string]bool{
	"insufficient_quota":         true,
	"billing_hard_limit_reached": true,
	"quota_exceeded":             true,
}

// classify maps an error answer (status, body raw) of server noun: the code
// is internal/httpstatus's, except for an exhausted quota (RATE_LIMITED,
// whatever the status) and 408/409 (UNAVAILABLE, retried, as the OpenAI
// SDKs do); 429 and 5xx are retried too. The server's own message goes into
// the wrapped cause (logged, never shown to callers: it may echo part of
// the key).
func classify(noun string, status int, raw []byte) *failure {
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
	f := &failure{status: status, raw: raw}
	mk := func(c, msg string, args ...any) *failure {
		f.err = &kgagent.Error{Code: c, Message: fmt.Sprintf(msg, args...), Details: details, Err: cause}
		return f
	}
	ecode := httpstatus.Code(status)
	switch {
	case quotaCodes[er.Error.Type] || quotaCodes[code]:
		return mk(kgagent.ERATELIMIT, "%s quota exhausted", noun)
	case status == http.StatusUnauthorized:
		return mk(ecode, "%s rejected the API key", noun)
	case status == http.StatusForbidden:
		return mk(ecode, "%s refused the API key access", noun)
	case status == http.StatusTooManyRequests:
		f.retry, f.overload = true, true
		return mk(ecode, "%s rate limit", noun)
	case status >= 500:
		f.retry, f.overload = true, status == http.StatusServiceUnavailable
		return mk(ecode, "%s failed (HTTP %d)", noun, status)
	case status == http.StatusRequestTimeout || status == http.StatusConflict:
		// no code of their own: transient on these servers, so retried
		f.retry = true
		return mk(kgagent.EUNAVAILABLE, "%s failed (HTTP %d)", noun, status)
	case status == http.StatusNotFound:
		return mk(ecode, "%s model or endpoint not found", noun)
	case status == http.StatusRequestEntityTooLarge:
		return mk(ecode, "request too large for the %s", noun)
	}
	return mk(kgagent.EINVALID, "%s rejected the request (HTTP %d)", noun, status)
}

// errCallTimeout is the cause of a chat call past Config.Timeout.
var errCallTimeout = errors.New("call timed out")

// ctxError maps the end of ctx to CANCELED or TIMEOUT: the caller's
// deadline or cancellation, or the client's own call timeout
// (errCallTimeout).
func ctxError(noun string, ctx context.Context) error {
	switch {
	case errors.Is(context.Cause(ctx), errCallTimeout):
		return kgagent.WrapError(kgagent.ETIMEOUT, ctx.Err(), "call to the %s timed out", noun)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return kgagent.WrapError(kgagent.ETIMEOUT, ctx.Err(), "deadline exceeded waiting for the %s", noun)
	}
	return kgagent.WrapError(kgagent.ECANCELED, ctx.Err(), "call to the %s canceled", noun)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
