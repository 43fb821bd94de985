// Package netguard is the one HTTP client kgagent uses for every
// server-side fetch of a URL a user supplied: embeds read by agents, remote
// agents registered over the API, and crawls requested over the API.
//
// The guard works at dial time: after DNS resolution, in the socket's
// Control hook, every address about to be connected to is checked, so
// neither a host name that resolves to 127.0.0.1 nor DNS rebinding between
// a check and the connection can reach loopback, private, link-local
// (cloud metadata at 169.254.169.254), multicast or other special-purpose
// addresses, IPv4-mapped IPv6 forms of them included. Host names written as
// non-canonical numbers (2130706433, 0x7f.1, 0177.0.0.1, 127.1) are refused
// before any lookup. Redirects are followed only to http(s) URLs that pass
// the same checks. Proxies from the environment are never used: they would
// hide the real destination from the check.
//
// Operators who need some private hosts (an intranet docs site) name them
// in Config.AllowedPrivateHosts: exact host names, IP addresses or CIDR
// prefixes.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/kgagent/kgagent"
)

// blockedPrefixes are address ranges a server-side fetch must never reach
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

// Blocked reports whether ip is an address a server-side fetch must not
// connect to: loopback, private, link-local, multicast, unspecified, or
// another special-purpose range. IPv4-mapped IPv6 addresses are judged by
// their IPv4 address.
func Blocked(ip netip.Addr) bool {
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

// Defaults of Config.
const (
	DefaultTimeout      = 30 * time.Second
	DefaultMaxRedirects = 5
)

// Config configures a guarded client. The zero value guards everything.
type Config struct {
	// AllowPrivate turns the guard off (the CLI crawling from the user's own
	// machine). Never set it for URLs that come from API callers.
	AllowPrivate bool
	// AllowedPrivateHosts may be reached although private: host names
	// (exact, case-insensitive), IP addresses, or CIDR prefixes.
	AllowedPrivateHosts []string
	Timeout             time.Duration // whole request, body included (client); dial and headers (transport); default 30s
	MaxRedirects        int           // default 5; <0: none followed
	MaxIdleConnsPerHost int           // default 2
}

// Guard checks URLs and addresses against a Config.
type Guard struct {
	allowAll bool
	hosts    map[string]bool
	prefixes []netip.Prefix
}

// New returns the guard of cfg. Errors: EINVALID for an allowed host that
// is neither a name, an address nor a prefix.
func New(cfg Config) (*Guard, error) {
	g := &Guard{allowAll: cfg.AllowPrivate, hosts: map[string]bool{}}
	for _, h := range cfg.AllowedPrivateHosts {
		h = strings.ToLower(strings.TrimSpace(h))
		switch {
		case h == "":
			continue
		case strings.Contains(h, "/"):
			p, err := netip.ParsePrefix(h)
			if err != nil {
				return nil, kgagent.Errorf(kgagent.EINVALID, "allowed private host %q: bad CIDR prefix", h)
			}
			g.prefixes = append(g.prefixes, p.Masked())
		default:
			if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
				g.prefixes = append(g.prefixes, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
				continue
			}
			if !hostNameRe.MatchString(h) {
				return nil, kgagent.Errorf(kgagent.EINVALID, "allowed private host %q: not a host name, address or CIDR prefix", h)
			}
			g.hosts[h] = true
		}
	}
	return g, nil
}

var hostNameRe = regexp.MustCompile(`^[a-z0-9]([a-z0-9_.-]{0,252})$`)

// numericHostRe matches hosts made only of digits, dots and hex notation:
// what inet_aton would read as an IPv4 address in decimal, octal or hex.
var numericHostRe = regexp.MustCompile(`^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]*))*\.?$`)

// ErrBlocked is wrapped by every refusal of the guard.
var ErrBlocked = errors.New("blocked by the SSRF guard")

func blocked(format string, args ...any) error {
	return &kgagent.Error{Code: kgagent.EFORBIDDEN, Message: fmt.Sprintf(format, args...), Err: ErrBlocked}
}

// addrAllowed reports whether ip may be connected to.
func (g *Guard) addrAllowed(ip netip.Addr) bool {
	if g.allowAll || !Blocked(ip) {
		return true
	}
	ip = ip.Unmap()
	for _, p := range g.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// CheckURL checks a URL before it is fetched: http or https, a host, no
// user info, and a host that is a name, a canonical IP address that may be
// reached, or an allowed private host. Errors: EINVALID for a malformed or
// non-http(s) URL, EFORBIDDEN for a blocked host.
func (g *Guard) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return kgagent.Errorf(kgagent.EINVALID, "bad URL")
	}
	return g.checkURL(u)
}

func (g *Guard) checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return kgagent.Errorf(kgagent.EINVALID, "only http and https URLs may be fetched, not %q", u.Scheme)
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return kgagent.Errorf(kgagent.EINVALID, "URL has no host")
	}
	if u.User != nil {
		return kgagent.Errorf(kgagent.EINVALID, "URLs with user info are not fetched")
	}
	if g.allowAll || g.hosts[host] {
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if !g.addrAllowed(a) {
			return blocked("refusing to fetch private, loopback or link-local address %s", a)
		}
		return nil
	}
	if numericHostRe.MatchString(host) {
		return blocked("refusing to fetch numeric host %q (write IP addresses in canonical form)", host)
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return blocked("refusing to fetch %s", host)
	}
	return nil
}

// control is the dialer's Control hook: it refuses blocked addresses after
// DNS resolution, just before the connection is made.
func (g *Guard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return blocked("refusing to connect to %s", address)
	}
	if !g.addrAllowed(ap.Addr()) {
		return blocked("refusing to connect to private, loopback or link-local address %s", ap.Addr())
	}
	return nil
}

// Transport returns an http.Transport whose connections pass the guard.
func (g *Guard) Transport(cfg Config) *http.Transport {
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	guarded := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: g.control}
	open := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, _ := net.SplitHostPort(addr)
			if g.allowAll || g.hosts[strings.ToLower(host)] {
				return open.DialContext(ctx, network, addr)
			}
			return guarded.DialContext(ctx, network, addr)
		},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   max(cfg.MaxIdleConnsPerHost, 2),
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		ExpectContinueTimeout: time.Second,
	}
}

// Client returns an http.Client over Transport: every URL checked by
// CheckURL before it is dialled, the whole request bounded by the timeout,
// redirects followed only to URLs CheckURL accepts, at most
// MaxRedirects of them.
func (g *Guard) Client(cfg Config) *http.Client {
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	maxRedirects := cfg.MaxRedirects
	if maxRedirects == 0 {
		maxRedirects = DefaultMaxRedirects
	}
	return &http.Client{
		Transport: g.RoundTripper(g.Transport(cfg)),
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return kgagent.Errorf(kgagent.EUNAVAILABLE, "more than %d redirects", maxRedirects)
			}
			return g.checkURL(req.URL)
		},
	}
}

// NewClient is New followed by Client.
func NewClient(cfg Config) (*http.Client, error) {
	g, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return g.Client(cfg), nil
}

// guardedRT checks each request's URL before the guarded transport dials.
type guardedRT struct {
	g  *Guard
	rt http.RoundTripper
}

func (t guardedRT) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := t.g.checkURL(r.URL); err != nil {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, err
	}
	return t.rt.RoundTrip(r)
}

// RoundTripper wraps rt (a Transport of this guard) so each request's URL is
// checked by CheckURL first.
func (g *Guard) RoundTripper(rt http.RoundTripper) http.RoundTripper {
	return guardedRT{g: g, rt: rt}
}

var defaultClient = func() *http.Client {
	g, _ := New(Config{})
	return g.Client(Config{})
}()

// DefaultClient returns the shared client of the zero Config: every private
// address refused, 30s per request, 5 redirects.
func DefaultClient() *http.Client { return defaultClient }
