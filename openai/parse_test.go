package openai

import (
	"errors"
	"testing"

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
