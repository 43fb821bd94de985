package mcp

import (
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/kgagent/kgagent"
)

func errNotFound(msg string) error { return kgagent.Errorf(kgagent.ENOTFOUND, "%s", msg) }

// decodeArgs accepts what the schema allows and names what it does not,
// always as INVALID_ARGUMENT.
func TestDecodeArgs(t *testing.T) {
	sc, err := jsonschema.For[searchIn](nil)
	if err != nil {
		t.Fatal(err)
	}
	sc.Properties["k"].Maximum = ptr(100.0)
	sc.Properties["mode"].Enum = []any{"hybrid", "keyword", "dense"}
	r, err := sc.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	var in searchIn
	if err := decodeArgs(json.RawMessage(`{"query":"port","k":3,"mode":"keyword"}`), r, &in); err != nil || in.Query != "port" || in.K != 3 || in.Mode != "keyword" {
		t.Fatalf("good args: %+v %v", in, err)
	}
	for _, bad := range []string{`{"k":3}`, `{"query":"x","k":"3"}`, `{"query":"x","k":101}`, `{"query":"x","mode":"x"}`,
		`{"query":"x","extra":1}`, `[1]`, `{"query":`, `"x"`, ``} {
		var in searchIn
		err := decodeArgs(json.RawMessage(bad), r, &in)
		if kgagent.ErrorCode(err) != kgagent.EINVALID {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// FuzzDecodeArgs: no argument bytes panic the decoder; an error is always
// INVALID_ARGUMENT.
func FuzzDecodeArgs(f *testing.F) {
	sc, _ := jsonschema.For[ingestIn](nil)
	r, _ := sc.Resolve(nil)
	f.Add([]byte(`{"urls":["https://x/*"],"wait":true}`))
	f.Add([]byte(`{"urls":null}`))
	f.Add([]byte(`{"urls":[1],"max_pages":1e99}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var in ingestIn
		if err := decodeArgs(b, r, &in); err != nil && kgagent.ErrorCode(err) != kgagent.EINVALID {
			t.Fatalf("%q: %v", b, err)
		}
	})
}
