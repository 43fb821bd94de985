package neo4j

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
)

// document is one source document's triples.
type document struct {
	URL     string
	Triples []kgagent.Triple
}

// ReplaceDocument implements graphrag.Store: the document's old triples are
// retracted and triples written in one transaction.
func (s *Store) ReplaceDocument(ctx context.Context, collection, docURL string, triples []kgagent.Triple) error {
	return s.replace(ctx, collection, []document{{URL: docURL, Triples: triples}})
}

// DeleteDocument implements graphrag.Store.
func (s *Store) DeleteDocument(ctx context.Context, collection, docURL string) error {
	return s.replace(ctx, collection, []document{{URL: docURL}})
}

// ReplaceDocuments replaces the triples of several documents of collection,
// keyed by document URL, in one transaction: the bulk path for ingestion,
// which amortises the transaction cost over many small pages (about 2x the
// throughput of one ReplaceDocument per page). An empty slice deletes that
// document. Every document is validated before anything is written; on any
// error no document changes. Only kgagent types appear in the signature, so
// a consumer can use it through its own interface without importing this
// package.
func (s *Store) ReplaceDocuments(ctx context.Context, collection string, docs map[string][]kgagent.Triple) error {
	list := make([]document, 0, len(docs))
	for u, ts := range docs {
		list = append(list, document{URL: u, Triples: ts})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].URL < list[j].URL })
	return s.replace(ctx, collection, list)
}

func (s *Store) replace(ctx context.Context, collection string, docs []document) error {
	if err := graphrag.ValidateCollection(collection); err != nil {
		return err
	}
	for _, d := range docs {
		if err := graphrag.ValidateTriples(collection, d.URL, d.Triples); err != nil {
			return err
		}
	}
	if len(docs) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return s.mapErr(ctx, err, "replace documents")
	}
	return s.group.submit(ctx, s, collection, docs)
}

// replaceNow writes docs in one transaction of its own.
func (s *Store) replaceNow(ctx context.Context, collection string, docs []document) error {
	b := newBatch(collection, docs)
	return s.write(ctx, "replace documents", func(tx neo4j.ManagedTransaction) error {
		return b.apply(ctx, tx, s.cfg.BatchSize)
	})
}

// Group commit. An ingest writes many pages at once (crawler's write queue
// keeps up to 64 in flight), each its own ReplaceDocument. As that many
// concurrent Neo4j transactions they lock the same shared entities (every
// OpenJDK page links java.lang.Object, its module, its package) in
// different orders: the server detects deadlocks, the driver retries, and
// on a loaded box the retries ran past the driver's retry time, failing
// pages (21 of 298 OpenJDK pages; 83 of 1,000 in issue 25's bench). So the
// writes of one Store go through one writer at a time: the calls that
// arrive while a transaction runs wait, and the next transaction writes all
// of them (up to maxGroupDocs calls and maxGroupTriples triples) as one
// ReplaceDocuments batch. No two transactions of one process contend for
// locks, and the per-transaction cost is shared. Another process (a second
// worker) can still deadlock with this one: the driver retries that.

const (
	maxGroupDocs    = 64
	maxGroupTriples = 5000
)

// groupWriter queues the replace calls of one Store.
type groupWriter struct {
	mu      sync.Mutex
	queue   []*pendingWrite
	writing bool
}

// pendingWrite is one queued replace call.
type pendingWrite struct {
	ctx        context.Context
	collection string
	docs       []document
	triples    int
	done       chan error
	taken      bool // in a group the writer is writing (guarded by groupWriter.mu)
}

// submit queues docs and waits until they are written, in a group with the
// calls queued beside it. The first call to find no writer running starts
// one, which runs until the queue is empty (a goroutine, so no caller waits
// for more than its own write). A call whose ctx ends while it is queued
// leaves the queue and returns ctx's error at once: nothing of it is
// written. One whose group is being written waits for that write's outcome
// (the group's transaction stops once every caller in it has given up).
func (g *groupWriter) submit(ctx context.Context, s *Store, collection string, docs []document) error {
	p := &pendingWrite{ctx: ctx, collection: collection, docs: docs, done: make(chan error, 1)}
	for _, d := range docs {
		p.triples += len(d.Triples)
	}
	g.mu.Lock()
	g.queue = append(g.queue, p)
	if !g.writing {
		g.writing = true
		go g.drain(s)
	}
	g.mu.Unlock()
	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
	}
	g.mu.Lock()
	if !p.taken {
		g.queue = slices.DeleteFunc(g.queue, func(q *pendingWrite) bool { return q == p })
		g.mu.Unlock()
		return s.mapErr(ctx, ctx.Err(), "replace documents")
	}
	g.mu.Unlock()
	return <-p.done
}

// drain writes queued groups until the queue is empty.
func (g *groupWriter) drain(s *Store) {
	for {
		g.mu.Lock()
		if len(g.queue) == 0 {
			g.writing = false
			g.mu.Unlock()
			return
		}
		group, rest := takeGroup(g.queue)
		g.queue = rest
		for _, p := range group {
			p.taken = true
		}
		g.mu.Unlock()
		s.writeGroup(group)
	}
}

// takeGroup splits off the calls written together: those of the first
// call's collection, in arrival order, up to the caps, stopping before a
// call that names a document already in the group (a later call for the
// same document must be written after the earlier one, not merged with it).
func takeGroup(queue []*pendingWrite) (group, rest []*pendingWrite) {
	urls := map[string]bool{}
	triples := 0
	for i, p := range queue {
		if p.collection != queue[0].collection {
			rest = append(rest, p)
			continue
		}
		clash := false
		for _, d := range p.docs {
			clash = clash || urls[d.URL]
		}
		if len(group) > 0 && (clash || len(group) >= maxGroupDocs || triples+p.triples > maxGroupTriples) {
			return group, append(rest, queue[i:]...)
		}
		for _, d := range p.docs {
			urls[d.URL] = true
		}
		triples += p.triples
		group = append(group, p)
	}
	return group, rest
}

// writeGroup writes a group in one transaction and tells each call. A call
// whose context ended while it waited gets its context's error. When the
// group's transaction fails, each call is written alone, one after the
// other under its own context, so a failure is that of the document that
// caused it, never its neighbours' - unless the server could not be
// reached (unreachable): then every call gets the group's error at once.
func (s *Store) writeGroup(group []*pendingWrite) {
	live := group[:0:0]
	for _, p := range group {
		if err := p.ctx.Err(); err != nil {
			p.done <- s.mapErr(p.ctx, err, "replace documents")
			continue
		}
		live = append(live, p)
	}
	if len(live) > 1 {
		var docs []document
		for _, p := range live {
			docs = append(docs, p.docs...)
		}
		// Under no one caller's cancellation: one caller's cancel must
		// not fail the others' pages (each context was checked above).
		// Once every caller has given up, the transaction stops.
		gctx, cancel := groupContext(live)
		err := s.replaceNow(gctx, live[0].collection, docs)
		cancel()
		if err == nil || unreachable(err) {
			// Written; or the server could not be reached at all, which
			// is no one document's fault: written alone, each would wait
			// out the driver's retry time again.
			for _, p := range live {
				p.done <- err
			}
			return
		}
	}
	for _, p := range live {
		p.done <- s.replaceNow(p.ctx, p.collection, p.docs)
	}
}

// groupContext is the context of a group's transaction: it carries the
// first call's values, no caller's deadline or cancellation alone, and ends
// once every call's context has ended (no one waits for the write then).
func groupContext(group []*pendingWrite) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(group[0].ctx))
	var left atomic.Int32
	left.Store(int32(len(group)))
	stops := make([]func() bool, 0, len(group))
	for _, p := range group {
		stops = append(stops, context.AfterFunc(p.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		}))
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// batch is the prepared parameters of one ReplaceDocuments call.
type batch struct {
	collection string
	docURLs    []any
	entities   []any // {id, name, type, norm}
	rels       []any // {s, o, p, d, u, k}
	lits       []any // {s, v, h, p, d, u, k}
	newIDs     map[string]bool
}

func newBatch(collection string, docs []document) *batch {
	b := &batch{collection: collection, newIDs: map[string]bool{}}
	ents := map[string]kgagent.Entity{}
	var order []string
	addEnt := func(e kgagent.Entity) {
		old, ok := ents[e.ID]
		if !ok {
			order = append(order, e.ID)
		} else if e.Type == "" {
			e.Type = old.Type
		}
		ents[e.ID] = e
	}
	seenDoc := map[string]bool{}
	for _, d := range docs {
		if !seenDoc[d.URL] {
			seenDoc[d.URL] = true
			b.docURLs = append(b.docURLs, d.URL)
		}
		seen := map[[6]string]bool{}
		for _, t := range d.Triples {
			k := [6]string{t.Subject.ID, t.Predicate, t.Object.ID, t.Literal, t.SourceURL, t.ChunkID}
			if seen[k] {
				continue // the same fact twice in one document is stored once
			}
			seen[k] = true
			addEnt(t.Subject)
			if t.Literal != "" {
				b.lits = append(b.lits, map[string]any{
					"s": t.Subject.ID, "v": t.Literal, "h": literalHash(t.Literal),
					"p": t.Predicate, "d": d.URL, "u": t.SourceURL, "k": t.ChunkID,
				})
				continue
			}
			addEnt(t.Object)
			b.rels = append(b.rels, map[string]any{
				"s": t.Subject.ID, "o": t.Object.ID,
				"p": t.Predicate, "d": d.URL, "u": t.SourceURL, "k": t.ChunkID,
			})
		}
	}
	// Sorted, so concurrent writers lock shared entities in the same order
	// and rarely deadlock (a deadlock is retried, but costs a backoff).
	sort.Strings(order)
	for _, id := range order {
		e := ents[id]
		b.newIDs[id] = true
		b.entities = append(b.entities, map[string]any{
			"id": e.ID, "name": e.Name, "type": e.Type, "norm": graphrag.NormalizeName(e.Name),
		})
	}
	return b
}

const (
	// Retract the documents' triples (deleting literal nodes with their
	// triple) and return the entities they touched, so that entities left
	// without triples can be removed. The hint keeps the plan on the
	// (collection, doc_url) index however the statistics look.
	qRetract = `
UNWIND $docs AS d
MATCH (s:Entity)-[r:REL]->(o)
USING INDEX r:REL(collection, doc_url)
WHERE r.collection = $c AND r.doc_url = d
WITH s, r, o, o:Literal AS lit, o.id AS oid
DELETE r
FOREACH (x IN CASE WHEN lit THEN [o] ELSE [] END | DELETE x)
RETURN collect(DISTINCT s.id) + collect(DISTINCT oid) AS ids`

	// Upsert entities and return their element ids, so the triples can be
	// created by id seeks instead of index seeks. name, type and norm are
	// only written (and the node only locked) when they change.
	qMergeEntities = `
UNWIND $rows AS row
MERGE (e:Entity {collection: $c, id: row.id})
ON CREATE SET e.name = row.name, e.type = row.type, e.norm = row.norm
FOREACH (_ IN CASE WHEN e.name <> row.name OR e.norm <> row.norm OR (row.type <> '' AND e.type <> row.type)
                   THEN [1] ELSE [] END |
  SET e.name = row.name, e.norm = row.norm, e.type = CASE row.type WHEN '' THEN e.type ELSE row.type END)
RETURN row.id AS id, elementId(e) AS eid`

	qCreateRels = `
UNWIND $rows AS row
MATCH (s) WHERE elementId(s) = row.s
MATCH (o) WHERE elementId(o) = row.o
CREATE (s)-[:REL {collection: $c, p: row.p, doc_url: row.d, source_url: row.u, chunk_id: row.k}]->(o)`

	qCreateLits = `
UNWIND $rows AS row
MATCH (s) WHERE elementId(s) = row.s
CREATE (s)-[:REL {collection: $c, p: row.p, doc_url: row.d, source_url: row.u, chunk_id: row.k}]->
       (:Literal {collection: $c, value: row.v, h: row.h})`

	// Remove entities no triple uses any more. SET/REMOVE take the node's
	// write lock before its degree is read, so a concurrent transaction that
	// links the entity either committed first (and is seen) or fails on the
	// deleted node and is retried (see Store.write).
	qDropOrphans = `
UNWIND $ids AS id
MATCH (e:Entity {collection: $c, id: id})
SET e.gc = true
REMOVE e.gc
WITH e WHERE COUNT { (e)--() } = 0
DELETE e`
)

// apply runs the batch's statements in tx: retract, upsert entities, create
// triples in chunks of size rows, drop orphaned entities.
func (b *batch) apply(ctx context.Context, tx neo4j.ManagedTransaction, size int) error {
	c := b.collection
	recs, err := run(ctx, tx, qRetract, map[string]any{"c": c, "docs": b.docURLs})
	if err != nil {
		return err
	}
	var orphans []string
	seen := map[string]bool{}
	for _, r := range recs {
		ids, _ := r.Values[0].([]any)
		for _, v := range ids {
			id := str(v)
			if id != "" && !b.newIDs[id] && !seen[id] {
				seen[id] = true
				orphans = append(orphans, id)
			}
		}
	}
	sort.Strings(orphans)
	touched := make([]any, len(orphans))
	for i, id := range orphans {
		touched[i] = id
	}
	eids := make(map[string]any, len(b.entities))
	for i := 0; i < len(b.entities); i += size {
		recs, err := run(ctx, tx, qMergeEntities, map[string]any{"c": c, "rows": b.entities[i:min(i+size, len(b.entities))]})
		if err != nil {
			return err
		}
		for _, r := range recs {
			eids[str(r.Values[0])] = r.Values[1]
		}
	}
	for _, step := range []struct {
		q    string
		rows []any
	}{{qCreateRels, b.rels}, {qCreateLits, b.lits}} {
		for i := 0; i < len(step.rows); i += size {
			chunk := make([]any, 0, min(size, len(step.rows)-i))
			for _, row := range step.rows[i:min(i+size, len(step.rows))] {
				m := row.(map[string]any)
				r := make(map[string]any, len(m))
				for k, v := range m {
					r[k] = v
				}
				r["s"] = eids[str(m["s"])]
				if o, ok := m["o"]; ok {
					r["o"] = eids[str(o)]
				}
				chunk = append(chunk, r)
			}
			res, err := tx.Run(ctx, step.q, map[string]any{"c": c, "rows": chunk})
			if err != nil {
				return err
			}
			sum, err := res.Consume(ctx)
			if err != nil {
				return err
			}
			// A concurrent writer's orphan cleanup deleted an entity after
			// the MERGE above saw it: try the transaction again.
			if n := sum.Counters().RelationshipsCreated(); n != len(chunk) {
				return errEntityGone
			}
		}
	}
	for i := 0; i < len(touched); i += size {
		if _, err := run(ctx, tx, qDropOrphans, map[string]any{"c": c, "ids": touched[i:min(i+size, len(touched))]}); err != nil {
			return err
		}
	}
	return nil
}

// errEntityGone makes Store.write retry a transaction that lost an entity to
// a concurrent writer's orphan cleanup.
var errEntityGone = errors.New("an entity was deleted by a concurrent transaction")

// DeleteCollection implements graphrag.Store. A large collection is deleted
// in transactions of a few thousand elements each (so the server's
// transaction memory stays bounded); if one fails, calling again finishes the
// job.
func (s *Store) DeleteCollection(ctx context.Context, collection string) error {
	if err := graphrag.ValidateCollection(collection); err != nil {
		return err
	}
	steps := []string{
		`MATCH ()-[r:REL]->() WHERE r.collection = $c AND r.doc_url IS NOT NULL
		 WITH r LIMIT $n DELETE r RETURN count(*) AS n`,
		`MATCH (l:Literal) WHERE l.collection = $c AND l.h IS NOT NULL
		 WITH l LIMIT $n DETACH DELETE l RETURN count(*) AS n`,
		`MATCH (e:Entity) WHERE e.collection = $c AND e.id IS NOT NULL
		 WITH e LIMIT $n DETACH DELETE e RETURN count(*) AS n`,
	}
	for _, q := range steps {
		for {
			var n int64
			err := s.write(ctx, "delete collection", func(tx neo4j.ManagedTransaction) error {
				recs, err := run(ctx, tx, q, map[string]any{"c": collection, "n": s.cfg.BatchSize})
				if err != nil {
					return err
				}
				if len(recs) > 0 {
					n, _ = recs[0].Values[0].(int64)
				}
				return nil
			})
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
		}
	}
	return nil
}
