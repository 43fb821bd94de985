package graphrag

import (
	"context"
	"sync/atomic"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
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
	// Entities writes the entity index, through the corpus service so that
	// its rules (embedding, validation, Generation) hold for it as for
	// documents; it must embed with Embedder into Index. Default: a
	// corpus.Service over Index and Embedder.
	Entities *corpus.Service
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
	cfg = cfg.withDefaults()
	if cfg.Index != nil && cfg.Entities == nil {
		es, err := corpus.NewService(corpus.ServiceConfig{Index: cfg.Index, Embedder: cfg.Embedder})
		if err != nil {
			return nil, err
		}
		cfg.Entities = es
	}
	return &Service{cfg: cfg}, nil
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
		// The entity index: doc's entries replaced with those of ts.
		coll := s.entityCollection(doc.Collection)
		chunks := EntityChunks(doc, ts, s.cfg.EntitiesPerDoc)
		for i := range chunks {
			chunks[i].Collection = coll
		}
		if err := s.cfg.Entities.ReplaceChunks(ctx, coll, doc.URL, chunks); err != nil {
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

// DeleteDocument removes the triples and entity index entries of url.
func (s *Service) DeleteDocument(ctx context.Context, collection, url string) error {
	defer s.gen.Add(1)
	if err := s.cfg.Store.DeleteDocument(ctx, collection, url); err != nil {
		return err
	}
	if s.cfg.Index != nil {
		return s.cfg.Entities.DeleteDocument(ctx, s.entityCollection(collection), url)
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
		return s.cfg.Entities.DeleteCollection(ctx, s.entityCollection(collection))
	}
	return nil
}

// Find returns triples matching p (GET /api/v1/triples). Limit is capped at
// 1000.
func (s *Service) Find(ctx context.Context, p Pattern) ([]kgagent.Triple, error) {
	if p.Limit > MaxFindLimit {
		p.Limit = MaxFindLimit
	}
	ts, err := s.cfg.Store.Find(ctx, p)
	if ts == nil && err == nil {
		ts = []kgagent.Triple{}
	}
	return ts, err
}
