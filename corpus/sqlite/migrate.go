package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"log/slog"

	"github.com/kgagent/kgagent"
)

// Stored-format migrations. PRAGMA user_version records the format of the
// chunk rows:
//
//	0  chunk vectors stored as dim little-endian float32s (4*dim bytes)
//	1  chunk vectors stored as appendQ8Bytes writes them (dim+4 bytes)
//	2  semantic vectors (semvecs) too; a semantic blob does not tell its
//	   dimension, so the format says how to read it
//	3  a chunk's body stored compressed (a blob: S2, or zstd as the first
//	   build of format 3 wrote it) where that is shorter than its text
//	   (packText); text rows read the same
//	4  a chunk's URL stored relative to its document's (packURL), its id
//	   and hash as bytes (packHex); read back as text by urlSQL, hexSQL
//	5  a chunk vector stored sparse (packQ8: a bitmap and the non-zero
//	   components) where that is shorter; dense rows read the same
//	6  a document's chunks found by their row id range (table docs)
//	   instead of the index chunks_doc on (collection, doc_url)
//	7  a chunk's collection and document URL no longer stored in its row
//	   but read from its document's docs row (the range holding its rid),
//	   and its title NULL where it is the document's (docs.title, the
//	   title of the document's first chunk): moveToDocs
//	8  a chunk's id, text hash and anchor stored as an empty blob where
//	   they are what the chunker derives (packID, packHash, packAnchor):
//	   convertDerived
//
// The search copy has always held int8 vectors quantised from the floats,
// so format 1 keeps exactly what search ranks by at a quarter of the bytes
// (OpenJDK API docs: 209k vectors, index.db 696 -> see DECISIONS.md).
const (
	formatQ8       = 1
	formatSemQ8    = 2
	formatZBody    = 3
	formatPack     = 4
	formatQ8Sparse = 5
	formatDocs     = 6
	formatDocCols  = 7
	formatDerived  = 8
	// formatNewest is the format Open leaves a file in.
	formatNewest = formatDerived
)

// newerFormat is the error of an index file name of format ver, written
// by a newer kgagent in a format this one does not know: it is refused
// rather than read wrong.
func newerFormat(name string, ver int) error {
	return kgagent.Errorf(kgagent.EUNAVAILABLE, "%s is format %d, this kgagent reads up to %d: use a newer kgagent", name, ver, formatNewest)
}

// q8Batch is how many rows migrateQ8 converts per statement round (a
// variable so a test can make rounds small).
var q8Batch = 1024

// migrateQ8 brings an index of an older format to formatNewest in one
// transaction (float32 vectors to int8, compressed bodies, packed URLs and
// ids, sparse vectors, the docs table: each step the formats between need),
// then VACUUMs so the file gives the space back; a crash before the commit
// leaves the file in its old format. A fresh index is stamped formatNewest
// at once. Each conversion is the one a new write makes (appendQ8Bytes,
// packQ8, ...), so the search copy built from the migrated rows equals the
// one built from the old rows.
func (x *Index) migrateQ8() error {
	ctx := context.Background()
	var ver int
	if err := x.db.QueryRow(`PRAGMA user_version`).Scan(&ver); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "read corpus index format")
	}
	if ver >= formatNewest {
		return nil
	}
	// Format 7 rebuilds the chunks table, which semvecs references: the
	// rebuild runs with foreign keys off on its own connection (SQLite's
	// procedure for a table change: with them on, dropping the old table
	// would delete every semantic vector), then checks them before the
	// commit, and turns them on again before the connection goes back to
	// the pool.
	conn, err := x.db.Conn(ctx)
	if err != nil {
		return dbErr(err, "migrate chunk vectors")
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
		return dbErr(err, "migrate chunk vectors")
	}
	n, err := migrateTx(ctx, conn)
	if _, ferr := conn.ExecContext(ctx, `PRAGMA foreign_keys = ON`); ferr != nil {
		// the connection must not serve later writes without them
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		if err == nil {
			err = dbErr(ferr, "migrate chunk vectors")
		}
	}
	if err != nil {
		return err
	}
	if n > 0 && x.cfg.Path != "" {
		// VACUUM writes the compacted file through the WAL; the checkpoint
		// puts it in place and truncates both
		// The vectors are migrated and stamped already: a failed
		// compaction (disk full, a reader holding the file) only leaves
		// the file at its old size, so it is logged, not a failed Open.
		for _, s := range []string{`VACUUM`, `PRAGMA wal_checkpoint(TRUNCATE)`} {
			if _, err := x.db.Exec(s); err != nil {
				slog.Warn("corpus index: vectors migrated, but compacting the file failed; it keeps its old size (run VACUUM on it to reclaim the space)",
					"path", x.cfg.Path, "err", err)
				break
			}
		}
	}
	return nil
}

// migrateTx is migrateQ8's transaction on conn (foreign keys off): every
// step from the file's format to formatNewest, then the new format
// stamped, all or nothing. It returns how many rows it rewrote.
func migrateTx(ctx context.Context, conn *sql.Conn) (int, error) {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return 0, dbErr(err, "migrate chunk vectors")
	}
	defer tx.Rollback()
	// read again inside the write transaction: another process may have
	// migrated meanwhile
	var ver int
	if err := tx.QueryRow(`PRAGMA user_version`).Scan(&ver); err != nil || ver >= formatNewest {
		return 0, dbErr(err, "read corpus index format")
	}
	// A chunks table without a collection column was created by format
	// 7 or later (a new file, stamped below): no row of format 6 or
	// older can be in it.
	var legacy int
	if err := tx.QueryRow(`SELECT COUNT(*) FROM pragma_table_info('chunks') WHERE name = 'collection'`).Scan(&legacy); err != nil {
		return 0, dbErr(err, "read corpus index schema")
	}
	if legacy == 0 && ver < formatDocCols {
		ver = formatDocCols
	}
	n, err := migrateSteps(ctx, tx, ver)
	if err != nil {
		return 0, err
	}
	if ver < formatDocCols {
		// the rebuilt table's references hold (checked with foreign
		// keys off, as the rebuild ran)
		rows, err := tx.QueryContext(ctx, `PRAGMA foreign_key_check`)
		if err != nil {
			return 0, dbErr(err, "check the migrated index")
		}
		bad := rows.Next()
		rows.Close()
		if bad {
			return 0, kgagent.Errorf(kgagent.EUNAVAILABLE, "corpus index: the migration left rows without their chunk; the file is left in format %d", ver)
		}
	}
	if _, err := tx.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, formatNewest)); err != nil {
		return 0, dbErr(err, "migrate chunk vectors")
	}
	return n, dbErr(tx.Commit(), "migrate chunk vectors")
}

// migrateStep is one conversion of the index: run converts a file of a
// format older than format and returns how many rows it rewrote.
type migrateStep struct {
	format int
	run    func(context.Context, *sql.Tx) (int, error)
}

// migrateOrder lists the conversions in the order they must run.
var migrateOrder = []migrateStep{
	{formatQ8, convertQ8},
	{formatSemQ8, convertSemQ8},
	{formatZBody, convertBodies},
	{formatPack, convertPack},
	{formatQ8Sparse, convertSparse},
	{formatDocs, buildDocs},
	{formatDocCols, moveToDocs},
	{formatDerived, convertDerived},
}

// migrateSteps runs in tx the conversions a file of format ver needs and
// returns how many rows they rewrote.
func migrateSteps(ctx context.Context, tx *sql.Tx, ver int) (int, error) {
	n := 0
	for _, st := range migrateOrder {
		if ver >= st.format {
			continue
		}
		k, err := st.run(ctx, tx)
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

// moveToDocs takes each chunk's collection, document URL and (where it
// is its document's first chunk's) title out of its row (format 7): the
// chunks table is rebuilt without the two columns, with a NULL title
// where docs.title says it, in row id order, and the old one dropped. A
// document whose chunks were not consecutive (rows written before format
// 6 need not be) first gets new consecutive row ids at the end, its
// semantic vectors with them, and its collection a new version (the
// search copy's snapshot names row ids), so that from now on a row's
// document is the one whose range holds it. It returns how many documents
// it recorded. Every row is copied or the transaction fails.
func moveToDocs(ctx context.Context, tx *sql.Tx) (int, error) {
	const what = "move chunk documents to docs"
	var hasTitle int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_table_info('docs') WHERE name = 'title'`).Scan(&hasTitle); err != nil {
		return 0, dbErr(err, what)
	}
	if hasTitle == 0 {
		if _, err := tx.ExecContext(ctx, `ALTER TABLE docs ADD COLUMN title TEXT NOT NULL DEFAULT ''`); err != nil {
			return 0, dbErr(err, what)
		}
	}
	if err := renumberSplitDocs(ctx, tx); err != nil {
		return 0, err
	}
	var before int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM chunks`).Scan(&before); err != nil {
		return 0, dbErr(err, what)
	}
	for _, s := range []string{
		`UPDATE docs SET title = COALESCE((SELECT k.title FROM chunks k WHERE k.rid BETWEEN docs.lo AND docs.hi
			AND k.collection = docs.collection AND k.doc_url = docs.doc_url ORDER BY k.ordinal, k.rid LIMIT 1), '')`,
		`DROP TABLE IF EXISTS chunks_new`,
		`CREATE TABLE chunks_new (` + chunksColumns + `)`,
		`INSERT INTO chunks_new(rid, id, url, title, headings, anchor, ordinal, body, hash, vec)
			SELECT k.rid, k.id, k.url, NULLIF(k.title, d.title), k.headings, k.anchor, k.ordinal, k.body, k.hash, k.vec
			FROM chunks k JOIN docs d ON d.collection = k.collection AND d.doc_url = k.doc_url ORDER BY k.rid`,
	} {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return 0, dbErr(err, what)
		}
	}
	var after int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM chunks_new`).Scan(&after); err != nil {
		return 0, dbErr(err, what)
	}
	if after != before {
		return 0, kgagent.Errorf(kgagent.EUNAVAILABLE, "corpus index: %d of %d chunks have no document row; the file is left in its old format", before-after, before)
	}
	for _, s := range []string{`DROP TABLE chunks`, `ALTER TABLE chunks_new RENAME TO chunks`} {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return 0, dbErr(err, what)
		}
	}
	var n int
	err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM docs`).Scan(&n)
	return n, dbErr(err, what)
}

// convertDerived stores the id, hash and anchor of every chunk as a new
// write stores them (format 8: derivedMark where the chunker's value),
// q8Batch rows a round, and returns how many rows it rewrote. A row whose
// body does not decode keeps its hash.
func convertDerived(ctx context.Context, tx *sql.Tx) (int, error) {
	type row struct {
		rid int64
		c   kgagent.Chunk
		err error
	}
	return migrateRows(ctx, tx, "store derived chunk ids and hashes",
		`SELECT k.rid, d.collection, d.doc_url, `+hexSQL("k.id")+`, `+urlSQL("d.doc_url", "k.url")+`, k.anchor, k.ordinal, k.body, `+hexSQL("k.hash")+`
		FROM chunks k JOIN docs d INDEXED BY docs_lo ON d.lo = `+ridDoc("k.rid")+` WHERE k.rid > ? ORDER BY k.rid LIMIT ?`,
		`UPDATE chunks SET id = ?, anchor = ?, hash = ? WHERE rid = ?`,
		func(rows *sql.Rows) (r row, err error) {
			body := bodyCol{text: &r.c.Text}
			err = rows.Scan(&r.rid, &r.c.Collection, &r.c.DocURL, &r.c.ID, &r.c.URL, &r.c.Anchor, &r.c.Ordinal, &body, &r.c.Hash)
			r.err = body.err
			return r, err
		},
		func(last row) []any { return []any{last.rid} },
		func(r row) ([]any, bool) {
			id, anchor := packID(r.c.Collection, r.c.DocURL, &r.c), packAnchor(r.c.DocURL, &r.c)
			hash := packHex(r.c.Hash)
			if r.err == nil {
				hash = packHash(&r.c)
			}
			if !isMark(id) && !isMark(anchor) && !isMark(hash) {
				return nil, false // stored as it was
			}
			return []any{id, anchor, hash, r.rid}, true
		})
}

// renumberSplitDocs gives each document whose rows do not fill its row id
// range (n < hi - lo + 1) new consecutive row ids after the greatest,
// moving its semantic vectors with them, and stamps a new version on each
// collection it changed.
func renumberSplitDocs(ctx context.Context, tx *sql.Tx) error {
	const what = "renumber document chunks"
	type doc struct {
		coll, url string
		lo, hi    int64
	}
	rows, err := tx.QueryContext(ctx, `SELECT collection, doc_url, lo, hi FROM docs WHERE n != hi - lo + 1`)
	if err != nil {
		return dbErr(err, what)
	}
	var split []doc
	for rows.Next() {
		var d doc
		if err := rows.Scan(&d.coll, &d.url, &d.lo, &d.hi); err != nil {
			rows.Close()
			return dbErr(err, what)
		}
		split = append(split, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(split) == 0 {
		return dbErr(err, what)
	}
	var next int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(rid), 0) + 1 FROM chunks`).Scan(&next); err != nil {
		return dbErr(err, what)
	}
	bumped := map[string]bool{}
	for _, d := range split {
		var rids []int64
		rows, err := tx.QueryContext(ctx, `SELECT rid FROM chunks WHERE rid BETWEEN ? AND ? AND collection = ? AND doc_url = ? ORDER BY rid`, d.lo, d.hi, d.coll, d.url)
		if err != nil {
			return dbErr(err, what)
		}
		for rows.Next() {
			var r int64
			if err := rows.Scan(&r); err != nil {
				rows.Close()
				return dbErr(err, what)
			}
			rids = append(rids, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return dbErr(err, what)
		}
		lo := next
		for _, r := range rids {
			for _, s := range []string{`UPDATE chunks SET rid = ?1 WHERE rid = ?2`, `UPDATE semvecs SET rid = ?1 WHERE rid = ?2`} {
				if _, err := tx.ExecContext(ctx, s, next, r); err != nil {
					return dbErr(err, what)
				}
			}
			next++
		}
		if _, err := tx.ExecContext(ctx, `UPDATE docs SET lo = ?, hi = ?, n = ? WHERE collection = ? AND doc_url = ?`, lo, next-1, len(rids), d.coll, d.url); err != nil {
			return dbErr(err, what)
		}
		if !bumped[d.coll] {
			if _, err := bumpVersion(ctx, tx, d.coll); err != nil {
				return err
			}
			bumped[d.coll] = true
		}
	}
	return nil
}

// convertPack stores the URLs, ids and hashes of format-3 rows as format 4
// does, in SQL: the same forms packURL and packHex give (rows of format 3
// hold every URL, id and hash as text). It returns how many rows it
// rewrote.
func convertPack(ctx context.Context, tx *sql.Tx) (int, error) {
	res, err := tx.ExecContext(ctx, `UPDATE chunks SET
		url = CASE WHEN substr(url, 1, length(doc_url)) = doc_url AND (length(url) = length(doc_url) OR substr(url, length(doc_url) + 1, 1) = '#')
				THEN substr(url, length(doc_url) + 1)
			WHEN url = '' OR substr(url, 1, 1) = '#' THEN CAST(url AS BLOB) ELSE url END,
		id = CASE WHEN length(id) > 0 AND length(id) % 2 = 0 AND id NOT GLOB '*[^0-9a-f]*' THEN unhex(id) ELSE id END,
		hash = CASE WHEN length(hash) > 0 AND length(hash) % 2 = 0 AND hash NOT GLOB '*[^0-9a-f]*' THEN unhex(hash) ELSE hash END
		WHERE typeof(url) = 'text' AND typeof(id) = 'text' AND typeof(hash) = 'text'`)
	if err != nil {
		return 0, dbErr(err, "migrate chunk URLs and hashes")
	}
	nu, err := res.RowsAffected()
	return int(nu), dbErr(err, "migrate chunk URLs and hashes")
}

// buildDocs fills docs from the chunks (format 6) and drops the index it
// replaces; it returns how many documents it recorded. Chunks written
// before format 6 need not have consecutive row ids: a document's range is
// then wider, and the reads, which also check the collection and URL, stay
// exact.
func buildDocs(ctx context.Context, tx *sql.Tx) (int, error) {
	res, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO docs(collection, doc_url, lo, hi, n)
		SELECT collection, doc_url, MIN(rid), MAX(rid), COUNT(*) FROM chunks GROUP BY collection, doc_url`)
	if err != nil {
		return 0, dbErr(err, "record documents")
	}
	if _, err := tx.ExecContext(ctx, `DROP INDEX IF EXISTS chunks_doc`); err != nil {
		return 0, dbErr(err, "record documents")
	}
	n, err := res.RowsAffected()
	return int(n), dbErr(err, "record documents")
}

// convertSparse stores every dense chunk vector (dim+4 bytes) in the sparse
// form packQ8 gives a new one where that is shorter (format 5), q8Batch
// rows a round, and returns how many it rewrote. The search copy unpacks
// exactly the bytes it read before.
func convertSparse(ctx context.Context, tx *sql.Tx) (int, error) {
	type row struct {
		rid int64
		vec []byte
	}
	var sp []byte
	return migrateRows(ctx, tx, "pack chunk vectors",
		`SELECT c.rid, c.vec FROM chunks c JOIN collections k ON k.name = c.collection
		WHERE c.rid > ? AND length(c.vec) = k.dim + 4 AND k.dim > 0 ORDER BY c.rid LIMIT ?`,
		`UPDATE chunks SET vec = ? WHERE rid = ?`,
		func(rows *sql.Rows) (r row, err error) { return r, rows.Scan(&r.rid, &r.vec) },
		func(last row) []any { return []any{last.rid} },
		func(r row) ([]any, bool) {
			p := packQ8(sp, r.vec)
			if len(p) >= len(r.vec) {
				return nil, false // stays dense (p is r.vec: not kept as scratch)
			}
			sp = p
			return []any{sp, r.rid}, true
		})
}

// convertQ8 rewrites every float32 chunk vector in the format of
// appendQ8Bytes and returns how many it rewrote.
func convertQ8(ctx context.Context, tx *sql.Tx) (int, error) {
	return convertVectors(ctx, tx, "migrate chunk vectors", false,
		`SELECT c.rid, '', c.vec FROM chunks c JOIN collections k ON k.name = c.collection
		WHERE c.rid > ? AND length(c.vec) = 4 * k.dim AND k.dim > 0 ORDER BY c.rid LIMIT ?`,
		`UPDATE chunks SET vec = ? WHERE rid = ?`)
}

// convertSemQ8 rewrites every semantic vector (all float32 below format 2)
// in the format of appendQ8Bytes and returns how many it rewrote.
func convertSemQ8(ctx context.Context, tx *sql.Tx) (int, error) {
	return convertVectors(ctx, tx, "migrate semantic vectors", true,
		`SELECT rid, model, vec FROM semvecs WHERE (rid, model) > (?, ?) ORDER BY rid, model LIMIT ?`,
		`UPDATE semvecs SET vec = ? WHERE rid = ? AND model = ?`)
}

// convertVectors rewrites the float32 vector blobs sel finds in the format
// of appendQ8Bytes through upd, q8Batch rows a round, and returns how many
// it rewrote. sel yields (rid, model, vec) in key order after the last key
// of the round before: (rid, model) when keyed (sel takes rid, model,
// limit; upd vec, rid, model), rid alone otherwise (sel takes rid, limit;
// upd vec, rid).
func convertVectors(ctx context.Context, tx *sql.Tx, what string, keyed bool, sel, upd string) (int, error) {
	type row struct {
		rid   int64
		model string
		vec   []byte
	}
	var (
		f []float32
		q []int8
	)
	return migrateRows(ctx, tx, what, sel, upd,
		func(rows *sql.Rows) (r row, err error) { return r, rows.Scan(&r.rid, &r.model, &r.vec) },
		func(last row) []any {
			if keyed {
				return []any{last.rid, last.model}
			}
			return []any{last.rid}
		},
		func(r row) ([]any, bool) {
			f = appendVec(f[:0], r.vec)
			var b []byte
			b, q = appendQ8Bytes(nil, q, f)
			if keyed {
				return []any{b, r.rid, r.model}, true
			}
			return []any{b, r.rid}, true
		})
}

// convertBodies stores every chunk body held as text as packText stores a
// new one (format 3), q8Batch rows a round, and returns how many it
// rewrote.
func convertBodies(ctx context.Context, tx *sql.Tx) (int, error) {
	type row struct {
		rid  int64
		body string
	}
	return migrateRows(ctx, tx, "compress chunk bodies",
		`SELECT rid, body FROM chunks WHERE rid > ? AND typeof(body) = 'text' ORDER BY rid LIMIT ?`,
		`UPDATE chunks SET body = ? WHERE rid = ?`,
		func(rows *sql.Rows) (r row, err error) { return r, rows.Scan(&r.rid, &r.body) },
		func(last row) []any { return []any{last.rid} },
		func(r row) ([]any, bool) {
			v := packText(r.body)
			if _, ok := v.(string); ok {
				return nil, false // stays text
			}
			return []any{v, r.rid}, true
		})
}

// migrateRows is the one paging loop of the migrations: it reads the rows
// sel finds after the last row's key (after(last), then the limit
// q8Batch; the zero row first), q8Batch a round in key order, and runs
// upd with the arguments convert gives each row (none when it says
// false), until a round finds nothing. It returns how many rows it
// updated. A round is read whole before it is updated, so no statement
// reads while another writes.
func migrateRows[R any](ctx context.Context, tx *sql.Tx, what, sel, upd string,
	scan func(*sql.Rows) (R, error), after func(last R) []any, convert func(R) ([]any, bool)) (int, error) {
	selStmt, err := tx.PrepareContext(ctx, sel)
	if err != nil {
		return 0, dbErr(err, what)
	}
	defer selStmt.Close()
	updStmt, err := tx.PrepareContext(ctx, upd)
	if err != nil {
		return 0, dbErr(err, what)
	}
	defer updStmt.Close()
	var (
		batch []R
		last  R
		total int
	)
	for {
		rows, err := selStmt.QueryContext(ctx, append(after(last), q8Batch)...)
		if err != nil {
			return 0, dbErr(err, what)
		}
		batch = batch[:0]
		for rows.Next() {
			r, err := scan(rows)
			if err != nil {
				rows.Close()
				return 0, dbErr(err, what)
			}
			batch = append(batch, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return 0, dbErr(err, what)
		}
		if len(batch) == 0 {
			return total, nil
		}
		for _, r := range batch {
			last = r
			args, ok := convert(r)
			if !ok {
				continue
			}
			if _, err := updStmt.ExecContext(ctx, args...); err != nil {
				return 0, dbErr(err, what)
			}
			total++
		}
	}
}
