package sqlite

import (
	"context"
	"database/sql"
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
	// formatNewest is the format Open leaves a file in.
	formatNewest = formatDocs
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
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return dbErr(err, "migrate chunk vectors")
	}
	defer tx.Rollback()
	// read again inside the write transaction: another process may have
	// migrated meanwhile
	if err := tx.QueryRow(`PRAGMA user_version`).Scan(&ver); err != nil || ver >= formatNewest {
		return dbErr(err, "read corpus index format")
	}
	var n int
	if ver < formatQ8 {
		if n, err = convertQ8(ctx, tx); err != nil {
			return err
		}
	}
	if ver < formatSemQ8 {
		ns, err := convertSemQ8(ctx, tx)
		if err != nil {
			return err
		}
		n += ns
	}
	if ver < formatZBody {
		nb, err := convertBodies(ctx, tx)
		if err != nil {
			return err
		}
		n += nb
	}
	if ver < formatPack {
		nu, err := convertPack(ctx, tx)
		if err != nil {
			return err
		}
		n += nu
	}
	if ver < formatQ8Sparse {
		ns, err := convertSparse(ctx, tx)
		if err != nil {
			return err
		}
		n += ns
	}
	if ver < formatDocs {
		nd, err := buildDocs(ctx, tx)
		if err != nil {
			return err
		}
		n += nd
	}
	if _, err := tx.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, formatNewest)); err != nil {
		return dbErr(err, "migrate chunk vectors")
	}
	if err := tx.Commit(); err != nil {
		return dbErr(err, "migrate chunk vectors")
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
