// Package knowledge is the collection-level knowledge service: the one place
// that knows a collection lives in several stores (the corpus index, the
// triple graph with its entity index, the page state of crawled pages and
// the embed blobs) and keeps them in step. It is a layer above corpus,
// graphrag and the page state: a document is written across them by a
// Writer in one order (put, remove, touch; see Writer); a collection is
// deleted from every store, with the steps that failed remembered and
// retried; collections are listed without the internal ones (entity
// indexes); and a question is answered with kgagent.Evidence — passages and
// facts, numbered once — which the agent's built-in funcs hand to the
// answerer.
//
// The crawler hands documents to Service.Writer (it decides what to put,
// touch or remove; the Writer decides how); the gateway and the agent read
// through the Service; cmd/kgagent only constructs it.
package knowledge

import (
	"context"
	"sort"
	"sync"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// Corpus is the document index side: the corpus service implements it.
type Corpus interface {
	Searcher
	Documents
	DeleteCollection(ctx context.Context, collection string) error
	Collections(ctx context.Context) ([]corpus.CollectionInfo, error)
	Generation() uint64
}

// Graph is the triple graph side, entity index included: the graphrag
// service implements it.
type Graph interface {
	Facts
	Triples
	DeleteCollection(ctx context.Context, collection string) error
	// InternalCollection reports whether an index collection is the
	// graph's own (an entity index) rather than a user's.
	InternalCollection(name string) bool
	Generation() uint64
}

// Blobs is the embed store: uploads filed under a collection.
type Blobs interface {
	DeleteCollection(ctx context.Context, collection string) (int, error)
}

// Config wires a Service. Corpus is required; the others are optional (no
// States: page state in memory).
type Config struct {
	Corpus Corpus
	Graph  Graph
	States PageStates
	Blobs  Blobs
	// Retrieve tunes Retrieve; zero values are the defaults.
	Retrieve RetrieveConfig
}

// Service is the knowledge of every collection. It is safe for concurrent use.
type Service struct {
	cfg Config
	*Retriever
	w *Writer

	mu      sync.Mutex
	pending map[string]*deletion // collections whose delete has not finished
}

// deletion is the bookkeeping of a collection delete that failed part way:
// which stores are done, and why the last attempt failed.
type deletion struct {
	done map[string]bool
	err  error
}

// Store names, in the order a collection is deleted from them.
const (
	StoreIndex  = "index"
	StoreGraph  = "graph"
	StoreStates = "page_state"
	StoreBlobs  = "embeds"
)

// New returns the service for cfg; EINVALID without a Corpus.
func New(cfg Config) (*Service, error) {
	if cfg.Corpus == nil {
		return nil, kgagent.Errorf(kgagent.EINVALID, "knowledge service needs a corpus")
	}
	var facts Facts
	if cfg.Graph != nil {
		facts = cfg.Graph
	}
	s := &Service{cfg: cfg, Retriever: NewRetriever(cfg.Corpus, facts, cfg.Retrieve), pending: map[string]*deletion{}}
	s.w = NewWriter(cfg.Corpus, cfg.Graph, cfg.States)
	s.w.svc = s
	return s, nil
}

// Writer writes documents across the service's stores (the crawler's
// ingester writes through it); a write into a collection whose delete is
// pending finishes that delete first.
func (s *Service) Writer() *Writer { return s.w }

// Generation changes whenever the stored knowledge changes (corpus or
// graph written by this process), for caches of answers drawn from it.
func (s *Service) Generation() uint64 {
	g := s.cfg.Corpus.Generation()
	if s.cfg.Graph != nil {
		g += s.cfg.Graph.Generation()
	}
	return g
}

// DeleteCollection removes the collection from every store: the corpus
// index, the graph and its entity index, the page state (so a later crawl
// starts afresh) and the embeds uploaded into it. When a store fails the
// steps done are remembered, the collection is hidden from Collections, and
// the remaining steps are retried by the next DeleteCollection, Retry, or
// write into the collection. Errors: EINVALID for an empty name or an
// internal collection; the failing store's error otherwise.
func (s *Service) DeleteCollection(ctx context.Context, name string) error {
	if name == "" {
		return kgagent.Errorf(kgagent.EINVALID, "collection name is required")
	}
	if s.internal(name) {
		return kgagent.Errorf(kgagent.EINVALID, "collection %q is internal; delete the collection it belongs to", name)
	}
	s.mu.Lock()
	d := s.pending[name]
	if d == nil {
		d = &deletion{done: map[string]bool{}}
		s.pending[name] = d
	}
	s.mu.Unlock()
	return s.finish(ctx, name, d)
}

// finish runs the steps of d not yet done.
func (s *Service) finish(ctx context.Context, name string, d *deletion) error {
	steps := []struct {
		store string
		run   func() error
	}{
		{StoreIndex, func() error { return s.cfg.Corpus.DeleteCollection(ctx, name) }},
		{StoreGraph, func() error {
			if s.cfg.Graph == nil {
				return nil
			}
			return s.cfg.Graph.DeleteCollection(ctx, name)
		}},
		{StoreStates, func() error {
			// the Writer's states: cfg.States, or the in-memory ones it
			// keeps when none was given
			return s.w.States().DeleteCollection(ctx, name)
		}},
		{StoreBlobs, func() error {
			if s.cfg.Blobs == nil {
				return nil
			}
			_, err := s.cfg.Blobs.DeleteCollection(ctx, name)
			return err
		}},
	}
	for _, st := range steps {
		s.mu.Lock()
		done := d.done[st.store]
		s.mu.Unlock()
		if done {
			continue
		}
		if err := st.run(); err != nil {
			s.mu.Lock()
			d.err = err
			s.mu.Unlock()
			return err
		}
		s.mu.Lock()
		d.done[st.store] = true
		s.mu.Unlock()
	}
	s.mu.Lock()
	if s.pending[name] == d {
		delete(s.pending, name)
	}
	s.mu.Unlock()
	return nil
}

// PendingDelete is a collection delete that has not finished.
type PendingDelete struct {
	Collection string   `json:"collection"`
	Done       []string `json:"done"`      // stores already cleared
	LastError  string   `json:"lastError"` // why the last attempt stopped
}

// Pending lists the collection deletes still to finish.
func (s *Service) Pending() []PendingDelete {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PendingDelete, 0, len(s.pending))
	for name, d := range s.pending {
		pd := PendingDelete{Collection: name}
		for st := range d.done {
			pd.Done = append(pd.Done, st)
		}
		sort.Strings(pd.Done)
		if d.err != nil {
			pd.LastError = d.err.Error()
		}
		out = append(out, pd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Collection < out[j].Collection })
	return out
}

// Retry finishes the pending collection deletes it can, returning the
// first error met (the others are still tried).
func (s *Service) Retry(ctx context.Context) error {
	var first error
	for _, p := range s.Pending() {
		s.mu.Lock()
		d := s.pending[p.Collection]
		s.mu.Unlock()
		if d == nil {
			continue
		}
		if err := s.finish(ctx, p.Collection, d); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (s *Service) internal(name string) bool {
	return s.cfg.Graph != nil && s.cfg.Graph.InternalCollection(name)
}

// Collections lists the user's collections: internal ones (entity indexes)
// and those whose delete is pending are left out.
func (s *Service) Collections(ctx context.Context) ([]corpus.CollectionInfo, error) {
	all, err := s.cfg.Corpus.Collections(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]corpus.CollectionInfo, 0, len(all))
	for _, ci := range all {
		if _, gone := s.pending[ci.Name]; gone || s.internal(ci.Name) {
			continue
		}
		out = append(out, ci)
	}
	return out, nil
}

// Search runs a corpus search (the /api/v1/search view of the knowledge).
func (s *Service) Search(ctx context.Context, r corpus.SearchRequest) ([]corpus.Hit, error) {
	return s.cfg.Corpus.Search(ctx, r)
}
