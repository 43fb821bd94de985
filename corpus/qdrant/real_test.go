package qdrant_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	qc "github.com/qdrant/go-client/qdrant"

	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/corpustest"
	"github.com/kgagent/kgagent/corpus/qdrant"
)

// TestConformanceRealServer runs the conformance suite against a real Qdrant
// when QDRANT_URL names its gRPC endpoint (host:port, e.g. localhost:6334;
// an https:// scheme turns TLS on), with QDRANT_API_KEY when it needs one.
// Every subtest works in collections under a random prefix and drops them
// afterwards.
func TestConformanceRealServer(t *testing.T) {
	raw := os.Getenv("QDRANT_URL")
	if raw == "" {
		t.Skip("QDRANT_URL is not set: no real Qdrant to test against (set QDRANT_URL=host:6334 and optionally QDRANT_API_KEY)")
	}
	cfg, err := qdrant.ConfigFromURL(raw)
	if err != nil {
		t.Fatalf("QDRANT_URL: %v", err)
	}
	cfg.APIKey = os.Getenv("QDRANT_API_KEY")
	corpustest.Run(t, func(t *testing.T) corpus.Index {
		c := cfg
		c.Prefix = "kgtest" + randomHex(4)
		ix := open(t, c)
		t.Cleanup(func() { dropPrefixed(t, c) })
		return ix
	})
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// dropPrefixed drops every collection whose name starts with cfg.Prefix_.
func dropPrefixed(t *testing.T, cfg qdrant.Config) {
	host, port, _ := net.SplitHostPort(cfg.Addr)
	p, _ := strconv.Atoi(port)
	client, err := qc.NewClient(&qc.Config{Host: host, Port: p, APIKey: cfg.APIKey, UseTLS: cfg.TLS, SkipCompatibilityCheck: true, PoolSize: 1})
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names, err := client.ListCollections(ctx)
	if err != nil {
		t.Errorf("cleanup: list collections: %v", err)
		return
	}
	for _, n := range names {
		if strings.HasPrefix(n, cfg.Prefix+"_") {
			if err := client.DeleteCollection(ctx, n); err != nil {
				t.Errorf("cleanup: drop %s: %v", n, err)
			}
		}
	}
}
