package sqlite

import (
	"context"
	"database/sql"
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
//
// The search copy has always held int8 vectors quantised from the floats,
// so format 1 keeps exactly what search ranks by at a quarter of the bytes
// (OpenJDK API docs: 209k vectors, index.db 696 -> see DECISIONS.md).
const (
	formatQ8    = 1
	formatSemQ8 = 2
)

// q8Batch is how many rows migrateQ8 converts per statement round.
const q8Batch = 1024

// migrateQ8 converts a data dir's float32 chunk and semantic vectors to
// format 2 in one transaction, then VACUUMs so the file gives the space
// back. A fresh index is stamped format 2 at once. The conversion is the one a new
// write makes (appendQ8Bytes), so the search copy built from the migrated
// rows equals the one built from the old rows.
func (x *Index) migrateQ8() error {
	ctx := context.Background()
	var ver int
	if err := x.db.QueryRow(`PRAGMA user_version`).Scan(&ver); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "read corpus index format")
	}
	if ver >= formatSemQ8 {
		return nil
	}
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return dbErr(err, "migrate chunk vectors")
	}
	defer tx.Rollback()
	// read again inside the write transaction: another process may have
	// migrated meanwhile
	if err := tx.QueryRow(`PRAGMA user_version`).Scan(&ver); err != nil || ver >= formatSemQ8 {
		return dbErr(err, "read corpus index format")
	}
	var n int
	if ver < formatQ8 {
		if n, err = convertQ8(ctx, tx); err != nil {
			return err
		}
	}
	ns, err := convertSemQ8(ctx, tx)
	if err != nil {
		return err
	}
	n += ns
	if _, err := tx.Exec(`PRAGMA user_version = 2`); err != nil {
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

// convertQ8 rewrites every float32 chunk vector in the format of
// appendQ8Bytes, q8Batch rows at a time by rowid, and returns how many it
// rewrote.
func convertQ8(ctx context.Context, tx *sql.Tx) (int, error) {
	sel, err := tx.PrepareContext(ctx, `SELECT c.rid, c.vec FROM chunks c JOIN collections k ON k.name = c.collection
		WHERE c.rid > ? AND length(c.vec) = 4 * k.dim AND k.dim > 0 ORDER BY c.rid LIMIT ?`)
	if err != nil {
		return 0, dbErr(err, "migrate chunk vectors")
	}
	defer sel.Close()
	upd, err := tx.PrepareContext(ctx, `UPDATE chunks SET vec = ? WHERE rid = ?`)
	if err != nil {
		return 0, dbErr(err, "migrate chunk vectors")
	}
	defer upd.Close()
	type row struct {
		rid int64
		vec []byte
	}
	var (
		batch []row
		last  int64
		total int
		f     []float32
		q     []int8
	)
	for {
		batch = batch[:0]
		rows, err := sel.QueryContext(ctx, last, q8Batch)
		if err != nil {
			return 0, dbErr(err, "migrate chunk vectors")
		}
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.rid, &r.vec); err != nil {
				rows.Close()
				return 0, dbErr(err, "migrate chunk vectors")
			}
			batch = append(batch, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return 0, dbErr(err, "migrate chunk vectors")
		}
		if len(batch) == 0 {
			return total, nil
		}
		var b []byte
		for _, r := range batch {
			f = appendVec(f[:0], r.vec)
			b, q = appendQ8Bytes(nil, q, f)
			if _, err := upd.ExecContext(ctx, b, r.rid); err != nil {
				return 0, dbErr(err, "migrate chunk vectors")
			}
			last = r.rid
		}
		total += len(batch)
	}
}

// convertSemQ8 rewrites every semantic vector (all float32 below format 2)
// in the format of appendQ8Bytes, by chunk row id, and returns how many it
// rewrote.
func convertSemQ8(ctx context.Context, tx *sql.Tx) (int, error) {
	sel, err := tx.PrepareContext(ctx, `SELECT rid, model, vec FROM semvecs WHERE rid > ? ORDER BY rid LIMIT ?`)
	if err != nil {
		return 0, dbErr(err, "migrate semantic vectors")
	}
	defer sel.Close()
	upd, err := tx.PrepareContext(ctx, `UPDATE semvecs SET vec = ? WHERE rid = ? AND model = ?`)
	if err != nil {
		return 0, dbErr(err, "migrate semantic vectors")
	}
	defer upd.Close()
	type row struct {
		rid   int64
		model string
		vec   []byte
	}
	var (
		batch []row
		last  int64
		total int
		f     []float32
		q     []int8
	)
	for {
		batch = batch[:0]
		rows, err := sel.QueryContext(ctx, last, q8Batch)
		if err != nil {
			return 0, dbErr(err, "migrate semantic vectors")
		}
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.rid, &r.model, &r.vec); err != nil {
				rows.Close()
				return 0, dbErr(err, "migrate semantic vectors")
			}
			batch = append(batch, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return 0, dbErr(err, "migrate semantic vectors")
		}
		if len(batch) == 0 {
			return total, nil
		}
		// a row id's every model is in the batch, unless the LIMIT cut
		// it: then the rest comes in the next round (rid > last skips it),
		// so stop the batch before that row id
		if len(batch) == q8Batch {
			cut := len(batch)
			for cut > 0 && batch[cut-1].rid == batch[len(batch)-1].rid {
				cut--
			}
			if cut > 0 {
				batch = batch[:cut]
			}
		}
		var b []byte
		for _, r := range batch {
			f = appendVec(f[:0], r.vec)
			b, q = appendQ8Bytes(nil, q, f)
			if _, err := upd.ExecContext(ctx, b, r.rid, r.model); err != nil {
				return 0, dbErr(err, "migrate semantic vectors")
			}
			last = r.rid
		}
		total += len(batch)
	}
}
