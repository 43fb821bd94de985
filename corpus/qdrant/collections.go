package qdrant

import (
	"context"
	"sort"
	"strings"

	qc "github.com/qdrant/go-client/qdrant"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// Metadata keys stored on every Qdrant collection this package creates
// (collection metadata needs Qdrant ≥ 1.16, like the parametrised RRF).
const (
	metaCollection = "kgagent_collection"
	metaEmbedder   = "kgagent_embedder"
)

var (
	_ corpus.CollectionLister  = (*Index)(nil)
	_ corpus.CollectionChecker = (*Index)(nil)
)

// HasCollection reports whether collection has a Qdrant collection for this
// index's embedder, i.e. was written to and not dropped since.
func (ix *Index) HasCollection(ctx context.Context, collection string) (bool, error) {
	if err := checkName("collection", collection); err != nil {
		return false, err
	}
	name := ix.CollectionName(collection)
	ix.mu.Lock()
	known := ix.ready[name]
	ix.mu.Unlock()
	if known {
		return true, nil
	}
	return ix.exists(ctx, name)
}

// Collections lists the kgagent collections this index's embedder has in
// Qdrant, sorted by name, with their document and chunk counts (exact
// counts; the document count is a facet over the doc_url index).
func (ix *Index) Collections(ctx context.Context) ([]corpus.CollectionInfo, error) {
	cctx, cancel := ix.callCtx(ctx)
	names, err := ix.client.ListCollections(cctx)
	cancel()
	if err != nil {
		return nil, mapErr(ctx, err, "list collections")
	}
	out := []corpus.CollectionInfo{}
	for _, name := range names {
		if !strings.HasPrefix(name, ix.cfg.Prefix+"_") {
			continue
		}
		info, err := ix.collectionInfo(ctx, name)
		if kgagent.ErrorCode(err) == kgagent.ENOTFOUND {
			continue // dropped while we were listing
		}
		if err != nil {
			return nil, err
		}
		if info != nil {
			out = append(out, *info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// collectionInfo counts one Qdrant collection, or returns nil when it is not
// one of ours for this embedder.
func (ix *Index) collectionInfo(ctx context.Context, name string) (*corpus.CollectionInfo, error) {
	cctx, cancel := ix.callCtx(ctx)
	info, err := ix.client.GetCollectionInfo(cctx, name)
	cancel()
	if err != nil {
		return nil, mapErr(ctx, err, "get collection")
	}
	meta := info.GetConfig().GetMetadata()
	collection := meta[metaCollection].GetStringValue()
	if meta[metaEmbedder].GetStringValue() != ix.embedder || collection == "" || ix.CollectionName(collection) != name {
		return nil, nil
	}
	filter := &qc.Filter{Must: []*qc.Condition{qc.NewMatchKeyword(fieldCollection, collection)}}
	cctx, cancel = ix.callCtx(ctx)
	chunks, err := ix.client.Count(cctx, &qc.CountPoints{CollectionName: name, Filter: filter, Exact: qc.PtrOf(true)})
	cancel()
	if err != nil {
		return nil, mapErr(ctx, err, "count points")
	}
	docs := 0
	if chunks > 0 {
		cctx, cancel = ix.callCtx(ctx)
		hits, err := ix.client.Facet(cctx, &qc.FacetCounts{CollectionName: name, Key: fieldDocURL, Filter: filter, Limit: qc.PtrOf(chunks), Exact: qc.PtrOf(true)})
		cancel()
		if err != nil {
			return nil, mapErr(ctx, err, "count documents")
		}
		docs = len(hits)
	}
	return &corpus.CollectionInfo{Name: collection, Documents: docs, Chunks: int(chunks)}, nil
}
