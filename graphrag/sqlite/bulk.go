package sqlite

import (
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/kgagent/kgagent"
)

// Bulk loads. Filling an empty store page by page pays, for every triple,
// an entry in each of the six secondary indexes and, for every new entity,
// its rows in entity_words: random B-tree inserts whose pages every group
// commit writes to the WAL again. On the Python docs that was about half of
// the graph writer's CPU. Into an empty store the indexes are instead built
// once at the end (CREATE INDEX sorts) and the words written in key order,
// which costs a fraction of that.
//
// A bulk load is recorded in table bulk_load in the transaction that drops
// the indexes, so a process that dies during one leaves a store that the
// next Open completes (finishBulk) before anything reads it.

// BulkLoad makes the writes that follow a bulk load when the store holds no
// triples and no entities at all (a fresh data dir): the secondary indexes
// are dropped and entity words not written until Close builds both. It
// reports whether it did. Until Close, lookups by name or object scan the
// table and Entities without a name index finds nothing, so only a process
// that writes and does not read the graph (kgagent ingest) should call it,
// before its first write.
func (s *Store) BulkLoad(ctx context.Context) (bool, error) {
	on := false
	err := s.write(ctx, "start a bulk load", func(x *wtx) error {
		if x.s.bulk {
			on = true
			return nil
		}
		var used bool
		if err := x.s.w.conn.QueryRowContext(x.ectx, `SELECT EXISTS (SELECT 1 FROM triples) OR EXISTS (SELECT 1 FROM entities)`).Scan(&used); err != nil {
			return err
		}
		if used {
			return nil
		}
		if _, err := x.s.w.conn.ExecContext(x.ectx, `INSERT OR IGNORE INTO bulk_load (id) VALUES (1)`); err != nil {
			return err
		}
		for _, name := range indexNames {
			if _, err := x.s.w.conn.ExecContext(x.ectx, `DROP INDEX IF EXISTS `+name); err != nil {
				return err
			}
		}
		on = true
		return nil
	})
	if err != nil {
		return false, err
	}
	// Only this store's writer reads bulk, and only after this write
	// (groupcommit hands the lead over under its mutex).
	s.bulk = on
	return on, nil
}

// finishBulk completes a bulk load recorded in bulk_load, if any (every
// entity's words written afresh), and creates the secondary indexes that
// are missing, in one transaction on the writer w. The words are read and
// computed on reader (the writer when nil) while the writer builds the
// indexes: that part of the end of a load then runs on another core.
func finishBulk(w *writer, reader queryer) error {
	ctx := context.Background()
	var pending int
	if err := w.conn.QueryRowContext(ctx, `SELECT count(*) FROM bulk_load`).Scan(&pending); err != nil {
		return err
	}
	type result struct {
		rows []wordRow
		err  error
	}
	words := make(chan result, 1)
	if pending > 0 {
		if reader == nil {
			rows, err := entityWords(ctx, w.conn)
			words <- result{rows, err}
		} else {
			go func() {
				rows, err := entityWords(ctx, reader)
				words <- result{rows, err}
			}()
		}
	}
	if err := w.begin(ctx); err != nil {
		if pending > 0 {
			<-words
		}
		return err
	}
	err := func() error {
		_, err := w.conn.ExecContext(ctx, indexes)
		if pending == 0 {
			return err
		}
		r := <-words
		if err != nil {
			return err
		}
		if r.err != nil {
			return r.err
		}
		if err := writeWords(ctx, w.conn, r.rows); err != nil {
			return err
		}
		_, err = w.conn.ExecContext(ctx, `DELETE FROM bulk_load`)
		return err
	}()
	if err != nil {
		w.rollback(ctx)
		return err
	}
	return w.commit(ctx)
}

// wordRow is one row of entity_words.
type wordRow struct{ collection, word, id string }

// entityWords are the rows entity_words should hold: every entity's words
// (see Words), in key order.
func entityWords(ctx context.Context, c queryer) ([]wordRow, error) {
	rows, err := c.QueryContext(ctx, `SELECT collection, id, norm FROM entities`)
	if err != nil {
		return nil, err
	}
	var all []wordRow
	for rows.Next() {
		var coll, id, norm string
		if err := rows.Scan(&coll, &id, &norm); err != nil {
			rows.Close()
			return nil, err
		}
		for _, w := range Words(norm, id) {
			all = append(all, wordRow{coll, w, id})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b wordRow) int {
		if c := strings.Compare(a.collection, b.collection); c != 0 {
			return c
		}
		if c := strings.Compare(a.word, b.word); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	return all, nil
}

// writeWords replaces entity_words by all (in key order).
func writeWords(ctx context.Context, c *sql.Conn, all []wordRow) error {
	var err error
	if _, err := c.ExecContext(ctx, `DELETE FROM entity_words`); err != nil {
		return err
	}
	const head = `INSERT OR IGNORE INTO entity_words (collection, word, id)`
	stmts := map[int]*sql.Stmt{}
	defer func() {
		for _, st := range stmts {
			st.Close()
		}
	}()
	vals := make([]any, 0, 3*rowsPerInsert)
	for len(all) > 0 {
		n := min(len(all), rowsPerInsert)
		st, ok := stmts[n]
		if !ok {
			if st, err = c.PrepareContext(ctx, insertSQL(head, 3, n)); err != nil {
				return err
			}
			stmts[n] = st
		}
		vals = vals[:0]
		for _, r := range all[:n] {
			vals = append(vals, r.collection, r.word, r.id)
		}
		if _, err := st.ExecContext(ctx, vals...); err != nil {
			return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "graph store: write entity words")
		}
		all = all[n:]
	}
	return nil
}
