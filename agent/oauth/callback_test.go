package oauth

import (
	"net/url"
	"testing"

	"github.com/kgagent/kgagent"
)

func TestParseCallback(t *testing.T) {
	tests := []struct {
		in   string
		want Callback
		code string
	}{
		{"https://x.example/_oauth?code=abc&state=cal%3Arnd", Callback{State: "cal:rnd", Code: "abc"}, ""},
		{"code=abc&state=cal:rnd", Callback{State: "cal:rnd", Code: "abc"}, ""},
		{"?state=cal:rnd&code=a%2Bb", Callback{State: "cal:rnd", Code: "a+b"}, ""},
		{"/agents/cal/_oauth?state=s&code=c", Callback{State: "s", Code: "c"}, ""},
		{`{"state":"cal:rnd","code":"abc"}`, Callback{State: "cal:rnd", Code: "abc"}, ""},
		{"  code=c&state=s \n", Callback{State: "s", Code: "c"}, ""},
		{"https://x/_oauth?error=access_denied&state=s", Callback{}, kgagent.EFORBIDDEN},
		{`{"error":"access_denied"}`, Callback{}, kgagent.EFORBIDDEN},
		{"code=abc", Callback{}, kgagent.EINVALID},
		{"state=s", Callback{}, kgagent.EINVALID},
		{"", Callback{}, kgagent.EINVALID},
		{"hello there", Callback{}, kgagent.EINVALID},
		{`{"state":1}`, Callback{}, kgagent.EINVALID},
		{"code=%zz&state=s", Callback{}, kgagent.EINVALID},
	}
	for _, tt := range tests {
		got, err := ParseCallback(tt.in)
		if c := kgagent.ErrorCode(err); c != tt.code {
			t.Errorf("ParseCallback(%q) code %q (%v), want %q", tt.in, c, err, tt.code)
			continue
		}
		if err == nil && got != tt.want {
			t.Errorf("ParseCallback(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// FuzzParseCallback checks that the parser never panics, fails only with
// its two codes, and that a parsed callback written back as a query string
// parses to the same thing.
func FuzzParseCallback(f *testing.F) {
	for _, s := range []string{"https://x/_oauth?code=a&state=b:c", `{"state":"s","code":"c"}`, "code=&state=", "?", "{", "error=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		cb, err := ParseCallback(in)
		if err != nil {
			if c := kgagent.ErrorCode(err); c != kgagent.EINVALID && c != kgagent.EFORBIDDEN {
				t.Fatalf("code %q", c)
			}
			return
		}
		if cb.State == "" || cb.Code == "" {
			t.Fatalf("accepted %q without state or code: %+v", in, cb)
		}
		q := url.Values{"state": {cb.State}, "code": {cb.Code}}.Encode()
		again, err := ParseCallback(q)
		if err != nil || again != cb {
			t.Fatalf("re-parse of %q: %+v %v, want %+v", q, again, err, cb)
		}
	})
}
