package qdrant_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	qc "github.com/qdrant/go-client/qdrant"

	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/corpustest"
	"github.com/kgagent/kgagent/corpus/qdrant"
	graphsqlite "github.com/kgagent/kgagent/graphrag/sqlite"
	"github.com/kgagent/kgagent/knowledge/knowledgetest"
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

// TestKnowledgeConformanceRealServer is TestKnowledgeConformanceStandIn
// on a real Qdrant: deleting a collection through the knowledge service
// leaves no row in any store.
func TestKnowledgeConformanceRealServer(t *testing.T) {
	cfg := realConfig(t)
	knowledgetest.Run(t, func(t *testing.T) knowledgetest.Stores {
		g, err := graphsqlite.Open(filepath.Join(t.TempDir(), "graph.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		return knowledgetest.Stores{Index: open(t, scratch(t, cfg)), Graph: g}
	})
}

// TestKeywordRanksLikeTheEmbeddedIndexRealServer: the BM25F keyword
// ranking of a real Qdrant agrees with the embedded index's (measured on
// Qdrant 1.17.1: top-1 agreement 0.97).
func TestKeywordRanksLikeTheEmbeddedIndexRealServer(t *testing.T) {
	cfg := realConfig(t)
	checkKeywordRanks(t, func(t *testing.T) qdrant.Config { return scratch(t, cfg) })
}

// TestAPIKeyRealServer: a real Qdrant run with QDRANT_API_KEY refuses a
// wrong key and no key in New. Skipped when QDRANT_API_KEY is not set.
func TestAPIKeyRealServer(t *testing.T) {
	cfg := realConfig(t)
	if cfg.APIKey == "" {
		t.Skip("QDRANT_API_KEY is not set: the server takes any key")
	}
	for _, key := range []string{"wrong", ""} {
		bad := cfg
		bad.APIKey = key
		checkKeyRefused(t, bad)
	}
	ix := open(t, scratch(t, cfg))
	put(t, ix, "docs", "https://ex.org/a", "alpacas", 2)
	if hits, err := ix.Search(context.Background(), hybrid("alpacas", 5)); err != nil || len(hits) != 2 {
		t.Errorf("search with the right key: %d hits, %v", len(hits), err)
	}
}

// TestNewOnRESTPortRealServer: a real Qdrant's REST port (QDRANT_REST_ADDR,
// else the gRPC port minus one, 6333 beside 6334) is named "not a gRPC
// endpoint".
func TestNewOnRESTPortRealServer(t *testing.T) {
	cfg := realConfig(t)
	rest := os.Getenv("QDRANT_REST_ADDR")
	if rest == "" {
		host, port, err := net.SplitHostPort(cfg.Addr)
		p, err2 := strconv.Atoi(port)
		if err != nil || err2 != nil {
			t.Fatalf("QDRANT_URL %q: no port to derive the REST port from; set QDRANT_REST_ADDR", cfg.Addr)
		}
		rest = net.JoinHostPort(host, strconv.Itoa(p-1))
	}
	cfg.Addr = rest
	checkNotGRPC(t, cfg)
}

// TestCollectionSchemaRealServer is TestCollectionSchema's check of the
// collections, vectors, payload indexes and HNSW settings on a real Qdrant.
func TestCollectionSchemaRealServer(t *testing.T) {
	cfg := realConfig(t)
	t.Run("defaults", func(t *testing.T) {
		c := scratch(t, cfg)
		checkSchemaOf(t, c, rawFor(t, c), nil, 16, 100, false)
	})
	t.Run("tuned", func(t *testing.T) {
		c := scratch(t, cfg)
		c.HNSWM, c.HNSWEfConstruct, c.ScalarQuantization = 32, 256, true
		checkSchemaOf(t, c, rawFor(t, c), nil, 32, 256, true)
	})
}

// TestDocumentChunksPagingRealServer reads a document back through Scroll
// pages of 2 points from a real Qdrant.
func TestDocumentChunksPagingRealServer(t *testing.T) {
	cfg := realConfig(t)
	checkPaging(t, open(t, scratch(t, cfg)), nil)
}

// TestDeleteDuringCreationRealServer: deletes sent while a write creates
// the collection succeed on a real Qdrant (before the fix: 17 INTERNAL
// errors in 10 rounds of 4 on Qdrant 1.17.1).
func TestDeleteDuringCreationRealServer(t *testing.T) {
	cfg := scratch(t, realConfig(t))
	checkDeleteDuringCreation(t, open(t, cfg), rawFor(t, cfg), 10)
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
