package corpus_test

import (
	"context"
	"fmt"

	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/sqlite"
)

// A corpus service over the embedded index with the built-in embedder:
// index a document, then search it.
func ExampleService() {
	ctx := context.Background()
	idx, _ := sqlite.Open(sqlite.Config{}) // in memory; set Path for a file
	defer idx.Close()
	svc, _ := corpus.NewService(corpus.ServiceConfig{Index: idx})

	doc := corpus.TextDocument("docs", "https://ex.org/zipfile", "zipfile — Work with ZIP archives",
		"The zipfile module reads and writes ZIP files.\n\n# ZipFile objects\nOpen a ZIP file for reading or writing.")
	chunks, _ := svc.IndexDocument(ctx, doc)
	fmt.Println(len(chunks), "chunks")

	hits, _ := svc.Search(ctx, corpus.SearchRequest{Query: "open a zip archive", Collection: "docs", K: 1})
	fmt.Println(hits[0].URL, hits[0].HeadingPath)
	// Output:
	// 2 chunks
	// https://ex.org/zipfile#zipfile-objects [ZipFile objects]
}

// SearchText searches an ad-hoc text, as fixie_query_embed does.
func ExampleSearchText() {
	text := "# Shipping\nOrders ship in two days.\n\n# Returns\nReturn items within 30 days for a refund."
	hits, _ := corpus.SearchText(context.Background(), nil, "FAQ", text, "refund", 1)
	fmt.Println(hits[0].Text)
	// Output:
	// Return items within 30 days for a refund.
}
