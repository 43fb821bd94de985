package qdrant_test

import (
	"context"
	"fmt"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/qdrant"
	"github.com/kgagent/kgagent/corpus/qdrant/qdranttest"
)

// Index one document and search it in hybrid mode. The example talks to the
// in-memory stand-in; against a real server only the Config changes, e.g.
// qdrant.ConfigFromURL("https://xyz.cloud.qdrant.io") plus an APIKey.
func ExampleNew() {
	srv, err := qdranttest.Start(qdranttest.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	ctx := context.Background()
	emb := corpus.NewLexical(corpus.LexicalConfig{Dim: 64})
	ix, err := qdrant.New(ctx, qdrant.Config{Addr: srv.Addr()}, emb.Dimension(), emb.Name())
	if err != nil {
		panic(err)
	}
	defer ix.Close()

	url := "https://docs.example.org/zipfile"
	chunks := corpus.ChunkText("docs", url, "zipfile", "The zipfile module reads and writes ZIP archives.", corpus.ChunkConfig{})
	texts := make([]string, len(chunks))
	for i, c := range chunks {
		texts[i] = corpus.IndexText(c)
	}
	vectors, _ := emb.Embed(ctx, texts)
	if err := ix.ReplaceDocument(ctx, "docs", url, chunks, vectors); err != nil {
		panic(err)
	}

	q := "read a ZIP archive"
	hits, err := ix.Search(ctx, corpus.Query{Collection: "docs", Text: q, Vector: emb.Vector(q), K: 3, Mode: corpus.ModeHybrid})
	if err != nil {
		panic(err)
	}
	for _, h := range hits {
		fmt.Println(h.URL, h.Title)
	}
	_, err = ix.Search(ctx, corpus.Query{Collection: "docs", Text: q, K: 0})
	fmt.Println(kgagent.ErrorCode(err))
	// Output:
	// https://docs.example.org/zipfile zipfile
	// INVALID_ARGUMENT
}
