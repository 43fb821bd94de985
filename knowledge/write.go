package knowledge

import (
	"context"

	"github.com/kgagent/kgagent"
)

// Documents is the corpus side of a document's write (corpus.Service
// implements it): IndexDocument chunks, embeds and stores doc, replacing
// its earlier chunks, in one step; DeleteDocument removes them.
type Documents interface {
	IndexDocument(ctx context.Context, doc kgagent.Document) ([]kgagent.Chunk, error)
	DeleteDocument(ctx context.Context, collection, url string) error
}

// Triples is the graph side of a document's write (graphrag.Service
// implements it): IndexDocument extracts doc's triples from its chunks and
// replaces the document's triples with them, then its entries in the entity
// index (written through corpus.Service), and returns how many triples it
// stored; DeleteDocument removes both.
type Triples interface {
	IndexDocument(ctx context.Context, doc kgagent.Document, chunks []kgagent.Chunk) (int, error)
	DeleteDocument(ctx context.Context, collection, url string) error
}

// Writer writes documents across the stores — corpus chunks, graph triples
// with the entity index, page state — in the one order that a crash or a
// failed step cannot turn into a half-written or lost page:
//
//   - Put: chunks, then triples and entity index, then the page state.
//     The state is written last, so a page whose write stopped part way
//     has its old state (or none) and the next crawl writes it again; each store replaces the document's rows in one transaction.
//   - Remove: the page state's content hash cleared, then triples and
//     entity index, then chunks, then the page state. A removal that stopped
//     part way leaves a state matching no content: the next crawl removes
//     the page again if it is gone, or writes it whole if it is back.
//   - Touch: the page state alone (a page the crawl found unchanged).
//
// The crawler's Ingester decides what to put, touch and remove; the Writer
// decides how. It is safe for concurrent use.
type Writer struct {
	docs   Documents // nil: documents are dropped
	graph  Triples   // nil: no triples
	states PageStates
	// svc is the Service whose pending collection deletes a Put finishes
	// before writing into the collection; nil for a NewWriter's.
	svc *Service
}

// NewWriter returns a Writer over the stores. nil docs drops the documents
// (a dry run), nil graph writes no triples, nil states keeps the page state
// in memory (nothing is incremental across processes). Service.Writer is
// the one over the wired stores.
func NewWriter(docs Documents, graph Triples, states PageStates) *Writer {
	if states == nil {
		states = NewMemoryStates()
	}
	return &Writer{docs: docs, graph: graph, states: states}
}

// States is the page state the Writer keeps, for reading (the crawler lists
// a collection's pages before a crawl).
func (w *Writer) States() PageStates { return w.states }

// Put writes doc across the stores — its chunks, then its triples and
// entity index entries, then st, its page state (st's Collection and URL
// are doc's) — and returns how many chunks and triples it stored. A
// collection whose delete is pending is finished first (EUNAVAILABLE,
// nothing written, when that still fails). On an error the page state is
// not saved, so the next crawl writes the page again; errors name the step
// ("indexing: …", "extracting triples: …", "saving page state: …") and keep
// the store's code (EUNAVAILABLE for the page state).
func (w *Writer) Put(ctx context.Context, doc kgagent.Document, st PageState) (chunks, triples int, err error) {
	if s := w.svc; s != nil {
		s.mu.Lock()
		d := s.pending[doc.Collection]
		s.mu.Unlock()
		if d != nil {
			if err := s.finish(ctx, doc.Collection, d); err != nil {
				return 0, 0, step("indexing", kgagent.WrapError(kgagent.EUNAVAILABLE, err, "collection %q is still being deleted: %v", doc.Collection, err))
			}
		}
	}
	var cs []kgagent.Chunk
	if w.docs != nil {
		if cs, err = w.docs.IndexDocument(ctx, doc); err != nil {
			return 0, 0, step("indexing", err)
		}
	}
	if w.graph != nil {
		if triples, err = w.graph.IndexDocument(ctx, doc, cs); err != nil {
			return 0, 0, step("extracting triples", err)
		}
	}
	st.Collection, st.URL = doc.Collection, doc.URL
	if err := w.states.PutPage(ctx, st); err != nil {
		return 0, 0, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "saving page state: %s", kgagent.ErrorMessage(err))
	}
	return len(cs), triples, nil
}

// Touch saves the state of a page whose content did not change (new
// validators, links, last seen); nothing else is written.
func (w *Writer) Touch(ctx context.Context, st PageState) error {
	if err := w.states.PutPage(ctx, st); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "saving page state: %s", kgagent.ErrorMessage(err))
	}
	return nil
}

// Remove removes a page from the graph and the entity index, the corpus
// and the page state. It first clears the content hash of the page's state,
// then deletes the triples, the chunks and last the state, so that a
// removal that stopped part way leaves a state that matches no content: the
// next crawl removes the page again if it is still gone, and writes it whole
// if it is back (never skipping it as unchanged while a store lacks it).
// Removing an unknown page is no error. Errors name the step ("removing
// triples: …", "removing document: …", "removing page state: …").
func (w *Writer) Remove(ctx context.Context, collection, url string) error {
	if collection == "" || url == "" {
		return kgagent.Errorf(kgagent.EINVALID, "a collection and a URL are required")
	}
	if err := w.states.PutPage(ctx, PageState{Collection: collection, URL: url}); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "removing page state: %s", kgagent.ErrorMessage(err))
	}
	if w.graph != nil {
		if err := w.graph.DeleteDocument(ctx, collection, url); err != nil {
			return step("removing triples", err)
		}
	}
	if w.docs != nil {
		if err := w.docs.DeleteDocument(ctx, collection, url); err != nil {
			return step("removing document", err)
		}
	}
	if err := w.states.DeletePage(ctx, collection, url); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "removing page state: %s", kgagent.ErrorMessage(err))
	}
	return nil
}

// step names the write step that failed, keeping the error's code.
func step(what string, err error) error {
	return kgagent.WrapError(kgagent.ErrorCode(err), err, "%s: %s", what, kgagent.ErrorMessage(err))
}
