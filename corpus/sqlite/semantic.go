package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// The semantic vector set (see corpus.SemanticStore): table semvecs holds
// one vector per chunk row and model, int8 with a scale as the search copy
// holds it (appendQ8Bytes; format 2 in migrate.go), deleted with its chunk (a
// foreign key with ON DELETE CASCADE); a document rewrite carries the
// vectors of chunks whose text, title and headings it keeps over to their
// new rows (txWrite.semOld). The search copy holds each model's vectors
// int8-quantised beside the lexical ones, one row per slot (zeros and
// scale 0 where a chunk has none yet); it is loaded from SQLite with the
// copy, not kept in the snapshot, so vectors the pass commits never make a
// snapshot stale.

var (
	_ corpus.SemanticStore    = (*Index)(nil)
	_ corpus.SemanticSearcher = (*Index)(nil)
)

// semSet is one model's vectors in a search copy, by slot. The vectors
// are held in blocks of semBlock slots, each allocated when the first
// vector of its slots arrives: the background pass embeds in row-id order,
// so a set holds memory for the part of the corpus embedded so far, not
// for every slot from its first vector on (TestSemanticSetGrowsWithVectors).
type semSet struct {
	dim    int
	blocks [][]int8  // semBlock*dim per block, nil until one of its slots has a vector; zeros where a slot has none
	scales []float32 // per slot: the row times scale approximates the vector; 0 = none
	n      int       // live slots with a vector
}

// semBlock is how many slots one block of a semantic set holds (384 KiB
// at 384 dimensions).
const semBlock = 1024

// newSemSet returns an empty set of dim-long vectors for slots slots.
func newSemSet(dim, slots int) *semSet {
	return &semSet{dim: dim, blocks: make([][]int8, (slots+semBlock-1)/semBlock), scales: make([]float32, slots)}
}

// row is slot's vector; nil when its block holds no vector yet (then its
// scale is 0).
func (s *semSet) row(slot int) []int8 {
	b := s.blocks[slot/semBlock]
	if b == nil {
		return nil
	}
	o := slot % semBlock * s.dim
	return b[o : o+s.dim : o+s.dim]
}

// rowFor is slot's vector to write, its block allocated if need be.
func (s *semSet) rowFor(slot int) []int8 {
	b := &s.blocks[slot/semBlock]
	if *b == nil {
		*b = make([]int8, semBlock*s.dim)
	}
	o := slot % semBlock * s.dim
	return (*b)[o : o+s.dim : o+s.dim]
}

// semCarry is a vector a document rewrite carried to its new chunk i, as
// stored (appendQ8Bytes): it is written back as read and copied as it is
// into the in-memory copy.
type semCarry struct {
	i     int
	model string
	blob  []byte
}

// growSem adds an empty slot to every semantic set.
func (m *memColl) growSem() {
	for _, s := range m.sem {
		s.scales = append(s.scales, 0)
		if len(s.scales) > len(s.blocks)*semBlock {
			s.blocks = append(s.blocks, nil)
		}
	}
}

// setSem sets slot's vector of model (the set is created on first use).
func (m *memColl) setSem(model string, slot int32, v []float32) {
	if int(slot) >= len(m.rids) || len(v) == 0 {
		return
	}
	s := m.sem[model]
	if s == nil {
		if m.sem == nil {
			m.sem = map[string]*semSet{}
		}
		s = newSemSet(len(v), len(m.rids))
		m.sem[model] = s
	}
	if len(v) != s.dim {
		return
	}
	_, scale := quantize(s.rowFor(int(slot))[:0], v)
	s.put(m, slot, scale)
}

// setSemQ8 sets slot's vector of model from its stored form
// (appendQ8Bytes), as it is.
func (m *memColl) setSemQ8(model string, slot int32, b []byte) {
	if int(slot) >= len(m.rids) || len(b) <= 4 {
		return
	}
	dim := len(b) - 4
	s := m.sem[model]
	if s == nil {
		if m.sem == nil {
			m.sem = map[string]*semSet{}
		}
		s = newSemSet(dim, len(m.rids))
		m.sem[model] = s
	}
	if dim != s.dim {
		return
	}
	row := s.rowFor(int(slot))
	for j, c := range b[4:] {
		row[j] = int8(c)
	}
	s.put(m, slot, math.Float32frombits(binary.LittleEndian.Uint32(b)))
}

// put sets slot's scale (its row is written).
func (s *semSet) put(m *memColl, slot int32, scale float32) {
	if s.scales[slot] == 0 && m.doc(int(slot)) != "" && scale != 0 {
		s.n++
	}
	s.scales[slot] = scale
}

// removeSem forgets the vectors of a slot being removed.
func (m *memColl) removeSem(slot int32) {
	for _, s := range m.sem {
		if s.scales[slot] != 0 {
			s.n--
			s.scales[slot] = 0
		}
	}
}

// semTop ranks the live slots that have a vector of the set by cosine
// with the query (both unit length: the dot product). Where most slots
// have a vector the dot products are computed dotBlock rows at a time
// (dotRows: the same integers as dotSem, row by row, which is kept for a
// set still being filled: its empty rows are skipped unread).
func (m *memColl) semTop(s *semSet, qv []int8, qscale float32, n int, prefix string) []scored {
	d := s.dim
	var sumQ int32
	for _, v := range qv {
		sumQ += int32(v)
	}
	blocks := 2*s.n >= len(s.scales)
	return best(m.scanParallel(n, func(lo, hi int, h *topHeap) {
		var dots [dotBlock]int32
		for b := lo; b < hi; {
			// [b, e) lies in one dotBlock-aligned run of rows, so within
			// one of the set's blocks (dotBlock divides semBlock).
			e := min(hi, (b/dotBlock+1)*dotBlock)
			stored := s.blocks[b/semBlock]
			if stored == nil { // no vector in these rows
				b = e
				continue
			}
			if blocks {
				o := b % semBlock * d
				dotRows(qv, stored[o:o+(e-b)*d], sumQ, dots[:e-b])
			}
			for i := b; i < e; i++ {
				sc := s.scales[i]
				if sc == 0 {
					continue
				}
				dot := dots[i-b]
				if !blocks {
					dot = dotSem(qv, s.row(i))
				}
				f := float64(dot) * float64(qscale*sc)
				if !h.admits(f) {
					continue
				}
				doc := m.doc(i)
				if doc == "" || (prefix != "" && !strings.HasPrefix(doc, prefix)) {
					continue
				}
				h.push(scored{m.rids[i], f})
			}
			b = e
		}
	}), n)
}

// dotBlock is how many rows semTop's dot products are computed at once.
const dotBlock = 64

// semantic ranks q's collection by q.Semantic; nil when the collection has
// no vector of q.SemanticModel.
func (x *Index) semantic(ctx context.Context, q corpus.Query, n int) ([]scored, error) {
	if len(q.Semantic) == 0 || q.SemanticModel == "" {
		return nil, nil
	}
	m, err := x.collection(ctx, q.Collection)
	if err != nil || m == nil {
		return nil, err
	}
	x.cacheMu.RLock()
	defer x.cacheMu.RUnlock()
	s := m.sem[q.SemanticModel]
	if s == nil || s.n == 0 {
		return nil, nil
	}
	if len(q.Semantic) != s.dim {
		return nil, invalid("semantic query vector has length %d, model %q has %d", len(q.Semantic), q.SemanticModel, s.dim)
	}
	qv, qs := quantize(make([]int8, 0, s.dim), q.Semantic)
	return m.semTop(s, qv, qs, n, q.URLPrefix), nil
}

// semanticCosines is the cosine under q.Semantic of every row ranked in
// lists that has a vector of q.SemanticModel (rows without one are left
// out).
func (x *Index) semanticCosines(ctx context.Context, q corpus.Query, lists ...[]scored) (map[int64]float64, error) {
	out := map[int64]float64{}
	m, err := x.collection(ctx, q.Collection)
	if err != nil || m == nil {
		return out, err
	}
	x.cacheMu.RLock()
	defer x.cacheMu.RUnlock()
	s := m.sem[q.SemanticModel]
	if s == nil || len(q.Semantic) != s.dim {
		return out, nil
	}
	qv, qs := quantize(make([]int8, 0, s.dim), q.Semantic)
	for _, l := range lists {
		for _, r := range l {
			slot, ok := m.slotOf(r.rid)
			if !ok || int(slot) >= len(s.scales) {
				continue
			}
			if _, done := out[r.rid]; done {
				continue
			}
			if sc := s.scales[slot]; sc != 0 {
				out[r.rid] = float64(dotSem(qv, s.row(int(slot)))) * float64(qs*sc)
			}
		}
	}
	return out, nil
}

// HasSemantic reports whether the index holds (or held) a semantic vector
// of any model.
func (x *Index) HasSemantic() bool { return x.hasSem.Load() }

// SemanticChunks counts the live chunks of collection that have a vector
// of model.
func (x *Index) SemanticChunks(ctx context.Context, collection, model string) (int, error) {
	m, err := x.collection(ctx, collection)
	if err != nil || m == nil {
		return 0, err
	}
	x.cacheMu.RLock()
	defer x.cacheMu.RUnlock()
	if s := m.sem[model]; s != nil {
		return s.n, nil
	}
	return 0, nil
}

// LiveChunks counts the live chunks of collection (corpus.LiveCounter).
func (x *Index) LiveChunks(ctx context.Context, collection string) (int, error) {
	m, err := x.collection(ctx, collection)
	if err != nil || m == nil {
		return 0, err
	}
	x.cacheMu.RLock()
	defer x.cacheMu.RUnlock()
	return m.live, nil
}

// SemanticMissing lists chunks without a vector of model, by row id.
func (x *Index) SemanticMissing(ctx context.Context, model string, after int64, limit int) ([]corpus.SemanticTodo, error) {
	if model == "" || limit <= 0 {
		return nil, invalid("semantic model and a positive limit are required")
	}
	rows, err := x.db.QueryContext(ctx, `SELECT k.rid, COALESCE(k.title, (SELECT d.title FROM docs d INDEXED BY docs_lo WHERE d.lo = `+ridDoc("k.rid")+`)), k.headings, k.body FROM chunks k
		WHERE k.rid > ? AND NOT EXISTS (SELECT 1 FROM semvecs s WHERE s.rid = k.rid AND s.model = ?)
		ORDER BY k.rid LIMIT ?`, after, model, limit)
	if err != nil {
		return nil, dbErr(err, "list chunks without semantic vectors")
	}
	defer rows.Close()
	var out []corpus.SemanticTodo
	for rows.Next() {
		var c kgagent.Chunk
		var rid int64
		var hp string
		if err := rows.Scan(&rid, &c.Title, &hp, (*packedText)(&c.Text)); err != nil {
			return nil, dbErr(err, "list chunks without semantic vectors")
		}
		_ = json.Unmarshal([]byte(hp), &c.HeadingPath)
		out = append(out, corpus.SemanticTodo{Key: rid, Text: corpus.IndexText(c)})
	}
	return out, dbErr(rows.Err(), "list chunks without semantic vectors")
}

// SemanticProgress counts the chunks with a vector of model, and all.
func (x *Index) SemanticProgress(ctx context.Context, model string) (done, total int, err error) {
	if err := x.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM semvecs WHERE model = ?`, model).Scan(&done); err != nil {
		return 0, 0, dbErr(err, "count semantic vectors")
	}
	if err := x.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM chunks`).Scan(&total); err != nil {
		return 0, 0, dbErr(err, "count chunks")
	}
	return done, total, nil
}

// PutSemantic stores vectors of model in one transaction and adds them to
// the loaded search copies; a vector whose chunk is gone is dropped.
func (x *Index) PutSemantic(ctx context.Context, model string, vecs []corpus.SemanticVector) error {
	if model == "" {
		return invalid("semantic model is required")
	}
	for i, v := range vecs {
		if len(v.Vector) == 0 || len(v.Vector) != len(vecs[0].Vector) {
			return invalid("semantic vector %d has length %d, want %d", i, len(v.Vector), len(vecs[0].Vector))
		}
	}
	if len(vecs) == 0 {
		return nil
	}
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return dbErr(err, "begin")
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO semvecs(rid, model, vec) SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM chunks WHERE rid = ?1)`)
	if err != nil {
		return dbErr(err, "store semantic vectors")
	}
	defer st.Close()
	var (
		buf []byte
		q   []int8
	)
	for _, v := range vecs {
		buf, q = appendQ8Bytes(buf[:0], q, v.Vector)
		if _, err := st.ExecContext(ctx, v.Key, model, buf); err != nil {
			return dbErr(err, "store semantic vectors")
		}
	}
	if err := tx.Commit(); err != nil {
		return dbErr(err, "commit")
	}
	x.hasSem.Store(true)
	x.cacheMu.Lock()
	defer x.cacheMu.Unlock()
	for _, m := range x.cache {
		for _, v := range vecs {
			if slot, ok := m.slotOf(v.Key); ok {
				m.setSem(model, slot, v.Vector)
			}
		}
	}
	return nil
}

// loadSem reads collection's semantic vectors into m (whose slots are
// loaded).
func (x *Index) loadSem(ctx context.Context, collection string, m *memColl) error {
	if !x.hasSem.Load() {
		return nil
	}
	rows, err := x.db.QueryContext(ctx, `SELECT s.model, s.rid, s.vec FROM docs d JOIN semvecs s ON s.rid BETWEEN d.lo AND d.hi WHERE d.collection = ?`, collection)
	if err != nil {
		return dbErr(err, "load semantic vectors")
	}
	defer rows.Close()
	for rows.Next() {
		var model string
		var rid int64
		var blob []byte
		if err := rows.Scan(&model, &rid, &blob); err != nil {
			return dbErr(err, "load semantic vectors")
		}
		if slot, ok := m.slotOf(rid); ok {
			m.setSemQ8(model, slot, blob)
		}
	}
	return dbErr(rows.Err(), "load semantic vectors")
}

// semOld reads the semantic vectors of docURL's current chunks, keyed by
// what a rewrite must keep for a chunk to keep its vector: text hash,
// title and headings.
func (t *txWrite) semOld(ctx context.Context, collection, docURL string) (map[string][]semCarry, error) {
	rows, err := t.stmt(t.x.st.semOld).QueryContext(ctx, collection, docURL)
	if err != nil {
		return nil, dbErr(err, "read semantic vectors")
	}
	defer rows.Close()
	var out map[string][]semCarry
	for rows.Next() {
		var title, hp, model string
		var hash sql.NullString
		var text string // only where the hash is derived
		body := bodyCol{text: &text}
		var blob []byte
		if err := rows.Scan(&hash, &body, &title, &hp, &model, &blob); err != nil {
			return nil, dbErr(err, "read semantic vectors")
		}
		if !hash.Valid && body.err == nil {
			hash.String = textHash(text)
		} // a corrupt body's vector is not carried (no new hash is "")
		if out == nil {
			out = map[string][]semCarry{}
		}
		k := semKey(hash.String, title, hp)
		out[k] = append(out[k], semCarry{model: model, blob: blob})
	}
	return out, dbErr(rows.Err(), "read semantic vectors")
}

func semKey(hash, title, headings string) string { return hash + "\x00" + title + "\x00" + headings }

// carrySem stores, for each new chunk of g whose key old holds, the old
// vectors under its new row id, and records them in g.sem.
func (t *txWrite) carrySem(ctx context.Context, g *writeJob, old map[string][]semCarry) error {
	for i := range g.chunks {
		c := &g.chunks[i]
		for _, o := range old[semKey(c.Hash, c.Title, headingsJSON(c.HeadingPath))] {
			if _, err := t.stmt(t.x.st.semIns).ExecContext(ctx, g.added[i], o.model, o.blob); err != nil {
				return dbErr(err, "keep semantic vectors")
			}
			g.sem = append(g.sem, semCarry{i: i, model: o.model, blob: o.blob})
		}
	}
	return nil
}

// hasSemRows reports whether semvecs holds any row.
func hasSemRows(db *sql.DB) (bool, error) {
	var n int
	err := db.QueryRow(`SELECT COUNT(*) FROM (SELECT 1 FROM semvecs LIMIT 1)`).Scan(&n)
	return n > 0, err
}

// Default fusion weights of the semantic ranking (see Config).
var (
	defaultSemanticWeight      = 1.0
	defaultSemanticDenseWeight = 0.15
)
