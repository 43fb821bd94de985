package qdrant_test

import (
	"net"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus/qdrant"
)

func TestConfigFromURL(t *testing.T) {
	tests := []struct {
		in      string
		addr    string
		tls     bool
		wantErr bool
	}{
		{"localhost:6334", "localhost:6334", false, false},
		{"qdrant", "qdrant:6334", false, false},
		{"http://10.0.0.5:7000", "10.0.0.5:7000", false, false},
		{"https://x.cloud.qdrant.io", "x.cloud.qdrant.io:6334", true, false},
		{"https://x.cloud.qdrant.io:6334/", "x.cloud.qdrant.io:6334", true, false},
		{"[::1]:6334", "[::1]:6334", false, false},
		{"[::1]", "[::1]:6334", false, false},
		{"", "", false, true},
		{"ftp://h:1", "", false, true},
		{"http://user:pw@h:1", "", false, true},
		{"http://h:1/collections", "", false, true},
		{"h:0", "", false, true},
		{"h:99999", "", false, true},
		{":6334", "", false, true},
	}
	for _, tt := range tests {
		cfg, err := qdrant.ConfigFromURL(tt.in)
		if tt.wantErr {
			if kgagent.ErrorCode(err) != kgagent.EINVALID {
				t.Errorf("ConfigFromURL(%q): %v, want %s", tt.in, err, kgagent.EINVALID)
			}
			continue
		}
		if err != nil || cfg.Addr != tt.addr || cfg.TLS != tt.tls {
			t.Errorf("ConfigFromURL(%q) = %q tls=%v, %v; want %q tls=%v", tt.in, cfg.Addr, cfg.TLS, err, tt.addr, tt.tls)
		}
	}
}

// FuzzConfigFromURL checks that whatever is accepted is a usable host:port.
func FuzzConfigFromURL(f *testing.F) {
	for _, s := range []string{"localhost:6334", "https://h", "http://[::1]:1/", "h:", "://", "[", "a b:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := qdrant.ConfigFromURL(s)
		if err != nil {
			if kgagent.ErrorCode(err) != kgagent.EINVALID {
				t.Fatalf("error code %s", kgagent.ErrorCode(err))
			}
			return
		}
		host, port, err := net.SplitHostPort(cfg.Addr)
		if err != nil || host == "" || port == "" {
			t.Fatalf("accepted %q as unusable address %q", s, cfg.Addr)
		}
	})
}
