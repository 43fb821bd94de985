package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kgagent/kgagent/gateway"
)

// demoSiteFile keeps, in the data dir, the loopback address the demo site
// was served on, so that a restart serves it on the same one: the URLs the
// index holds (and answers cite) stay valid, and the re-crawl finds every
// page unchanged instead of ingesting a second copy under a new port.
const demoSiteFile = "demo-site.addr"

// demoSite serves the bundled sample docs site (testdata/site) on loopback.
type demoSite struct {
	srv *http.Server
	URL string
	// Moved is the site's former URL when it could not be served there
	// again (the port is taken): its pages are to be forgotten.
	Moved string
}

// startDemoSite serves dir on 127.0.0.1, on the port recorded in dataDir
// when there is one and it is free, else on a new random port, which it
// records.
func startDemoSite(dir, dataDir string) (*demoSite, error) {
	if _, err := os.Stat(filepath.Join(dir, "index.html")); err != nil {
		return nil, fmt.Errorf("demo site %s: %w (run from the repository root or set --demo-site-dir)", dir, err)
	}
	rec := filepath.Join(dataDir, demoSiteFile)
	prev := ""
	b, err := os.ReadFile(rec)
	switch {
	case err == nil:
		prev = strings.TrimSpace(string(b))
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	var ln net.Listener
	if prev != "" {
		ln, _ = net.Listen("tcp", prev) // taken: a new port below
	}
	if ln == nil {
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, err
		}
	}
	addr := ln.Addr().String()
	if addr != prev {
		if err := os.WriteFile(rec, []byte(addr+"\n"), 0o600); err != nil {
			ln.Close()
			return nil, err
		}
	}
	srv := gateway.NewHTTPServer(http.FileServer(http.Dir(dir)), gateway.HTTPLimits{})
	go func() { _ = srv.Serve(ln) }() // ends with ErrServerClosed on Close
	d := &demoSite{srv: srv, URL: "http://" + addr}
	if prev != "" && prev != addr {
		d.Moved = "http://" + prev
	}
	return d, nil
}

// Close stops the demo site.
func (d *demoSite) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = d.srv.Shutdown(ctx)
}
