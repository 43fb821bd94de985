package remote

import (
	"testing"

	"github.com/kgagent/kgagent"
)

// TestRemoteStatusCode: a remote agent's HTTP error status gets the code
// every kgagent HTTP client gives it (internal/httpstatus), INTERNAL where
// the status has none of its own.
func TestRemoteStatusCode(t *testing.T) {
	for status, want := range map[int]string{400: kgagent.EINVALID, 401: kgagent.EUNAUTH, 403: kgagent.EFORBIDDEN,
		404: kgagent.ENOTFOUND, 429: kgagent.ERATELIMIT, 413: kgagent.ETOOLARGE, 502: kgagent.EUNAVAILABLE,
		504: kgagent.ETIMEOUT, 409: kgagent.EINTERNAL, 302: kgagent.EINTERNAL} {
		if got := statusCode(status); got != want {
			t.Errorf("statusCode(%d) = %q, want %q", status, got, want)
		}
	}
}
