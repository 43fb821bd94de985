package sqlite

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	sqlite3 "modernc.org/sqlite"
)

// Entity words in blocks (format 3, issue 25). The words an entity is
// indexed under (Words) were one row each of entity_words(collection, word,
// id): 765k rows and 30.3 MB on the OpenJDK API docs, most of it the words'
// text (long section and page ids repeated with their URLs' common
// prefixes). Table word_blocks holds them front-coded instead: a row is a
// run of a collection's consecutive words in byte order, each with the
// ascending strs ids of its entities, and is found by its first word
// (unique index on (collection, first)). A word's ids are never split
// between blocks.
//
// A block's encoding, for each word in ascending order: uvarint the length
// of the prefix it shares with the word before (the block's first word
// before the first), uvarint the length of the rest, the rest, uvarint the
// number of ids, then the ids as uvarint deltas (the first from 0; every
// delta ≥ 1, so the ids ascend strictly).

// wordEntry is one word of a block and the strs ids of the entities indexed
// under it, ascending.
type wordEntry struct {
	word string
	ids  []int64
}

// blockCap bounds a block's first word and encoding together: a word that
// would take it past the cap starts the next block, and a word whose ids
// alone pass it is a block of its own. 4,000 bytes keep a row within a
// 4 KiB page of the table (SQLite moves what passes 4,061 bytes to
// overflow pages), one row a page, ~97% full: on the OpenJDK docs 5.2 MB
// of blocks and a 0.1 MB index, against 6.3 MB for kilobyte blocks (four
// rows a page fit badly) and 30.3 MB of entity_words rows. A variable so
// that tests can make blocks small.
var blockCap = 4000

// appendEntry appends the encoding of e, front-coded against prev.
func appendEntry(dst []byte, prev string, e wordEntry) []byte {
	dst = appendWord(dst, prev, e.word)
	dst = binary.AppendUvarint(dst, uint64(len(e.ids)))
	var p int64
	for _, id := range e.ids {
		dst = binary.AppendUvarint(dst, uint64(id-p))
		p = id
	}
	return dst
}

// appendWord appends word front-coded against prev: uvarints of the
// length of the prefix they share and of the rest's, then the rest (a
// block's entries; a word run's rows, bulkwords.go).
func appendWord(dst []byte, prev, word string) []byte {
	l := commonPrefix(prev, word)
	dst = binary.AppendUvarint(dst, uint64(l))
	dst = binary.AppendUvarint(dst, uint64(len(word)-l))
	return append(dst, word[l:]...)
}

// commonPrefix is the length of the prefix a and b share.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// wordBlock is one row of word_blocks to write.
type wordBlock struct {
	first string
	data  []byte
}

// packBlocks cuts ents (sorted by word, at least one id each) into blocks.
func packBlocks(ents []wordEntry) []wordBlock {
	var out []wordBlock
	var p blockPacker
	for _, e := range ents {
		if b, ok := p.add(e); ok {
			out = append(out, b)
		}
	}
	if b, ok := p.finish(); ok {
		out = append(out, b)
	}
	return out
}

// blockPacker encodes sorted words into blocks of at most blockCap bytes.
type blockPacker struct {
	first, prev string
	buf         []byte
}

// add encodes e in the block being packed, or, when that would pass
// blockCap, returns that block and starts the next with e.
func (p *blockPacker) add(e wordEntry) (wordBlock, bool) {
	if len(p.buf) == 0 {
		p.first, p.prev = e.word, e.word
		p.buf = appendEntry(p.buf, p.prev, e)
		return wordBlock{}, false
	}
	n := len(p.buf)
	p.buf = appendEntry(p.buf, p.prev, e)
	if len(p.first)+len(p.buf) <= blockCap {
		p.prev = e.word
		return wordBlock{}, false
	}
	done := wordBlock{p.first, p.buf[:n:n]}
	p.first, p.prev = e.word, e.word
	p.buf = appendEntry(nil, e.word, e)
	return done, true
}

// finish returns the last block, if any.
func (p *blockPacker) finish() (wordBlock, bool) {
	b := wordBlock{p.first, p.buf}
	p.buf = nil
	return b, len(b.data) > 0
}

// errBadBlock is a word block that does not decode.
var errBadBlock = errors.New("graph store: corrupt word block")

// eachWord calls fn with each word of the block (first, data) and its ids
// (valid until fn returns), in order, until fn returns false. The block is
// checked as it is read: words ascend strictly, ids ascend strictly and
// are positive.
func eachWord(first string, data []byte, fn func(word []byte, ids []int64) bool) error {
	prev := []byte(first)
	var word []byte
	var ids []int64
	for n := 0; len(data) > 0; n++ {
		l, k := binary.Uvarint(data)
		if k <= 0 || l > uint64(len(prev)) {
			return errBadBlock
		}
		data = data[k:]
		rest, k := binary.Uvarint(data)
		if k <= 0 || rest > uint64(len(data)-k) {
			return errBadBlock
		}
		data = data[k:]
		word = append(append(word[:0], prev[:l]...), data[:rest]...)
		data = data[rest:]
		if c := bytes.Compare(word, prev); c < 0 || c == 0 && n > 0 {
			return errBadBlock
		}
		cnt, k := binary.Uvarint(data)
		if k <= 0 || cnt == 0 || cnt > uint64(len(data)-k) {
			return errBadBlock
		}
		data = data[k:]
		ids = ids[:0]
		var id uint64
		for range cnt {
			d, k := binary.Uvarint(data)
			if k <= 0 || d == 0 || d > 1<<62-id {
				return errBadBlock
			}
			data = data[k:]
			id += d
			ids = append(ids, int64(id))
		}
		if !fn(word, ids) {
			return nil
		}
		prev, word = word, prev
	}
	return nil
}

// decodeBlock is every word of the block (first, data).
func decodeBlock(first string, data []byte) ([]wordEntry, error) {
	var out []wordEntry
	err := eachWord(first, data, func(w []byte, ids []int64) bool {
		out = append(out, wordEntry{string(w), slices.Clone(ids)})
		return true
	})
	return out, err
}

// appendIDsJSON appends ids to dst as the elements of a JSON array (no
// brackets), comma-separated after any already there.
func appendIDsJSON(dst []byte, ids []int64) []byte {
	for _, id := range ids {
		if len(dst) > 1 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, id, 10)
	}
	return dst
}

// The SQL functions that read blocks, so that Entities' lookups stay one
// statement each (one read transaction), the ids going to the entities
// table through json_each:
//
//   - kg_word_ids(first, data, word): the ids of word in the block, as a
//     JSON array ([] when it has none);
//   - kg_prefix_ids(first, data, lo, hi): the ids of the block's words w
//     with lo < w < hi, as a JSON array.
//
// A block that does not decode is an error of the statement.
func init() {
	text := func(v driver.Value) (string, bool) {
		switch x := v.(type) {
		case string:
			return x, true
		case []byte:
			return string(x), true
		}
		return "", false
	}
	blob := func(v driver.Value) ([]byte, bool) {
		switch x := v.(type) {
		case []byte:
			return x, true
		case string:
			return []byte(x), true
		}
		return nil, false
	}
	args := func(name string, vs []driver.Value) (first string, data []byte, strs []string, err error) {
		var ok1, ok2 bool
		first, ok1 = text(vs[0])
		data, ok2 = blob(vs[1])
		if !ok1 || !ok2 {
			return "", nil, nil, fmt.Errorf("%s: want a block's first word and data", name)
		}
		for _, v := range vs[2:] {
			s, ok := text(v)
			if !ok {
				return "", nil, nil, fmt.Errorf("%s: want text arguments", name)
			}
			strs = append(strs, s)
		}
		return first, data, strs, nil
	}
	sqlite3.MustRegisterDeterministicScalarFunction("kg_word_ids", 3, func(_ *sqlite3.FunctionContext, vs []driver.Value) (driver.Value, error) {
		first, data, ws, err := args("kg_word_ids", vs)
		if err != nil {
			return nil, err
		}
		out := []byte{'['}
		err = eachWord(first, data, func(w []byte, ids []int64) bool {
			switch strings.Compare(string(w), ws[0]) {
			case 0:
				out = appendIDsJSON(out, ids)
				return false
			case 1:
				return false
			}
			return true
		})
		return string(append(out, ']')), err
	})
	sqlite3.MustRegisterDeterministicScalarFunction("kg_prefix_ids", 4, func(_ *sqlite3.FunctionContext, vs []driver.Value) (driver.Value, error) {
		first, data, ws, err := args("kg_prefix_ids", vs)
		if err != nil {
			return nil, err
		}
		lo, hi := ws[0], ws[1]
		out := []byte{'['}
		err = eachWord(first, data, func(w []byte, ids []int64) bool {
			if string(w) >= hi {
				return false
			}
			if string(w) > lo {
				out = appendIDsJSON(out, ids)
			}
			return true
		})
		return string(append(out, ']')), err
	})
}

// wordIDsSQL selects the ids (json_each values) of the entities indexed
// under word ?2 in collection ?1 (a strs id, in SQL): the block whose
// first word is the last at or before the word holds it if any does.
const wordIDsSQL = `SELECT j.value FROM (SELECT first, words FROM word_blocks
	WHERE collection = ?1 AND first <= ?2 ORDER BY first DESC LIMIT 1) AS b, json_each(kg_word_ids(b.first, b.words, ?2)) AS j`

// prefixIDsSQL selects the ids (json_each values, perhaps repeated) of the
// entities indexed under words w with ?2 < w < ?3 in collection ?1 (a strs
// id, in SQL): the blocks from the one that holds ?2's place to the last
// that starts before ?3.
const prefixIDsSQL = `SELECT j.value FROM word_blocks AS b, json_each(kg_prefix_ids(b.first, b.words, ?2, ?3)) AS j
	WHERE b.collection = ?1 AND b.first >= coalesce((SELECT first FROM word_blocks
		WHERE collection = ?1 AND first <= ?2 ORDER BY first DESC LIMIT 1), '') AND b.first < ?3`

// wordEdit adds (or, with del, removes) entity id under word.
type wordEdit struct {
	word string
	id   int64
	del  bool
}

// blockStmts runs the writer's statements (wtx: prepared once).
type blockStmts interface {
	exec(q string, args ...any) (sql.Result, error)
	query(q string, args ...any) (*sql.Rows, error)
}

// editWords applies edits to collection coll's (a strs id) blocks: each
// block an edit falls in is read, changed and written again once (cut
// anew, when it grew past blockCap; gone, when it lost every word), and
// it returns how many blocks it wrote. Adding an id a word has, or
// removing one it lacks, changes nothing (as INSERT OR IGNORE and DELETE
// did on entity_words). Edits of the same word and id apply in their
// order.
func editWords(x blockStmts, coll int64, edits []wordEdit) (int, error) {
	slices.SortStableFunc(edits, func(a, b wordEdit) int {
		if c := strings.Compare(a.word, b.word); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	written := 0
	for len(edits) > 0 {
		w := edits[0].word
		var rowid int64
		var first string
		var data []byte
		found, err := scanBlock(x, `SELECT rowid, first, words FROM word_blocks WHERE collection = ?1 AND first <= ?2 ORDER BY first DESC LIMIT 1`, []any{coll, w}, &rowid, &first, &data)
		if err == nil && !found {
			// Before every block: the first block (if any) takes it.
			found, err = scanBlock(x, `SELECT rowid, first, words FROM word_blocks WHERE collection = ?1 ORDER BY first LIMIT 1`, []any{coll}, &rowid, &first, &data)
		}
		if err != nil {
			return written, err
		}
		var ents []wordEntry
		next, hasNext := "", false
		if found {
			if ents, err = decodeBlock(first, data); err != nil {
				return written, err
			}
			if hasNext, err = scanBlock(x, `SELECT first FROM word_blocks WHERE collection = ?1 AND first > ?2 ORDER BY first LIMIT 1`, []any{coll, first}, &next); err != nil {
				return written, err
			}
		}
		n := len(edits)
		if hasNext {
			n, _ = slices.BinarySearchFunc(edits, next, func(e wordEdit, t string) int { return strings.Compare(e.word, t) })
		}
		ents = applyEdits(ents, edits[:n])
		edits = edits[n:]
		if found {
			if _, err := x.exec(`DELETE FROM word_blocks WHERE rowid = ?`, rowid); err != nil {
				return written, err
			}
		}
		for _, b := range packBlocks(ents) {
			if _, err := x.exec(`INSERT INTO word_blocks (collection, first, words) VALUES (?, ?, ?)`, coll, b.first, b.data); err != nil {
				return written, err
			}
			written++
		}
	}
	return written, nil
}

// scanBlock runs q and scans its first row into dest, reporting whether
// there was one.
func scanBlock(x blockStmts, q string, args []any, dest ...any) (bool, error) {
	rows, err := x.query(q, args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	if !rows.Next() {
		return false, rows.Err()
	}
	if err := rows.Scan(dest...); err != nil {
		return false, err
	}
	return true, rows.Close()
}

// applyEdits applies edits (sorted by word) to ents (sorted by word) and
// returns the entries that keep at least one id.
func applyEdits(ents []wordEntry, edits []wordEdit) []wordEntry {
	for _, e := range edits {
		i, ok := slices.BinarySearchFunc(ents, e.word, func(x wordEntry, t string) int { return strings.Compare(x.word, t) })
		if !ok {
			if e.del {
				continue
			}
			ents = slices.Insert(ents, i, wordEntry{word: e.word})
		}
		ids := ents[i].ids
		j, has := slices.BinarySearch(ids, e.id)
		switch {
		case e.del && has:
			ids = slices.Delete(ids, j, j+1)
		case !e.del && !has:
			ids = slices.Insert(ids, j, e.id)
		}
		ents[i].ids = ids
	}
	return slices.DeleteFunc(ents, func(e wordEntry) bool { return len(e.ids) == 0 })
}

// rowPacker packs word rows given one at a time, sorted by collection,
// word and id (a repeated row counts once), into blocks, calling emit
// with each block and its collection's strs id (writeBlocksFrom; the
// migration, as it reads entity_words).
type rowPacker struct {
	emit func(coll int64, b wordBlock) error
	p    blockPacker
	cur  wordRow // the word whose ids are being gathered
	ids  []int64
}

// add takes the next row.
func (rp *rowPacker) add(r wordRow) error {
	if len(rp.ids) > 0 && (r.collection != rp.cur.collection || r.word != rp.cur.word) {
		if err := rp.endWord(r.collection != rp.cur.collection); err != nil {
			return err
		}
	}
	if n := len(rp.ids); n == 0 || rp.ids[n-1] != r.id {
		rp.ids = append(rp.ids, r.id)
	}
	rp.cur = r
	return nil
}

// finish emits what is left.
func (rp *rowPacker) finish() error {
	if len(rp.ids) == 0 {
		return nil
	}
	return rp.endWord(true)
}

// endWord packs the gathered word and, at its collection's end, that
// collection's last block.
func (rp *rowPacker) endWord(collEnd bool) error {
	b, ok := rp.p.add(wordEntry{rp.cur.word, rp.ids})
	rp.ids = rp.ids[:0]
	if ok {
		if err := rp.emit(rp.cur.collection, b); err != nil {
			return err
		}
	}
	if collEnd {
		if b, ok := rp.p.finish(); ok {
			return rp.emit(rp.cur.collection, b)
		}
	}
	return nil
}

// migrateWordBlocks moves a store of format 2 (or one an earlier migration
// just brought there), whose entity words are rows of entity_words, to
// format 3 in one transaction: the rows are read in key order and written
// as blocks, entity_words is dropped and user_version set. The file is
// vacuumed after (30.3 MB of entity_words became 5–6 MB of blocks on the
// OpenJDK API docs). Entities answers as before (TestMigrateWordBlocks on
// a store written by main at 651cf17).
func migrateWordBlocks(db *sql.DB) error {
	const legacy = `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'entity_words'`
	var n int
	if err := db.QueryRow(legacy).Scan(&n); err != nil || n == 0 {
		return err
	}
	tx, err := db.Begin() // IMMEDIATE (the writer's DSN): holds the write lock
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// Again inside the transaction: another process may have migrated the
	// file meanwhile.
	if err := tx.QueryRow(legacy).Scan(&n); err != nil || n == 0 {
		return err
	}
	type collBlock struct {
		coll int64
		b    wordBlock
	}
	var blocks []collBlock
	rp := rowPacker{emit: func(c int64, b wordBlock) error {
		blocks = append(blocks, collBlock{c, b})
		return nil
	}}
	rows, err := tx.Query(`SELECT collection, word, id FROM entity_words ORDER BY collection, word, id`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var r wordRow
		if err := rows.Scan(&r.collection, &r.word, &r.id); err != nil {
			rows.Close()
			return err
		}
		if err := rp.add(r); err != nil {
			rows.Close()
			return err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if err := rp.finish(); err != nil {
		return err
	}
	ins, err := tx.Prepare(insertWordsSQL + ` VALUES (?, ?, ?)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	for _, b := range blocks {
		if _, err := ins.Exec(b.coll, b.b.first, b.b.data); err != nil {
			return err
		}
	}
	if err := execIn(tx, `DROP TABLE entity_words`, fmt.Sprintf(`PRAGMA user_version = %d`, formatVersion)); err != nil {
		return err
	}
	vacuum(db)
	return nil
}

// writeBlocks replaces word_blocks by the blocks of all (sorted as
// entityWords returns them) on c.
func writeBlocks(ctx context.Context, c *sql.Conn, all []wordRow) error {
	return writeBlocksFrom(ctx, c, func(add func(wordRow) error) error {
		for _, r := range all {
			if err := add(r); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeBlocksFrom is writeBlocks with the rows given to add by each, in
// the same order. It keeps one block, one word's ids and rowsPerInsert
// blocks at a time: the end of an ingest, where this runs, is its memory
// peak.
func writeBlocksFrom(ctx context.Context, c *sql.Conn, each func(add func(wordRow) error) error) error {
	if _, err := c.ExecContext(ctx, `DELETE FROM word_blocks`); err != nil {
		return err
	}
	// rowsPerInsert blocks at a time.
	var vals []any
	write := func() error {
		n := len(vals) / 3
		err := insertAll(ctx, c, insertWordsSQL, 3, n, func(i int, out []any) []any {
			return append(out, vals[3*i:3*i+3]...)
		}, "write entity words")
		vals = vals[:0]
		return err
	}
	rp := rowPacker{emit: func(coll int64, b wordBlock) error {
		vals = append(vals, coll, b.first, b.data)
		if len(vals) == 3*rowsPerInsert {
			return write()
		}
		return nil
	}}
	if err := each(rp.add); err != nil {
		return err
	}
	if err := rp.finish(); err != nil {
		return err
	}
	return write()
}
