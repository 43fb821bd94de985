package graphrag

import (
	"cmp"
	"context"
	"hash/maphash"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/internal/text"
)

// predicatePrior is how much a kind of edge is worth to an answer before
// looking at its words.
func predicatePrior(p string) float64 {
	switch p {
	case PredIsDefinedAs:
		return 0.35
	case PredIsA:
		return 0.25
	case PredDefines:
		return 0.2
	case PredAliasOf:
		return 0.15
	case PredLinksTo, PredMentions:
		return 0.05
	case PredHasSection:
		return 0.02
	}
	return 0.2 // relationships from the LLM
}

type scored struct {
	t     kgagent.Triple
	score float64
}

// factSet is the facts Retrieve has seen, distinct by tripleKey. It keys
// them by a hash of the short fields and the literal's length and compares
// whole keys only on a hash match, so a candidate costs no map key of five
// strings and no hashing of a long literal. A hash holds one fact in m;
// the facts of a hash shared by several distinct facts (rare) are in more.
type factSet struct {
	seed maphash.Seed
	m    map[uint64]*kgagent.Triple
	more map[uint64][]*kgagent.Triple
}

func newFactSet(n int) *factSet {
	f := new(factSet)
	f.reset(n)
	return f
}

// reset makes f an empty set, sized for n facts when it has no map yet.
func (f *factSet) reset(n int) {
	if f.m == nil {
		f.seed, f.m = maphash.MakeSeed(), make(map[uint64]*kgagent.Triple, n)
		return
	}
	f.clear()
}

// clear empties f, keeping its map's room.
func (f *factSet) clear() {
	clear(f.m)
	f.more = nil
}

// add adds t and reports whether it was new.
func (f *factSet) add(t *kgagent.Triple) bool {
	k := f.hash(t)
	first, ok := f.m[k]
	if !ok {
		f.m[k] = t
		return true
	}
	if tripleKey(*first) == tripleKey(*t) {
		return false
	}
	same := f.more[k]
	for _, o := range same {
		if tripleKey(*o) == tripleKey(*t) {
			return false
		}
	}
	if f.more == nil {
		f.more = map[uint64][]*kgagent.Triple{}
	}
	f.more[k] = append(same, t)
	return true
}

// hash is t's key in the set.
func (f *factSet) hash(t *kgagent.Triple) uint64 {
	n := len(t.Literal)
	return maphash.Comparable(f.seed, factHashKey{t.Subject.ID, t.Predicate, t.Object.ID, t.SourceURL, t.Literal[:min(n, 32)], n})
}

// factHashKey is what factSet hashes: a fact's short fields, the start of
// its literal and the literal's length.
type factHashKey struct {
	s, p, o, src, lit string
	n                 int
}

// factKey is what makes a fact distinct in Retrieve.
type factKey struct{ s, p, o, lit, src string }

func tripleKey(t kgagent.Triple) factKey {
	return factKey{t.Subject.ID, t.Predicate, t.Object.ID, t.Literal, t.SourceURL}
}

// nameBudget is how many of the SeedEntities slots name matches may take
// when an entity index is configured; similarity has the rest (SimilarSeeds),
// so neither source crowds the other out.
func (s *Service) nameBudget() int {
	if s.cfg.Index == nil {
		return s.cfg.SeedEntities
	}
	return max(1, s.cfg.SeedEntities-s.cfg.SimilarSeeds)
}

// nameSeeds are the entities the question's terms name, best first, with
// scores from 1 down to 0.5.
func (s *Service) nameSeeds(ctx context.Context, question, collection string) ([]string, map[string]float64, error) {
	seeds := map[string]float64{}
	terms := QuestionTerms(question)
	if len(terms) == 0 {
		return nil, seeds, nil
	}
	ents, err := s.cfg.Store.Entities(ctx, collection, terms, s.nameBudget())
	if err != nil {
		return nil, nil, err
	}
	ids := make([]string, 0, len(ents))
	for i, e := range ents {
		if _, dup := seeds[e.ID]; dup {
			continue
		}
		seeds[e.ID] = 1 - 0.5*float64(i)/float64(len(ents))
		ids = append(ids, e.ID)
	}
	return ids, seeds, nil
}

// similarSeeds are the entities of the entity index most similar to the
// question and not in have, best first, at most n, scored 0.9 down to 0.4.
func (s *Service) similarSeeds(ctx context.Context, question, collection string, have map[string]float64, n int) ([]string, map[string]float64, error) {
	out := map[string]float64{}
	if s.cfg.Index == nil || n <= 0 {
		return nil, out, nil
	}
	vecs, err := corpus.EmbedQueries(ctx, s.cfg.Embedder, []string{question})
	if err != nil {
		return nil, nil, err
	}
	q := corpus.Query{
		Collection: s.entityCollection(collection), Vector: vecs[0], Text: question,
		K: s.cfg.SeedEntities, Mode: corpus.ModeHybrid,
	}
	if s.cfg.SemanticQuery != nil {
		if err := s.cfg.SemanticQuery(ctx, &q); err != nil {
			return nil, nil, err
		}
	}
	hits, err := s.cfg.Index.Search(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	var ids []string
	for i, h := range hits {
		if len(ids) == n {
			break
		}
		if len(h.HeadingPath) == 0 {
			continue
		}
		id := h.HeadingPath[0]
		if _, ok := have[id]; ok {
			continue
		}
		if _, ok := out[id]; ok {
			continue
		}
		out[id] = 0.9 - 0.5*float64(i)/float64(len(hits))
		ids = append(ids, id)
	}
	return ids, out, nil
}

// Seeds returns the seed entity ids for a question with their scores (1 is
// best): entities named by the question's terms, then entities whose name and
// definition are most similar in the entity index; at most SeedEntities.
func (s *Service) Seeds(ctx context.Context, question, collection string) (map[string]float64, error) {
	_, seeds, err := s.nameSeeds(ctx, question, collection)
	if err != nil {
		return nil, err
	}
	_, more, err := s.similarSeeds(ctx, question, collection, seeds, min(s.cfg.SimilarSeeds, s.cfg.SeedEntities-len(seeds)))
	if err != nil {
		return nil, err
	}
	for id, sc := range more {
		seeds[id] = sc
	}
	return seeds, nil
}

// expandShared is the store's Expand, or its ExpandShared when it has one:
// strings that may share the store's memory, for Retrieve, which copies
// only the facts it returns. ExpandShared writes into buffer i of bufs
// when it has room.
func (s *Service) expandShared(ctx context.Context, collection string, seeds []string, lim ExpandLimits, bufs *retrieveScratch, i int) ([]kgagent.Triple, error) {
	if se, ok := s.cfg.Store.(SharedExpander); ok {
		ts, err := se.ExpandShared(ctx, collection, seeds, lim, bufs.get(i))
		bufs.used(i, ts)
		return ts, err
	}
	return s.cfg.Store.Expand(ctx, collection, seeds, lim)
}

// retrieveScratch is what one Retrieve works in, reused from answer to
// answer (scratchPool) so that an answer allocates none of it (~180 KB a
// Python docs question): the buffers its expansions write into
// (SharedExpander), one an expansion: the first hop's name seeds' and
// similar seeds', then one a further hop (the fact set points into them
// until Retrieve returns, so none is written twice in one Retrieve); the
// question's word set, the fact set and the candidates. Everything is
// emptied of what it held (the store's strings) when put back.
type retrieveScratch struct {
	b     [][]kgagent.Triple // b[i][:n[i]] was written
	n     []int
	words wordSet
	facts factSet
	cands []cand
}

// cand is a candidate edge by its position in the hop's triples (slice
// j, index i): the triples are large and only EdgesPerHop of them are
// kept.
type cand struct {
	j, i  int32
	score float64
}

// scratchPool holds the retrieveScratch of Retrieves that have returned.
var scratchPool = sync.Pool{New: func() any { return new(retrieveScratch) }}

// get is buffer i (empty, with room for what it held before).
func (b *retrieveScratch) get(i int) []kgagent.Triple {
	for len(b.b) <= i {
		b.b, b.n = append(b.b, nil), append(b.n, 0)
	}
	return b.b[i][:0]
}

// used records that ts was written for buffer i: ts is kept as buffer i
// when it has more room.
func (b *retrieveScratch) used(i int, ts []kgagent.Triple) {
	if cap(ts) > cap(b.b[i]) {
		b.b[i] = ts[:0]
	}
	b.n[i] = max(b.n[i], min(len(ts), cap(b.b[i])))
}

// release empties b and puts it back in the pool.
func (b *retrieveScratch) release() {
	for i := range b.b {
		clear(b.b[i][:b.n[i]])
		b.n[i] = 0
	}
	b.words.clear()
	b.facts.clear()
	b.cands = b.cands[:0]
	scratchPool.Put(b)
}

// firstHop finds the seeds and expands them one hop. The similarity search
// runs while the name seeds are expanded, then its own seeds are expanded.
// The hop's triples are the name seeds' then the similar seeds': two
// slices, not one made by appending the second (a copy of ~570 triples an
// answer, 17% of what Retrieve allocated on the Python docs).
func (s *Service) firstHop(ctx context.Context, question, collection string, bufs *retrieveScratch) (map[string]float64, []string, [][]kgagent.Triple, error) {
	lim := ExpandLimits{Hops: 1, TriplesPerEntity: s.cfg.TriplesPerEntity}
	names, seeds, err := s.nameSeeds(ctx, question, collection)
	if err != nil {
		return nil, nil, nil, err
	}
	type similar struct {
		ids    []string
		scores map[string]float64
		err    error
	}
	ch := make(chan similar, 1)
	go func() {
		ids, scores, err := s.similarSeeds(ctx, question, collection, seeds, min(s.cfg.SimilarSeeds, s.cfg.SeedEntities-len(names)))
		ch <- similar{ids, scores, err}
	}()
	var ts []kgagent.Triple
	if len(names) > 0 {
		ts, err = s.expandShared(ctx, collection, names, lim, bufs, 0)
	}
	sim := <-ch
	if err != nil {
		return nil, nil, nil, err
	}
	if sim.err != nil {
		return nil, nil, nil, sim.err
	}
	if len(sim.ids) > 0 {
		more, err := s.expandShared(ctx, collection, sim.ids, lim, bufs, 1)
		if err != nil {
			return nil, nil, nil, err
		}
		for id, sc := range sim.scores {
			seeds[id] = sc
		}
		return seeds, append(names, sim.ids...), [][]kgagent.Triple{ts, more}, nil
	}
	return seeds, append(names, sim.ids...), [][]kgagent.Triple{ts}, nil
}

// Retrieve answers a question with facts from the graph: seed entities (by
// name and by similarity), expansion hop by hop (at most TriplesPerEntity per
// entity, the EdgesPerHop most relevant edges kept and expanded further),
// and the kept edges ranked by relevance to the question. Each fact names its
// source section. Errors: EINVALID for an empty question or collection.
func (s *Service) Retrieve(ctx context.Context, question, collection string) ([]Fact, error) {
	if strings.TrimSpace(question) == "" {
		return nil, kgagent.Errorf(kgagent.EINVALID, "question is empty")
	}
	if err := ValidateCollection(collection); err != nil {
		return nil, err
	}
	bufs := scratchPool.Get().(*retrieveScratch)
	defer bufs.release() // after the facts kept are cloned
	seeds, frontier, hop1, err := s.firstHop(ctx, question, collection, bufs)
	if err != nil {
		return nil, err
	}
	n1 := 0
	for _, ts := range hop1 {
		n1 += len(ts)
	}
	// sized for the first hop's distinct ends (about one per two edges)
	q := &bufs.words
	q.reset(termSet(question), n1/2)
	exact := map[string]bool{} // specific names the question uses outright
	for _, t := range QuestionTerms(question) {
		if strings.ContainsAny(t, " ._") {
			exact[t] = true
			exact[NormalizeName(t)] = true
		}
	}
	expanded := map[string]bool{}
	seen := &bufs.facts
	seen.reset(2 * n1)
	var facts []scored
	cands := bufs.cands[:0]
	decay := 1.0
	for hop := 0; hop < s.cfg.Hops && len(frontier) > 0; hop++ {
		for _, id := range frontier {
			expanded[id] = true
		}
		parts := hop1
		if hop > 0 {
			ts, err := s.expandShared(ctx, collection, frontier, ExpandLimits{Hops: 1, TriplesPerEntity: s.cfg.TriplesPerEntity}, bufs, 1+hop)
			if err != nil {
				return nil, err
			}
			parts = [][]kgagent.Triple{ts}
		}
		cands = cands[:0]
		for j, ts := range parts {
			cands = slices.Grow(cands, len(ts))
			for i := range ts {
				if seen.add(&ts[i]) {
					cands = append(cands, cand{int32(j), int32(i), decay * s.relevance(q, exact, seeds, &ts[i])})
				}
			}
		}
		slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(b.score, a.score) })
		if len(cands) > s.cfg.EdgesPerHop {
			cands = cands[:s.cfg.EdgesPerHop]
		}
		var next []string
		for _, c := range cands {
			t := &parts[c.j][c.i]
			facts = append(facts, scored{*t, c.score})
			for _, e := range []string{t.Subject.ID, t.Object.ID} {
				if e != "" && t.Literal == "" && !expanded[e] {
					expanded[e] = true
					next = append(next, e)
				}
			}
		}
		frontier = next
		decay *= 0.7
	}
	bufs.cands = cands[:0]
	sort.SliceStable(facts, func(i, j int) bool { return facts[i].score > facts[j].score })
	if len(facts) > s.cfg.MaxFacts {
		facts = facts[:s.cfg.MaxFacts]
	}
	out := make([]Fact, len(facts))
	for i, f := range facts {
		// the expansions' strings may be the store's (expandShared)
		t := CloneTriple(f.t)
		out[i] = Fact{Text: FactText(t), Triple: t, SourceURL: t.SourceURL, Score: f.score}
	}
	return out, nil
}

// relevance scores an edge for a question: word overlap with the question,
// how strongly its ends were seeds (the subject more: "what is X" is
// answered by statements about X), whether the question names them
// outright, and the kind of edge.
func (s *Service) relevance(q *wordSet, exact map[string]bool, seeds map[string]float64, t *kgagent.Triple) float64 {
	obj := t.Object.Name
	if t.Literal != "" {
		obj = text.Clip(t.Literal, 400)
	}
	var sc float64
	switch {
	case len(q.idx) > 64:
		sc = overlap(q, t.Subject.Name, t.Subject.ID, obj)
	case len(q.idx) > 0:
		h := hits{bits: q.entityHits(t.Subject.ID, t.Subject.Name, true)}
		if t.Literal != "" {
			q.scan(obj, &h)
		} else {
			h.bits |= q.entityHits(t.Object.ID, obj, false) // the object's name only
		}
		sc = float64(h.count()) / float64(len(q.idx))
	}
	sc += 0.6*seeds[t.Subject.ID] + 0.2*seeds[t.Object.ID]
	if exact[t.Subject.ID] {
		sc += 0.3
	} else if exact[t.Object.ID] {
		sc += 0.1
	}
	switch t.Predicate {
	case PredMentions, PredHasSection, PredLinksTo:
		// Structure says where something is, not what it is: it ranks
		// below statements about the same entities.
		sc *= 0.6
	}
	return sc + predicatePrior(t.Predicate)
}
