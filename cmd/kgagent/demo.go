package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// demoSite serves the bundled sample docs site (testdata/site) on loopback.
type demoSite struct {
	srv *http.Server
	URL string
}

// startDemoSite serves dir on 127.0.0.1 on a random port.
func startDemoSite(dir string) (*demoSite, error) {
	if _, err := os.Stat(filepath.Join(dir, "index.html")); err != nil {
		return nil, fmt.Errorf("demo site %s: %w (run from the repository root or set --demo-site-dir)", dir, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir)), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }() // ends with ErrServerClosed on Close
	return &demoSite{srv: srv, URL: "http://" + ln.Addr().String()}, nil
}

// Close stops the demo site.
func (d *demoSite) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = d.srv.Shutdown(ctx)
}
