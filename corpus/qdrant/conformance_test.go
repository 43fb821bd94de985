package qdrant_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/corpustest"
	"github.com/kgagent/kgagent/corpus/qdrant"
	"github.com/kgagent/kgagent/corpus/qdrant/qdranttest"
	graphsqlite "github.com/kgagent/kgagent/graphrag/sqlite"
	"github.com/kgagent/kgagent/knowledge/knowledgetest"
)

// startStandIn serves a fresh stand-in for the test and stops it afterwards.
func startStandIn(t testing.TB, opts qdranttest.Options) *qdranttest.Server {
	t.Helper()
	srv, err := qdranttest.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// open connects an adapter to addr for the test and closes it afterwards.
func open(t testing.TB, cfg qdrant.Config) *qdrant.Index {
	t.Helper()
	ix, err := qdrant.New(context.Background(), cfg, corpustest.Dim, corpustest.Embedder.Name())
	if err != nil {
		t.Fatalf("qdrant.New(%s): %v", cfg.Addr, err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// TestConformanceStandIn runs the corpus.Index conformance suite against the
// adapter talking gRPC to the in-memory stand-in.
func TestConformanceStandIn(t *testing.T) {
	corpustest.Run(t, func(t *testing.T) corpus.Index {
		srv := startStandIn(t, qdranttest.Options{})
		return open(t, qdrant.Config{Addr: srv.Addr(), BatchSize: 3})
	})
}

// TestKnowledgeConformanceStandIn deletes a collection through the
// knowledge service with its index in the Qdrant stand-in and checks that
// no row is left in any store.
func TestKnowledgeConformanceStandIn(t *testing.T) {
	knowledgetest.Run(t, func(t *testing.T) knowledgetest.Stores {
		srv := startStandIn(t, qdranttest.Options{})
		g, err := graphsqlite.Open(filepath.Join(t.TempDir(), "graph.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		return knowledgetest.Stores{Index: open(t, qdrant.Config{Addr: srv.Addr()}), Graph: g}
	})
}
