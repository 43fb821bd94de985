package qdrant

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	qc "github.com/qdrant/go-client/qdrant"

	"github.com/kgagent/kgagent"
)

// Limits on names, checked before anything is sent.
const (
	maxNameLen = 256
	maxURLLen  = 8192
)

// ReplaceDocument makes chunks the only chunks of docURL in collection.
//
// Qdrant has no transaction spanning two calls, so "delete the old chunks,
// then insert the new ones" would leave the document missing (or half
// written) if the process died or Qdrant failed between the calls. Instead
// every call tags its points with a fresh generation id in the "gen" payload
// and runs in this order:
//
//  1. upsert the new points in batches (wait=true). Point ids derive from the
//     chunk ids, so a chunk that survives an edit overwrites its own point;
//  2. only when every batch is acknowledged, delete the points of docURL
//     whose generation is not the new one (wait=true).
//
// A failure in step 1 leaves the old version searchable, plus whichever new
// points were written; a failure in step 2 leaves old and new side by side.
// In both cases an error is returned and the next ReplaceDocument (or
// DeleteDocument) of the document removes every leftover, because it deletes
// all generations but its own. What Qdrant cannot give is isolation: a
// search that runs while step 1 is under way may see a mix of old and new
// chunks of this one document. Nothing of any other document is touched.
//
// Two concurrent replacements of one document would delete each other's
// generation, so writes to one document are serialised within this Index.
// Separate processes writing the same document at the same moment are not
// coordinated (kgagent's ingestion runs one writer per collection).
//
// Errors: EINVALID for bad arguments (nothing is written), EUNAVAILABLE when
// Qdrant cannot be reached, other codes as mapped from Qdrant's status.
func (ix *Index) ReplaceDocument(ctx context.Context, collection, docURL string, chunks []kgagent.Chunk, vectors [][]float32) error {
	if err := checkName("collection", collection); err != nil {
		return err
	}
	if err := checkDocURL(docURL); err != nil {
		return err
	}
	if len(chunks) != len(vectors) {
		return kgagent.Errorf(kgagent.EINVALID, "%d chunks but %d vectors", len(chunks), len(vectors))
	}
	if len(chunks) == 0 {
		return ix.DeleteDocument(ctx, collection, docURL)
	}
	gen := uuid.NewString()
	points, err := ix.points(collection, docURL, gen, chunks, vectors)
	if err != nil {
		return err
	}
	defer ix.docs.lock(collection + "\x00" + docURL)()
	return ix.writeRetry(ctx, collection, func(name string) error {
		for start := 0; start < len(points); start += ix.cfg.BatchSize {
			end := min(start+ix.cfg.BatchSize, len(points))
			// Point ids derive from chunk ids: sending a batch again is harmless.
			err := ix.retry(ctx, func() error {
				cctx, cancel := ix.callCtx(ctx)
				defer cancel()
				_, err := ix.client.Upsert(cctx, &qc.UpsertPoints{
					CollectionName: name,
					Wait:           qc.PtrOf(true),
					Points:         points[start:end],
				})
				return err
			})
			if err != nil {
				return mapErr(ctx, err, "upsert")
			}
		}
		filter := docFilter(collection, docURL)
		filter.MustNot = []*qc.Condition{qc.NewMatchKeyword(fieldGen, gen)}
		return ix.deleteWhere(ctx, name, filter)
	})
}

// DeleteDocument removes every chunk of docURL in collection. Deleting what
// is not there is not an error.
func (ix *Index) DeleteDocument(ctx context.Context, collection, docURL string) error {
	if err := checkName("collection", collection); err != nil {
		return err
	}
	if err := checkDocURL(docURL); err != nil {
		return err
	}
	defer ix.docs.lock(collection + "\x00" + docURL)()
	name := ix.CollectionName(collection)
	// A write of this collection may be creating it right now: deleting
	// from a collection whose shards are not active yet fails, so wait.
	ix.waitCreation(name)
	err := ix.deleteWhere(ctx, name, docFilter(collection, docURL))
	if kgagent.ErrorCode(err) == kgagent.ENOTFOUND {
		return nil // no collection, no chunks
	}
	return err
}

// DeleteCollection drops the Qdrant collection that holds collection's
// chunks for this embedder. Dropping what is not there is not an error.
func (ix *Index) DeleteCollection(ctx context.Context, collection string) error {
	if err := checkName("collection", collection); err != nil {
		return err
	}
	name := ix.CollectionName(collection)
	ix.forget(name)
	cctx, cancel := ix.callCtx(ctx)
	defer cancel()
	// The low-level call: the high-level one turns "there was nothing to
	// drop" (result false) into an error.
	_, err := ix.client.GetCollectionsClient().Delete(cctx, &qc.DeleteCollection{CollectionName: name})
	if err != nil {
		err = mapErr(ctx, err, "delete collection")
		if kgagent.ErrorCode(err) == kgagent.ENOTFOUND {
			return nil
		}
		return err
	}
	ix.forget(name) // a write racing with the drop may have marked it again
	return nil
}

// writeRetry ensures the collection exists and runs write; if write finds the
// collection gone (dropped by someone else since we created it), it creates
// it again and retries once.
func (ix *Index) writeRetry(ctx context.Context, collection string, write func(name string) error) error {
	for attempt := 0; ; attempt++ {
		name, err := ix.ensure(ctx, collection)
		if err != nil {
			return err
		}
		err = write(name)
		if kgagent.ErrorCode(err) != kgagent.ENOTFOUND || attempt > 0 {
			return err
		}
		ix.forget(name)
	}
}

// deleteWhere deletes the points of name that match filter, again while
// Qdrant answers "Please retry" (deleting by filter is idempotent).
func (ix *Index) deleteWhere(ctx context.Context, name string, filter *qc.Filter) error {
	err := ix.retry(ctx, func() error {
		cctx, cancel := ix.callCtx(ctx)
		defer cancel()
		_, err := ix.client.Delete(cctx, &qc.DeletePoints{
			CollectionName: name,
			Wait:           qc.PtrOf(true),
			Points:         qc.NewPointsSelectorFilter(filter),
		})
		return err
	})
	return mapErr(ctx, err, "delete points")
}

func docFilter(collection, docURL string) *qc.Filter {
	return &qc.Filter{Must: []*qc.Condition{
		qc.NewMatchKeyword(fieldCollection, collection),
		qc.NewMatchKeyword(fieldDocURL, docURL),
	}}
}

// points validates every chunk and vector and builds the points to upsert.
// Nothing is written when any of them is bad.
func (ix *Index) points(collection, docURL, gen string, chunks []kgagent.Chunk, vectors [][]float32) ([]*qc.PointStruct, error) {
	prefixes := urlPrefixes(docURL)
	prefixValues := make([]*qc.Value, len(prefixes))
	for i, p := range prefixes {
		prefixValues[i] = qc.NewValueString(p)
	}
	seen := make(map[string]int, len(chunks))
	out := make([]*qc.PointStruct, len(chunks))
	for i, c := range chunks {
		if c.Collection != "" && c.Collection != collection {
			return nil, kgagent.Errorf(kgagent.EINVALID, "chunk %d belongs to collection %q, not %q", i, c.Collection, collection)
		}
		if c.DocURL != "" && c.DocURL != docURL {
			return nil, kgagent.Errorf(kgagent.EINVALID, "chunk %d belongs to document %q, not %q", i, c.DocURL, docURL)
		}
		if !utf8.ValidString(c.Text) || !utf8.ValidString(c.Title) || !utf8.ValidString(c.URL) {
			return nil, kgagent.Errorf(kgagent.EINVALID, "chunk %d is not valid UTF-8", i)
		}
		if len(vectors[i]) != ix.dim {
			return nil, kgagent.Errorf(kgagent.EINVALID, "vector %d has %d dimensions, want %d", i, len(vectors[i]), ix.dim)
		}
		if !finite(vectors[i]) {
			return nil, kgagent.Errorf(kgagent.EINVALID, "vector %d holds NaN or infinity", i)
		}
		id := c.ID
		if id == "" {
			sum := sha256.Sum256([]byte(collection + "\x00" + docURL + "\x00" + strconv.Itoa(c.Ordinal)))
			id = hex.EncodeToString(sum[:16])
		}
		if j, dup := seen[id]; dup {
			return nil, kgagent.Errorf(kgagent.EINVALID, "chunks %d and %d share the id %q", j, i, id)
		}
		seen[id] = i
		url := c.URL
		if url == "" {
			url = docURL
		}
		heading := make([]*qc.Value, len(c.HeadingPath))
		for j, h := range c.HeadingPath {
			heading[j] = qc.NewValueString(h)
		}
		vecs := map[string]*qc.Vector{DenseVector: qc.NewVectorDense(vectors[i])}
		// A text without any indexable term has no sparse vector at all;
		// Qdrant allows a point to lack a named sparse vector.
		if idx, val := ix.cfg.BM25.Chunk(c); len(idx) > 0 {
			vecs[SparseVector] = qc.NewVectorSparse(idx, val)
		}
		out[i] = &qc.PointStruct{
			Id:      qc.NewID(pointID(collection, id)),
			Vectors: qc.NewVectorsMap(vecs),
			Payload: map[string]*qc.Value{
				fieldCollection: qc.NewValueString(collection),
				fieldDocURL:     qc.NewValueString(docURL),
				fieldURL:        qc.NewValueString(url),
				fieldTitle:      qc.NewValueString(c.Title),
				fieldHeading:    qc.NewValueFromList(heading...),
				fieldAnchor:     qc.NewValueString(c.Anchor),
				fieldOrdinal:    qc.NewValueInt(int64(c.Ordinal)),
				fieldText:       qc.NewValueString(c.Text),
				fieldHash:       qc.NewValueString(c.Hash),
				fieldChunkID:    qc.NewValueString(id),
				fieldGen:        qc.NewValueString(gen),
				fieldPrefixes:   qc.NewValueFromList(prefixValues...),
			},
		}
	}
	return out, nil
}

// urlPrefixes lists the prefixes of a document URL that end in '/', plus the
// URL itself. Qdrant has no prefix match on keyword payloads, so a URL prefix
// filter ending in '/' becomes an exact match on this array: a URL starts
// with p (p ending in '/') exactly when p is one of these.
func urlPrefixes(docURL string) []string {
	var out []string
	for i := 0; i < len(docURL); i++ {
		if docURL[i] == '/' {
			out = append(out, docURL[:i+1])
		}
	}
	if !strings.HasSuffix(docURL, "/") {
		out = append(out, docURL)
	}
	return out
}

func checkName(what, s string) error {
	if strings.TrimSpace(s) == "" {
		return kgagent.Errorf(kgagent.EINVALID, "%s name is empty", what)
	}
	if len(s) > maxNameLen {
		return kgagent.Errorf(kgagent.EINVALID, "%s name is longer than %d bytes", what, maxNameLen)
	}
	if !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return kgagent.Errorf(kgagent.EINVALID, "%s name holds invalid characters", what)
	}
	return nil
}

func checkDocURL(s string) error {
	if strings.TrimSpace(s) == "" {
		return kgagent.Errorf(kgagent.EINVALID, "document URL is empty")
	}
	if len(s) > maxURLLen || !utf8.ValidString(s) {
		return kgagent.Errorf(kgagent.EINVALID, "document URL is too long or not UTF-8")
	}
	return nil
}
