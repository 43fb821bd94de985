package qdrant

import (
	"context"
	"sort"

	qc "github.com/qdrant/go-client/qdrant"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

var _ corpus.DocumentReader = (*Index)(nil)

// scrollPage is how many points one Scroll call reads (a variable for the
// paging test).
var scrollPage uint32 = 256

// Documents lists the documents of collection ordered by URL, those after
// the URL after, at most limit: an exact facet over doc_url, then one
// one-point scroll per listed document for its title.
func (ix *Index) Documents(ctx context.Context, collection, after string, limit int) ([]corpus.DocumentInfo, error) {
	name := ix.CollectionName(collection)
	filter := &qc.Filter{Must: []*qc.Condition{qc.NewMatchKeyword(fieldCollection, collection)}}
	cctx, cancel := ix.callCtx(ctx)
	chunks, err := ix.client.Count(cctx, &qc.CountPoints{CollectionName: name, Filter: filter, Exact: qc.PtrOf(true)})
	cancel()
	if kgagent.ErrorCode(mapErr(ctx, err, "count points")) == kgagent.ENOTFOUND {
		return []corpus.DocumentInfo{}, nil
	}
	if err != nil || chunks == 0 {
		return []corpus.DocumentInfo{}, mapErr(ctx, err, "count points")
	}
	cctx, cancel = ix.callCtx(ctx)
	hits, err := ix.client.Facet(cctx, &qc.FacetCounts{CollectionName: name, Key: fieldDocURL, Filter: filter, Limit: qc.PtrOf(chunks), Exact: qc.PtrOf(true)})
	cancel()
	if err != nil {
		return nil, mapErr(ctx, err, "list documents")
	}
	out := []corpus.DocumentInfo{}
	for _, h := range hits {
		if u := h.GetValue().GetStringValue(); u > after {
			out = append(out, corpus.DocumentInfo{URL: u, Chunks: int(h.GetCount())})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URL < out[j].URL })
	if len(out) > limit {
		out = out[:limit]
	}
	for i := range out {
		pts, _, err := ix.scroll(ctx, name, docFilter(collection, out[i].URL), nil, 1)
		if err != nil {
			return nil, err
		}
		if len(pts) > 0 {
			out[i].Title = pts[0].GetPayload()[fieldTitle].GetStringValue()
		}
	}
	return out, nil
}

// DocumentChunks returns the chunks of docURL in collection by ordinal
// (one per ordinal while a replacement of the document is in flight).
func (ix *Index) DocumentChunks(ctx context.Context, collection, docURL string) ([]kgagent.Chunk, error) {
	name := ix.CollectionName(collection)
	var out []kgagent.Chunk
	seen := map[int]bool{}
	var offset *qc.PointId
	for {
		pts, next, err := ix.scroll(ctx, name, docFilter(collection, docURL), offset, scrollPage)
		if kgagent.ErrorCode(err) == kgagent.ENOTFOUND {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		for _, p := range pts {
			c := chunkFrom(p.GetPayload())
			if !seen[c.Ordinal] {
				seen[c.Ordinal] = true
				out = append(out, c)
			}
		}
		if next == nil {
			break
		}
		offset = next
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ordinal < out[j].Ordinal })
	return out, nil
}

func (ix *Index) scroll(ctx context.Context, name string, filter *qc.Filter, offset *qc.PointId, limit uint32) ([]*qc.RetrievedPoint, *qc.PointId, error) {
	cctx, cancel := ix.callCtx(ctx)
	defer cancel()
	pts, next, err := ix.client.ScrollAndOffset(cctx, &qc.ScrollPoints{
		CollectionName: name, Filter: filter, Offset: offset, Limit: qc.PtrOf(limit), WithPayload: qc.NewWithPayload(true),
	})
	return pts, next, mapErr(ctx, err, "scroll points")
}
