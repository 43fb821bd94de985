package gateway

import (
	"net"
	"net/http"
	"time"
)

// BindAddr returns the address to listen on: addr itself when auth is
// enabled, else addr with its host replaced by 127.0.0.1 (an open API must not
// be reachable from other machines), with a note to log saying so ("" when
// addr is kept).
func (c Config) BindAddr(addr string) (string, string) {
	if c.AuthEnabled() {
		return addr, ""
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = addr, "0"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() || host == "localhost" {
		return addr, "no API keys or JWT configured: the API is open, serving on loopback only"
	}
	return net.JoinHostPort("127.0.0.1", port), "no API keys or JWT configured: binding to loopback only instead of " + addr + "; configure API keys to serve other machines"
}

// HTTPServer returns an http.Server for the gateway on addr with sensible
// timeouts (no write timeout: answers and websockets stream).
func (s *Server) HTTPServer(addr string) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}
