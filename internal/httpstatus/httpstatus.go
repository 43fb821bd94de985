// Package httpstatus reads what an upstream HTTP server says about a failed
// request, once for every client in kgagent (the LLM and embedding clients,
// remote agents, the crawler): the stable error code of its status and how
// long its Retry-After asks to wait. kgagent.HTTPStatus is the other
// direction, the status kgagent answers for a code.
package httpstatus

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kgagent/kgagent"
)

// Code is the stable error code of an upstream's HTTP error status, or ""
// for a status without one of its own (a 3xx, or a 4xx such as 409 or 418),
// where the caller picks the code that fits its protocol.
func Code(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return kgagent.EINVALID
	case http.StatusUnauthorized:
		return kgagent.EUNAUTH
	case http.StatusForbidden:
		return kgagent.EFORBIDDEN
	case http.StatusNotFound:
		return kgagent.ENOTFOUND
	case http.StatusTooManyRequests:
		return kgagent.ERATELIMIT
	case http.StatusRequestEntityTooLarge:
		return kgagent.ETOOLARGE
	case http.StatusGatewayTimeout:
		return kgagent.ETIMEOUT
	}
	if status >= 500 {
		return kgagent.EUNAVAILABLE
	}
	return ""
}

// RetryAfter is the wait an answer's headers ask for: Retry-After-Ms
// (OpenAI's, fractional milliseconds) if valid, else Retry-After as
// (fractional) delay-seconds or an HTTP date, measured from now (0 when
// past). ok is false without either header or when neither parses; a
// negative or absurd value (over about 30 years) does not parse.
func RetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s < 1e9 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
