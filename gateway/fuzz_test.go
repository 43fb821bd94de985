package gateway

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kgagent/kgagent"
)

var requestSeeds = []string{
	`{"question":"What does NASA stand for?"}`,
	`{"question":"q","collection":"python","agent":"docs","session_id":"s1","k":3,"mode":"dense"}`,
	`{"query":"gil","k":-1}`,
	`{"question":42}`,
	`{"question":"\u0000"}`,
	"{\"question\":\"\xff\"}",
	`{"question":"a"} trailing`,
	`[]`, `null`, ``, `{"mode":"weird","question":"x"}`,
}

// FuzzDecodeRequest: the REST body / NATS message decoder never panics, and
// everything it accepts has a question of valid UTF-8; every failure is a
// stable client-error code.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add("agent", []byte(s))
		f.Add("triples", []byte(s))
	}
	f.Fuzz(func(t *testing.T, service string, data []byte) {
		req, err := DecodeRequest(service, data)
		if err != nil {
			switch kgagent.ErrorCode(err) {
			case kgagent.EINVALID, kgagent.ENOTFOUND, kgagent.ETOOLARGE:
			default:
				t.Fatalf("code %q for %q", kgagent.ErrorCode(err), data)
			}
			return
		}
		if service != ServiceTriples && strings.TrimSpace(req.Question) == "" {
			t.Fatalf("accepted a blank question: %q", data)
		}
		if !utf8.ValidString(req.Question) {
			t.Fatalf("accepted invalid UTF-8")
		}
	})
}

// FuzzDecodeSocketRequest: the websocket frame decoder never panics; what
// it accepts has an id and either a resume or a service and request.
func FuzzDecodeSocketRequest(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","service":"agent","flow":"default","request":{"question":"q"}}`,
		`{"id":"a","resume":{"last_seq":3}}`,
		`{"id":"a","resume":{"last_seq":-1}}`,
		`{"id":"","service":"agent","request":{}}`,
		`{"id":"a","service":"agent","request":null}`,
		`{"id":5}`, `not json`, "{\"id\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := DecodeSocketRequest(data)
		if err != nil {
			if kgagent.ErrorCode(err) != kgagent.EINVALID {
				t.Fatalf("code %q", kgagent.ErrorCode(err))
			}
			// The error frame for it must encode.
			if _, err := json.Marshal(errorFrame(fr.ID, err)); err != nil {
				t.Fatal(err)
			}
			return
		}
		if fr.ID == "" || (fr.Resume == nil && (fr.Service == "" || len(fr.Request) == 0)) {
			t.Fatalf("accepted %q as %+v", data, fr)
		}
		if fr.Resume == nil {
			_, _ = DecodeRequest(fr.Service, fr.Request)
		}
	})
}
