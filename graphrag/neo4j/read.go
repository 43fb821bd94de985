package neo4j

import (
	"context"
	"strings"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
)

// tripleCols is the RETURN clause every triple query ends with; s, r and o
// are the subject, the REL relationship and the object (Entity or Literal).
const tripleCols = `
RETURN elementId(r) AS rid, s.id AS sid, s.name AS sname, s.type AS stype, r.p AS p,
       o.id AS oid, o.name AS oname, o.type AS otype, o.value AS v,
       r.chunk_id AS k, r.doc_url AS d, r.source_url AS u`

// toTriple converts one record with tripleCols into a triple.
func toTriple(collection string, rec *neo4j.Record) (string, kgagent.Triple) {
	v := rec.Values
	t := kgagent.Triple{
		Collection: collection,
		Subject:    kgagent.Entity{ID: str(v[1]), Name: str(v[2]), Type: str(v[3])},
		Predicate:  str(v[4]),
		ChunkID:    str(v[9]),
		DocURL:     str(v[10]),
		SourceURL:  str(v[11]),
	}
	if lit, ok := v[8].(string); ok {
		t.Literal = lit
	} else {
		t.Object = kgagent.Entity{ID: str(v[5]), Name: str(v[6]), Type: str(v[7])}
	}
	return str(v[0]), t
}

// Find implements graphrag.Store. S and O are entity ids or, when no entity
// has that id, names matched by their normalised form; O also matches literal
// objects exactly.
func (s *Store) Find(ctx context.Context, p graphrag.Pattern) ([]kgagent.Triple, error) {
	if err := graphrag.ValidateCollection(p.Collection); err != nil {
		return nil, err
	}
	if p.Limit < 0 {
		return nil, kgagent.Errorf(kgagent.EINVALID, "limit must not be negative")
	}
	for _, f := range []string{p.S, p.P, p.O} {
		if len(f) > graphrag.MaxLiteralBytes {
			return nil, kgagent.Errorf(kgagent.EINVALID, "pattern field over %d bytes", graphrag.MaxLiteralBytes)
		}
	}
	limit := p.Limit
	if limit == 0 {
		limit = DefaultFindLimit
	}
	limit = min(limit, MaxFindLimit)
	c := p.Collection
	var out []kgagent.Triple
	err := s.read(ctx, "find", func(tx neo4j.ManagedTransaction) error {
		out = nil
		params := map[string]any{"c": c, "p": p.P, "limit": limit}
		var q string
		switch {
		case p.S != "":
			sids, err := resolve(ctx, tx, c, p.S)
			if err != nil || len(sids) == 0 {
				return err
			}
			params["sids"] = sids
			q = `UNWIND $sids AS sid
MATCH (s:Entity {collection: $c, id: sid})-[r:REL]->(o)
WHERE ($p = '' OR r.p = $p)`
			if p.O != "" {
				oids, err := resolve(ctx, tx, c, p.O)
				if err != nil {
					return err
				}
				params["oids"], params["oh"] = oids, literalHash(p.O)
				q += ` AND ((o:Entity AND o.id IN $oids) OR (o:Literal AND o.h = $oh))`
			}
		case p.O != "":
			oids, err := resolve(ctx, tx, c, p.O)
			if err != nil {
				return err
			}
			params["oids"], params["oh"] = oids, literalHash(p.O)
			q = `CALL () {
  UNWIND $oids AS oid
  MATCH (s:Entity)-[r:REL]->(o:Entity {collection: $c, id: oid})
  WHERE ($p = '' OR r.p = $p)
  RETURN s, r, o
  UNION ALL
  MATCH (s:Entity)-[r:REL]->(o:Literal {collection: $c, h: $oh})
  WHERE ($p = '' OR r.p = $p)
  RETURN s, r, o
}
WITH s, r, o`
		case p.P != "":
			q = `MATCH (s:Entity)-[r:REL]->(o) WHERE r.collection = $c AND r.p = $p`
		default:
			q = `MATCH (s:Entity)-[r:REL]->(o) WHERE r.collection = $c AND r.doc_url IS NOT NULL`
		}
		recs, err := run(ctx, tx, q+tripleCols+` LIMIT $limit`, params)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			_, t := toTriple(c, rec)
			out = append(out, t)
		}
		return nil
	})
	return out, err
}

// resolve returns the ids of the entities term names: the entity with id
// term, or failing that those whose normalised name is term's.
func resolve(ctx context.Context, tx neo4j.ManagedTransaction, c, term string) ([]any, error) {
	recs, err := run(ctx, tx, `MATCH (e:Entity {collection: $c, id: $t}) RETURN e.id`, map[string]any{"c": c, "t": term})
	if err != nil || len(recs) > 0 {
		return ids(recs), err
	}
	n := graphrag.NormalizeName(term)
	if n == "" {
		return nil, nil
	}
	recs, err = run(ctx, tx, `MATCH (e:Entity {collection: $c, norm: $n}) RETURN e.id LIMIT 1000`, map[string]any{"c": c, "n": n})
	return ids(recs), err
}

func ids(recs []*neo4j.Record) []any {
	out := make([]any, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.Values[0])
	}
	return out
}

// qExpandHop expands one BFS frontier: for each entity, at most $k of its
// triples in either direction.
const qExpandHop = `
UNWIND $ids AS id
MATCH (e:Entity {collection: $c, id: id})
CALL (e) {
  MATCH (e)-[r:REL]-()
  RETURN r LIMIT $k
}
WITH r, startNode(r) AS s, endNode(r) AS o` + tripleCols

// Expand implements graphrag.Store with a breadth-first walk, one bounded
// query per hop inside one read transaction: hop n expands the entities first
// reached at hop n-1, each by at most lim.TriplesPerEntity triples. Visited
// entities are never expanded twice, so cycles terminate; Hops is capped at
// MaxHops.
func (s *Store) Expand(ctx context.Context, collection string, seeds []string, lim graphrag.ExpandLimits) ([]kgagent.Triple, error) {
	if err := graphrag.ValidateCollection(collection); err != nil {
		return nil, err
	}
	hops, per := lim.Hops, lim.TriplesPerEntity
	if hops <= 0 {
		hops = DefaultHops
	}
	hops = min(hops, MaxHops)
	if per <= 0 {
		per = DefaultPerEntity
	}
	var out []kgagent.Triple
	err := s.read(ctx, "expand", func(tx neo4j.ManagedTransaction) error {
		out = nil
		visited := map[string]bool{}
		seen := map[string]bool{}
		var frontier []any
		for _, id := range seeds {
			if id != "" && !visited[id] {
				visited[id] = true
				frontier = append(frontier, id)
			}
		}
		for hop := 0; hop < hops && len(frontier) > 0; hop++ {
			recs, err := run(ctx, tx, qExpandHop, map[string]any{"c": collection, "ids": frontier, "k": per})
			if err != nil {
				return err
			}
			var next []any
			for _, rec := range recs {
				rid, t := toTriple(collection, rec)
				if seen[rid] {
					continue
				}
				seen[rid] = true
				out = append(out, t)
				for _, e := range []kgagent.Entity{t.Subject, t.Object} {
					if e.ID != "" && !visited[e.ID] {
						visited[e.ID] = true
						next = append(next, e.ID)
					}
				}
			}
			frontier = next
		}
		return nil
	})
	return out, err
}

// qEntities finds candidate entities for one term: those whose normalised
// name contains it (served by the text index), or whose id is the term, and
// that some triple still uses; exact names first, then by degree.
const qEntities = `
MATCH (e:Entity)
WHERE e.collection = $c AND (e.norm CONTAINS $t OR e.id = $t)
WITH e, COUNT { (e)--() } AS deg
WHERE deg > 0
RETURN e.id, e.name, e.type, e.norm, deg
ORDER BY CASE WHEN e.norm = $t OR e.id = $t THEN 0 ELSE 1 END, deg DESC, e.id
LIMIT $n`

// Entities implements graphrag.Store, matching as graphrag/sqlite does: a
// term (as given, lower-cased, and normalised) matches an entity when it occurs in the normalised name on word (or
// dot) boundaries, or is its id; only when no entity matches a term that way,
// plain substrings of three bytes or more count. Entities named exactly like
// a term come first, then those with more triples.
func (s *Store) Entities(ctx context.Context, collection string, terms []string, limit int) ([]kgagent.Entity, error) {
	if err := graphrag.ValidateCollection(collection); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = DefaultEntityLimit
	}
	type cand struct {
		e     kgagent.Entity
		exact bool
		deg   int64
	}
	cands := map[string]*cand{}
	err := s.read(ctx, "entities", func(tx neo4j.ManagedTransaction) error {
		clear(cands)
		// Both the term as given (lower-cased) and its normalised form, so
		// "dumps" finds json.dumps although it normalises to "dump".
		var forms []string
		for _, raw := range terms {
			forms = append(forms, strings.Join(strings.Fields(strings.ToLower(raw)), " "), graphrag.NormalizeName(raw))
		}
		done := map[string]bool{}
		for _, term := range forms {
			if term == "" || done[term] || len(term) > graphrag.MaxNameBytes {
				continue
			}
			done[term] = true
			recs, err := run(ctx, tx, qEntities, map[string]any{"c": collection, "t": term, "n": min(limit*20, 2000)})
			if err != nil {
				return err
			}
			var words, subs []*cand
			for _, r := range recs {
				v := r.Values
				c := &cand{e: kgagent.Entity{ID: str(v[0]), Name: str(v[1]), Type: str(v[2])}}
				norm := str(v[3])
				c.deg, _ = v[4].(int64)
				c.exact = norm == term || c.e.ID == term
				if c.exact || graphrag.ContainsWords(norm, term) {
					words = append(words, c)
				} else {
					subs = append(subs, c)
				}
			}
			if len(words) == 0 && len(term) >= 3 {
				words = subs
			}
			for _, c := range words {
				if old, ok := cands[c.e.ID]; ok {
					old.exact = old.exact || c.exact
					continue
				}
				cands[c.e.ID] = c
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ms := make([]graphrag.EntityMatch, 0, len(cands))
	for _, c := range cands {
		ms = append(ms, graphrag.EntityMatch{Entity: c.e, Exact: c.exact, Degree: c.deg})
	}
	return graphrag.RankEntities(ms, limit), nil
}
