package qdrant

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/kgagent/kgagent"
)

// ConfigFromURL returns the zero Config pointed at a Qdrant gRPC endpoint
// written the way users write it: "host:port", "host" (port 6334),
// "http://host:port" (plaintext) or "https://host[:port]" (TLS). Paths,
// queries and user info are rejected, since gRPC has no use for them.
func ConfigFromURL(raw string) (Config, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return Config{}, kgagent.Errorf(kgagent.EINVALID, "qdrant URL is empty")
	}
	var cfg Config
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil {
			return Config{}, kgagent.WrapError(kgagent.EINVALID, err, "qdrant URL %q does not parse", raw)
		}
		switch u.Scheme {
		case "http", "grpc":
		case "https", "grpcs":
			cfg.TLS = true
		default:
			return Config{}, kgagent.Errorf(kgagent.EINVALID, "qdrant URL %q: scheme must be http or https", raw)
		}
		if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return Config{}, kgagent.Errorf(kgagent.EINVALID, "qdrant URL %q: only scheme, host and port are allowed", raw)
		}
		s = u.Host
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		// No port given (or a bare IPv6 address in brackets).
		host, port = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"), "6334"
	}
	if !validHost(host) {
		return Config{}, kgagent.Errorf(kgagent.EINVALID, "qdrant URL %q has no valid host", raw)
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
		return Config{}, kgagent.Errorf(kgagent.EINVALID, "qdrant URL %q has a bad port", raw)
	}
	cfg.Addr = net.JoinHostPort(host, port)
	return cfg, nil
}

// validHost accepts an IP address or a DNS-style host name.
func validHost(h string) bool {
	if net.ParseIP(h) != nil {
		return true
	}
	if h == "" || len(h) > 253 {
		return false
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
			return false
		}
	}
	return true
}
