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

// realConfig returns the Config of the real Qdrant named by QDRANT_URL (and
// QDRANT_API_KEY), or skips the test when QDRANT_URL is not set.
func realConfig(t *testing.T) qdrant.Config {
	t.Helper()
	raw := os.Getenv("QDRANT_URL")
	if raw == "" {
		t.Skip("QDRANT_URL is not set: no real Qdrant to test against (set QDRANT_URL=host:6334 and optionally QDRANT_API_KEY)")
	}
	cfg, err := qdrant.ConfigFromURL(raw)
	if err != nil {
		t.Fatalf("QDRANT_URL: %v", err)
	}
	cfg.APIKey = os.Getenv("QDRANT_API_KEY")
	return cfg
}

// scratch gives a test its own collection-name prefix on the real server and
// drops everything under it afterwards.
func scratch(t *testing.T, cfg qdrant.Config) qdrant.Config {
	cfg.Prefix = "kgtest" + randomHex(4)
	t.Cleanup(func() { dropPrefixed(t, cfg) })
	return cfg
}

// TestConformanceRealServer runs the conformance suite, and then the
// adapter's own checks that need no stand-in hooks (hybrid scores are RRF
// with k=60, URL prefixes with and without a trailing '/', collection
// listing and counts), against a real Qdrant when QDRANT_URL names its gRPC
// endpoint (host:port, e.g. localhost:6334; an https:// URL turns TLS on),
// with QDRANT_API_KEY when it needs one. Each part works under its own
// random collection-name prefix and drops its collections afterwards.
func TestConformanceRealServer(t *testing.T) {
	cfg := realConfig(t)
	corpustest.Run(t, func(t *testing.T) corpus.Index {
		return open(t, scratch(t, cfg))
	})
	t.Run("AdapterHybridScoresAreRRF", func(t *testing.T) { checkHybridScores(t, open(t, scratch(t, cfg))) })
	t.Run("AdapterURLPrefix", func(t *testing.T) { checkURLPrefix(t, open(t, scratch(t, cfg))) })
	t.Run("AdapterCollections", func(t *testing.T) {
		c := scratch(t, cfg)
		checkCollections(t, c, rawFor(t, c))
	})
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// rawFor is a plain go-client for cfg's server, closed after the test.
func rawFor(t *testing.T, cfg qdrant.Config) *qc.Client {
	t.Helper()
	host, port, _ := net.SplitHostPort(cfg.Addr)
	p, _ := strconv.Atoi(port)
	client, err := qc.NewClient(&qc.Config{Host: host, Port: p, APIKey: cfg.APIKey, UseTLS: cfg.TLS, SkipCompatibilityCheck: true, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}

// dropPrefixed drops every collection whose name starts with cfg.Prefix_.
func dropPrefixed(t *testing.T, cfg qdrant.Config) {
	client := rawFor(t, cfg)
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
