package graphrag

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/internal/text"
)

// Config configures a Service. Only Store is required; every limit's zero
// value means its default.
type Config struct {
	Store     Store     // required: graphrag/sqlite (default) or graphrag/neo4j
	Extractor Extractor // default BuiltinExtractor{}

	// Embedder and Index, when both are set, make the entity index: each
	// entity's name and definition embedded into Index in the collection
	// "<collection>" + EntitySuffix, searched for seed entities.
	Embedder     corpus.Embedder
	Index        corpus.Index
	EntitySuffix string // default "__entities"
	// SemanticQuery, when set, adds the semantic query vector to an entity
	// index search whose collection holds semantic vectors
	// (corpus.Service.SemanticQuery), so seeds are found by meaning too.
	SemanticQuery func(ctx context.Context, q *corpus.Query) error

	SeedEntities     int // seed entities per question, by name and by similarity together; default 30
	SimilarSeeds     int // of those, at most this many from the entity index; default SeedEntities/3
	Hops             int // expansion hops; default 2
	TriplesPerEntity int // triples fetched per entity per hop; default 30
	EdgesPerHop      int // edges kept per hop after ranking; default 25
	MaxFacts         int // facts returned by Retrieve; default 20
	AnswerFacts      int // facts composed into Answer's text; default 8
	EntitiesPerDoc   int // entities of one document put in the entity index; default 300
}

func (c Config) withDefaults() Config {
	if c.Extractor == nil {
		c.Extractor = BuiltinExtractor{}
	}
	if c.EntitySuffix == "" {
		c.EntitySuffix = "__entities"
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.SeedEntities, 30)
	def(&c.SimilarSeeds, max(1, c.SeedEntities/3))
	def(&c.Hops, 2)
	def(&c.TriplesPerEntity, 30)
	def(&c.EdgesPerHop, 25)
	def(&c.MaxFacts, 20)
	def(&c.AnswerFacts, 8)
	def(&c.EntitiesPerDoc, 300)
	return c
}

// Service is GraphRAG: it indexes documents into triples (and the entity
// index), keeps them consistent on re-crawl, and answers questions from the
// graph. It is safe for concurrent use.
type Service struct {
	cfg Config
	gen atomic.Uint64 // see Generation
}

// Generation counts the writes this service has finished (index, delete
// document or collection, failed or not): facts retrieved while it read G
// are current while it still reads G. Writes made by other processes to a
// shared store are not counted.
func (s *Service) Generation() uint64 { return s.gen.Load() }

// GraphAnswer is what POST /api/v1/graph-rag returns: a deterministic answer
// composed from the top facts, the facts, and their sections, deduplicated.
// Every fact the answer text uses has its SourceURL among Sources.
type GraphAnswer struct {
	Answer  string           `json:"answer"`
	Facts   []Fact           `json:"facts"`
	Sources []kgagent.Source `json:"sources"`
}

// New returns a Service for cfg. It fails with EINVALID when cfg.Store is nil.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, kgagent.Errorf(kgagent.EINVALID, "graphrag: no triple store configured")
	}
	if (cfg.Embedder == nil) != (cfg.Index == nil) {
		return nil, kgagent.Errorf(kgagent.EINVALID, "graphrag: the entity index needs both an embedder and an index")
	}
	return &Service{cfg: cfg.withDefaults()}, nil
}

// Config returns the configuration in use, defaults filled in.
func (s *Service) Config() Config { return s.cfg }

// IndexDocument extracts doc's triples and replaces the document's triples in
// the store (and its entities in the entity index) with them. It returns the
// number of triples stored. On any error nothing of doc was changed in the
// store (the entity index may lag behind until the next successful index).
func (s *Service) IndexDocument(ctx context.Context, doc kgagent.Document, chunks []kgagent.Chunk) (int, error) {
	defer s.gen.Add(1)
	ts, err := s.cfg.Extractor.Extract(ctx, doc, chunks)
	if err != nil {
		return 0, err
	}
	if _, builtin := s.cfg.Extractor.(BuiltinExtractor); !builtin {
		ts = Dedupe(ts) // the built-in extractor emits each key once already
	}
	if err := s.cfg.Store.ReplaceDocument(ctx, doc.Collection, doc.URL, ts); err != nil {
		return 0, err
	}
	if s.cfg.Index != nil {
		if err := s.indexEntities(ctx, doc, ts); err != nil {
			return len(ts), err
		}
	}
	return len(ts), nil
}

// Dedupe drops exact duplicates (same subject, predicate, object, literal
// and source section), keeping the first of each: a triple stated twice on a
// page is one fact. It returns ts itself when it has no duplicates (the
// usual case), else a new slice; ts is never changed.
func Dedupe(ts []kgagent.Triple) []kgagent.Triple {
	if len(ts) == 0 {
		return ts[:0:0]
	}
	seen := make(map[emitKey]struct{}, len(ts))
	var out []kgagent.Triple // nil until the first duplicate
	for i := range ts {
		t := &ts[i]
		k := emitKey{t.Subject.ID, t.Predicate, t.Object.ID, t.Literal, t.SourceURL}
		if _, dup := seen[k]; dup {
			if out == nil {
				out = make([]kgagent.Triple, i, len(ts))
				copy(out, ts[:i])
			}
			continue
		}
		seen[k] = struct{}{}
		if out != nil {
			out = append(out, *t)
		}
	}
	if out == nil {
		return ts
	}
	return out
}

// EntityChunks are the entity index entries of a document's triples: one per
// entity with a definition there (is_defined_as), its types and aliases
// added to the text; pages, sections and entities that are only named,
// typed or aliased are left to the name lookup. The chunk's Title is the entity's name, HeadingPath[0] its
// id, and Text its name followed by its definitions.
func EntityChunks(doc kgagent.Document, ts []kgagent.Triple, max int) []kgagent.Chunk {
	type info struct {
		e       kgagent.Entity
		src     string
		defs    []string
		defined bool // has an is_defined_as literal
	}
	byID := map[string]*info{}
	var order []string
	note := func(e kgagent.Entity, src, def string) {
		if e.Type == TypePage || e.Type == TypeSection || e.ID == "" {
			return
		}
		in, ok := byID[e.ID]
		if !ok {
			if len(order) >= max {
				return
			}
			in = &info{e: e, src: src}
			byID[e.ID] = in
			order = append(order, e.ID)
		}
		if def != "" && len(in.defs) < 4 {
			in.defs = append(in.defs, def)
		}
	}
	for _, t := range ts {
		switch t.Predicate {
		case PredMentions, PredHasSection, PredLinksTo:
			continue
		case PredIsDefinedAs:
			note(t.Subject, t.SourceURL, t.Literal)
			if in := byID[t.Subject.ID]; in != nil {
				in.defined = true
			}
		case PredIsA:
			note(t.Subject, t.SourceURL, "a "+t.Object.Name)
		case PredAliasOf:
			note(t.Object, t.SourceURL, "also called "+t.Subject.Name)
		default:
			note(t.Subject, t.SourceURL, "")
			if t.Literal == "" {
				note(t.Object, t.SourceURL, "")
			}
		}
	}
	out := make([]kgagent.Chunk, 0, len(order))
	for _, id := range order {
		in := byID[id]
		if !in.defined {
			continue // named or typed only: the name lookup finds it
		}
		i := len(out)
		text := text.Clip(in.e.Name+"\n"+strings.Join(in.defs, "; "), 2000)
		h := sha256.Sum256([]byte(doc.Collection + "\x00" + doc.URL + "\x00" + id))
		th := sha256.Sum256([]byte(text))
		out = append(out, kgagent.Chunk{
			ID:          hex.EncodeToString(h[:16]),
			DocURL:      doc.URL,
			URL:         in.src,
			Title:       in.e.Name,
			HeadingPath: []string{id, in.e.Type},
			Ordinal:     i,
			Text:        text,
			Hash:        hex.EncodeToString(th[:]),
		})
	}
	return out
}

func (s *Service) entityCollection(collection string) string { return collection + s.cfg.EntitySuffix }

// InternalCollection reports whether an index collection is one of the
// graph's entity indexes ("<collection>" + EntitySuffix), not a user's.
func (s *Service) InternalCollection(name string) bool {
	return s.cfg.Index != nil && strings.HasSuffix(name, s.cfg.EntitySuffix) && len(name) > len(s.cfg.EntitySuffix)
}

func (s *Service) indexEntities(ctx context.Context, doc kgagent.Document, ts []kgagent.Triple) error {
	coll := s.entityCollection(doc.Collection)
	chunks := EntityChunks(doc, ts, s.cfg.EntitiesPerDoc)
	for i := range chunks {
		chunks[i].Collection = coll
	}
	if len(chunks) == 0 {
		return s.cfg.Index.DeleteDocument(ctx, coll, doc.URL)
	}
	texts := make([]string, len(chunks))
	for i, c := range chunks {
		texts[i] = c.Text
	}
	vecs, err := s.cfg.Embedder.Embed(ctx, texts)
	if err != nil {
		return err
	}
	return s.cfg.Index.ReplaceDocument(ctx, coll, doc.URL, chunks, vecs)
}

// DeleteDocument removes the triples and entity index entries of url.
func (s *Service) DeleteDocument(ctx context.Context, collection, url string) error {
	defer s.gen.Add(1)
	if err := s.cfg.Store.DeleteDocument(ctx, collection, url); err != nil {
		return err
	}
	if s.cfg.Index != nil {
		return s.cfg.Index.DeleteDocument(ctx, s.entityCollection(collection), url)
	}
	return nil
}

// DeleteCollection removes a collection's graph and entity index.
func (s *Service) DeleteCollection(ctx context.Context, collection string) error {
	defer s.gen.Add(1)
	if err := s.cfg.Store.DeleteCollection(ctx, collection); err != nil {
		return err
	}
	if s.cfg.Index != nil {
		return s.cfg.Index.DeleteCollection(ctx, s.entityCollection(collection))
	}
	return nil
}

// Find returns triples matching p (GET /api/v1/triples). Limit is capped at
// 1000.
func (s *Service) Find(ctx context.Context, p Pattern) ([]kgagent.Triple, error) {
	if p.Limit > 1000 {
		p.Limit = 1000
	}
	ts, err := s.cfg.Store.Find(ctx, p)
	if ts == nil && err == nil {
		ts = []kgagent.Triple{}
	}
	return ts, err
}

// trimWord is a question word (one of strings.Fields) without the
// punctuation around it and a trailing "()": "json.loads()?" → "json.loads".
// QuestionTerms and AnalyzeQuestion read words through it, so both agree on
// what a word is.
func trimWord(f string) string {
	f = strings.TrimFunc(f, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
	})
	return strings.TrimSuffix(f, "()")
}

// QuestionTerms are the terms of a question used to find seed entities: code
// names as written (json.dumps, os.path.join), content words and their
// two- and three-word phrases, lower-cased.
func QuestionTerms(question string) []string {
	var words []string
	for _, f := range strings.Fields(text.ExpandContractions(question)) {
		if f = trimWord(f); f == "" {
			continue
		}
		words = append(words, strings.ToLower(f))
	}
	seen := map[string]bool{}
	var out []string
	add := func(t string) {
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	var run []string // consecutive content words
	flush := func() {
		for n := 3; n >= 2; n-- {
			for i := 0; i+n <= len(run); i++ {
				add(strings.Join(run[i:i+n], " "))
			}
		}
		run = run[:0]
	}
	for _, w := range words {
		if text.IsQuestionStop(w) || len([]rune(w)) < 2 {
			flush()
			continue
		}
		add(w)
		run = append(run, w)
	}
	flush()
	return out
}

// termSet is a question's words, for overlap scoring: each content word in
// its normalised (singular) form, dotted names also split.
func termSet(question string) map[string]bool {
	set := map[string]bool{}
	for _, t := range QuestionTerms(question) {
		if strings.Contains(t, " ") {
			continue
		}
		set[NormalizeName(t)] = true
		set[t] = true
		for _, p := range strings.Split(t, ".") {
			if p != "" && !text.IsQuestionStop(p) {
				set[p] = true
			}
		}
	}
	return set
}

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

// wordSet is a question's words (termSet) numbered, so overlap can count
// the distinct ones a text uses without allocating, and the bytes they start
// with, so most of a text's words need no lookup at all.
type wordSet struct {
	idx      map[string]int
	first    [256]bool
	subjects map[string]hitEntry // entityHits of subjects (name and id), by id
	names    map[string]hitEntry // entityHits of objects (name only), by id
}

// newWordSet numbers the words of q; entities is how many distinct
// entities entityHits will likely see (its caches are sized for them).
func newWordSet(q map[string]bool, entities int) *wordSet {
	ws := &wordSet{idx: make(map[string]int, len(q)),
		subjects: make(map[string]hitEntry, entities), names: make(map[string]hitEntry, entities)}
	for w := range q {
		if w != "" {
			ws.idx[w] = len(ws.idx)
			ws.first[w[0]] = true
		}
	}
	return ws
}

// entityHits are the question words an entity's name, and with withID its
// id, use, cached per entity id (an entity is the subject or object of many
// candidate edges; the name is compared, not hashed). Only for questions of
// at most 64 words.
func (q *wordSet) entityHits(id, name string, withID bool) uint64 {
	cache := q.names
	if withID {
		cache = q.subjects
	}
	if e, ok := cache[id]; ok && e.name == name {
		return e.bits
	}
	var h hits
	q.scan(name, &h)
	if withID {
		q.scan(id, &h)
	}
	cache[id] = hitEntry{name, h.bits}
	return h.bits
}

// hitEntry is a cached entityHits result.
type hitEntry struct {
	name string
	bits uint64
}

// hits are the distinct words of a wordSet found so far.
type hits struct {
	bits uint64       // words 0..63
	more map[int]bool // words 64 and above
}

func (h *hits) add(i int) {
	if i < 64 {
		h.bits |= 1 << i
		return
	}
	if h.more == nil {
		h.more = map[int]bool{}
	}
	h.more[i] = true
}

func (h *hits) count() int { return bits.OnesCount64(h.bits) + len(h.more) }

// overlap is the share of the question's words found in the words of texts.
func overlap(q *wordSet, texts ...string) float64 {
	if len(q.idx) == 0 {
		return 0
	}
	var h hits
	for _, text := range texts {
		q.scan(text, &h)
	}
	return float64(h.count()) / float64(len(q.idx))
}

// scan adds the question words text uses to h: text is split into runs of
// letters, digits, '_' and '.', each lower-cased and trimmed of dots, found
// as is, as its singular, or by its dotted parts.
func (q *wordSet) scan(text string, h *hits) {
	start := -1
	upper := false // the run has upper-case or non-ASCII bytes
	for i := 0; i <= len(text); {
		word := false
		size := 1
		if i < len(text) {
			if c := text[i]; c < utf8.RuneSelf {
				word = 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '.'
				if 'A' <= c && c <= 'Z' {
					word, upper = true, true
				}
			} else {
				var r rune
				r, size = utf8.DecodeRuneInString(text[i:])
				word = unicode.IsLetter(r) || unicode.IsDigit(r)
				upper = upper || word
			}
		}
		if word {
			if start < 0 {
				start = i
			}
			i += size
			continue
		}
		if start >= 0 {
			if f := text[start:i]; q.mayHit(f, upper) {
				if upper {
					f = strings.ToLower(f)
				}
				q.word(strings.Trim(f, "."), h)
			}
			start, upper = -1, false
		}
		i += size
	}
}

// mayHit reports whether a run of text can contain a question word: whether
// it or one of its dotted parts starts with a byte a question word starts
// with. Runs with non-ASCII upper case are always looked at.
func (q *wordSet) mayHit(f string, upper bool) bool {
	at := true // at the start of the run or of a dotted part
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c == '.' {
			at = true
			continue
		}
		if at {
			if c >= utf8.RuneSelf && upper {
				return true
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if q.first[c] {
				return true
			}
			at = false
		}
	}
	return false
}

func (q *wordSet) word(f string, h *hits) {
	if f == "" {
		return
	}
	if !q.first[f[0]] {
		// No question word starts like f (nor like its singular).
	} else if i, ok := q.idx[f]; ok {
		h.add(i)
	} else if len(f) > 4 && f[len(f)-1] == 's' {
		if i, ok := q.idx[text.Singular(f)]; ok {
			h.add(i)
		}
	}
	if strings.IndexByte(f, '.') >= 0 {
		for rest := f; ; {
			p, tail, more := strings.Cut(rest, ".")
			if p == "" || !q.first[p[0]] {
				// not a question word
			} else if i, ok := q.idx[p]; ok {
				h.add(i)
			}
			if !more {
				break
			}
			rest = tail
		}
	}
}

type scored struct {
	t     kgagent.Triple
	score float64
}

// factSet is the facts Retrieve has seen, distinct by tripleKey. It keys
// them by a hash of the short fields and the literal's length and compares
// whole keys only on a hash match, so a candidate costs no map key of five
// strings and no hashing of a long literal.
type factSet struct {
	seed maphash.Seed
	m    map[uint64][]*kgagent.Triple
}

func newFactSet(n int) *factSet {
	return &factSet{seed: maphash.MakeSeed(), m: make(map[uint64][]*kgagent.Triple, n)}
}

// add adds t and reports whether it was new.
func (f *factSet) add(t *kgagent.Triple) bool {
	n := len(t.Literal)
	k := maphash.Comparable(f.seed, factHashKey{t.Subject.ID, t.Predicate, t.Object.ID, t.SourceURL, t.Literal[:min(n, 32)], n})
	same := f.m[k]
	for _, o := range same {
		if tripleKey(*o) == tripleKey(*t) {
			return false
		}
	}
	f.m[k] = append(same, t)
	return true
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

// firstHop finds the seeds and expands them one hop. The similarity search
// runs while the name seeds are expanded, then its own seeds are expanded.
func (s *Service) firstHop(ctx context.Context, question, collection string) (map[string]float64, []string, []kgagent.Triple, error) {
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
		ts, err = s.cfg.Store.Expand(ctx, collection, names, lim)
	}
	sim := <-ch
	if err != nil {
		return nil, nil, nil, err
	}
	if sim.err != nil {
		return nil, nil, nil, sim.err
	}
	if len(sim.ids) > 0 {
		more, err := s.cfg.Store.Expand(ctx, collection, sim.ids, lim)
		if err != nil {
			return nil, nil, nil, err
		}
		ts = append(ts, more...)
		for id, sc := range sim.scores {
			seeds[id] = sc
		}
	}
	return seeds, append(names, sim.ids...), ts, nil
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
	seeds, frontier, hop1, err := s.firstHop(ctx, question, collection)
	if err != nil {
		return nil, err
	}
	// sized for the first hop's distinct ends (about one per two edges)
	q := newWordSet(termSet(question), len(hop1)/2)
	exact := map[string]bool{} // specific names the question uses outright
	for _, t := range QuestionTerms(question) {
		if strings.ContainsAny(t, " ._") {
			exact[t] = true
			exact[NormalizeName(t)] = true
		}
	}
	expanded := map[string]bool{}
	seen := newFactSet(2 * len(hop1))
	var facts []scored
	// cand is a candidate edge by its position in the hop's triples: the
	// triples are large and only EdgesPerHop of them are kept.
	type cand struct {
		i     int32
		score float64
	}
	var cands []cand
	decay := 1.0
	for hop := 0; hop < s.cfg.Hops && len(frontier) > 0; hop++ {
		for _, id := range frontier {
			expanded[id] = true
		}
		ts := hop1
		if hop > 0 {
			ts, err = s.cfg.Store.Expand(ctx, collection, frontier, ExpandLimits{Hops: 1, TriplesPerEntity: s.cfg.TriplesPerEntity})
			if err != nil {
				return nil, err
			}
		}
		cands = slices.Grow(cands[:0], len(ts))
		for i := range ts {
			if seen.add(&ts[i]) {
				cands = append(cands, cand{int32(i), decay * s.relevance(q, exact, seeds, &ts[i])})
			}
		}
		slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(b.score, a.score) })
		if len(cands) > s.cfg.EdgesPerHop {
			cands = cands[:s.cfg.EdgesPerHop]
		}
		var next []string
		for _, c := range cands {
			t := &ts[c.i]
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
	sort.SliceStable(facts, func(i, j int) bool { return facts[i].score > facts[j].score })
	if len(facts) > s.cfg.MaxFacts {
		facts = facts[:s.cfg.MaxFacts]
	}
	out := make([]Fact, len(facts))
	for i, f := range facts {
		out[i] = Fact{Text: FactText(f.t), Triple: f.t, SourceURL: f.t.SourceURL, Score: f.score}
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

// FactText renders a triple as a sentence.
func FactText(t kgagent.Triple) string {
	s, o := t.Subject.Name, t.Object.Name
	if t.Subject.Type == TypeSection {
		s = shortHeading(s)
	}
	if t.Object.Type == TypeSection {
		o = shortHeading(o)
	}
	switch t.Predicate {
	case PredIsDefinedAs:
		return s + ": " + t.Literal
	case PredIsA:
		return s + " is " + article(o) + " " + o
	case PredDefines:
		return s + " defines " + o
	case PredHasSection:
		return s + " has a section “" + o + "”"
	case PredMentions:
		return "The section “" + s + "” mentions " + o
	case PredLinksTo:
		return s + " links to " + o
	case PredAliasOf:
		return s + " is another name for " + o
	}
	if t.Literal != "" {
		o = t.Literal
	}
	return s + " " + strings.ReplaceAll(t.Predicate, "_", " ") + " " + o
}

// Answer retrieves facts for a question and composes a deterministic answer
// from the top AnswerFacts of them, each cited by its number in Sources.
func (s *Service) Answer(ctx context.Context, question, collection string) (GraphAnswer, error) {
	facts, err := s.Retrieve(ctx, question, collection)
	if err != nil {
		return GraphAnswer{}, err
	}
	ans := GraphAnswer{Facts: facts, Sources: SourcesOf(facts)}
	if len(facts) == 0 {
		ans.Facts = []Fact{}
		ans.Answer = fmt.Sprintf("The knowledge graph of collection %q has no facts about this question.", collection)
		return ans, nil
	}
	index := map[string]int{}
	for i, src := range ans.Sources {
		index[src.URL] = i + 1
	}
	var b strings.Builder
	b.WriteString("From the knowledge graph:\n")
	said := map[string]bool{}
	for _, f := range facts {
		if len(said) == s.cfg.AnswerFacts {
			break
		}
		text := strings.TrimSpace(text.Clip(f.Text, 500))
		if said[text] {
			continue // the same fact from another page
		}
		said[text] = true
		fmt.Fprintf(&b, "- %s [%d]\n", text, index[f.SourceURL])
	}
	ans.Answer = strings.TrimRight(b.String(), "\n")
	return ans, nil
}

// SourcesOf lists the sections of facts, deduplicated by URL, in the order of
// first use, each with the best score among its facts and a title naming the
// first fact's subject.
func SourcesOf(facts []Fact) []kgagent.Source {
	out := []kgagent.Source{}
	at := map[string]int{}
	for _, f := range facts {
		if f.SourceURL == "" {
			continue
		}
		if i, ok := at[f.SourceURL]; ok {
			if f.Score > out[i].Score {
				out[i].Score = f.Score
			}
			continue
		}
		at[f.SourceURL] = len(out)
		title := f.Triple.Subject.Name
		if f.Triple.Subject.Type == TypePage {
			title = f.Triple.Object.Name
		}
		out = append(out, kgagent.Source{URL: f.SourceURL, Title: title, Score: f.Score, Snippet: text.Clip(f.Text, 300)})
	}
	return out
}

// shortHeading cuts a long heading (such as a full API signature) to its
// first 80 bytes.
func shortHeading(h string) string {
	if len(h) <= 80 {
		return h
	}
	if i := strings.IndexByte(h, '('); i > 0 && i < 80 {
		return h[:i] + "(…)"
	}
	return text.Truncate(h, 80)
}

// article is "an" before a vowel letter, else "a".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an"
	}
	return "a"
}
