package gateway

import (
	"context"
	"net/http"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/graphrag"
)

// DocumentReader lists a collection's documents and reads a document's
// stored chunks (corpus.Service implements it over the embedded index).
// Errors: ENOTFOUND for a document that is not indexed, EUNAVAILABLE when
// the index cannot read documents.
type DocumentReader interface {
	Documents(ctx context.Context, collection, after string, limit int) ([]corpus.DocumentInfo, error)
	DocumentChunks(ctx context.Context, collection, docURL string) ([]kgagent.Chunk, error)
}

// Calls runs the gateway's services for transports that are not plain
// HTTP routes (gateway/mcp), through the same checks as REST: the caller's
// scope and collections, the request rules, the daily limit (charged per
// question, search and triples call, as REST charges them) and the request
// timeout. The caller is the principal of ctx: set by a route Mounted on the
// gateway, or by Authenticate; a ctx without one is an open caller (the
// local CLI and `kgagent mcp` on stdio).
type Calls struct{ s *Server }

// Calls returns the gateway's service calls.
func (s *Server) Calls() Calls { return Calls{s} }

// Mount serves h at path (every method, and the subtree when path ends in
// "/") behind the gateway's request id, CORS, panic recovery, logging,
// metrics and the credentials check for scope, exactly like a REST route.
// It must be called before the handler serves requests.
func (s *Server) Mount(path string, scope Scope, h http.Handler) {
	s.handle("", path, scope, h.ServeHTTP)
}

// Authenticate returns ctx carrying the principal that header's credentials
// (Authorization: Bearer, or X-API-Key) name, checked for scope. On an open
// server every caller is open. Errors: EUNAUTH, EFORBIDDEN.
func (c Calls) Authenticate(ctx context.Context, header http.Header, scope Scope) (context.Context, error) {
	token, _ := headerCredential(header)
	p, err := c.s.auth.authenticate(ctx, token, "mcp")
	if err != nil {
		return ctx, err
	}
	if !p.has(scope) {
		return ctx, kgagent.Errorf(kgagent.EFORBIDDEN, "this key lacks the %q scope", scope)
	}
	return context.WithValue(ctx, ctxPrincipal, p), nil
}

// Ask answers a question with the agent, streaming its events to emit.
// Errors: as POST /api/v1/agent.
func (c Calls) Ask(ctx context.Context, question, collection, agentName string, emit agent.Emit) (ans kgagent.Answer, err error) {
	p := principalFrom(ctx)
	id := newID()
	req := Request{Question: question, Collection: collection, Agent: agentName}
	err = c.s.call(ctx, p, admission{id: id, scope: ScopeAsk, service: ServiceAgent, req: &req, charge: true, slot: true}, func(ctx context.Context) error {
		ans, err = c.s.b.Asker.Ask(ctx, Call{ID: id, Request: req, Caller: c.s.callerOf(p)}.agentRequest(), emit)
		c.s.metrics.observeAnswer(ans)
		return err
	})
	return ans, err
}

// Search runs a search (k 0 means DefaultK, mode empty means hybrid).
// Errors: as POST /api/v1/search.
func (c Calls) Search(ctx context.Context, query, collection string, k int, mode corpus.Mode) (hits []corpus.Hit, err error) {
	req := Request{Question: query, Collection: collection, K: k, Mode: mode}
	err = c.s.call(ctx, principalFrom(ctx), admission{id: newID(), scope: ScopeAsk, service: ServiceSearch, req: &req, charge: true}, func(ctx context.Context) error {
		hits, err = c.s.search(ctx, req)
		return err
	})
	return hits, err
}

// Triples returns the triples matching the pattern (limit 0: the store's
// default). Errors: as GET /api/v1/triples.
func (c Calls) Triples(ctx context.Context, pat graphrag.Pattern) (ts []kgagent.Triple, err error) {
	req := Request{Collection: pat.Collection, S: pat.S, P: pat.P, O: pat.O, Limit: pat.Limit}
	err = c.s.call(ctx, principalFrom(ctx), admission{id: newID(), scope: ScopeAsk, service: ServiceTriples, req: &req, charge: true}, func(ctx context.Context) error {
		ts, err = c.s.findTriples(ctx, req)
		return err
	})
	return ts, err
}

// Ingest submits an ingestion job; it needs the ingest scope. Errors: as
// POST /api/v1/corpora.
func (c Calls) Ingest(ctx context.Context, spec crawler.Spec) (crawler.JobStatus, error) {
	if !principalFrom(ctx).has(ScopeIngest) {
		return crawler.JobStatus{}, kgagent.Errorf(kgagent.EFORBIDDEN, "this key lacks the %q scope", ScopeIngest)
	}
	if c.s.b.Jobs == nil {
		return crawler.JobStatus{}, unavailable("jobs")
	}
	return c.s.submit(ctx, spec)
}

// Job returns an ingestion job's status; it needs the ingest scope.
// Errors: ENOTFOUND for an unknown id or a job in a collection the caller
// may not use.
func (c Calls) Job(ctx context.Context, id string) (crawler.JobStatus, error) {
	if !principalFrom(ctx).has(ScopeIngest) {
		return crawler.JobStatus{}, kgagent.Errorf(kgagent.EFORBIDDEN, "this key lacks the %q scope", ScopeIngest)
	}
	if c.s.b.Jobs == nil {
		return crawler.JobStatus{}, unavailable("jobs")
	}
	return c.s.job(ctx, id)
}

// Collections lists the collections the caller may use.
func (c Calls) Collections(ctx context.Context) ([]corpus.CollectionInfo, error) {
	if !principalFrom(ctx).has(ScopeAsk) {
		return nil, kgagent.Errorf(kgagent.EFORBIDDEN, "this key lacks the %q scope", ScopeAsk)
	}
	return c.s.collections(ctx)
}

// Owner names the caller of ctx (its user, API key or agent id; "" for an
// open server's callers), for transports that bind sessions to a caller.
func (c Calls) Owner(ctx context.Context) string { return principalFrom(ctx).owner() }

// Collection returns the collection to use for name ("" is the caller's
// default: the first of a restricted key's collections, else "").
// Errors: EFORBIDDEN for a collection the caller may not use.
func (c Calls) Collection(ctx context.Context, name string) (string, error) {
	return principalFrom(ctx).collection(name)
}

// Documents lists up to limit documents of a collection the caller may use,
// after the URL after.
func (c Calls) Documents(ctx context.Context, collection, after string, limit int) ([]corpus.DocumentInfo, error) {
	r, err := c.reader(ctx, collection)
	if err != nil {
		return nil, err
	}
	return r.Documents(ctx, collection, after, limit)
}

// DocumentChunks returns the stored chunks of a document of a collection
// the caller may use. Errors: ENOTFOUND when it is not indexed.
func (c Calls) DocumentChunks(ctx context.Context, collection, docURL string) ([]kgagent.Chunk, error) {
	r, err := c.reader(ctx, collection)
	if err != nil {
		return nil, err
	}
	return r.DocumentChunks(ctx, collection, docURL)
}

func (c Calls) reader(ctx context.Context, collection string) (DocumentReader, error) {
	p := principalFrom(ctx)
	if !p.has(ScopeAsk) {
		return nil, kgagent.Errorf(kgagent.EFORBIDDEN, "this key lacks the %q scope", ScopeAsk)
	}
	if collection == "" {
		return nil, invalid(ReasonMissingField, "collection", "collection is required")
	}
	if _, err := p.collection(collection); err != nil {
		return nil, err
	}
	if c.s.b.Docs == nil {
		return nil, unavailable("documents")
	}
	return c.s.b.Docs, nil
}
