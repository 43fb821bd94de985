package crawler

import (
	"net/http"

	"github.com/kgagent/kgagent/netguard"
)

// newTransport returns the HTTP transport of a crawl: netguard's, so every
// address is checked at dial time (after DNS resolution) unless
// cfg.AllowPrivate is set, with cfg.AllowedPrivateHosts let through. A
// malformed host list (cmd/kgagent refuses one at start) guards everything.
func newTransport(cfg Config, parallelism int) *http.Transport {
	nc := netguard.Config{AllowPrivate: cfg.AllowPrivate, AllowedPrivateHosts: cfg.AllowedPrivateHosts, Timeout: cfg.RequestTimeout, MaxIdleConnsPerHost: parallelism}
	g, err := netguard.New(nc)
	if err != nil {
		g, _ = netguard.New(netguard.Config{}) // fail closed
	}
	return g.Transport(nc)
}
