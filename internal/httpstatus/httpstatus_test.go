package httpstatus

import (
	"net/http"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{map[string]string{"Retry-After": "2"}, 2 * time.Second, true},
		{map[string]string{"Retry-After": " 0 "}, 0, true},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, true},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "1"}, 250 * time.Millisecond, true},
		{map[string]string{"Retry-After": now.Add(3 * time.Second).Format(http.TimeFormat)}, 3 * time.Second, true},
		{map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{map[string]string{"Retry-After": "soon"}, 0, false},
		{map[string]string{"Retry-After": "-1"}, 0, false},
		{map[string]string{"Retry-After": "1e300"}, 0, false},
		{map[string]string{"Retry-After-Ms": "x", "Retry-After": "1"}, time.Second, true},
		{map[string]string{}, 0, false},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		got, ok := RetryAfter(h, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("RetryAfter(%v) = %v %v, want %v %v", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"1", "1e300", "NaN", "Inf", "Wed, 21 Oct 2015 07:28:00 GMT", "-0"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, ra, ms string) {
		h := http.Header{}
		h.Set("Retry-After", ra)
		h.Set("Retry-After-Ms", ms)
		if d, ok := RetryAfter(h, time.Now()); ok && d < 0 {
			t.Fatalf("negative wait %v for %q / %q", d, ra, ms)
		}
	})
}

// TestCodeInvertsHTTPStatus: a status kgagent answers for a code maps back
// to that code, so a kgagent server behind a kgagent client (a remote
// agent, an OpenAI-compatible route) keeps its codes.
func TestCodeInvertsHTTPStatus(t *testing.T) {
	for _, code := range []string{kgagent.EINVALID, kgagent.EUNAUTH, kgagent.EFORBIDDEN, kgagent.ENOTFOUND,
		kgagent.ERATELIMIT, kgagent.ETOOLARGE, kgagent.EUNAVAILABLE, kgagent.ETIMEOUT} {
		if got := Code(kgagent.HTTPStatus(code)); got != code {
			t.Errorf("Code(HTTPStatus(%s) = %d) = %q", code, kgagent.HTTPStatus(code), got)
		}
	}
	for status, want := range map[int]string{422: kgagent.EINVALID, 500: kgagent.EUNAVAILABLE, 502: kgagent.EUNAVAILABLE,
		409: "", 418: "", 302: "", 200: "", 600: kgagent.EUNAVAILABLE} {
		if got := Code(status); got != want {
			t.Errorf("Code(%d) = %q, want %q", status, got, want)
		}
	}
}
