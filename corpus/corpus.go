// Package corpus turns crawled documents into searchable knowledge: chunking
// that follows the document, embedders, the Index interface that the embedded
// index and the Qdrant adapter implement, hybrid search with reciprocal rank
// fusion, and the embed store. Adapters live in subpackages named after their
// dependency; corpustest holds the conformance suite every Index passes.
package corpus

import (
	"context"

	"github.com/kgagent/kgagent"
)

// Mode selects how a search ranks chunks.
type Mode string

// Search modes.
const (
	ModeHybrid  Mode = "hybrid"  // dense and keyword fused with reciprocal rank fusion
	ModeDense   Mode = "dense"   // embedding similarity only
	ModeKeyword Mode = "keyword" // BM25 only
)

// Query is one search against an Index. Vector is used by dense and hybrid
// modes, Text by keyword and hybrid modes.
type Query struct {
	Collection string
	Vector     []float32
	Text       string
	K          int
	Mode       Mode
	URLPrefix  string // only chunks whose document URL starts with this
	// Semantic is the query's vector under SemanticModel: an index that
	// keeps that model's vector set (SemanticSearcher) adds a semantic
	// ranking of the chunks that have a vector to dense and hybrid
	// searches; others ignore it.
	Semantic      []float32
	SemanticModel string
}

// Hit is a chunk found by a search, with its score (higher is better).
type Hit struct {
	kgagent.Chunk
	Score float64 `json:"score"`
	// Semantic is the chunk's cosine similarity with the query under the
	// query's semantic model (Query.Semantic), 0 when it was not ranked
	// by one: evidence of meaning even without a shared word.
	Semantic float64 `json:"-"`

	// Memo, when set, is the memo of the chunk's text (TextMemo), shared
	// by every hit of the chunk an index hands out: the rules that read
	// only the text read it once per chunk rather than once per search.
	Memo *TextMemo `json:"-"`

	// digestOf is the passage's digest entries (digestEntries(Text, 1))
	// once digestRead: the digest rules read a hit's text once per search
	// (Hit.DigestEntries).
	digestOf   []DigestEntry
	digestRead bool
}

// Index stores chunks with their dense vectors and answers dense, keyword and
// hybrid searches within one collection. The embedded index (corpus/sqlite)
// and the Qdrant adapter (corpus/qdrant) implement it and pass corpustest.
//
// Errors: EINVALID for bad arguments, EUNAVAILABLE when the backend cannot be
// reached. Searching a collection that has no chunks returns no hits.
type Index interface {
	// ReplaceDocument atomically replaces every chunk of docURL in collection
	// with chunks (vectors[i] belongs to chunks[i]). An empty chunks deletes.
	ReplaceDocument(ctx context.Context, collection, docURL string, chunks []kgagent.Chunk, vectors [][]float32) error
	// DeleteDocument removes every chunk of docURL in collection.
	DeleteDocument(ctx context.Context, collection, docURL string) error
	// DeleteCollection removes every chunk of collection.
	DeleteCollection(ctx context.Context, collection string) error
	// Search returns at most q.K hits, best first.
	Search(ctx context.Context, q Query) ([]Hit, error)
}

// Embedder turns texts into dense vectors of a fixed dimension.
type Embedder interface {
	// Embed returns one vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Dimension is the length of every vector Embed returns.
	Dimension() int
	// Name identifies the embedder and its settings (e.g. "lexical-v1-384"), so
	// an index built with one embedder is never searched with another.
	Name() string
}

// ContextNamer is an Embedder whose Name may wait for something (serve's
// semantic model, loaded on first use): NameContext is Name under ctx,
// with ctx's error when ctx ends first. Searches ask it (EmbedName), so
// that a search with a deadline is never held past it by the wait.
type ContextNamer interface {
	NameContext(ctx context.Context) (string, error)
}

// EmbedName is emb's Name, asked under ctx when emb is a ContextNamer.
func EmbedName(ctx context.Context, emb Embedder) (string, error) {
	if n, ok := emb.(ContextNamer); ok {
		return n.NameContext(ctx)
	}
	return emb.Name(), nil
}

// QueryEmbedder is an Embedder for an asymmetric model, which embeds search
// queries differently from documents (E5's "query: " prefix, an input_type).
type QueryEmbedder interface {
	// EmbedQuery returns one vector per search query, in order.
	EmbedQuery(ctx context.Context, queries []string) ([][]float32, error)
}

// EmbedQueries embeds search queries with emb's EmbedQuery when it has one,
// else with Embed. Under a context with a query memo (WithQueryMemo) a
// single query is embedded once per request and embedder; the vector
// returned is the caller's own either way.
func EmbedQueries(ctx context.Context, emb Embedder, queries []string) ([][]float32, error) {
	if memo, ok := ctx.Value(queryMemoKey{}).(*queryMemo); ok && len(queries) == 1 {
		return memo.embedOne(ctx, emb, queries[0])
	}
	return embedQueries(ctx, emb, queries)
}

// embedQueries is EmbedQueries without the memo.
func embedQueries(ctx context.Context, emb Embedder, queries []string) ([][]float32, error) {
	if q, ok := emb.(QueryEmbedder); ok {
		return q.EmbedQuery(ctx, queries)
	}
	return emb.Embed(ctx, queries)
}

// SearchRequest is a search as the API and the agent ask for it.
type SearchRequest struct {
	Query      string `json:"query"`
	Collection string `json:"collection"`
	K          int    `json:"k"`
	Mode       Mode   `json:"mode"`
	URLPrefix  string `json:"url_prefix,omitempty"`
}

// CollectionInfo describes one collection of the index.
type CollectionInfo struct {
	Name      string `json:"name"`
	Documents int    `json:"documents"`
	Chunks    int    `json:"chunks"`
}

// DocumentInfo describes one indexed document (page) of a collection.
type DocumentInfo struct {
	URL    string `json:"url"`
	Title  string `json:"title"`
	Chunks int    `json:"chunks"`
}

// DocumentReader is implemented by indexes that can list a collection's
// documents and return a document's stored chunks (the embedded index); the
// MCP resources read through it.
type DocumentReader interface {
	// Documents lists the documents of collection ordered by URL, those
	// after the URL after (empty: from the start), at most limit of them.
	Documents(ctx context.Context, collection, after string, limit int) ([]DocumentInfo, error)
	// DocumentChunks returns every chunk of docURL in collection in
	// document order; none when the document is not indexed.
	DocumentChunks(ctx context.Context, collection, docURL string) ([]kgagent.Chunk, error)
}
