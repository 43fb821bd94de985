// Package sqlite is the embedded triple store: a graphrag.Store in one SQLite
// file in the data dir, through modernc.org/sqlite (pure Go, no cgo).
//
// Why SQLite: it is already the project's embedded engine, gives crash-safe
// atomic transactions (WAL, synchronous=FULL) and B-tree indexes that answer
// the store's access paths (by subject, by object, by document) in
// microseconds, which is all a bounded graph expansion needs. Expansion is an
// iterative frontier walk over prepared statements rather than a recursive
// CTE, so per-entity limits and cycle checks are exact.
//
// Each ReplaceDocument is atomic: the document's old triples are retracted,
// the entity table's reference counts adjusted and the new triples inserted,
// or nothing changes. Concurrent writes share IMMEDIATE transactions (a
// failed one is undone alone, see write.go) and insert with multi-row
// statements; a document's triples are found by their rowid range (table
// docs). DECISIONS.md has the reasons. The store also implements
// graphrag.Cache (table extract_cache) so the LLM extractor's results survive
// restarts.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/internal/groupcommit"
	"github.com/kgagent/kgagent/internal/sqlitefile"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

// FileName is the store's file inside a data dir (see OpenDir).
const FileName = "graph.db"

var (
	_ graphrag.Store = (*Store)(nil)
	_ graphrag.Cache = (*Store)(nil)
)

// Store is the embedded triple store. It is safe for concurrent use.
type Store struct {
	path string
	wdb  *sql.DB // one connection, IMMEDIATE transactions: the single writer
	rdb  *sql.DB // readers (WAL lets them run beside the writer)

	writesQ *groupcommit.Queue[*writeJob] // writes waiting for a transaction (write.go)
	w       writer                        // the writer connection; only the group's leader uses it

	// bulk is set while a bulk load defers the secondary indexes and the
	// entities (bulk.go), which tally then holds. Set before the first
	// write; both are used by the writer only.
	bulk  bool
	tally entityTally
	rows  bulkRows // the bulk load's triples, for its name index (bulknames.go)
	// memNames counts the name indexes Snapshot built from rows.
	memNames int
	// earlyNames counts those whose triples it read while the load
	// finished.
	earlyNames int
	// earlyEnts counts those whose entities it took from the finish's rows.
	earlyEnts int
	// knownStrs counts the name-index reads (early or after the finish)
	// given the writer's complete string
	// cache for the triples' strings.
	knownStrs int
	// earlySnaps counts the snapshots written while the load finished
	// and renamed into place after it.
	earlySnaps int
	// snapWaits counts SnapshotAfter's waits for its ready.
	snapWaits atomic.Int32

	stmu    sync.Mutex
	inserts map[string]string // multi-row INSERTs, by head, tail and rows

	stNear *sql.Stmt // expansion: triples by subject, then by object
	// Entities by SQL: by word, by words that start with a term (read.go);
	// prepared once, as parsing and planning them cost more than running
	// them
	stWord, stPrefix *sql.Stmt

	names nameCache // in-memory name indexes for Entities (read.go)
	// writes counts the writer's transactions that ended: while it stands
	// still, readers may trust the data_version they read last (read.go).
	writes atomic.Uint64
}

const schema = `
-- Every string the triples and entities hold (ids, names, types,
-- predicates, literals, URLs, chunk ids, collections) is stored once here
-- and referred to by its integer id: on the Python docs a triple row fell
-- from ~380 bytes of repeated text to ~40 (DECISIONS.md, "Interned
-- strings"). Id 1 is the empty string, so "no literal" is literal = 1.
-- A string is found by h, a 32-bit hash of it (kg_strhash, hash.go), with
-- s compared on the few rows of the same hash: the index on h is ~4x
-- smaller than a UNIQUE index holding every string a second time.
CREATE TABLE IF NOT EXISTS strs (
	id INTEGER PRIMARY KEY,
	h  INTEGER NOT NULL,
	s  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS strs_h ON strs(h);
INSERT OR IGNORE INTO strs (id, h, s) VALUES (1, kg_strhash(''), '');
CREATE TABLE IF NOT EXISTS triples (
	collection INTEGER NOT NULL,
	doc_url    INTEGER NOT NULL,
	s_id       INTEGER NOT NULL,
	s_name     INTEGER NOT NULL,
	s_type     INTEGER NOT NULL,
	s_norm     INTEGER NOT NULL,
	p          INTEGER NOT NULL,
	o_id       INTEGER NOT NULL,
	o_name     INTEGER NOT NULL,
	o_type     INTEGER NOT NULL,
	o_norm     INTEGER NOT NULL,
	literal    INTEGER NOT NULL,
	chunk_id   INTEGER NOT NULL,
	source_url INTEGER NOT NULL
);
-- Indexes of earlier versions (triples_doc goes in migrateDocs).
DROP INDEX IF EXISTS triples_s;
DROP INDEX IF EXISTS triples_o;
DROP INDEX IF EXISTS triples_sn;
DROP INDEX IF EXISTS triples_on;
DROP INDEX IF EXISTS triples_sn2;
DROP INDEX IF EXISTS triples_on2;
DROP INDEX IF EXISTS triples_lit;
-- The rowids of a document's triples all lie in [lo, hi]: ReplaceDocument
-- inserts them with consecutive rowids.
CREATE TABLE IF NOT EXISTS docs (
	collection TEXT NOT NULL,
	doc_url    TEXT NOT NULL,
	lo         INTEGER NOT NULL,
	hi         INTEGER NOT NULL,
	PRIMARY KEY (collection, doc_url)
) WITHOUT ROWID;
-- Every column but refs is a strs id.
CREATE TABLE IF NOT EXISTS entities (
	collection INTEGER NOT NULL,
	id         INTEGER NOT NULL,
	name       INTEGER NOT NULL,
	type       INTEGER NOT NULL,
	norm       INTEGER NOT NULL,
	refs       INTEGER NOT NULL,
	PRIMARY KEY (collection, id)
) WITHOUT ROWID;
-- The words entities are indexed under (Words), front-coded: a row is a
-- run of consecutive words of a collection (a strs id) in byte order, the
-- first of them in first, each with its entities' strs ids (wordblock.go).
-- A rowid table: the index holds the first words alone, where a WITHOUT
-- ROWID table's inner pages would hold whole blocks.
CREATE TABLE IF NOT EXISTS word_blocks (
	collection INTEGER NOT NULL,
	first      TEXT NOT NULL,
	words      BLOB NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS word_blocks_first ON word_blocks(collection, first);
CREATE TABLE IF NOT EXISTS extract_cache (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID;
-- Every write transaction of a collection stamps it with the next value of
-- one counter (the row with collection ''), which only grows: a name-index
-- snapshot is used only at the version it was taken at (snapshot.go).
CREATE TABLE IF NOT EXISTS versions (
	collection TEXT PRIMARY KEY,
	version    INTEGER NOT NULL
) WITHOUT ROWID;
-- A row here while a bulk load has deferred the secondary indexes and the
-- entity words (bulk.go): Open completes it.
CREATE TABLE IF NOT EXISTS bulk_load (id INTEGER PRIMARY KEY CHECK (id = 1));
`

// indexes are the triples' secondary indexes. Open creates any that are
// missing; a bulk load drops them and builds them again at its end.
const indexes = `
-- The id, name and literal indexes lead with the column a lookup names and
-- end with the collection (lookups name both): B-tree searches then settle
-- on the first, varied column. Every column is a strs id, so an entry is a
-- few bytes. A document's triples are found by the rowid range in docs,
-- not by an index entry per triple.
CREATE INDEX IF NOT EXISTS triples_sid ON triples(s_id, collection);
CREATE INDEX IF NOT EXISTS triples_oid ON triples(o_id, collection);
CREATE INDEX IF NOT EXISTS triples_sname ON triples(s_norm, collection) WHERE s_norm != s_id;
CREATE INDEX IF NOT EXISTS triples_oname ON triples(o_norm, collection) WHERE o_norm != o_id;
CREATE INDEX IF NOT EXISTS triples_p ON triples(collection, p);
CREATE INDEX IF NOT EXISTS triples_literal ON triples(literal, collection) WHERE literal != 1;
`

// indexNames are the indexes that indexes creates.
var indexNames = []string{"triples_sid", "triples_oid", "triples_sname", "triples_oname", "triples_p", "triples_literal"}

// tcols are a triple's columns as text, of the table aliased t joined with
// strs by tjoin: rowid, s_id, s_name, s_type, p, o_id, o_name, o_type,
// literal, chunk_id, doc_url, source_url (what scan reads).
const tcols = `t.rowid, x1.s, x2.s, x3.s, x4.s, x5.s, x6.s, x7.s, x8.s, x9.s, x10.s, x11.s`

// tjoin joins the strings of tcols to the triples aliased t. CROSS JOIN
// keeps t the outer loop, driven by its own indexes.
const tjoin = ` CROSS JOIN strs AS x1 ON x1.id = t.s_id CROSS JOIN strs AS x2 ON x2.id = t.s_name
	CROSS JOIN strs AS x3 ON x3.id = t.s_type CROSS JOIN strs AS x4 ON x4.id = t.p
	CROSS JOIN strs AS x5 ON x5.id = t.o_id CROSS JOIN strs AS x6 ON x6.id = t.o_name
	CROSS JOIN strs AS x7 ON x7.id = t.o_type CROSS JOIN strs AS x8 ON x8.id = t.literal
	CROSS JOIN strs AS x9 ON x9.id = t.chunk_id CROSS JOIN strs AS x10 ON x10.id = t.doc_url
	CROSS JOIN strs AS x11 ON x11.id = t.source_url`

// strID is the SQL of the strs id of the string bound to parameter param
// (NULL when no row holds it, which then matches nothing).
func strID(param string) string {
	return `(SELECT id FROM strs WHERE h = kg_strhash(` + param + `) AND s = ` + param + `)`
}

// OpenDir opens (creating if needed) the store in dataDir/graph.db.
func OpenDir(dataDir string) (*Store, error) {
	if dataDir == "" {
		return nil, kgagent.Errorf(kgagent.EINVALID, "graph store: empty data dir")
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "graph store: cannot create data dir")
	}
	return Open(filepath.Join(dataDir, FileName))
}

// Open opens (creating if needed) the store in the SQLite file at path.
func Open(path string) (*Store, error) { return OpenWith(path, Options{}) }

// Options are a Store's settings beyond its file.
type Options struct {
	// ReadCacheKiB is the page cache of each read connection, in KiB
	// (SQLite's cache_size); 0 leaves SQLite's default, 2,000 KiB. A
	// long-running serve keeps eight read connections: at the default
	// they held ~7 MB more than at 256 KiB after 1,000 searches and answers
	// on the OpenJDK API docs, where the name index answers most lookups
	// and the file's pages stay in the OS's cache anyway.
	ReadCacheKiB int
}

// OpenWith is Open with options.
func OpenWith(path string, o Options) (*Store, error) {
	if path == "" {
		return nil, kgagent.Errorf(kgagent.EINVALID, "graph store: empty path")
	}
	dsn := sqlitefile.URI(path) + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)"
	// The writer keeps a larger page cache (32 MiB; 8 MiB during a bulk
	// load, which has no secondary indexes to update: bulk.go): inserts
	// touch every index's B-tree, and with SQLite's default 2 MiB a large
	// graph's pages are read back from the file over and over. Its statement
	// journals (multi-row INSERTs, savepoints) stay in memory instead of
	// spilling to temporary files. The WAL is checkpointed every 8192
	// pages (32 MiB) rather than 1000: index pages that many commits touch
	// are copied back to the database once per checkpoint, not per commit.
	wdb, err := sql.Open("sqlite", dsn+"&_txlock=immediate&_pragma=cache_size(-32768)&_pragma=temp_store(memory)&_pragma=wal_autocheckpoint(8192)")
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "graph store: open %s", path)
	}
	wdb.SetMaxOpenConns(1)
	// The migrations sort and copy whole tables and VACUUM: on file, not in
	// the writer's in-memory temp store (a copy of the OpenJDK docs' store
	// peaked at 557 MB of RSS with it in memory).
	if _, err := wdb.Exec(`PRAGMA temp_store = FILE`); err != nil {
		wdb.Close()
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "graph store: open %s", path)
	}
	var ver int
	if err := wdb.QueryRow(`PRAGMA user_version`).Scan(&ver); err != nil {
		wdb.Close()
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "graph store: read the format of %s", path)
	}
	if ver > formatVersion {
		wdb.Close()
		return nil, newerFormat(path, ver)
	}
	if err := migrateHashed(wdb); err != nil {
		wdb.Close()
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "graph store: migrate %s to format %d", path, formatVersion)
	}
	if _, err := wdb.Exec(schema); err != nil {
		wdb.Close()
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "graph store: create schema in %s", path)
	}
	if err := migrateDocs(wdb); err != nil {
		wdb.Close()
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "graph store: migrate %s", path)
	}
	if err := migrateVersions(wdb); err != nil {
		wdb.Close()
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "graph store: migrate %s", path)
	}
	if err := migrateInterned(wdb); err != nil {
		wdb.Close()
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "graph store: migrate %s to interned strings", path)
	}
	if err := migrateWordBlocks(wdb); err != nil {
		wdb.Close()
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "graph store: migrate %s to format %d", path, formatVersion)
	}
	// Stamped only when it changes (a fresh file; a migration stamps its
	// own): the write takes the write lock, which every open need not.
	err = wdb.QueryRow(`PRAGMA user_version`).Scan(&ver)
	if err == nil && ver != formatVersion {
		_, err = wdb.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, formatVersion))
	}
	if err == nil {
		_, err = wdb.Exec(`PRAGMA temp_store = MEMORY`)
	}
	if err != nil {
		wdb.Close()
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "graph store: stamp %s", path)
	}
	conn, err := wdb.Conn(context.Background())
	if err != nil {
		wdb.Close()
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "graph store: open %s", path)
	}
	w := writer{conn: conn, wal: newWALSync(path), dir: filepath.Dir(path)}
	// A bulk load that did not finish (a crash) is completed first; then
	// every index exists.
	if err := finishBulk(&w, nil, nil, nil, nil); err != nil {
		w.close()
		wdb.Close()
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "graph store: complete the bulk load of %s", path)
	}
	rdsn := dsn + "&_pragma=query_only(1)"
	if o.ReadCacheKiB > 0 {
		rdsn += fmt.Sprintf("&_pragma=cache_size(-%d)", o.ReadCacheKiB)
	}
	rdb, err := sql.Open("sqlite", rdsn)
	if err != nil {
		w.close()
		wdb.Close()
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "graph store: open %s", path)
	}
	rdb.SetMaxOpenConns(8)
	rdb.SetMaxIdleConns(8)
	s := &Store{path: path, wdb: wdb, rdb: rdb, w: w, writesQ: groupcommit.New[*writeJob](maxGroup)}
	s.w.wal.checkpoint = func() {
		_, _ = rdb.ExecContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`)
	}
	s.stNear, err = rdb.Prepare(`SELECT ` + tcols + ` FROM triples AS t` + tjoin + ` WHERE t.collection = ` + strID("?1") + ` AND t.s_id = ` + strID("?2") + `
		UNION ALL SELECT ` + tcols + ` FROM triples AS t` + tjoin + ` WHERE t.collection = ` + strID("?1") + ` AND t.o_id = ` + strID("?2") + ` AND t.s_id != t.o_id LIMIT ?3`)
	if err == nil {
		s.stWord, err = rdb.Prepare(entitiesByWordSQL)
	}
	if err == nil {
		s.stPrefix, err = rdb.Prepare(entitiesByPrefixSQL)
	}
	if err != nil {
		s.Close()
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "graph store: prepare")
	}
	return s, nil
}

// migrateDocs moves a store written by an earlier version, which found a
// document's triples by the index triples_doc, to the docs table: in one
// transaction it records each document's rowid range and drops the index.
// An earlier version that opens the file again recreates triples_doc (and
// writes triples docs does not know of), so the ranges are rebuilt whenever
// the index is there.
func migrateDocs(db *sql.DB) error {
	var legacy int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'triples_doc'`).Scan(&legacy); err != nil || legacy == 0 {
		return err
	}
	return execTx(db,
		`DELETE FROM docs`,
		`INSERT INTO docs (collection, doc_url, lo, hi) SELECT collection, doc_url, min(rowid), max(rowid) FROM triples GROUP BY collection, doc_url`,
		`DROP INDEX triples_doc`)
}

// execTx runs the statements qs in one transaction.
func execTx(db *sql.DB, qs ...string) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return execIn(tx, qs...)
}

// execIn runs qs in tx, in order, and commits it.
func execIn(tx *sql.Tx, qs ...string) error {
	for _, q := range qs {
		if _, err := tx.Exec(q); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// migrateVersions gives every collection of a store written before the
// versions table its first version (0), once: the counter row is there
// afterwards.
func migrateVersions(db *sql.DB) error {
	var done int
	if err := db.QueryRow(`SELECT count(*) FROM versions WHERE collection = ''`).Scan(&done); err != nil || done > 0 {
		return err
	}
	return execTx(db,
		// entities.collection is text in stores older than the interned
		// strings, a strs id since.
		`INSERT OR IGNORE INTO versions (collection, version) SELECT DISTINCT
			CASE typeof(e.collection) WHEN 'integer' THEN (SELECT s FROM strs WHERE id = e.collection) ELSE e.collection END, 0
			FROM entities AS e`,
		`INSERT OR IGNORE INTO versions (collection, version) VALUES ('', 0)`)
}

// migrateInterned moves a store written before the strings were interned
// (triples, entity_words and entities holding text) to the interned
// layout, in one transaction: every string into strs, the rows rewritten
// with their ids (same rowids, so docs' ranges hold), the old tables
// dropped with their indexes (Open then creates the new ones). The file is
// vacuumed after, so the space the text took is given back. Stored output
// is unchanged: the rows read back as before (TestMigrateInterned).
func migrateInterned(db *sql.DB) error {
	var typ string
	if err := db.QueryRow(`SELECT type FROM pragma_table_info('triples') WHERE name = 'collection'`).Scan(&typ); err != nil {
		return err
	}
	if !strings.EqualFold(typ, "TEXT") {
		return nil
	}
	cols := []string{"collection", "doc_url", "s_id", "s_name", "s_type", "s_norm", "p", "o_id", "o_name", "o_type", "o_norm", "literal", "chunk_id", "source_url"}
	var all, ids []string
	for _, c := range cols {
		all = append(all, `SELECT `+c+` AS x FROM triples_text`)
		ids = append(ids, `(SELECT id FROM strs WHERE h = kg_strhash(o.`+c+`) AND s = o.`+c+`)`)
	}
	for _, c := range []string{"collection", "id", "name", "type", "norm"} {
		all = append(all, `SELECT `+c+` FROM entities_text`)
	}
	all = append(all, `SELECT collection FROM entity_words_text`, `SELECT id FROM entity_words_text`)
	err := execTx(db,
		`ALTER TABLE triples RENAME TO triples_text`,
		`ALTER TABLE entity_words RENAME TO entity_words_text`,
		`ALTER TABLE entities RENAME TO entities_text`,
		// strs holds '' alone (it is new with this layout).
		`INSERT INTO strs (h, s) SELECT kg_strhash(x), x FROM (`+strings.Join(all, ` UNION `)+`) WHERE x != '' ORDER BY x`,
		tableSQL("triples"),
		`INSERT INTO triples (rowid, `+strings.Join(cols, ", ")+`) SELECT o.rowid, `+strings.Join(ids, ", ")+` FROM triples_text AS o ORDER BY o.rowid`,
		legacyWordsTable,
		`INSERT INTO entity_words (collection, word, id) SELECT `+lookupSQL("o.collection")+`, o.word, `+lookupSQL("o.id")+`
			FROM entity_words_text AS o ORDER BY 1, 2, 3`,
		tableSQL("entities"),
		`INSERT INTO entities (collection, id, name, type, norm, refs) SELECT `+lookupSQL("o.collection")+`, `+lookupSQL("o.id")+`, `+
			lookupSQL("o.name")+`, `+lookupSQL("o.type")+`, `+lookupSQL("o.norm")+`, o.refs FROM entities_text AS o ORDER BY 1, 2`,
		`DROP TABLE triples_text`,
		`DROP TABLE entity_words_text`,
		`DROP TABLE entities_text`)
	if err != nil {
		return err
	}
	vacuum(db)
	return nil
}

// vacuum compacts the file after a committed migration. The migration
// stands either way: a failed compaction (disk full, a reader holding the
// file) only leaves the file at its old size, so it is logged, not a
// failed Open.
func vacuum(db *sql.DB) {
	if _, err := db.Exec(vacuumSQL); err != nil {
		slog.Warn("graph store: migrated, but compacting the file failed; it keeps its old size (run VACUUM on it to reclaim the space)", "err", err)
	}
}

// vacuumSQL is the compaction vacuum runs (a variable so a test can make
// it fail).
var vacuumSQL = `VACUUM`

// newerFormat is the error of a store written by a newer kgagent, in a
// format this one does not know: it is refused rather than read wrong or
// stamped back to an older format.
func newerFormat(path string, ver int) error {
	return kgagent.Errorf(kgagent.EUNAVAILABLE, "%s is format %d, this kgagent reads up to %d: use a newer kgagent", filepath.Base(path), ver, formatVersion)
}

// formatVersion is the layout Open leaves a store in (PRAGMA user_version):
// 2 since strs is found by hash and entities hold strs ids (migrateHashed),
// 3 since the entity words are front-coded blocks (migrateWordBlocks).
// Stores of earlier layouts say 0; their layout is told by their columns.
const formatVersion = 3

// legacyWordsTable is entity_words of formats 0 to 2, a row per word and
// entity (strs ids but for the word), which migrateInterned writes and
// migrateWordBlocks turns into blocks.
const legacyWordsTable = `CREATE TABLE entity_words (
	collection INTEGER NOT NULL,
	word       TEXT NOT NULL,
	id         INTEGER NOT NULL,
	PRIMARY KEY (collection, word, id)
) WITHOUT ROWID;`

// tableSQL is the CREATE TABLE statement of table in schema.
func tableSQL(table string) string {
	t := schema[strings.Index(schema, "CREATE TABLE IF NOT EXISTS "+table+" ("):]
	return t[:strings.Index(t, ";")+1]
}

// lookupSQL is the strs id of the string expr, in SQL.
func lookupSQL(expr string) string {
	return `(SELECT id FROM strs WHERE h = kg_strhash(` + expr + `) AND s = ` + expr + `)`
}

// migrateHashed moves a store of the first interned layout (strs with a
// UNIQUE index on the text, entities holding text) to format 2, in one
// transaction: strs is copied with the same ids and each string's hash
// (the UNIQUE index, which held every string a second time, goes with the
// old table), and the entities' strings become strs ids (those strs lacks,
// such as the name of an entity whose first triple was retracted and whose
// string a collection's deletion collected, are added). Triples and
// entity_words keep their ids. The file is vacuumed after. Nothing stored
// changes meaning: Find and Entities answer as before
// (TestMigrateHashed on a store written by main at af80d2c).
func migrateHashed(db *sql.DB) error {
	var tables, hashed int
	if err := db.QueryRow(`SELECT (SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'strs'),
		(SELECT count(*) FROM pragma_table_info('strs') WHERE name = 'h')`).Scan(&tables, &hashed); err != nil {
		return err
	}
	if tables == 0 || hashed > 0 {
		return nil
	}
	ent := func(c string) string { return lookupSQL("o." + c) }
	tx, err := db.Begin() // IMMEDIATE (the writer's DSN): holds the write lock
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// Again inside the transaction: another process may have migrated the
	// file meanwhile.
	if err := tx.QueryRow(`SELECT count(*) FROM pragma_table_info('strs') WHERE name = 'h'`).Scan(&hashed); err != nil || hashed > 0 {
		return err
	}
	err = execIn(tx,
		`ALTER TABLE strs RENAME TO strs_v1`,
		`ALTER TABLE entities RENAME TO entities_v1`,
		tableSQL("strs"),
		`INSERT INTO strs (id, h, s) SELECT id, kg_strhash(s), s FROM strs_v1 ORDER BY id`,
		`INSERT INTO strs (h, s) SELECT kg_strhash(x), x FROM (
			SELECT collection AS x FROM entities_v1 UNION SELECT id FROM entities_v1 UNION SELECT name FROM entities_v1
			UNION SELECT type FROM entities_v1 UNION SELECT norm FROM entities_v1)
			WHERE x NOT IN (SELECT s FROM strs_v1) ORDER BY x`,
		`CREATE INDEX strs_h ON strs(h)`,
		tableSQL("entities"),
		`INSERT INTO entities (collection, id, name, type, norm, refs)
			SELECT `+ent("collection")+`, `+ent("id")+`, `+ent("name")+`, `+ent("type")+`, `+ent("norm")+`, o.refs
			FROM entities_v1 AS o ORDER BY 1, 2`,
		`DROP TABLE strs_v1`,
		`DROP TABLE entities_v1`,
		// 2, not formatVersion: entity_words is still rows until
		// migrateWordBlocks, in a transaction of its own, makes it format
		// 3; a crash between the two leaves a file that format 2's
		// binaries open.
		`PRAGMA user_version = 2`)
	if err != nil {
		return err
	}
	vacuum(db)
	return nil
}

// Close releases the database.
func (s *Store) Close() error {
	s.closeNames()
	for _, st := range []*sql.Stmt{s.stNear, s.stWord, s.stPrefix} {
		if st != nil {
			st.Close()
		}
	}

	var err error
	if s.bulk {
		// The bulk load's indexes, entities and words; should this fail,
		// the next Open completes them (the entities from the triples).
		if berr := finishBulk(&s.w, s.rdb, &s.tally, nil, nil); berr != nil {
			err = dbErr(context.Background(), berr, "complete the bulk load")
		}
		s.bulk = false
	}
	s.rows.stop()
	s.w.wal.close() // no checkpoint beside the writer runs from here
	if rerr := s.rdb.Close(); err == nil {
		err = rerr
	}
	// Let SQLite refresh its planner statistics where they went stale.
	_, _ = s.w.conn.ExecContext(context.Background(), `PRAGMA analysis_limit=1000; PRAGMA optimize;`)
	s.w.close()
	if werr := s.wdb.Close(); err == nil {
		err = werr
	}
	return err
}

// Path is the SQLite file the store lives in.
func (s *Store) Path() string { return s.path }

func dbErr(ctx context.Context, err error, what string) error {
	if err == nil {
		return nil
	}
	var ke *kgagent.Error
	if errors.As(err, &ke) {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "graph store: %s", what)
}

// ReplaceDocument implements graphrag.Store in one transaction.
func (s *Store) ReplaceDocument(ctx context.Context, collection, docURL string, triples []kgagent.Triple) error {
	if err := graphrag.ValidateTriples(collection, docURL, triples); err != nil {
		return err
	}
	plan := newDocPlan(collection, docURL, graphrag.Dedupe(triples))
	return s.write(ctx, "replace document", func(x *wtx) error {
		if err := x.stamp(collection); err != nil {
			return err
		}
		return x.replace(plan)
	})
}

// Words are the index words of an entity: each word of its normalised name,
// the dot-separated parts of code names (os.path.join -> os, path, join), and
// its id when that differs.
func Words(norm, id string) []string {
	set := map[string]bool{}
	for _, w := range strings.Fields(norm) {
		set[w] = true
		if strings.Contains(w, ".") {
			for _, p := range strings.Split(w, ".") {
				if p != "" {
					set[p] = true
				}
			}
		}
	}
	if id != norm && id != "" && len(id) <= graphrag.MaxNameBytes {
		set[id] = true
	}
	out := make([]string, 0, len(set))
	for w := range set {
		out = append(out, w)
	}
	sort.Strings(out)
	return out
}

// DeleteDocument implements graphrag.Store.
func (s *Store) DeleteDocument(ctx context.Context, collection, docURL string) error {
	if err := graphrag.ValidateCollection(collection); err != nil {
		return err
	}
	if err := graphrag.ValidateDocURL(docURL); err != nil {
		return err
	}
	return s.write(ctx, "delete document", func(x *wtx) error {
		if err := x.stamp(collection); err != nil {
			return err
		}
		refs, err := x.retract(collection, docURL)
		if err != nil {
			return err
		}
		return x.addRefs(collection, refs, nil)
	})
}

// DeleteCollection implements graphrag.Store.
func (s *Store) DeleteCollection(ctx context.Context, collection string) error {
	if err := graphrag.ValidateCollection(collection); err != nil {
		return err
	}
	defer s.removeNamesSnapshot(collection)
	return s.write(ctx, "delete collection", func(x *wtx) error {
		// The group's earlier writes' word edits first: the collection's
		// blocks go below.
		if err := x.s.w.flushWords(x); err != nil {
			return err
		}
		if err := x.stamp(collection); err != nil {
			return err
		}
		for _, q := range []string{
			`DELETE FROM triples WHERE collection = ` + strID("?1"),
			`DELETE FROM docs WHERE collection = ?1`,
			`DELETE FROM entities WHERE collection = ` + strID("?1"),
			`DELETE FROM word_blocks WHERE collection = ` + strID("?1"),
			// The strings no row refers to any more, this collection's
			// among them (its URLs and names must not outlive it).
			`DELETE FROM strs WHERE id > 1 AND id NOT IN (` + referencedStrs + `)`,
		} {
			if _, err := x.s.w.conn.ExecContext(x.ectx, q, collection); err != nil {
				return err
			}
		}
		x.s.w.strs.clear() // ids of deleted strings may be given again
		x.job.deleted = true
		if x.s.bulk {
			// The tally's strs ids may be given again: the load's
			// finish derives the entities from the triples.
			x.job.bulk = &bulkDelta{drop: true}
		}
		return nil
	})
}

// referencedStrs selects the ids of the strings some row refers to. The
// entity ids inside word blocks are those of entities rows (a word is
// removed with its entity).
const referencedStrs = `SELECT collection FROM triples UNION SELECT doc_url FROM triples
	UNION SELECT s_id FROM triples UNION SELECT s_name FROM triples UNION SELECT s_type FROM triples
	UNION SELECT s_norm FROM triples UNION SELECT p FROM triples UNION SELECT o_id FROM triples
	UNION SELECT o_name FROM triples UNION SELECT o_type FROM triples UNION SELECT o_norm FROM triples
	UNION SELECT literal FROM triples UNION SELECT chunk_id FROM triples UNION SELECT source_url FROM triples
	UNION SELECT collection FROM word_blocks
	UNION SELECT collection FROM entities UNION SELECT id FROM entities UNION SELECT name FROM entities
	UNION SELECT type FROM entities UNION SELECT norm FROM entities`

// Find implements graphrag.Store.
func (s *Store) Find(ctx context.Context, p graphrag.Pattern) ([]kgagent.Triple, error) {
	if err := graphrag.ValidateCollection(p.Collection); err != nil {
		return nil, err
	}
	if p.Limit < 0 {
		return nil, kgagent.Errorf(kgagent.EINVALID, "limit must not be negative")
	}
	q, args := findQuery(p)
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, dbErr(ctx, err, "find")
	}
	out, _, err := scan(rows, p.Collection, nil)
	return out, dbErr(ctx, err, "find")
}

// findQuery is Find's statement for p (validated) and its arguments.
func findQuery(p graphrag.Pattern) (string, []any) {
	limit := p.Limit
	if limit == 0 {
		limit = graphrag.DefaultFindLimit
	}
	// S (else O) drives the query: the UNION of index searches for its id,
	// normalised name (and literal) yields rowids, CROSS JOIN keeps SQLite
	// from scanning the collection instead. The other fields filter.
	args := []any{p.Collection}
	arg := func(v any) string {
		args = append(args, v)
		return "?" + strconv.Itoa(len(args))
	}
	// Every column is a strs id: a value is compared by its id.
	id := func(v any) string { return strID(arg(v)) }
	where := ` WHERE t.collection = ` + strID("?1")
	drive := ""
	if p.S != "" {
		s, n := id(p.S), id(graphrag.NormalizeName(p.S))
		// A normalised name equal to the id is found by the id index;
		// the name indexes hold only names that differ from their ids.
		drive = `SELECT rowid AS r FROM triples WHERE collection = ` + strID("?1") + ` AND s_id = ` + s +
			` UNION SELECT rowid FROM triples WHERE collection = ` + strID("?1") + ` AND s_id = ` + n +
			` UNION SELECT rowid FROM triples WHERE collection = ` + strID("?1") + ` AND s_norm = ` + n + ` AND s_norm != s_id`
	}
	if p.O != "" {
		o, n, l := id(p.O), id(graphrag.NormalizeName(p.O)), id(p.O)
		if drive == "" {
			drive = `SELECT rowid AS r FROM triples WHERE collection = ` + strID("?1") + ` AND o_id = ` + o +
				` UNION SELECT rowid FROM triples WHERE collection = ` + strID("?1") + ` AND o_id = ` + n +
				` UNION SELECT rowid FROM triples WHERE collection = ` + strID("?1") + ` AND o_norm = ` + n + ` AND o_norm != o_id` +
				` UNION SELECT rowid FROM triples WHERE collection = ` + strID("?1") + ` AND literal != 1 AND literal = ` + l
		} else {
			where += ` AND (t.o_id = ` + o + ` OR t.o_norm = ` + n + ` OR t.literal = ` + l + `)`
		}
	}
	if p.P != "" {
		where += ` AND t.p = ` + id(p.P)
	}
	// Without S or O, the order of the (collection, p) index: no sort of a
	// whole collection before the LIMIT (predicates in the order their
	// strings were first stored, then rowids).
	q := `SELECT ` + tcols + ` FROM triples AS t INDEXED BY triples_p` + tjoin + where + ` ORDER BY t.p, t.rowid`
	if drive != "" {
		q = `SELECT ` + tcols + ` FROM (` + drive + `) AS m CROSS JOIN triples AS t ON t.rowid = m.r` + tjoin + where + ` ORDER BY t.rowid`
	}
	q += ` LIMIT ` + arg(limit)
	return q, args
}

// scan reads triple rows, skipping rowids already in seen (and adding the
// rest to it when seen is not nil).
func scan(rows *sql.Rows, collection string, seen map[int64]bool) ([]kgagent.Triple, int, error) {
	defer rows.Close()
	var out []kgagent.Triple
	n := 0
	for rows.Next() {
		var id int64
		t := kgagent.Triple{Collection: collection}
		if err := rows.Scan(&id, &t.Subject.ID, &t.Subject.Name, &t.Subject.Type, &t.Predicate,
			&t.Object.ID, &t.Object.Name, &t.Object.Type, &t.Literal, &t.ChunkID, &t.DocURL, &t.SourceURL); err != nil {
			return nil, n, err
		}
		n++
		if seen != nil {
			if seen[id] {
				continue
			}
			seen[id] = true
		}
		out = append(out, t)
	}
	return out, n, rows.Err()
}

// scanIDs reads triple rows with their rowids.
func scanIDs(rows *sql.Rows, collection string) ([]kgagent.Triple, []int64, error) {
	defer rows.Close()
	var out []kgagent.Triple
	var ids []int64
	for rows.Next() {
		var id int64
		t := kgagent.Triple{Collection: collection}
		if err := rows.Scan(&id, &t.Subject.ID, &t.Subject.Name, &t.Subject.Type, &t.Predicate,
			&t.Object.ID, &t.Object.Name, &t.Object.Type, &t.Literal, &t.ChunkID, &t.DocURL, &t.SourceURL); err != nil {
			return nil, nil, err
		}
		out = append(out, t)
		ids = append(ids, id)
	}
	return out, ids, rows.Err()
}

// Get implements graphrag.Cache.
func (s *Store) Get(ctx context.Context, key string) (string, bool, error) {
	var v string
	err := s.rdb.QueryRowContext(ctx, `SELECT value FROM extract_cache WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, dbErr(ctx, err, "cache get")
	}
	return v, true, nil
}

// Put implements graphrag.Cache.
func (s *Store) Put(ctx context.Context, key, value string) error {
	return s.write(ctx, "cache put", func(x *wtx) error {
		_, err := x.exec(`INSERT INTO extract_cache (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value)
		return err
	})
}

// Stats counts the triples and entities of a collection.
func (s *Store) Stats(ctx context.Context, collection string) (triples, entities int, err error) {
	if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM triples WHERE collection = `+strID("?1"), collection).Scan(&triples); err != nil {
		return 0, 0, dbErr(ctx, err, "stats")
	}
	if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM entities WHERE collection = `+strID("?1"), collection).Scan(&entities); err != nil {
		return 0, 0, dbErr(ctx, err, "stats")
	}
	return triples, entities, nil
}
