package natsapi

import (
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
)

// FuzzDecodeMessage: the NATS message decoder never panics, keeps the size
// limit and fails only with client-error codes.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{`{"question":"q"}`, `{"id":"x","flow":"default","question":"q"}`, `{"question":1}`, `{}`, "\xff", `{"query":"q","k":5}`, `{"id":"w","service":"agent","flow":"default","request":{"question":"q"}}`, `{"request":{"question":1}}`} {
		f.Add("agent", []byte(s))
		f.Add("search", []byte(s))
	}
	f.Fuzz(func(t *testing.T, service string, data []byte) {
		req, err := DecodeMessage(service, data, 256)
		if err != nil {
			switch kgagent.ErrorCode(err) {
			case kgagent.EINVALID, kgagent.ENOTFOUND, kgagent.ETOOLARGE:
			default:
				t.Fatalf("code %q", kgagent.ErrorCode(err))
			}
			return
		}
		if len(data) > 256 {
			t.Fatal("size limit not kept")
		}
		if service != "triples" && strings.TrimSpace(req.Question) == "" {
			t.Fatal("blank question accepted")
		}
	})
}
