package crawler

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/kgagent/kgagent"
)

// blockedPrefixes are address ranges a server-side crawl must never reach
// besides what netip.Addr's predicates already catch (loopback, private,
// link-local, multicast, unspecified).
var blockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this" network
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64 can reach IPv4 private space
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("fec0::/10"),      // deprecated site-local
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("2002::/16"),      // 6to4 can embed private IPv4
	netip.MustParsePrefix("255.255.255.255/32"),
}

// PrivateAddr reports whether ip is an address a server-side crawl must not
// connect to: loopback, private, link-local, multicast, unspecified, or one
// of the special-purpose ranges above.
func PrivateAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return true
	}
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// errPrivateAddress is returned by the guarded dialer.
func errPrivateAddress(addr string) error {
	return kgagent.Errorf(kgagent.EFORBIDDEN, "refusing to connect to private, loopback or link-local address %s", addr)
}

// newTransport returns the HTTP transport of a crawl. Unless allowPrivate is
// set, its dialer checks every address it is about to connect to (after DNS
// resolution, in the socket's Control hook), so that neither a hostname that
// resolves to 127.0.0.1 nor DNS rebinding between check and use can reach
// a private address. Proxies from the environment are not used: they would
// hide the real destination from the check.
func newTransport(allowPrivate bool, timeout time.Duration, parallelism int) *http.Transport {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return errPrivateAddress(address)
			}
			if PrivateAddr(ap.Addr()) {
				return errPrivateAddress(ap.Addr().String())
			}
			return nil
		}
	}
	return &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   max(parallelism, 2),
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		ExpectContinueTimeout: time.Second,
	}
}
