package openai

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
)

func TestParseChunk(t *testing.T) {
	tests := []struct {
		data  string
		text  string
		usage int // prompt tokens, -1 for none
		code  string
	}{
		{`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`, "hi", -1, ""},
		{`{"choices":[{"index":0,"delta":{"role":"assistant"}}]}`, "", -1, ""},
		{`{"choices":[{"index":1,"delta":{"content":"other"}}]}`, "", -1, ""},
		{`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}`, "", 5, ""},
		{`{"choices":[{"index":0,"delta":{"content":"x"}}],"usage":{"prompt_tokens":3}}`, "x", 3, ""},
		{`{"choices":[{"index":0,"text":"legacy"}]}`, "legacy", -1, ""},
		{`{"choices":[{"index":0,"message":{"content":"whole"}}]}`, "whole", -1, ""},
		{`{"error":{"message":"boom","type":"server_error"}}`, "", -1, kgagent.EUNAVAILABLE},
		{`{"error":{"message":"no credit","code":"insufficient_quota"}}`, "", -1, kgagent.ERATELIMIT},
		{`{"error":{"message":"slow down","code":429}}`, "", -1, kgagent.ERATELIMIT},
		{`{"error":{"message":"bad key","code":401}}`, "", -1, kgagent.EUNAUTH},
		{`not json`, "", -1, kgagent.EUNAVAILABLE},
	}
	for _, tt := range tests {
		var u *kgagent.Usage
		var reason string
		text, err := parseChunk(tt.data, &u, &reason, nil)
		if kgagent.ErrorCode(err) != tt.code || text != tt.text {
			t.Errorf("parseChunk(%s) = %q, %v; want %q, code %q", tt.data, text, err, tt.text, tt.code)
		}
		if (u == nil) != (tt.usage < 0) || (u != nil && u.PromptTokens != tt.usage) {
			t.Errorf("parseChunk(%s) usage %+v, want %d", tt.data, u, tt.usage)
		}
	}
}

func FuzzParseChunk(f *testing.F) {
	f.Add(`{"choices":[{"index":0,"delta":{"content":"hi"}}],"usage":{"prompt_tokens":1}}`)
	f.Add(`{"error":{"code":503}}`)
	f.Add(`{"error":{"code":[1]}}`)
	f.Fuzz(func(t *testing.T, data string) {
		var u *kgagent.Usage
		var reason string
		_, err := parseChunk(data, &u, &reason, nil)
		if err != nil {
			var ke *kgagent.Error
			if c := kgagent.ErrorCode(err); c == kgagent.EINTERNAL || c == "" || !errors.As(err, &ke) || ke.Message == "" {
				t.Fatalf("error %v has no proper code and message", err)
			}
		}
	})
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{map[string]string{"Retry-After": "2"}, 2 * time.Second, true},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, true},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "1"}, 250 * time.Millisecond, true},
		{map[string]string{"Retry-After": now.Add(3 * time.Second).Format(http.TimeFormat)}, 3 * time.Second, true},
		{map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{map[string]string{"Retry-After": "soon"}, 0, false},
		{map[string]string{"Retry-After": "-1"}, 0, false},
		{map[string]string{"Retry-After-Ms": "x", "Retry-After": "1"}, time.Second, true},
		{map[string]string{}, 0, false},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		got, ok := parseRetryAfter(h, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseRetryAfter(%v) = %v %v, want %v %v", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"1", "1e300", "NaN", "Inf", "Wed, 21 Oct 2015 07:28:00 GMT", "-0"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, ra, ms string) {
		h := http.Header{}
		h.Set("Retry-After", ra)
		h.Set("Retry-After-Ms", ms)
		if d, ok := parseRetryAfter(h, time.Now()); ok && d < 0 {
			t.Fatalf("negative wait %v for %q / %q", d, ra, ms)
		}
	})
}
