package qdrant

import (
	"context"
	"strings"
	"unicode/utf8"

	qc "github.com/qdrant/go-client/qdrant"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// MaxQueryText is the longest search text accepted, in bytes.
const MaxQueryText = 16 << 10

// maxOverfetch caps how many points a search with a non-'/'-terminated URL
// prefix pulls from Qdrant while filtering client-side.
const maxOverfetch = 4096

// Search runs q against the Qdrant collection of q.Collection:
//
//   - dense: nearest neighbours of q.Vector on the "dense" vector (cosine);
//   - keyword: the BM25 sparse vector of q.Text on "bm25" (Qdrant applies IDF);
//   - hybrid: one Query API call with both as prefetches, fused by RRF.
//
// Every query filters on the "collection" payload. A URLPrefix that ends in
// '/' (the usual "this part of the site") is an exact match on the
// "url_prefixes" payload array, so Qdrant filters before ranking. Any other
// URLPrefix is matched in two steps: Qdrant filters on its longest prefix
// ending in '/', and the adapter drops hits whose document URL does not start
// with the whole prefix, fetching more (up to 4096 points) until it has k.
// In hybrid mode those dropped points still took part in the fusion, so
// ranks can differ slightly from filtering first.
//
// Errors: EINVALID for a bad query (empty collection, k out of 1..MaxK,
// unknown mode, vector of the wrong dimension, missing or oversized text).
// A collection that does not exist gives no hits.
func (ix *Index) Search(ctx context.Context, q corpus.Query) ([]corpus.Hit, error) {
	mode, err := ix.checkQuery(q)
	if err != nil {
		return nil, err
	}
	var sparseIdx []uint32
	var sparseVal []float32
	if mode != corpus.ModeDense {
		sparseIdx, sparseVal = ix.cfg.BM25.Query(q.Text)
		if mode == corpus.ModeKeyword && len(sparseIdx) == 0 {
			return nil, nil // only stop words: nothing can match
		}
	}

	filter := &qc.Filter{Must: []*qc.Condition{qc.NewMatchKeyword(fieldCollection, q.Collection)}}
	serverPrefix := q.URLPrefix
	if i := strings.LastIndexByte(serverPrefix, '/'); i >= 0 {
		serverPrefix = serverPrefix[:i+1]
	} else {
		serverPrefix = ""
	}
	if serverPrefix != "" {
		filter.Must = append(filter.Must, qc.NewMatchKeyword(fieldPrefixes, serverPrefix))
	}
	clientPrefix := q.URLPrefix != "" && q.URLPrefix != serverPrefix

	limit := q.K
	if clientPrefix {
		limit = min(4*q.K, maxOverfetch)
	}
	name := ix.CollectionName(q.Collection)
	for {
		req := ix.queryRequest(name, mode, q, sparseIdx, sparseVal, filter, limit)
		cctx, cancel := ix.callCtx(ctx)
		points, err := ix.client.Query(cctx, req)
		cancel()
		if err != nil {
			err = mapErr(ctx, err, "query")
			if kgagent.ErrorCode(err) == kgagent.ENOTFOUND {
				ix.forget(name)
				return nil, nil
			}
			return nil, err
		}
		hits := make([]corpus.Hit, 0, min(len(points), q.K))
		for _, p := range points {
			h := hitFrom(p)
			if clientPrefix && !strings.HasPrefix(h.DocURL, q.URLPrefix) {
				continue
			}
			hits = append(hits, h)
			if len(hits) == q.K {
				break
			}
		}
		if len(hits) == q.K || !clientPrefix || len(points) < limit || limit >= maxOverfetch {
			return hits, nil
		}
		limit = min(limit*4, maxOverfetch)
	}
}

func (ix *Index) checkQuery(q corpus.Query) (corpus.Mode, error) {
	if err := checkName("collection", q.Collection); err != nil {
		return "", err
	}
	if q.K <= 0 || q.K > MaxK {
		return "", kgagent.Errorf(kgagent.EINVALID, "k must be between 1 and %d, got %d", MaxK, q.K)
	}
	mode := q.Mode
	switch mode {
	case corpus.ModeDense, corpus.ModeKeyword, corpus.ModeHybrid:
	default:
		return "", kgagent.Errorf(kgagent.EINVALID, "unknown search mode %q", q.Mode)
	}
	if mode != corpus.ModeKeyword {
		if len(q.Vector) != ix.dim {
			return "", kgagent.Errorf(kgagent.EINVALID, "query vector has %d dimensions, want %d", len(q.Vector), ix.dim)
		}
		if !finite(q.Vector) {
			return "", kgagent.Errorf(kgagent.EINVALID, "query vector holds NaN or infinity")
		}
	}
	if mode != corpus.ModeDense {
		if strings.TrimSpace(q.Text) == "" {
			return "", kgagent.Errorf(kgagent.EINVALID, "query text is empty")
		}
		if len(q.Text) > MaxQueryText {
			return "", kgagent.Errorf(kgagent.EINVALID, "query text is longer than %d bytes", MaxQueryText)
		}
		if !utf8.ValidString(q.Text) {
			return "", kgagent.Errorf(kgagent.EINVALID, "query text is not valid UTF-8")
		}
	}
	if len(q.URLPrefix) > maxURLLen {
		return "", kgagent.Errorf(kgagent.EINVALID, "URL prefix is longer than %d bytes", maxURLLen)
	}
	return mode, nil
}

func (ix *Index) queryRequest(name string, mode corpus.Mode, q corpus.Query, sIdx []uint32, sVal []float32, filter *qc.Filter, limit int) *qc.QueryPoints {
	var params *qc.SearchParams
	if ix.cfg.SearchEf > 0 {
		params = &qc.SearchParams{HnswEf: qc.PtrOf(uint64(ix.cfg.SearchEf))}
	}
	req := &qc.QueryPoints{
		CollectionName: name,
		Filter:         filter,
		Limit:          qc.PtrOf(uint64(limit)),
		WithPayload:    qc.NewWithPayloadExclude(fieldPrefixes, fieldGen),
	}
	switch mode {
	case corpus.ModeDense:
		req.Query = qc.NewQueryDense(q.Vector)
		req.Using = qc.PtrOf(DenseVector)
		req.Params = params
	case corpus.ModeKeyword:
		req.Query = qc.NewQuerySparse(sIdx, sVal)
		req.Using = qc.PtrOf(SparseVector)
	default:
		depth := ix.cfg.Prefetch
		if depth <= 0 {
			depth = max(4*q.K, 40)
		}
		depth = max(depth, limit)
		req.Prefetch = []*qc.PrefetchQuery{{
			Query:  qc.NewQueryDense(q.Vector),
			Using:  qc.PtrOf(DenseVector),
			Filter: filter,
			Params: params,
			Limit:  qc.PtrOf(uint64(depth)),
		}}
		if len(sIdx) > 0 {
			req.Prefetch = append(req.Prefetch, &qc.PrefetchQuery{
				Query:  qc.NewQuerySparse(sIdx, sVal),
				Using:  qc.PtrOf(SparseVector),
				Filter: filter,
				Limit:  qc.PtrOf(uint64(depth)),
			})
		}
		// Qdrant's RRF adds 1/(k + position) with positions counted from 0;
		// ours is 1/(k + rank) with ranks counted from 1, so send k+1.
		req.Query = qc.NewQueryRRF(&qc.Rrf{K: qc.PtrOf(uint32(ix.cfg.RRFK + 1))})
	}
	return req
}

// hitFrom rebuilds a chunk from a scored point's payload.
func hitFrom(p *qc.ScoredPoint) corpus.Hit {
	return corpus.Hit{Chunk: chunkFrom(p.GetPayload()), Score: float64(p.GetScore())}
}

// chunkFrom rebuilds a chunk from a point's payload.
func chunkFrom(pl map[string]*qc.Value) kgagent.Chunk {
	str := func(k string) string { return pl[k].GetStringValue() }
	var heading []string
	for _, v := range pl[fieldHeading].GetListValue().GetValues() {
		heading = append(heading, v.GetStringValue())
	}
	return kgagent.Chunk{
		ID:          str(fieldChunkID),
		Collection:  str(fieldCollection),
		DocURL:      str(fieldDocURL),
		URL:         str(fieldURL),
		Title:       str(fieldTitle),
		HeadingPath: heading,
		Anchor:      str(fieldAnchor),
		Ordinal:     int(pl[fieldOrdinal].GetIntegerValue()),
		Text:        str(fieldText),
		Hash:        str(fieldHash),
	}
}
