// Package sqlite is the embedded corpus.Index: chunks, their vectors and an
// FTS5 keyword index in one SQLite file (modernc.org/sqlite, pure Go, WAL
// mode). Every ReplaceDocument is one transaction, so a kill -9 leaves a
// document as it was before that write or after it, never half-written.
//
// Dense search is exact: each collection's vectors are cached in memory as
// one flat []float32 and scanned with float32 dot products split across
// cores; see DECISIONS.md for the measurements behind choosing exact search
// over an HNSW graph. Keyword search is FTS5's BM25 with the title and the
// heading path as separately weighted columns, so title words count more.
// Hybrid fuses the two rankings with reciprocal rank fusion.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Config configures the index. The zero value is an in-memory index with the
// default weights.
type Config struct {
	// Path is the database file (created if missing). Empty means in memory.
	Path string
	// TitleWeight, HeadingWeight and BodyWeight are the BM25 column weights
	// (defaults 4, 2, 1).
	TitleWeight, HeadingWeight, BodyWeight float64
	// RRFK is the reciprocal rank fusion constant (default 60).
	RRFK float64
	// Depth is how many candidates each side contributes to hybrid fusion at
	// least (default 50; at least K).
	Depth int
}

// Index is the embedded corpus.Index. It is safe for concurrent use.
type Index struct {
	cfg Config
	db  *sql.DB

	writeMu sync.Mutex // one writer at a time (SQLite allows no more)

	cacheMu sync.RWMutex
	cache   map[string]*vecSet // collection -> vectors, loaded on first use
}

var (
	_ corpus.Index             = (*Index)(nil)
	_ corpus.CollectionLister  = (*Index)(nil)
	_ corpus.CollectionChecker = (*Index)(nil)
)

// vecSet is the in-memory copy of one collection's vectors.
type vecSet struct {
	dim  int
	rids []int64
	docs []string // doc URL of each row, for URL-prefix filters
	vecs []float32
	pos  map[int64]int
}

// Open opens (creating if needed) the index at cfg.Path.
func Open(cfg Config) (*Index, error) {
	if cfg.TitleWeight == 0 {
		cfg.TitleWeight = 4
	}
	if cfg.HeadingWeight == 0 {
		cfg.HeadingWeight = 2
	}
	if cfg.BodyWeight == 0 {
		cfg.BodyWeight = 1
	}
	if cfg.RRFK == 0 {
		cfg.RRFK = 60
	}
	if cfg.Depth <= 0 {
		cfg.Depth = 50
	}
	dsn := "file::memory:"
	if cfg.Path != "" {
		dsn = "file:" + cfg.Path
	}
	dsn += "?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_txlock=immediate"
	if cfg.Path != "" {
		dsn += "&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "open corpus index")
	}
	if cfg.Path == "" {
		db.SetMaxOpenConns(1) // every connection would be its own memory database
	} else {
		db.SetMaxOpenConns(max(4, runtime.GOMAXPROCS(0)))
	}
	x := &Index{cfg: cfg, db: db, cache: map[string]*vecSet{}}
	if err := x.migrate(); err != nil {
		db.Close()
		return nil, err
	}
	return x, nil
}

// Close releases the database.
func (x *Index) Close() error { return x.db.Close() }

func (x *Index) migrate() error {
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS collections (
			name TEXT PRIMARY KEY,
			dim  INTEGER NOT NULL
		)`,
		`CREATE TABLE IF NOT EXISTS chunks (
			rid        INTEGER PRIMARY KEY,
			id         TEXT NOT NULL,
			collection TEXT NOT NULL,
			doc_url    TEXT NOT NULL,
			url        TEXT NOT NULL,
			title      TEXT NOT NULL,
			headings   TEXT NOT NULL,
			anchor     TEXT NOT NULL,
			ordinal    INTEGER NOT NULL,
			body       TEXT NOT NULL,
			hash       TEXT NOT NULL,
			vec        BLOB NOT NULL
		)`,
		`CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(collection, doc_url)`,
		`CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(title, headings, body, tokenize = "porter unicode61 tokenchars '_'")`,
	}
	for _, s := range stmts {
		if _, err := x.db.Exec(s); err != nil {
			return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "create corpus index schema")
		}
	}
	return nil
}

func invalid(format string, args ...any) error { return kgagent.Errorf(kgagent.EINVALID, format, args...) }

func dbErr(err error, what string) error {
	if err == nil {
		return nil
	}
	if c := kgagent.ErrorCode(err); c == kgagent.ECANCELED || c == kgagent.ETIMEOUT {
		return err
	}
	return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "corpus index: %s", what)
}

// ReplaceDocument atomically replaces the chunks of docURL in collection.
func (x *Index) ReplaceDocument(ctx context.Context, collection, docURL string, chunks []kgagent.Chunk, vectors [][]float32) error {
	if collection == "" {
		return invalid("collection is required")
	}
	if docURL == "" {
		return invalid("document URL is required")
	}
	if len(chunks) != len(vectors) {
		return invalid("%d chunks but %d vectors", len(chunks), len(vectors))
	}
	dim := 0
	for i, c := range chunks {
		if c.DocURL != docURL {
			return invalid("chunk %d belongs to %q, not %q", i, c.DocURL, docURL)
		}
		if c.ID == "" {
			return invalid("chunk %d has no id", i)
		}
		if i == 0 {
			dim = len(vectors[i])
		}
		if len(vectors[i]) != dim || dim == 0 {
			return invalid("vector %d has length %d, want %d", i, len(vectors[i]), dim)
		}
	}

	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return dbErr(err, "begin")
	}
	defer tx.Rollback()

	if len(chunks) > 0 {
		var have int
		err := tx.QueryRowContext(ctx, `SELECT dim FROM collections WHERE name = ?`, collection).Scan(&have)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if _, err := tx.ExecContext(ctx, `INSERT INTO collections(name, dim) VALUES (?, ?)`, collection, dim); err != nil {
				return dbErr(err, "create collection")
			}
		case err != nil:
			return dbErr(err, "read collection")
		case have != dim:
			return invalid("collection %q holds %d-dimensional vectors, got %d", collection, have, dim)
		}
	}

	removed, err := deleteDoc(ctx, tx, collection, docURL)
	if err != nil {
		return err
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO chunks(id, collection, doc_url, url, title, headings, anchor, ordinal, body, hash, vec)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return dbErr(err, "prepare insert")
	}
	defer ins.Close()
	fts, err := tx.PrepareContext(ctx, `INSERT INTO chunks_fts(rowid, title, headings, body) VALUES (?, ?, ?, ?)`)
	if err != nil {
		return dbErr(err, "prepare fts insert")
	}
	defer fts.Close()
	added := make([]int64, len(chunks))
	for i, c := range chunks {
		hp, _ := json.Marshal(nonNil(c.HeadingPath))
		res, err := ins.ExecContext(ctx, c.ID, collection, docURL, c.URL, c.Title, string(hp), c.Anchor, c.Ordinal, c.Text, c.Hash, encodeVec(vectors[i]))
		if err != nil {
			return dbErr(err, "insert chunk")
		}
		rid, err := res.LastInsertId()
		if err != nil {
			return dbErr(err, "insert chunk")
		}
		added[i] = rid
		if _, err := fts.ExecContext(ctx, rid, c.Title, headingText(c), c.Text); err != nil {
			return dbErr(err, "index chunk")
		}
	}
	if err := tx.Commit(); err != nil {
		return dbErr(err, "commit")
	}

	x.cacheMu.Lock()
	if vs := x.cache[collection]; vs != nil {
		vs.remove(removed)
		for i, rid := range added {
			vs.add(rid, docURL, vectors[i])
		}
	}
	x.cacheMu.Unlock()
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// headingText is the heading path without a leading copy of the title.
func headingText(c kgagent.Chunk) string {
	var parts []string
	for _, h := range c.HeadingPath {
		if h != "" && h != c.Title {
			parts = append(parts, h)
		}
	}
	return strings.Join(parts, " \u203a ")
}

func deleteDoc(ctx context.Context, tx *sql.Tx, collection, docURL string) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT rid FROM chunks WHERE collection = ? AND doc_url = ?`, collection, docURL)
	if err != nil {
		return nil, dbErr(err, "find document")
	}
	var rids []int64
	for rows.Next() {
		var r int64
		if err := rows.Scan(&r); err != nil {
			rows.Close()
			return nil, dbErr(err, "find document")
		}
		rids = append(rids, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, dbErr(err, "find document")
	}
	if len(rids) == 0 {
		return nil, nil
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM chunks_fts WHERE rowid IN (SELECT rid FROM chunks WHERE collection = ? AND doc_url = ?)`, collection, docURL); err != nil {
		return nil, dbErr(err, "delete document")
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM chunks WHERE collection = ? AND doc_url = ?`, collection, docURL); err != nil {
		return nil, dbErr(err, "delete document")
	}
	return rids, nil
}

// DeleteDocument removes every chunk of docURL in collection.
func (x *Index) DeleteDocument(ctx context.Context, collection, docURL string) error {
	if collection == "" || docURL == "" {
		return invalid("collection and document URL are required")
	}
	return x.ReplaceDocument(ctx, collection, docURL, nil, nil)
}

// DeleteCollection removes every chunk of collection.
func (x *Index) DeleteCollection(ctx context.Context, collection string) error {
	if collection == "" {
		return invalid("collection is required")
	}
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return dbErr(err, "begin")
	}
	defer tx.Rollback()
	for _, s := range []string{
		`DELETE FROM chunks_fts WHERE rowid IN (SELECT rid FROM chunks WHERE collection = ?)`,
		`DELETE FROM chunks WHERE collection = ?`,
		`DELETE FROM collections WHERE name = ?`,
	} {
		if _, err := tx.ExecContext(ctx, s, collection); err != nil {
			return dbErr(err, "delete collection")
		}
	}
	if err := tx.Commit(); err != nil {
		return dbErr(err, "commit")
	}
	x.cacheMu.Lock()
	delete(x.cache, collection)
	x.cacheMu.Unlock()
	return nil
}

// Collections lists the collections with their document and chunk counts.
func (x *Index) Collections(ctx context.Context) ([]corpus.CollectionInfo, error) {
	rows, err := x.db.QueryContext(ctx, `SELECT c.name, COUNT(DISTINCT k.doc_url), COUNT(k.rid)
		FROM collections c LEFT JOIN chunks k ON k.collection = c.name GROUP BY c.name ORDER BY c.name`)
	if err != nil {
		return nil, dbErr(err, "list collections")
	}
	defer rows.Close()
	var out []corpus.CollectionInfo
	for rows.Next() {
		var ci corpus.CollectionInfo
		if err := rows.Scan(&ci.Name, &ci.Documents, &ci.Chunks); err != nil {
			return nil, dbErr(err, "list collections")
		}
		out = append(out, ci)
	}
	return out, dbErr(rows.Err(), "list collections")
}

// HasCollection reports whether collection was ever written to (and not
// deleted since).
func (x *Index) HasCollection(ctx context.Context, name string) (bool, error) {
	var one int
	err := x.db.QueryRowContext(ctx, `SELECT 1 FROM collections WHERE name = ?`, name).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, dbErr(err, "read collection")
}

// Search answers a dense, keyword or hybrid query.
func (x *Index) Search(ctx context.Context, q corpus.Query) ([]corpus.Hit, error) {
	if q.Collection == "" {
		return nil, invalid("collection is required")
	}
	if q.K <= 0 {
		return nil, invalid("k must be positive, got %d", q.K)
	}
	needVec, needText := false, false
	switch q.Mode {
	case corpus.ModeDense:
		needVec = true
	case corpus.ModeKeyword:
		needText = true
	case corpus.ModeHybrid:
		needVec, needText = true, true
	default:
		return nil, invalid("unknown search mode %q", q.Mode)
	}
	if needVec && len(q.Vector) == 0 {
		return nil, invalid("%s search needs a query vector", q.Mode)
	}
	if needText && strings.TrimSpace(q.Text) == "" {
		return nil, invalid("%s search needs query text", q.Mode)
	}

	var ranked []scored
	switch q.Mode {
	case corpus.ModeDense:
		d, err := x.dense(ctx, q, q.K)
		if err != nil {
			return nil, err
		}
		ranked = d
	case corpus.ModeKeyword:
		k, err := x.keyword(ctx, q, q.K)
		if err != nil {
			return nil, err
		}
		ranked = k
	case corpus.ModeHybrid:
		depth := max(q.K, x.cfg.Depth)
		var d, k []scored
		var derr, kerr error
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); d, derr = x.dense(ctx, q, depth) }()
		k, kerr = x.keyword(ctx, q, depth)
		wg.Wait()
		if derr != nil {
			return nil, derr
		}
		if kerr != nil {
			return nil, kerr
		}
		ranked = RRF(x.cfg.RRFK, q.K, d, k)
	}
	return x.load(ctx, ranked)
}

// scored is a row id with a score.
type scored struct {
	rid   int64
	score float64
}

// RRF fuses rankings by reciprocal rank fusion: each row scores the sum of
// 1/(k0+rank) over the rankings it appears in (rank from 1). It keeps the
// best n.
func RRF(k0 float64, n int, rankings ...[]scored) []scored {
	sum := map[int64]float64{}
	for _, r := range rankings {
		for i, s := range r {
			sum[s.rid] += 1 / (k0 + float64(i+1))
		}
	}
	out := make([]scored, 0, len(sum))
	for rid, s := range sum {
		out = append(out, scored{rid, s})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return out[i].rid < out[j].rid
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// ftsQuery turns free text into an FTS5 query: its content words, quoted,
// joined with OR (BM25 then ranks chunks by how many and how rare).
func ftsQuery(text string) string {
	terms := corpus.Terms(text)
	if len(terms) == 0 {
		terms = corpus.Tokens(text)
	}
	seen := map[string]bool{}
	var parts []string
	for _, t := range terms {
		if seen[t] || len(t) > 64 {
			continue
		}
		seen[t] = true
		parts = append(parts, `"`+t+`"`)
		if len(parts) == 64 {
			break
		}
	}
	return strings.Join(parts, " OR ")
}

func (x *Index) keyword(ctx context.Context, q corpus.Query, n int) ([]scored, error) {
	match := ftsQuery(q.Text)
	if match == "" {
		return nil, nil
	}
	query := fmt.Sprintf(`SELECT c.rid, bm25(chunks_fts, %g, %g, %g) AS s
		FROM chunks_fts JOIN chunks c ON c.rid = chunks_fts.rowid
		WHERE chunks_fts MATCH ? AND c.collection = ? AND substr(c.doc_url, 1, ?) = ?
		ORDER BY s LIMIT ?`, x.cfg.TitleWeight, x.cfg.HeadingWeight, x.cfg.BodyWeight)
	rows, err := x.db.QueryContext(ctx, query, match, q.Collection, len(q.URLPrefix), q.URLPrefix, n)
	if err != nil {
		return nil, dbErr(err, "keyword search")
	}
	defer rows.Close()
	var out []scored
	for rows.Next() {
		var s scored
		if err := rows.Scan(&s.rid, &s.score); err != nil {
			return nil, dbErr(err, "keyword search")
		}
		s.score = -s.score // SQLite's bm25 is lower-is-better
		out = append(out, s)
	}
	return out, dbErr(rows.Err(), "keyword search")
}

// vectors returns the cached vectors of collection, loading them on first use.
func (x *Index) vectors(ctx context.Context, collection string) (*vecSet, error) {
	x.cacheMu.RLock()
	vs := x.cache[collection]
	x.cacheMu.RUnlock()
	if vs != nil {
		return vs, nil
	}
	// Load under writeMu so no write slips between the load and caching it.
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	x.cacheMu.RLock()
	vs = x.cache[collection]
	x.cacheMu.RUnlock()
	if vs != nil {
		return vs, nil
	}
	var dim int
	err := x.db.QueryRowContext(ctx, `SELECT dim FROM collections WHERE name = ?`, collection).Scan(&dim)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil // unknown collection: nothing to cache yet
	}
	if err != nil {
		return nil, dbErr(err, "load vectors")
	}
	rows, err := x.db.QueryContext(ctx, `SELECT rid, doc_url, vec FROM chunks WHERE collection = ?`, collection)
	if err != nil {
		return nil, dbErr(err, "load vectors")
	}
	defer rows.Close()
	vs = &vecSet{dim: dim, pos: map[int64]int{}}
	docs := map[string]string{} // intern doc URLs
	for rows.Next() {
		var rid int64
		var doc string
		var blob []byte
		if err := rows.Scan(&rid, &doc, &blob); err != nil {
			return nil, dbErr(err, "load vectors")
		}
		if d, ok := docs[doc]; ok {
			doc = d
		} else {
			docs[doc] = doc
		}
		vs.add(rid, doc, decodeVec(blob))
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(err, "load vectors")
	}
	x.cacheMu.Lock()
	x.cache[collection] = vs
	x.cacheMu.Unlock()
	return vs, nil
}

func (vs *vecSet) add(rid int64, doc string, v []float32) {
	if len(v) != vs.dim {
		return
	}
	vs.pos[rid] = len(vs.rids)
	vs.rids = append(vs.rids, rid)
	vs.docs = append(vs.docs, doc)
	vs.vecs = append(vs.vecs, v...)
}

func (vs *vecSet) remove(rids []int64) {
	for _, rid := range rids {
		i, ok := vs.pos[rid]
		if !ok {
			continue
		}
		last := len(vs.rids) - 1
		if i != last {
			vs.rids[i] = vs.rids[last]
			vs.docs[i] = vs.docs[last]
			copy(vs.vecs[i*vs.dim:(i+1)*vs.dim], vs.vecs[last*vs.dim:])
			vs.pos[vs.rids[i]] = i
		}
		vs.rids = vs.rids[:last]
		vs.docs = vs.docs[:last]
		vs.vecs = vs.vecs[:last*vs.dim]
		delete(vs.pos, rid)
	}
}

func (x *Index) dense(ctx context.Context, q corpus.Query, n int) ([]scored, error) {
	vs, err := x.vectors(ctx, q.Collection)
	if err != nil || vs == nil {
		return nil, err
	}
	x.cacheMu.RLock()
	defer x.cacheMu.RUnlock()
	if len(q.Vector) != vs.dim {
		return nil, invalid("query vector has length %d, collection %q holds %d", len(q.Vector), q.Collection, vs.dim)
	}
	return vs.topK(q.Vector, n, q.URLPrefix), nil
}

// parallelMin is the row count above which a scan is split across cores.
const parallelMin = 16384

func (vs *vecSet) topK(qv []float32, n int, prefix string) []scored {
	rows := len(vs.rids)
	workers := 1
	if rows >= parallelMin {
		workers = min(runtime.GOMAXPROCS(0), rows/(parallelMin/2))
	}
	parts := make([]topHeap, workers)
	var wg sync.WaitGroup
	per := (rows + workers - 1) / workers
	for w := range workers {
		lo, hi := w*per, min(rows, (w+1)*per)
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := topHeap{n: n}
			d := vs.dim
			for i := lo; i < hi; i++ {
				if prefix != "" && !strings.HasPrefix(vs.docs[i], prefix) {
					continue
				}
				h.push(scored{vs.rids[i], float64(Dot(qv, vs.vecs[i*d:(i+1)*d]))})
			}
			parts[w] = h
		}()
	}
	wg.Wait()
	var all []scored
	for _, p := range parts {
		all = append(all, p.items...)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].score != all[j].score {
			return all[i].score > all[j].score
		}
		return all[i].rid < all[j].rid
	})
	if len(all) > n {
		all = all[:n]
	}
	return all
}

// topHeap keeps the n best scores seen (a min-heap on score).
type topHeap struct {
	n     int
	items []scored
}

func (h *topHeap) push(s scored) {
	if len(h.items) < h.n {
		h.items = append(h.items, s)
		for i := len(h.items) - 1; i > 0; {
			p := (i - 1) / 2
			if h.items[p].score <= h.items[i].score {
				break
			}
			h.items[p], h.items[i] = h.items[i], h.items[p]
			i = p
		}
		return
	}
	if s.score <= h.items[0].score {
		return
	}
	h.items[0] = s
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h.items) && h.items[l].score < h.items[m].score {
			m = l
		}
		if r < len(h.items) && h.items[r].score < h.items[m].score {
			m = r
		}
		if m == i {
			break
		}
		h.items[m], h.items[i] = h.items[i], h.items[m]
		i = m
	}
}

// Dot is the float32 dot product of two equally long vectors, unrolled by 8.
func Dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
		s4 += a[i+4] * b[i+4]
		s5 += a[i+5] * b[i+5]
		s6 += a[i+6] * b[i+6]
		s7 += a[i+7] * b[i+7]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3) + (s4 + s5) + (s6 + s7)
}

// load fetches the chunks of ranked rows, keeping their order; rows deleted
// since they were ranked are skipped.
func (x *Index) load(ctx context.Context, ranked []scored) ([]corpus.Hit, error) {
	if len(ranked) == 0 {
		return nil, nil
	}
	args := make([]any, len(ranked))
	marks := make([]string, len(ranked))
	for i, r := range ranked {
		args[i] = r.rid
		marks[i] = "?"
	}
	rows, err := x.db.QueryContext(ctx, `SELECT rid, id, collection, doc_url, url, title, headings, anchor, ordinal, body, hash
		FROM chunks WHERE rid IN (`+strings.Join(marks, ",")+`)`, args...)
	if err != nil {
		return nil, dbErr(err, "load chunks")
	}
	defer rows.Close()
	byRid := map[int64]kgagent.Chunk{}
	for rows.Next() {
		var rid int64
		var c kgagent.Chunk
		var hp string
		if err := rows.Scan(&rid, &c.ID, &c.Collection, &c.DocURL, &c.URL, &c.Title, &hp, &c.Anchor, &c.Ordinal, &c.Text, &c.Hash); err != nil {
			return nil, dbErr(err, "load chunks")
		}
		_ = json.Unmarshal([]byte(hp), &c.HeadingPath)
		if len(c.HeadingPath) == 0 {
			c.HeadingPath = nil
		}
		byRid[rid] = c
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(err, "load chunks")
	}
	hits := make([]corpus.Hit, 0, len(ranked))
	for _, r := range ranked {
		if c, ok := byRid[r.rid]; ok {
			hits = append(hits, corpus.Hit{Chunk: c, Score: r.score})
		}
	}
	return hits, nil
}

func encodeVec(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func decodeVec(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
