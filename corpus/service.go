package corpus

import (
	"context"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// Limits of a search request.
const (
	MaxQueryBytes = kgagent.MaxQuestionBytes // longest query accepted: the one limit every transport admits
	MaxK          = 100                      // most hits one search returns
	DefaultK      = 10                       // hits of a search whose request asks none (k 0): every transport's default
)

// CollectionLister is implemented by indexes that can list their collections.
type CollectionLister interface {
	Collections(ctx context.Context) ([]CollectionInfo, error)
}

// CollectionChecker is implemented by indexes that can tell cheaply whether
// a collection exists; the service then answers ENOTFOUND for unknown ones.
type CollectionChecker interface {
	HasCollection(ctx context.Context, name string) (bool, error)
}

// Vocabulary is implemented by indexes that can tell which words occur in
// a collection at all: Known reports, for each word, whether some chunk
// holds its keyword term (or a term sharing its stem). The answerer uses
// it to tell "the docs never mention X" from "the search missed X".
type Vocabulary interface {
	Known(ctx context.Context, collection string, words []string) ([]bool, error)
}

// ServiceConfig wires a Service. Only Index is required.
type ServiceConfig struct {
	Index    Index       // where chunks live (corpus/sqlite, corpus/qdrant)
	Embedder Embedder    // nil: the built-in lexical embedder
	Chunk    ChunkConfig // chunk sizes; zero value: the defaults
	// Semantic embeds search queries for the index's semantic vector set
	// (SemanticSearcher) when the searched collection has vectors of its
	// model (Name); nil: searches use the Embedder's vectors alone.
	Semantic Embedder
	// DefaultCollection is searched when a request names none; empty means
	// a collection is required.
	DefaultCollection string
}

// Service is the corpus as the rest of kgagent sees it: it chunks, embeds
// and indexes documents, and answers validated dense, keyword and hybrid
// searches.
type Service struct {
	cfg ServiceConfig
	emb Embedder
	gen atomic.Uint64 // see Generation
}

// Generation counts the writes this service has finished (index, delete
// document or collection, failed or not): an answer drawn from the corpus
// while it read G is current while it still reads G. Writes made by other
// processes to a shared index are not counted.
func (s *Service) Generation() uint64 { return s.gen.Load() }

// NewService returns a Service for cfg; it fails with EINVALID without an
// Index.
func NewService(cfg ServiceConfig) (*Service, error) {
	if cfg.Index == nil {
		return nil, kgagent.Errorf(kgagent.EINVALID, "corpus service needs an index")
	}
	emb := cfg.Embedder
	if emb == nil {
		emb = NewLexical(LexicalConfig{})
	}
	return &Service{cfg: cfg, emb: emb}, nil
}

var _ SemanticStore = (*Service)(nil)

// semStore is the index's SemanticStore, or an EUNAVAILABLE error.
func (s *Service) semStore() (SemanticStore, error) {
	st, ok := s.cfg.Index.(SemanticStore)
	if !ok {
		return nil, kgagent.Errorf(kgagent.EUNAVAILABLE, "this index keeps no semantic vectors")
	}
	return st, nil
}

// SemanticMissing lists chunks lacking model's vector (SemanticStore).
func (s *Service) SemanticMissing(ctx context.Context, model string, after int64, limit int) ([]SemanticTodo, error) {
	st, err := s.semStore()
	if err != nil {
		return nil, err
	}
	return st.SemanticMissing(ctx, model, after, limit)
}

// SemanticProgress counts the chunks with model's vector, and all.
func (s *Service) SemanticProgress(ctx context.Context, model string) (int, int, error) {
	st, err := s.semStore()
	if err != nil {
		return 0, 0, err
	}
	return st.SemanticProgress(ctx, model)
}

// PutSemantic stores semantic vectors; it counts as a write (Generation),
// since searches may rank differently after it.
func (s *Service) PutSemantic(ctx context.Context, model string, vecs []SemanticVector) error {
	st, err := s.semStore()
	if err != nil {
		return err
	}
	defer s.gen.Add(1)
	return st.PutSemantic(ctx, model, vecs)
}

// SemanticQuery embeds the query (its SemanticText) for q's collection's
// semantic vector set into q, when the service has a semantic embedder and the index holds vectors
// of its model for the collection (for an index that counts its live
// chunks, LiveCounter, a vector for every live chunk: a set the background
// pass is still filling would rank the chunks it has reached above the
// rest); otherwise it leaves q as it is. An
// index that says it holds no semantic vector at all (HasSemantic) is not
// asked further, nor is the embedder: one loaded on first use (serve's)
// stays unloaded until there are vectors to search.
func (s *Service) SemanticQuery(ctx context.Context, q *Query) error {
	ss, ok := s.cfg.Index.(SemanticSearcher)
	if s.cfg.Semantic == nil || !ok || q.Mode == ModeKeyword {
		return nil
	}
	if h, ok := s.cfg.Index.(interface{ HasSemantic() bool }); ok && !h.HasSemantic() {
		return nil
	}
	model, err := EmbedName(ctx, s.cfg.Semantic)
	if err != nil {
		return err
	}
	n, err := ss.SemanticChunks(ctx, q.Collection, model)
	if err != nil || n == 0 {
		return err
	}
	if lc, ok := s.cfg.Index.(LiveCounter); ok {
		live, err := lc.LiveChunks(ctx, q.Collection)
		if err != nil || n < live {
			return err
		}
	}
	vs, err := EmbedQueries(ctx, s.cfg.Semantic, []string{SemanticText(q.Text)})
	if err != nil {
		return err
	}
	q.Semantic, q.SemanticModel = vs[0], model
	return nil
}

// Embedder returns the embedder the service uses.
func (s *Service) Embedder() Embedder { return s.emb }

// IndexDocument chunks doc, embeds the chunks (title and headings included)
// and replaces the document's chunks in the index in one step. A document
// without text deletes what was indexed for it. Errors: EINVALID without
// collection or URL; the embedder's and index's errors otherwise, in which
// case what was indexed before is unchanged.
func (s *Service) IndexDocument(ctx context.Context, doc kgagent.Document) ([]kgagent.Chunk, error) {
	defer s.gen.Add(1)
	if doc.Collection == "" || doc.URL == "" {
		return nil, kgagent.Errorf(kgagent.EINVALID, "document needs a collection and a URL")
	}
	chunks := ChunkDocument(doc, s.cfg.Chunk)
	if lx, ok := s.emb.(*Lexical); ok && len(chunks) > 0 {
		if ti, ok := s.cfg.Index.(TermsIndex); ok {
			// the embedder's pass over the words gives the index the
			// chunks' keyword terms too
			vecs, terms, err := lx.embedChunks(ctx, chunks, false)
			if err != nil {
				return nil, err
			}
			if err := ti.ReplaceDocumentTerms(ctx, doc.Collection, doc.URL, chunks, vecs, terms); err != nil {
				return nil, err
			}
			return chunks, nil
		}
	}
	texts := make([]string, len(chunks))
	for i, c := range chunks {
		texts[i] = IndexText(c)
	}
	vecs, err := s.embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	if err := s.cfg.Index.ReplaceDocument(ctx, doc.Collection, doc.URL, chunks, vecs); err != nil {
		return nil, err
	}
	return chunks, nil
}

// ReplaceChunks replaces every chunk of docURL in collection with chunks,
// made elsewhere (the graph's entity index), in one step: each chunk's Text
// is embedded as it is (no title or headings added). No chunks deletes the
// document's. Errors: EINVALID without collection or URL; the embedder's and
// index's errors otherwise, in which case what was indexed before is
// unchanged.
func (s *Service) ReplaceChunks(ctx context.Context, collection, docURL string, chunks []kgagent.Chunk) error {
	defer s.gen.Add(1)
	if collection == "" || docURL == "" {
		return kgagent.Errorf(kgagent.EINVALID, "chunks need a collection and a document URL")
	}
	if len(chunks) == 0 {
		return s.cfg.Index.DeleteDocument(ctx, collection, docURL)
	}
	if lx, ok := s.emb.(*Lexical); ok {
		if ti, ok := s.cfg.Index.(TermsIndex); ok {
			vecs, terms, err := lx.embedChunks(ctx, chunks, true)
			if err != nil {
				return err
			}
			return ti.ReplaceDocumentTerms(ctx, collection, docURL, chunks, vecs, terms)
		}
	}
	texts := make([]string, len(chunks))
	for i, c := range chunks {
		texts[i] = c.Text
	}
	vecs, err := s.embed(ctx, texts)
	if err != nil {
		return err
	}
	return s.cfg.Index.ReplaceDocument(ctx, collection, docURL, chunks, vecs)
}

// embed embeds texts (none: no call), checking the embedder returned one
// vector per text.
func (s *Service) embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	vecs, err := s.emb.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(texts) {
		return nil, kgagent.Errorf(kgagent.EINTERNAL, "embedder returned %d vectors for %d texts", len(vecs), len(texts))
	}
	return vecs, nil
}

// DeleteDocument removes the document's chunks.
func (s *Service) DeleteDocument(ctx context.Context, collection, url string) error {
	defer s.gen.Add(1)
	return s.cfg.Index.DeleteDocument(ctx, collection, url)
}

// DeleteCollection removes every chunk of the collection.
func (s *Service) DeleteCollection(ctx context.Context, collection string) error {
	defer s.gen.Add(1)
	return s.cfg.Index.DeleteCollection(ctx, collection)
}

// Known reports which words occur in the collection (see Vocabulary); nil
// without error when the index cannot tell.
func (s *Service) Known(ctx context.Context, collection string, words []string) ([]bool, error) {
	v, ok := s.cfg.Index.(Vocabulary)
	if !ok {
		return nil, nil
	}
	if collection == "" {
		collection = s.cfg.DefaultCollection
	}
	return v.Known(ctx, collection, words)
}

// Collections lists the index's collections, or none when the index cannot
// list them.
func (s *Service) Collections(ctx context.Context) ([]CollectionInfo, error) {
	if l, ok := s.cfg.Index.(CollectionLister); ok {
		cs, err := l.Collections(ctx)
		if cs == nil && err == nil {
			cs = []CollectionInfo{}
		}
		return cs, err
	}
	return []CollectionInfo{}, nil
}

// ValidateSearch checks a search request and fills defaults (mode hybrid,
// the default collection). Errors: EINVALID for an empty query, k outside
// 1..MaxK, an unknown mode or no collection;
// ETOOLARGE for a query over MaxQueryBytes.
func (s *Service) ValidateSearch(r *SearchRequest) error {
	if r.Mode == "" {
		r.Mode = ModeHybrid
	}
	if r.Collection == "" {
		r.Collection = s.cfg.DefaultCollection
	}
	return validate(*r, r.Collection != "")
}

func validate(r SearchRequest, needCollection bool) error {
	switch {
	case strings.TrimSpace(r.Query) == "":
		return kgagent.Errorf(kgagent.EINVALID, "query is empty")
	case len(r.Query) > MaxQueryBytes:
		return kgagent.CheckQuestionSize("query", r.Query)
	case r.K <= 0 || r.K > MaxK:
		return kgagent.Errorf(kgagent.EINVALID, "k must be between 1 and %d, got %d", MaxK, r.K)
	case !needCollection:
		return kgagent.Errorf(kgagent.EINVALID, "collection is required")
	}
	switch r.Mode {
	case ModeHybrid, ModeDense, ModeKeyword:
		return nil
	}
	return kgagent.Errorf(kgagent.EINVALID, "unknown search mode %q (hybrid, dense or keyword)", r.Mode)
}

// Search answers a search request: validation, query embedding, the index's
// dense, keyword or hybrid (RRF) ranking, then digests (index and summary
// passages that repeat other pages' one-line descriptions) ranked below the
// pages they describe (DemoteDigests, followDigests).
// Errors: those of ValidateSearch, ENOTFOUND for an unknown collection when
// the index can tell, and the embedder's and index's errors.
func (s *Service) Search(ctx context.Context, r SearchRequest) ([]Hit, error) {
	if err := s.ValidateSearch(&r); err != nil {
		return nil, err
	}
	if c, ok := s.cfg.Index.(CollectionChecker); ok {
		has, err := c.HasCollection(ctx, r.Collection)
		if err != nil {
			return nil, err
		}
		if !has {
			return nil, &kgagent.Error{Code: kgagent.ENOTFOUND, Message: "unknown collection " + r.Collection, Details: map[string]any{"collection": r.Collection}}
		}
	}
	q := Query{Collection: r.Collection, Text: r.Query, K: r.K, Mode: r.Mode, URLPrefix: r.URLPrefix}
	if r.Mode != ModeKeyword {
		vs, err := EmbedQueries(ctx, s.emb, []string{r.Query})
		if err != nil {
			return nil, err
		}
		q.Vector = vs[0]
		if err := s.SemanticQuery(ctx, &q); err != nil {
			return nil, err
		}
	}
	hits, err := s.cfg.Index.Search(ctx, q)
	if err != nil {
		return nil, err
	}
	// Digests never outrank the pages they describe (digest.go).
	hits = DemoteDigests(s.followDigests(ctx, q, hits))
	if len(hits) > r.K {
		hits = hits[:r.K]
	}
	if hits == nil {
		hits = []Hit{}
	}
	return hits, nil
}

// SearchText searches an ad-hoc text (an embed's content, for
// fixie_query_embed) the way Search searches a collection: the text is
// chunked in memory, chunks are ranked densely with emb (nil: the lexical
// embedder) and with BM25, and the two rankings are fused with RRF. Errors:
// EINVALID for an empty query or k outside 1..MaxK, ETOOLARGE for a query
// over MaxQueryBytes.
func SearchText(ctx context.Context, emb Embedder, title, content, query string, k int) ([]Hit, error) {
	if err := validate(SearchRequest{Query: query, K: k, Mode: ModeHybrid}, true); err != nil {
		return nil, err
	}
	if emb == nil {
		emb = NewLexical(LexicalConfig{})
	}
	const url = "embed:"
	chunks := ChunkText("embed", url, title, content, ChunkConfig{})
	if len(chunks) == 0 {
		return []Hit{}, nil
	}
	texts := make([]string, len(chunks)+1)
	terms := make([][]string, len(chunks))
	for i, c := range chunks {
		texts[i] = IndexText(c)
		terms[i] = text.Terms(texts[i])
	}
	texts[len(chunks)] = query
	vecs, err := emb.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	qv := vecs[len(chunks)]
	if _, ok := emb.(QueryEmbedder); ok {
		qvs, err := EmbedQueries(ctx, emb, []string{query})
		if err != nil {
			return nil, err
		}
		qv = qvs[0]
	}
	dense := make([]int, len(chunks))
	dscore := make([]float64, len(chunks))
	for i := range chunks {
		dense[i] = i
		dscore[i] = text.Cosine(qv, vecs[i])
	}
	sort.SliceStable(dense, func(a, b int) bool { return dscore[dense[a]] > dscore[dense[b]] })
	bm := text.NewBM25(terms).Scores(text.QuestionTerms(query))
	var kw []int
	for i, s := range bm {
		if s > 0 {
			kw = append(kw, i)
		}
	}
	sort.SliceStable(kw, func(a, b int) bool { return bm[kw[a]] > bm[kw[b]] })
	fused := map[int]float64{}
	for r, i := range dense {
		fused[i] += 1 / (60 + float64(r+1))
	}
	for r, i := range kw {
		fused[i] += 1 / (60 + float64(r+1))
	}
	order := make([]int, 0, len(fused))
	for i := range fused {
		order = append(order, i)
	}
	sort.Slice(order, func(a, b int) bool {
		if fused[order[a]] != fused[order[b]] {
			return fused[order[a]] > fused[order[b]]
		}
		return order[a] < order[b]
	})
	if len(order) > k {
		order = order[:k]
	}
	hits := make([]Hit, len(order))
	for j, i := range order {
		hits[j] = Hit{Chunk: chunks[i], Score: fused[i]}
	}
	return hits, nil
}

// Documents lists up to limit (1..1000) documents of collection after the
// URL after. Errors: EINVALID for a bad limit or no collection, EUNAVAILABLE
// when the index cannot list documents (corpus.DocumentReader).
func (s *Service) Documents(ctx context.Context, collection, after string, limit int) ([]DocumentInfo, error) {
	r, err := s.reader(collection)
	if err != nil {
		return nil, err
	}
	if limit < 1 || limit > 1000 {
		return nil, kgagent.Errorf(kgagent.EINVALID, "limit must be 1..1000")
	}
	ds, err := r.Documents(ctx, collection, after, limit)
	if ds == nil && err == nil {
		ds = []DocumentInfo{}
	}
	return ds, err
}

// DocumentChunks returns the stored chunks of docURL in collection in
// document order. Errors: ENOTFOUND when the document is not indexed,
// EUNAVAILABLE when the index cannot read documents.
func (s *Service) DocumentChunks(ctx context.Context, collection, docURL string) ([]kgagent.Chunk, error) {
	r, err := s.reader(collection)
	if err != nil {
		return nil, err
	}
	cs, err := r.DocumentChunks(ctx, collection, docURL)
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		return nil, kgagent.Errorf(kgagent.ENOTFOUND, "no document %q in collection %q", docURL, collection)
	}
	return cs, nil
}

func (s *Service) reader(collection string) (DocumentReader, error) {
	if collection == "" {
		return nil, kgagent.Errorf(kgagent.EINVALID, "collection is required")
	}
	r, ok := s.cfg.Index.(DocumentReader)
	if !ok {
		return nil, kgagent.Errorf(kgagent.EUNAVAILABLE, "this index cannot list or read documents")
	}
	return r, nil
}
