package crawler

import (
	"testing"

	"github.com/kgagent/kgagent"
)

// TestStatusCode: a page's HTTP error status gets the code every kgagent
// HTTP client gives it (internal/httpstatus; issue 22: four tables had
// drifted), UNAVAILABLE where the status has none of its own.
func TestStatusCode(t *testing.T) {
	for status, want := range map[int]string{401: kgagent.EUNAUTH, 403: kgagent.EFORBIDDEN, 404: kgagent.ENOTFOUND,
		429: kgagent.ERATELIMIT, 413: kgagent.ETOOLARGE, 500: kgagent.EUNAVAILABLE, 504: kgagent.ETIMEOUT,
		301: kgagent.EUNAVAILABLE, 409: kgagent.EUNAVAILABLE} {
		if got := statusCode(status); got != want {
			t.Errorf("statusCode(%d) = %q, want %q", status, got, want)
		}
	}
}
