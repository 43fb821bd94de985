package qdrant_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/corpustest"
	"github.com/kgagent/kgagent/corpus/qdrant"
	"github.com/kgagent/kgagent/corpus/qdrant/qdranttest"
)

var words = strings.Fields("archive zip json thread lock socket cursor query encode decode parse mail header stream buffer codec path file process signal")

// BenchmarkSearchStandIn measures one Search through the adapter, go-client
// and a loopback gRPC round trip to the stand-in over 2,000 chunks. The
// stand-in scores by brute force, so this is the adapter's overhead plus an
// exact scan, not a figure for a real Qdrant.
func BenchmarkSearchStandIn(b *testing.B) {
	srv, err := qdranttest.Start(qdranttest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	ix, err := qdrant.New(ctx, qdrant.Config{Addr: srv.Addr()}, corpustest.Dim, corpustest.Embedder.Name())
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	for d := range 200 {
		url := fmt.Sprintf("https://ex.org/docs/p%03d", d)
		chunks := make([]kgagent.Chunk, 10)
		vecs := make([][]float32, 10)
		for i := range chunks {
			text := fmt.Sprintf("%s %s %s section %d", words[(d+i)%len(words)], words[(d*3+i)%len(words)], words[(d*7+i*5)%len(words)], i)
			chunks[i] = kgagent.Chunk{ID: fmt.Sprintf("%d-%d", d, i), Ordinal: i, Text: text, Title: url}
			vecs[i] = corpustest.Embedder.Vector(text)
		}
		if err := ix.ReplaceDocument(ctx, "docs", url, chunks, vecs); err != nil {
			b.Fatal(err)
		}
	}
	for _, mode := range []corpus.Mode{corpus.ModeDense, corpus.ModeKeyword, corpus.ModeHybrid} {
		b.Run(string(mode), func(b *testing.B) {
			q := corpus.Query{Collection: "docs", Text: "zip archive path", Vector: corpustest.Embedder.Vector("zip archive path"), K: 10, Mode: mode}
			for b.Loop() {
				if _, err := ix.Search(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBM25Document measures the client-side sparse vector of a ~1 kB chunk.
func BenchmarkBM25Document(b *testing.B) {
	text := strings.Repeat("The zipfile module provides tools to create, read, write, append, and list a ZIP file. ", 12)
	var p qdrant.BM25
	for b.Loop() {
		p.Document(text)
	}
}
