package corpus

import (
	"context"
	"slices"
	"sync"
)

// A query memo remembers the query vectors computed for one request, so
// that a text embedded again in the same request (an answer's corpus search
// and its graph search embed the same question under the same models, and a
// run may search the same text again) is embedded once. It lives in the
// request's context (WithQueryMemo) and goes with it: nothing is kept
// across requests, so a question asked again costs the same as the first
// time.

// queryMemoKey is the context key of a request's *queryMemo.
type queryMemoKey struct{}

// memoKey is a memoised query: the embedder by its Name (the same name
// makes the same vectors, see Embedder) and the text.
type memoKey struct{ embedder, text string }

// memoEntry is one query's vector, ready when done is closed; vec is nil
// when its computation failed, in which case a waiter computes it itself.
type memoEntry struct {
	done chan struct{}
	vec  []float32
}

// queryMemo is a request's memoised query vectors.
type queryMemo struct {
	mu sync.Mutex
	m  map[memoKey]*memoEntry
}

// WithQueryMemo returns ctx with a query memo for one request: from then on
// EmbedQueries embeds each distinct (embedder, query) once under ctx and
// the contexts derived from it, concurrent callers waiting for the first.
// A ctx that already carries one is returned as it is.
func WithQueryMemo(ctx context.Context) context.Context {
	if _, ok := ctx.Value(queryMemoKey{}).(*queryMemo); ok {
		return ctx
	}
	return context.WithValue(ctx, queryMemoKey{}, &queryMemo{m: map[memoKey]*memoEntry{}})
}

// embedOne embeds query under emb through memo: computed by the first
// caller, waited for by the others. Each caller gets its own copy of the
// vector. An embedder that does not return one vector is answered as it
// is, and nothing is remembered.
func (memo *queryMemo) embedOne(ctx context.Context, emb Embedder, query string) ([][]float32, error) {
	name, err := EmbedName(ctx, emb)
	if err != nil {
		return nil, err
	}
	k := memoKey{name, query}
	for {
		memo.mu.Lock()
		e, ok := memo.m[k]
		if !ok {
			e = &memoEntry{done: make(chan struct{})}
			memo.m[k] = e
			memo.mu.Unlock()
			return memo.compute(ctx, emb, query, k, e)
		}
		memo.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.vec != nil {
			return [][]float32{slices.Clone(e.vec)}, nil
		}
		// The first caller failed (its own context, perhaps): try again.
	}
}

// compute embeds query for entry e of k, as its first caller. An
// embedder that panics leaves e forgotten, its waiters woken, as it would
// on an error: the panic goes on to the caller, and the others of the
// request do not wait for a vector that never comes.
func (memo *queryMemo) compute(ctx context.Context, emb Embedder, query string, k memoKey, e *memoEntry) ([][]float32, error) {
	settled := false
	defer func() {
		if !settled {
			memo.forget(k, e)
		}
	}()
	vs, err := embedQueries(ctx, emb, []string{query})
	if err != nil || len(vs) != 1 {
		return vs, err // forgotten by the deferred func
	}
	e.vec = vs[0]
	settled = true
	close(e.done)
	return [][]float32{slices.Clone(e.vec)}, nil
}

// forget removes a failed entry, so that the next caller computes it again,
// and wakes its waiters, which then try again.
func (memo *queryMemo) forget(k memoKey, e *memoEntry) {
	memo.mu.Lock()
	delete(memo.m, k)
	memo.mu.Unlock()
	close(e.done)
}
