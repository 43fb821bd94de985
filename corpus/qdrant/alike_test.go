package qdrant_test

import (
	"context"
	"io/fs"
	"mime"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/corpustest"
	"github.com/kgagent/kgagent/corpus/qdrant"
	"github.com/kgagent/kgagent/corpus/qdrant/qdranttest"
	corpussqlite "github.com/kgagent/kgagent/corpus/sqlite"
	"github.com/kgagent/kgagent/crawler"
)

// siteChunks extracts and chunks the HTML pages of the sample docs site.
func siteChunks(t *testing.T) map[string][]kgagent.Chunk {
	t.Helper()
	root := filepath.Join("..", "..", "testdata", "site")
	out := map[string][]kgagent.Chunk{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".html") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		url := "https://lumen.example/" + filepath.ToSlash(rel)
		doc, err := crawler.Extract(url, mime.TypeByExtension(".html"), b)
		if err != nil {
			return nil // pages the crawler refuses are not part of the corpus
		}
		doc.Collection = "site"
		if cs := corpus.ChunkDocument(doc, corpus.ChunkConfig{}); len(cs) > 0 {
			out[url] = cs
		}
		return nil
	})
	if err != nil || len(out) < 10 {
		t.Fatalf("sample site: %d pages, %v", len(out), err)
	}
	return out
}

// rankings loads the chunks into idx and returns the keyword top-5 chunk
// ids of each query.
func rankings(t *testing.T, idx corpus.Index, docs map[string][]kgagent.Chunk, queries []string) [][]string {
	t.Helper()
	ctx := context.Background()
	for url, cs := range docs {
		texts := make([]string, len(cs))
		for i, c := range cs {
			texts[i] = corpus.IndexText(c)
		}
		vecs, _ := corpustest.Embedder.Embed(ctx, texts)
		if err := idx.ReplaceDocument(ctx, "site", url, cs, vecs); err != nil {
			t.Fatal(err)
		}
	}
	var out [][]string
	for _, q := range queries {
		hits, err := idx.Search(ctx, corpus.Query{Collection: "site", Text: q, K: 5, Mode: corpus.ModeKeyword})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range hits {
			ids = append(ids, h.ID)
		}
		out = append(out, ids)
	}
	return out
}

// TestKeywordRanksLikeTheEmbeddedIndex indexes the sample docs site in the
// embedded index and, through the adapter, in the Qdrant stand-in, asks
// every section heading of the site as a keyword query and compares the
// two top-5 lists. With the BM25F sparse vectors the top hit agrees on at
// least 90% of the queries; with the title and headings weighted like the
// body (plain BM25, as before) it agreed on fewer, which the test also
// measures, so the field weighting is what makes the difference.
// TestKeywordRanksLikeTheEmbeddedIndexRealServer does the same on a real
// Qdrant.
func TestKeywordRanksLikeTheEmbeddedIndex(t *testing.T) {
	checkKeywordRanks(t, func(t *testing.T) qdrant.Config {
		return qdrant.Config{Addr: startStandIn(t, qdranttest.Options{}).Addr()}
	})
}

// checkKeywordRanks compares the adapter's keyword rankings on a fresh
// server from fresh (stand-in or real) with the embedded index's.
func checkKeywordRanks(t *testing.T, fresh func(t *testing.T) qdrant.Config) {
	docs := siteChunks(t)
	seen := map[string]bool{}
	var queries []string
	for _, cs := range docs {
		for _, c := range cs {
			if q := corpus.HeadingText(c); q != "" && !seen[q] {
				seen[q] = true
				queries = append(queries, q)
			}
		}
	}
	slices.Sort(queries)
	emb, err := corpussqlite.Open(corpussqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	want := rankings(t, emb, docs, queries)

	agreement := func(p qdrant.BM25) (top1, overlap float64) {
		cfg := fresh(t)
		cfg.BM25 = p
		got := rankings(t, open(t, cfg), docs, queries)
		for i := range queries {
			if len(got[i]) > 0 && len(want[i]) > 0 && got[i][0] == want[i][0] {
				top1++
			}
			n := 0
			for _, id := range got[i] {
				if slices.Contains(want[i], id) {
					n++
				}
			}
			overlap += float64(n) / float64(max(len(want[i]), 1))
		}
		return top1 / float64(len(queries)), overlap / float64(len(queries))
	}
	top1, overlap := agreement(qdrant.BM25{})
	plainTop1, plainOverlap := agreement(qdrant.BM25{TitleWeight: 1, HeadingWeight: 1, BodyWeight: 1, K1: 1.2})
	t.Logf("%d heading queries over %d pages: top-1 agreement %.2f, top-5 overlap %.2f (BM25F); %.2f, %.2f with fields unweighted",
		len(queries), len(docs), top1, overlap, plainTop1, plainOverlap)
	if top1 < 0.9 || overlap < 0.8 {
		t.Errorf("Qdrant keyword ranking differs from the embedded index's: top-1 agreement %.2f (want >= 0.9), top-5 overlap %.2f (want >= 0.8)", top1, overlap)
	}
	if top1 <= plainTop1 {
		t.Errorf("field weighting does not bring the rankings closer: top-1 agreement %.2f with it, %.2f without", top1, plainTop1)
	}
}
