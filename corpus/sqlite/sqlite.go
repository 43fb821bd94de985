// Package sqlite is the embedded corpus.Index: chunks and their vectors in
// one SQLite file (modernc.org/sqlite, pure Go, WAL mode). Every ReplaceDocument is atomic (concurrent ones share a
// transaction, see write.go), so a kill -9 leaves a document as it was before that write or after it, never half-written.
//
// SQLite is the durable store; searching runs on an in-memory copy of each
// collection, loaded on first use and kept current by every write:
//   - dense search is exact: the vectors sit, int8-quantised, in one flat
//     slice scanned with dot products, split across cores for big
//     collections;
//   - keyword search is BM25F over an in-memory inverted index, with the page
//     title and the heading path as weighted fields so their words count more.
//
// Hybrid fuses the two rankings with reciprocal rank fusion. DECISIONS.md has
// the measurements behind exact search (instead of HNSW) and the in-memory
// inverted index (instead of FTS5's bm25()).
package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/internal/groupcommit"
	"github.com/kgagent/kgagent/internal/sqlitefile"
	"github.com/kgagent/kgagent/internal/text"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Config configures the index. The zero value is an in-memory index with the
// default weights.
type Config struct {
	// Path is the database file (created if missing). Empty means in memory.
	Path string
	// NoSnapshots turns off the search-copy snapshots kept beside a file
	// database (see snapshot.go); every process then builds each
	// collection's search copy from SQLite.
	NoSnapshots bool
	// CacheKiB is the page cache of each connection, in KiB (SQLite's
	// cache_size); 0 leaves SQLite's default, 2,000 KiB. Searches read
	// the search copies in memory and only their hits' rows from the file
	// (the hit cache keeps recent ones), so a long-running serve's four
	// connections held ~11 MB more at the default than at 256 KiB after
	// 1,000 searches and answers on the OpenJDK API docs.
	CacheKiB int
	// TitleWeight, HeadingWeight and BodyWeight are the BM25F field weights
	// (defaults 6, 2, 1; tuned on the Python docs benchmark).
	TitleWeight, HeadingWeight, BodyWeight float64
	// K1 and B are the BM25 parameters (defaults 2 and 0.75; a K1 above the
	// usual 1.2 suits the weighted title term frequencies of BM25F).
	K1, B float64
	// IDFExponent raises every query term's IDF to this power (default 1.5):
	// above 1 it sharpens the gap between rare, telling words and generic
	// ones ("python", "module", "function") that occur in most chunks of a
	// technical corpus. Python docs keyword MRR 0.763 -> 0.786 at 1.5.
	IDFExponent float64
	// RRFK is the reciprocal rank fusion constant (default 20: the lists are
	// short, max(k, Depth) long, so their top ranks should count more than
	// the classic 60 lets them; +0.007 MRR on the Python docs).
	RRFK float64
	// Fusion is how hybrid search fuses its rankings: FusionScore (default)
	// or FusionRRF.
	Fusion string
	// DenseWeight and KeywordWeight scale each ranking's share of the fused
	// score (defaults 0.3 and 1: the lexical embedder's ranking is the
	// weaker of the two on the Python docs benchmark).
	DenseWeight, KeywordWeight float64
	// HeadingRankWeight adds, in hybrid mode, a third ranking to the fusion:
	// BM25 over page title and heading path alone, so a section whose
	// heading says what the query asks rises even in a long page (default
	// 0.5; negative disables).
	HeadingRankWeight float64
	// PageRankWeight adds, in hybrid mode, a ranking of whole pages: BM25F
	// over each page's summed chunk term frequencies, each page represented
	// by its best chunk, so a page that covers the query as a whole rises
	// even when no single chunk does (default 0.5; negative disables).
	PageRankWeight float64
	// PrefilterRows is the collection size from which a dense query is
	// first ranked by its heaviest dimensions alone (those holding
	// PrefilterMass of its squared norm), the best candidates rescored
	// exactly (default 10000; -1 never; see memColl.topK).
	PrefilterRows int
	// PrefilterMass is the share of a query's squared norm the prefilter's
	// dimensions hold (default 0.8; 1 scans every non-zero dimension).
	PrefilterMass float64
	// Depth is how many candidates each side contributes to hybrid fusion at
	// least (default 50; at least K).
	Depth int
	// SemanticWeight is the share of the semantic ranking (Query.Semantic,
	// over the chunks that have a vector of its model) in hybrid fusion,
	// and SemanticDenseWeight the lexical dense ranking's share while the
	// semantic one is there (it replaces DenseWeight; negative: 0). See
	// DECISIONS.md for how they were measured.
	SemanticWeight, SemanticDenseWeight float64
}

// Index is the embedded corpus.Index. It is safe for concurrent use.
type Index struct {
	cfg Config
	db  *sql.DB

	writeMu sync.Mutex // one writer at a time (SQLite allows no more)

	writes *groupcommit.Queue[*writeJob] // document writes waiting for a transaction (write.go)
	st     writeStmts                    // the write path's prepared statements (write.go)

	cacheMu  sync.RWMutex
	cache    map[string]*memColl // collection -> search copy, loaded on first use
	keep     map[string]bool     // collections whose copy is started by the write that creates them (Keep)
	keepMax  int64               // the bytes kept copies may hold together (Keep); 0: no bound
	keepFrom map[string]int64    // a kept copy's bytes when Keep began keeping it (loaded) or its write created it (0)

	snaps    sync.WaitGroup // snapshots being written in the background
	snapHits atomic.Int64   // search copies read from a snapshot
	hasSem   atomic.Bool    // semvecs holds a row (or did once)
	sqlLoads atomic.Int64   // search copies built from SQLite (Rebuilds)
	// corruptBodies counts the chunks reads left out because their
	// stored body did not decode (corruptBody).
	corruptBodies atomic.Int64
}

var (
	_ corpus.Index             = (*Index)(nil)
	_ corpus.CollectionLister  = (*Index)(nil)
	_ corpus.CollectionChecker = (*Index)(nil)
)

// pageSize is the page size of an index file this package creates (an
// existing file keeps its own: SQLite reads any). A chunk row is about a
// kilobyte (its compressed body, sparse vector and headings), so SQLite's
// default 4 KiB pages held three and left a quarter of each page unused:
// 15.6 of the 158.8 MB of the OpenJDK API docs' chunks. The whole file was
// 160.7 MB with 4 KiB pages, 151.9 with 8 KiB, 148.0 with 16 KiB, 145.6
// with 64 KiB (the same rows, VACUUMed). Serve ranks from the in-memory
// search copies, and a document's chunks are a rowid range, so the larger
// reads cost little.
const pageSize = 16384

// createPaged creates the index file at path with pageSize pages, in WAL
// mode, unless it exists. A page size takes effect only before the file's
// first page is written, which the switch to WAL does, and the driver runs
// a DSN's pragmas in alphabetical order (journal_mode before page_size).
func createPaged(path string) error {
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return nil // there, or not ours to create: Open reports it
	}
	db, err := sql.Open("sqlite", sqlitefile.URI(path)+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	_, err = db.Exec(fmt.Sprintf(`PRAGMA page_size = %d; PRAGMA journal_mode = WAL`, pageSize))
	return err
}

// Open opens (creating if needed) the index at cfg.Path.
func Open(cfg Config) (*Index, error) {
	if cfg.TitleWeight == 0 {
		cfg.TitleWeight = text.BM25FTitleWeight
	}
	if cfg.K1 == 0 {
		cfg.K1 = text.BM25FK1
	}
	if cfg.IDFExponent <= 0 {
		cfg.IDFExponent = 1.5
	}
	if cfg.B == 0 {
		cfg.B = text.BM25FB
	}
	if cfg.HeadingWeight == 0 {
		cfg.HeadingWeight = text.BM25FHeadingWeight
	}
	if cfg.BodyWeight == 0 {
		cfg.BodyWeight = text.BM25FBodyWeight
	}
	if cfg.DenseWeight == 0 {
		cfg.DenseWeight = 0.3
	}
	if cfg.KeywordWeight == 0 {
		cfg.KeywordWeight = 1
	}
	if cfg.HeadingRankWeight == 0 {
		cfg.HeadingRankWeight = 0.5
	}
	if cfg.PageRankWeight == 0 {
		cfg.PageRankWeight = 0.5
	}
	if cfg.RRFK == 0 {
		cfg.RRFK = 20
	}
	if cfg.Fusion == "" {
		cfg.Fusion = FusionScore
	}
	if cfg.PrefilterRows == 0 {
		cfg.PrefilterRows = 10000
	}
	if cfg.PrefilterMass <= 0 || cfg.PrefilterMass > 1 {
		cfg.PrefilterMass = 0.8
	}
	if cfg.SemanticWeight == 0 {
		cfg.SemanticWeight = defaultSemanticWeight
	}
	if cfg.SemanticDenseWeight == 0 {
		cfg.SemanticDenseWeight = defaultSemanticDenseWeight
	}
	if cfg.Depth <= 0 {
		cfg.Depth = 50
	}
	dsn := "file::memory:"
	if cfg.Path != "" {
		dsn = sqlitefile.URI(cfg.Path)
	}
	dsn += "?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_txlock=immediate"
	if cfg.Path != "" {
		dsn += "&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
		if cfg.CacheKiB > 0 {
			dsn += fmt.Sprintf("&_pragma=cache_size(-%d)", cfg.CacheKiB)
		}
		if err := createPaged(cfg.Path); err != nil {
			return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "create corpus index")
		}
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
	x := &Index{cfg: cfg, db: db, cache: map[string]*memColl{}, writes: groupcommit.New[*writeJob](maxGroup)}
	if err := x.migrate(); err != nil {
		db.Close()
		return nil, err
	}
	if err := x.prepareWrites(); err != nil {
		db.Close()
		return nil, err
	}
	return x, nil
}

// Close writes the snapshots of the search copies that writes made newer
// than their snapshot, and releases the database.
func (x *Index) Close() error {
	x.flushSnapshots()
	x.closeWrites()
	return x.db.Close()
}

func (x *Index) migrate() error {
	// An index written by a newer kgagent, in a format this one does not
	// know, is refused rather than read wrong.
	var ver int
	if err := x.db.QueryRow(`PRAGMA user_version`).Scan(&ver); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "read corpus index format")
	}
	if ver > formatNewest {
		name := "the in-memory index"
		if x.cfg.Path != "" {
			name = filepath.Base(x.cfg.Path)
		}
		return newerFormat(name, ver)
	}
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS collections (
			name TEXT PRIMARY KEY,
			dim  INTEGER NOT NULL
		)`,
		// A chunk's collection and document URL are its document's (the
		// docs row whose range holds its rid), and so is its title where
		// the row's is NULL (format 7; formats 0-6 repeated all three in
		// every row: chunksLegacy is that table's schema).
		`CREATE TABLE IF NOT EXISTS chunks (` + chunksColumns + `)`,
		// A document's chunks have consecutive row ids (a write inserts
		// them together, with ids read from MAX(rid)): docs gives the
		// range and the count, instead of an index entry per chunk
		// holding its collection and document URL again (format 6), and
		// the title of its first chunk (by ordinal, then rid; format 7).
		`CREATE TABLE IF NOT EXISTS docs (
			collection TEXT NOT NULL,
			doc_url    TEXT NOT NULL,
			lo         INTEGER NOT NULL,
			hi         INTEGER NOT NULL,
			n          INTEGER NOT NULL,
			title      TEXT NOT NULL DEFAULT '',
			PRIMARY KEY (collection, doc_url)
		) WITHOUT ROWID`,
		// A chunk's document by its row id: the docs row with the
		// greatest lo <= rid (loadRows); a collection's documents in row
		// id order (collRows).
		`CREATE INDEX IF NOT EXISTS docs_lo ON docs(lo)`,
		// One counter that every write transaction bumps and stamps on
		// the collection it wrote: the version a snapshot must match.
		`CREATE TABLE IF NOT EXISTS writes (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL)`,
		`INSERT OR IGNORE INTO writes(id, n) VALUES (1, 0)`,
		// The semantic vector set (semantic.go).
		`CREATE TABLE IF NOT EXISTS semvecs (
			rid   INTEGER NOT NULL REFERENCES chunks(rid) ON DELETE CASCADE,
			model TEXT NOT NULL,
			vec   BLOB NOT NULL,
			PRIMARY KEY (rid, model)
		) WITHOUT ROWID`,
	}
	for _, s := range stmts {
		if _, err := x.db.Exec(s); err != nil {
			return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "create corpus index schema")
		}
	}
	var hasVersion int
	if err := x.db.QueryRow(`SELECT COUNT(*) FROM pragma_table_info('collections') WHERE name = 'version'`).Scan(&hasVersion); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "read corpus index schema")
	}
	has, err := hasSemRows(x.db)
	if err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "read corpus index schema")
	}
	x.hasSem.Store(has)
	if hasVersion == 0 {
		if _, err := x.db.Exec(`ALTER TABLE collections ADD COLUMN version INTEGER NOT NULL DEFAULT 0`); err != nil {
			return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "add the collection version")
		}
	}
	return x.migrateQ8()
}

// chunksColumns is the schema of the chunks table from format 7 on.
const chunksColumns = `
			rid        INTEGER PRIMARY KEY,
			id         TEXT NOT NULL,
			url        TEXT NOT NULL,
			title      TEXT,
			headings   TEXT NOT NULL,
			anchor     TEXT NOT NULL,
			ordinal    INTEGER NOT NULL,
			body       TEXT NOT NULL,
			hash       TEXT NOT NULL,
			vec        BLOB NOT NULL`

// bumpVersion stamps a new version on collection within tx.
func bumpVersion(ctx context.Context, tx *sql.Tx, collection string) (int64, error) {
	var v int64
	if err := tx.QueryRowContext(ctx, `UPDATE writes SET n = n + 1 WHERE id = 1 RETURNING n`).Scan(&v); err != nil {
		return 0, dbErr(err, "bump version")
	}
	if _, err := tx.ExecContext(ctx, `UPDATE collections SET version = ? WHERE name = ?`, v, collection); err != nil {
		return 0, dbErr(err, "bump version")
	}
	return v, nil
}

func invalid(format string, args ...any) error {
	return kgagent.Errorf(kgagent.EINVALID, format, args...)
}

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
	return x.replaceDocument(ctx, collection, docURL, chunks, vectors, nil)
}

// ReplaceDocumentTerms is ReplaceDocument with the chunks' keyword terms
// (corpus.TermsIndex): the search copy takes them instead of tokenising the
// chunks.
func (x *Index) ReplaceDocumentTerms(ctx context.Context, collection, docURL string, chunks []kgagent.Chunk, vectors [][]float32, terms []corpus.ChunkTerms) error {
	if len(terms) != len(chunks) {
		return invalid("%d chunks but %d term lists", len(chunks), len(terms))
	}
	return x.replaceDocument(ctx, collection, docURL, chunks, vectors, terms)
}

// replaceDocument is ReplaceDocument, with the chunks' terms when taken
// (else nil).
func (x *Index) replaceDocument(ctx context.Context, collection, docURL string, chunks []kgagent.Chunk, vectors [][]float32, terms []corpus.ChunkTerms) error {
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

	j := &writeJob{ctx: ctx, collection: collection, docURL: docURL, chunks: chunks, vectors: vectors, dim: dim, given: terms}
	// A search copy that the write will update gets the chunks' terms
	// now, in the caller's goroutine: the writer then only adds them, and
	// writes from several goroutines tokenise in parallel.
	x.cacheMu.RLock()
	held := x.cache[collection] != nil || x.keep[collection]
	x.cacheMu.RUnlock()
	if held && len(chunks) > 0 {
		w := x.weights()
		j.terms = make([]chunkTerms, len(chunks))
		for i := range chunks {
			j.terms[i] = j.chunkTerms(i, w)
		}
	}
	return x.write(j)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
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
		`DELETE FROM chunks WHERE rid IN (SELECT k.rid FROM ` + collRows + `)`,
		`DELETE FROM docs WHERE collection = ?1`,
		`DELETE FROM collections WHERE name = ?`,
	} {
		if _, err := tx.ExecContext(ctx, s, collection); err != nil {
			return dbErr(err, "delete collection")
		}
	}
	if _, err := bumpVersion(ctx, tx, collection); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return dbErr(err, "commit")
	}
	x.cacheMu.Lock()
	delete(x.cache, collection)
	x.removeSnapshot(collection)
	x.cacheMu.Unlock()
	return nil
}

// Collections lists the collections with their document and chunk counts.
func (x *Index) Collections(ctx context.Context) ([]corpus.CollectionInfo, error) {
	rows, err := x.db.QueryContext(ctx, `SELECT c.name, COUNT(d.doc_url), COALESCE(SUM(d.n), 0)
		FROM collections c LEFT JOIN docs d ON d.collection = c.name GROUP BY c.name ORDER BY c.name`)
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
// deleted since). A collection whose search copy is held exists (the copy
// is dropped when it is deleted, and searches answer from it): it costs no
// query, which was 3% of an answer's CPU (corpus.Service.Search asks
// before every search).
func (x *Index) HasCollection(ctx context.Context, name string) (bool, error) {
	x.cacheMu.RLock()
	held := x.cache[name] != nil
	x.cacheMu.RUnlock()
	if held {
		return true, nil
	}
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

	var ranked, semScores []scored
	switch q.Mode {
	case corpus.ModeDense:
		d, err := x.dense(ctx, q, q.K)
		if err != nil {
			return nil, err
		}
		ranked = d
		s, err := x.semantic(ctx, q, q.K)
		if err != nil {
			return nil, err
		}
		if len(s) > 0 {
			ranked, semScores = ScoreFusion(q.K, []float64{x.cfg.SemanticWeight, max(0, x.cfg.SemanticDenseWeight)}, s, d), s
		}
	case corpus.ModeKeyword:
		k, err := x.keyword(ctx, q, q.K, false)
		if err != nil {
			return nil, err
		}
		ranked = k
	case corpus.ModeHybrid:
		depth := max(q.K, x.cfg.Depth)
		// the dense scan runs beside the keyword rankings
		var d, sem []scored
		var derr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			if d, derr = x.dense(ctx, q, depth); derr == nil {
				sem, derr = x.semantic(ctx, q, depth)
			}
		}()
		pages := 0
		if x.cfg.PageRankWeight > 0 {
			pages = depth
		}
		lists, weights := [][]scored{nil}, []float64{x.cfg.DenseWeight}
		err := func() error {
			k, p, err := x.keywordPages(ctx, q, depth, false, pages)
			if err != nil {
				return err
			}
			lists, weights = append(lists, k), append(weights, x.cfg.KeywordWeight)
			if pages > 0 {
				lists, weights = append(lists, p), append(weights, x.cfg.PageRankWeight)
			}
			if x.cfg.HeadingRankWeight > 0 {
				h, err := x.keyword(ctx, q, depth, true)
				if err != nil {
					return err
				}
				lists, weights = append(lists, h), append(weights, x.cfg.HeadingRankWeight)
			}
			return nil
		}()
		<-done // never leave the scan running past Search
		if err != nil {
			return nil, err
		}
		if derr != nil {
			return nil, derr
		}
		lists[0] = d
		if len(sem) > 0 {
			weights[0] = max(0, x.cfg.SemanticDenseWeight)
		}
		switch {
		case x.cfg.Fusion == FusionRRF:
			if len(sem) > 0 {
				lists, weights = append(lists, sem), append(weights, x.cfg.SemanticWeight)
			}
			ranked = RRF(x.cfg.RRFK, q.K, weights, lists...)
			semScores = sem
		case len(sem) > 0:
			// Every candidate's own cosine, not only the semantic
			// ranking's best (SemanticFusion).
			cos, err := x.semanticCosines(ctx, q, lists...)
			if err != nil {
				return nil, err
			}
			for _, s := range sem {
				cos[s.rid] = s.score
			}
			ranked = SemanticFusion(q.K, x.cfg.SemanticWeight, sem, cos, lists[1], weights, lists...)
			return x.load(ctx, q.Collection, ranked, cos)
		default:
			ranked = ScoreFusion(q.K, weights, lists...)
		}
	}
	var cos map[int64]float64
	if len(semScores) > 0 {
		cos = make(map[int64]float64, len(semScores))
		for _, s := range semScores {
			cos[s.rid] = s.score
		}
	}
	return x.load(ctx, q.Collection, ranked, cos)
}

// scored is a row id with a score.
type scored struct {
	rid   int64
	score float64
}

// Fusion names how hybrid search fuses its rankings.
const (
	FusionScore = "score" // ScoreFusion (the default)
	FusionRRF   = "rrf"   // reciprocal rank fusion
)

// fusionDepth is how many of a ranking's best hits set its confidence.
const fusionDepth = 10

// fusionFloor is the share of its weight a ranking keeps however flat its
// scores are (0.5: measured on three question sets, see DECISIONS.md).
const fusionFloor = 0.5

// ScoreFusion fuses rankings by their scores, not only their ranks: each
// ranking's scores are min-max normalised over the ranking (min 0 for a
// ranking of fewer than ten hits), and weighted
// by the ranking's weight times its confidence for this query — how far its
// best hit stands above its tenth, relative to the best (a ranking whose
// scores are all alike says little about the order of its hits). So a
// ranking that clearly prefers a hit keeps it on top, and a flat, weaker
// ranking cannot pull it down the way plain RRF lets it. It keeps the best
// n.
func ScoreFusion(n int, weights []float64, rankings ...[]scored) []scored {
	sum := map[int64]float64{}
	addScores(sum, weights, rankings)
	return bestOf(sum, n)
}

// bestOf is the best n of the fused scores sum.
func bestOf(sum map[int64]float64, n int) []scored {
	out := make([]scored, 0, len(sum))
	for rid, s := range sum {
		out = append(out, scored{rid, s})
	}
	return best(out, n)
}

// addScores adds ScoreFusion's share of each ranking to sum.
func addScores(sum map[int64]float64, weights []float64, rankings [][]scored) {
	for j, r := range rankings {
		if len(r) == 0 {
			continue
		}
		top, low := r[0].score, r[len(r)-1].score
		tenth := r[min(fusionDepth, len(r))-1].score
		if top <= 0 || top == low {
			// One score for all: the ranking adds its order only.
			for i, s := range r {
				sum[s.rid] += weights[j] * 0.1 / float64(i+1)
			}
			continue
		}
		conf := (top - tenth) / top
		w := weights[j] * (fusionFloor + conf)
		if len(r) < fusionDepth {
			low = 0 // too few hits to say what a low score is
		}
		for _, s := range r {
			sum[s.rid] += w * (s.score - low) / (top - low)
		}
	}
}

// The semantic ranking's share in SemanticFusion grows from its weight to
// agreeBoost times it as the keyword ranking's best hit looks less like
// what the semantic model finds best: its cosine, relative to the semantic
// ranking's best, falling from agreeHigh to agreeLow (measured on four
// question sets, see corpus/minilm/DECISIONS.md).
const (
	agreeBoost = 2.0
	agreeHigh  = 0.7
	agreeLow   = 0.6
)

// SemanticFusion fuses the lexical rankings (with their weights, as
// ScoreFusion does) with the semantic ranking sem, two ways unlike
// ScoreFusion:
//
//   - Every candidate is scored by its own cosine cos[rid], min-max
//     normalised over sem as the semantic ranking's own hits are (its
//     spread counted as at least semanticSpreadFloor): a
//     candidate of the lexical rankings that the semantic model puts far
//     below its last hit gets a negative share, where ScoreFusion gave it
//     the same nothing as that last hit. A word match the model finds
//     unrelated to the question sinks; one it finds close stays. A
//     candidate without a vector (not yet embedded) gets no share.
//   - The semantic ranking's weight depends on the query (semanticShare):
//     when the keyword ranking's best hit is one the semantic model also
//     rates close to its best, the two agree and keep their weights; when
//     the model rates it far below, the words matched are not what the
//     question means and the semantic ranking counts up to twice.
//
// It keeps the best n.
func SemanticFusion(n int, semWeight float64, sem []scored, cos map[int64]float64, keyword []scored, weights []float64, lexical ...[]scored) []scored {
	sum := map[int64]float64{}
	addScores(sum, weights, lexical)
	if len(sem) == 0 {
		return bestOf(sum, n)
	}
	top, low := sem[0].score, sem[len(sem)-1].score
	if top <= 0 || top == low {
		addScores(sum, []float64{semWeight}, [][]scored{sem})
		return bestOf(sum, n)
	}
	tenth := sem[min(fusionDepth, len(sem))-1].score
	if len(sem) < fusionDepth {
		low = 0 // too few hits to say what a low score is
	}
	kc, ok := 0.0, false
	if len(keyword) > 0 {
		kc, ok = cos[keyword[0].rid]
	}
	w := semWeight * semanticShare(kc, ok || len(keyword) == 0, top) * (fusionFloor + (top-tenth)/top)
	for _, s := range sem {
		if _, ok := sum[s.rid]; !ok {
			sum[s.rid] = 0 // every semantic hit is a candidate
		}
	}
	// A flat semantic ranking (near-duplicate pages: its best and last hits
	// a few thousandths apart) would blow up a small cosine gap into a large
	// negative share; its spread counts as at least semanticSpreadFloor.
	spread := max(top-low, semanticSpreadFloor)
	for rid := range sum {
		if c, ok := cos[rid]; ok {
			sum[rid] += w * (c - low) / spread
		}
	}
	return bestOf(sum, n)
}

// semanticSpreadFloor is the least spread (best cosine less last) of the
// semantic ranking SemanticFusion normalises cosines by. Below it, the
// ranking is flat and its differences say little: a keyword hit with cosine
// 0.62 when the semantic hits lie between 0.705 and 0.71 would otherwise get
// -17 times the semantic weight and fall below every hit. Ordinary rankings
// spread wider and are not affected.
const semanticSpreadFloor = 0.05

// semanticShare is the factor (1 to agreeBoost) on the semantic ranking's
// weight for a query whose keyword ranking's best hit has cosine kc (known
// reports whether it has a vector; an empty keyword ranking counts as
// cosine 0) when the semantic ranking's best is top.
func semanticShare(kc float64, known bool, top float64) float64 {
	if !known || top <= 0 {
		return 1
	}
	r := kc / top
	t := min(1, max(0, (agreeHigh-r)/(agreeHigh-agreeLow)))
	return 1 + (agreeBoost-1)*t
}

// RRF fuses rankings by reciprocal rank fusion: each row scores the sum of
// weight/(k0+rank) over the rankings it appears in (rank from 1). It keeps
// the best n.
func RRF(k0 float64, n int, weights []float64, rankings ...[]scored) []scored {
	sum := map[int64]float64{}
	for j, r := range rankings {
		for i, s := range r {
			sum[s.rid] += weights[j] / (k0 + float64(i+1))
		}
	}
	out := make([]scored, 0, len(sum))
	for rid, s := range sum {
		out = append(out, scored{rid, s})
	}
	return best(out, n)
}

// load fetches the chunks of ranked rows of collection, keeping their order
// (with each row's semantic cosine from cos, when given);
// rows deleted since they were ranked are skipped. Chunks the collection's
// hit cache holds are not read again; those read are put there.
func (x *Index) load(ctx context.Context, collection string, ranked []scored, cos map[int64]float64) ([]corpus.Hit, error) {
	if len(ranked) == 0 {
		return nil, nil
	}
	// The slot of each row, -1 when the search copy does not hold it.
	x.cacheMu.RLock()
	m := x.cache[collection]
	slots := make([]int32, len(ranked))
	for i, r := range ranked {
		slots[i] = -1
		if m != nil {
			if s, ok := m.slotOf(r.rid); ok {
				slots[i] = s
			}
		}
	}
	x.cacheMu.RUnlock()
	// hits[i] is ranked[i]'s chunk once found; a cached chunk is shared
	// with the cache, so its heading path is copied for the caller.
	hits := make([]corpus.Hit, len(ranked))
	found := make([]bool, len(ranked))
	var miss []int64
	for i, r := range ranked {
		if slots[i] >= 0 {
			if ch, memo, ok := m.hits.get(slots[i]); ok {
				ch.HeadingPath = slices.Clone(ch.HeadingPath)
				hits[i], found[i] = corpus.Hit{Chunk: ch, Score: r.score, Semantic: cos[r.rid], Memo: memo}, true
				continue
			}
		}
		miss = append(miss, r.rid)
	}
	if len(miss) > 0 {
		read, err := x.loadRows(ctx, miss)
		if err != nil {
			return nil, err
		}
		for i, r := range ranked {
			ch, ok := read[r.rid]
			if found[i] || !ok {
				continue
			}
			hits[i], found[i] = corpus.Hit{Chunk: ch, Score: r.score, Semantic: cos[r.rid]}, true
			if slots[i] >= 0 {
				memo := corpus.NewTextMemo(ch.Text)
				hits[i].Memo = memo
				ch.HeadingPath = slices.Clone(ch.HeadingPath)
				m.hits.put(slots[i], ch, memo)
			}
		}
	}
	out := hits[:0]
	for i := range hits {
		if found[i] {
			out = append(out, hits[i])
		}
	}
	return out, nil
}

// hitRowsSQL reads the chunks of the row ids in the JSON array ?1 (those
// that still exist), each with its document (the docs row with the
// greatest lo at or below its rid): one statement prepared once, where an
// IN list of the ids' count was parsed again for every search.
var hitRowsSQL = `SELECT k.rid, ` + idSQL("k.") + `, d.collection, d.doc_url, ` + urlSQL("d.doc_url", "k.url") + `, COALESCE(k.title, d.title), k.headings, ` + anchorSQL("k.") + `, k.ordinal, k.body, ` + hashSQL("k.") + `
	FROM json_each(?1) j CROSS JOIN chunks k ON k.rid = j.value CROSS JOIN docs d INDEXED BY docs_lo ON d.lo = ` + ridDoc("k.rid") + `
	WHERE k.rid <= d.hi`

// loadRows reads the chunks of rids (those that still exist) by rid, in
// row id order rather than rank order: a document's chunks are
// consecutive rows that share leaf pages, so each page is read from the
// file once while the connection's small page cache holds it.
func (x *Index) loadRows(ctx context.Context, rids []int64) (map[int64]kgagent.Chunk, error) {
	rids = slices.Clone(rids)
	slices.Sort(rids)
	ids := make([]byte, 0, 8*len(rids)+2)
	ids = append(ids, '[')
	for i, rid := range rids {
		if i > 0 {
			ids = append(ids, ',')
		}
		ids = strconv.AppendInt(ids, rid, 10)
	}
	ids = append(ids, ']')
	rows, err := x.st.hitRows.QueryContext(ctx, string(ids))
	if err != nil {
		return nil, dbErr(err, "load chunks")
	}
	defer rows.Close()
	byRid := make(map[int64]kgagent.Chunk, len(rids))
	for rows.Next() {
		var rid int64
		var c kgagent.Chunk
		var hp string
		var dc derivedCols
		if err := rows.Scan(&rid, &dc.id, &c.Collection, &c.DocURL, &c.URL, &c.Title, &hp, &dc.anchor, &c.Ordinal, (*packedText)(&c.Text), &dc.hash); err != nil {
			return nil, dbErr(err, "load chunks")
		}
		dc.fill(&c)
		_ = json.Unmarshal([]byte(hp), &c.HeadingPath)
		if len(c.HeadingPath) == 0 {
			c.HeadingPath = nil
		}
		byRid[rid] = c
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(err, "load chunks")
	}
	return byRid, nil
}

// appendQ8Bytes appends v in the form chunk vectors are stored in: the
// scale quantize gives it, as a little-endian float32, then its int8
// components (dim+4 bytes, about a quarter of the float32 form earlier
// versions stored; the search copy holds exactly these values, so nothing
// it ranks by is lost). q is scratch space, returned for reuse.
func appendQ8Bytes(b []byte, q []int8, v []float32) ([]byte, []int8) {
	q, scale := quantize(q[:0], v)
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(scale))
	for _, c := range q {
		b = append(b, byte(c))
	}
	return b, q
}

// docRange is the SQL condition that a chunks row (aliased p, "" or "k.")
// is one of the document ?2 of collection ?1: its row id in the
// document's range (docs; from format 7 on the ranges of two documents
// never overlap, and the range is the only record of a row's document).
func docRange(p string) string {
	return p + `rid BETWEEN (SELECT lo FROM docs WHERE collection = ?1 AND doc_url = ?2) AND (SELECT hi FROM docs WHERE collection = ?1 AND doc_url = ?2)`
}

// ridDoc is the SQL of the lo of the document of the chunk row id rid:
// the docs row with the greatest lo at or below it (docs_lo).
func ridDoc(rid string) string {
	return `(SELECT lo FROM docs INDEXED BY docs_lo WHERE lo <= ` + rid + ` ORDER BY lo DESC LIMIT 1)`
}

// collRows is the FROM clause of the chunk rows of collection ?1 with
// their documents, docs d and chunks k, in row id order when ordered by
// d.lo: documents by their range, which docs_lo gives in order, and each
// document's rows by a row id range search, which reads them in row id
// order (an ORDER BY k.rid too would sort every document's rows again).
const collRows = `docs d INDEXED BY docs_lo JOIN chunks k ON k.rid BETWEEN d.lo AND d.hi WHERE d.collection = ?1`

// packQ8 rewrites the vector b (appendQ8Bytes, dim+4 bytes) in the sparse
// form when that is shorter: the scale, then a bitmap of ceil(dim/8) bytes
// (bit j%8 of byte j/8 set when component j is not zero), then the
// non-zero components in order. The lexical embedder's int8 vectors are
// about two thirds zeros (OpenJDK API docs: 37% non-zero), so a 388-byte
// vector takes ~190. A vector with few zeros stays dense; the two forms
// are told apart by length (sparse is always shorter than dim+4). dst is
// scratch space; the result aliases dst, or is b itself when b stays
// dense: a caller must not pass that result as the next call's dst (it
// would be packed over its own input).
func packQ8(dst, b []byte) []byte {
	dim := len(b) - 4
	nb := (dim + 7) / 8
	nz := 0
	for _, c := range b[4:] {
		if c != 0 {
			nz++
		}
	}
	if 4+nb+nz >= len(b) {
		return b
	}
	dst = slices.Grow(dst[:0], 4+nb+nz)
	dst = append(dst, b[:4]...)
	dst = append(dst, make([]byte, nb)...)
	for j, c := range b[4:] {
		if c != 0 {
			dst[4+j/8] |= 1 << (j % 8)
			dst = append(dst, c)
		}
	}
	return dst
}

// unpackQ8 appends to dst the dim+4-byte form (appendQ8Bytes) of a stored
// vector of dim components, dense or sparse (packQ8); ok is false when b
// is neither (a corrupt row, or a float32 vector of format 0).
func unpackQ8(dst, b []byte, dim int) ([]byte, bool) {
	if len(b) == dim+4 {
		return append(dst, b...), true
	}
	nb := (dim + 7) / 8
	if dim <= 0 || len(b) < 4+nb || len(b) >= dim+4 {
		return dst, false
	}
	bm, vals := b[4:4+nb], b[4+nb:]
	if dim%8 != 0 && bm[nb-1]>>(dim%8) != 0 {
		return dst, false // a bit past the last component
	}
	n := 0
	for _, c := range bm {
		n += bits.OnesCount8(c)
	}
	if n != len(vals) {
		return dst, false
	}
	dst = append(dst, b[:4]...)
	for j := range dim {
		if bm[j/8]&(1<<(j%8)) != 0 {
			dst = append(dst, vals[0])
			vals = vals[1:]
		} else {
			dst = append(dst, 0)
		}
	}
	return dst, true
}

// appendVec decodes a little-endian float32 blob (format 0, see
// migrate.go) onto dst.
func appendVec(dst []float32, b []byte) []float32 {
	for i := 0; i+4 <= len(b); i += 4 {
		dst = append(dst, math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
	}
	return dst
}
