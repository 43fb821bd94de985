// Package graphrag extracts (subject, predicate, object) triples from crawled
// documents, stores them in a triple Store (the embedded graphrag/sqlite or
// Neo4j through graphrag/neo4j), and retrieves facts for a question by seed
// entities and bounded expansion, each fact cited down to its page section.
// graphtest holds the conformance suite every Store passes.
package graphrag

import (
	"context"
	"unsafe"

	"github.com/kgagent/kgagent"
)

// Pattern selects triples, TrustGraph style: empty fields match anything.
// S and O match entity ids or, failing that, normalised names; O also matches
// literals.
type Pattern struct {
	Collection string `json:"collection"`
	S          string `json:"s,omitempty"`
	P          string `json:"p,omitempty"`
	O          string `json:"o,omitempty"`
	Limit      int    `json:"limit,omitempty"`
}

// Bounds of Pattern.Limit, the same on every transport (REST, GraphQL,
// MCP): 0 asks for DefaultFindLimit triples, and Service.Find returns at
// most MaxFindLimit (the gateway refuses a larger limit at admission).
const (
	DefaultFindLimit = 100
	MaxFindLimit     = 1000
)

// ExpandLimits bound a graph expansion.
type ExpandLimits struct {
	Hops             int // default 2
	TriplesPerEntity int // default 30
	EdgesPerHop      int // default 25 (applied by the retriever after ranking)
}

// Store holds triples partitioned by collection and by source document.
// graphrag/sqlite and graphrag/neo4j implement it and pass graphtest.
//
// Errors: EINVALID for bad arguments (e.g. an entity name over 1 KiB),
// EUNAVAILABLE when the backend cannot be reached. Writes are atomic: a
// failed ReplaceDocument leaves the document's old triples in place.
type Store interface {
	// ReplaceDocument atomically retracts every triple whose DocURL is docURL
	// in collection and stores triples instead. Empty triples deletes.
	ReplaceDocument(ctx context.Context, collection, docURL string, triples []kgagent.Triple) error
	// DeleteDocument removes the triples of docURL in collection.
	DeleteDocument(ctx context.Context, collection, docURL string) error
	// DeleteCollection removes every triple of collection.
	DeleteCollection(ctx context.Context, collection string) error
	// Find returns triples matching p, at most p.Limit (default
	// DefaultFindLimit).
	Find(ctx context.Context, p Pattern) ([]kgagent.Triple, error)
	// Expand returns the triples reachable from the seed entity ids within
	// lim.Hops hops (both directions), at most lim.TriplesPerEntity per entity.
	// Cycles terminate.
	Expand(ctx context.Context, collection string, seeds []string, lim ExpandLimits) ([]kgagent.Triple, error)
	// Entities returns entities of collection whose normalised name contains
	// any of the given normalised terms, at most limit.
	Entities(ctx context.Context, collection string, terms []string, limit int) ([]kgagent.Entity, error)
}

// SharedExpander is a Store that can expand without copying: ExpandShared
// is Expand, but the triples' strings may share the store's memory (an
// in-memory graph's string tables), which they keep alive while they are
// referenced, so a caller copies what it keeps past its request
// (CloneTriple). Retrieve uses it: it scores every edge an expansion
// finds (~570 a Python docs question) and keeps a few. The triples are
// written into buf when it has room for them all (buf[:n], every field
// of each written), else into a new slice: Retrieve passes buffers it
// reuses from answer to answer (~100 KB an answer on the Python docs).
type SharedExpander interface {
	ExpandShared(ctx context.Context, collection string, seeds []string, lim ExpandLimits, buf []kgagent.Triple) ([]kgagent.Triple, error)
}

// CloneTriple returns t with its strings copied into one buffer of their
// own.
func CloneTriple(t kgagent.Triple) kgagent.Triple {
	fields := [...]*string{&t.Collection, &t.Subject.ID, &t.Subject.Name, &t.Subject.Type, &t.Predicate,
		&t.Object.ID, &t.Object.Name, &t.Object.Type, &t.Literal, &t.ChunkID, &t.DocURL, &t.SourceURL}
	n := 0
	for _, f := range fields {
		n += len(*f)
	}
	buf := make([]byte, 0, n)
	for _, f := range fields {
		lo := len(buf)
		buf = append(buf, *f...)
		*f = ""
		if len(buf) > lo {
			*f = unsafe.String(&buf[lo], len(buf)-lo)
		}
	}
	return t
}

// Fact is a triple chosen for a question, rendered as a sentence, with the
// section it came from.
type Fact struct {
	Text      string         `json:"text"`
	Triple    kgagent.Triple `json:"triple"`
	SourceURL string         `json:"source_url"`
	Score     float64        `json:"score"`
}
