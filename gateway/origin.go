package gateway

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/kgagent/kgagent"
)

// hostAllowed reports whether the request's Host may be served. Loopback
// names and addresses always may; so may the configured AllowedHosts ("*"
// for any). With no AllowedHosts, an open server (no credentials, bound to
// loopback) serves only loopback names, so a web page whose name is
// rebound to 127.0.0.1 (DNS rebinding) cannot drive it; a server with
// credentials serves any Host.
func (s *Server) hostAllowed(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Unmap().IsLoopback() {
		return true
	}
	if len(s.cfg.AllowedHosts) == 0 {
		return s.cfg.AuthEnabled()
	}
	return slices.Contains(s.cfg.AllowedHosts, "*") || slices.Contains(s.cfg.AllowedHosts, host)
}

// originAllowed reports whether a request from origin may change state:
// no Origin (not a browser), the server's own origin, or a configured CORS
// origin.
func (s *Server) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	if slices.Contains(s.cfg.CORSOrigins, "*") || slices.Contains(s.cfg.CORSOrigins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// safeMethod reports whether a method only reads (a websocket upgrade
// reads nothing but starts requests, so it is not safe).
func safeMethod(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return !strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
	}
	return false
}

// CheckRequest refuses what a hostile web page could send: a Host that is
// not served (DNS rebinding) and a state-changing request (or websocket
// upgrade) from a foreign Origin. Errors: EFORBIDDEN. Every HTTP route
// passes it; other handlers mounted beside the gateway (MCP) can call it or
// wrap themselves with Protect.
func (s *Server) CheckRequest(r *http.Request) error {
	if !s.hostAllowed(r.Host) {
		e := kgagent.Errorf(kgagent.EFORBIDDEN, "host %q is not served; add it to allowed_hosts", r.Host)
		e.Details = map[string]any{"reason": "host_not_allowed"}
		return e
	}
	if !safeMethod(r) && !s.originAllowed(r) {
		e := kgagent.Errorf(kgagent.EFORBIDDEN, "requests from origin %q are not allowed; add it to cors_origins", r.Header.Get("Origin"))
		e.Details = map[string]any{"reason": "origin_not_allowed"}
		return e
	}
	return nil
}

// Protect wraps h with CheckRequest, answering refusals with the gateway's
// JSON error.
func (s *Server) Protect(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.CheckRequest(r); err != nil {
			s.writeError(w, r, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}
