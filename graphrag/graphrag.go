// Package graphrag extracts (subject, predicate, object) triples from crawled
// documents, stores them in a triple Store (the embedded graphrag/sqlite or
// Neo4j through graphrag/neo4j), and retrieves facts for a question by seed
// entities and bounded expansion, each fact cited down to its page section.
// graphtest holds the conformance suite every Store passes.
package graphrag

import (
	"context"

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

// Fact is a triple chosen for a question, rendered as a sentence, with the
// section it came from.
type Fact struct {
	Text      string         `json:"text"`
	Triple    kgagent.Triple `json:"triple"`
	SourceURL string         `json:"source_url"`
	Score     float64        `json:"score"`
}
