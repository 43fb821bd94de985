package sqlite

import (
	"encoding/binary"
	"math"
)

// The triples of a bulk load, kept for the name index. kgagent ingest
// snapshots the name index of the collection it wrote (Snapshot) right
// after its bulk load: reading every triple back from SQLite for that
// (loadTriples) cost ~1.1 CPU-s of a Python-docs ingest, database/sql's
// row scans mostly, for rows the writer had in hand as strs ids when it
// inserted them. So during a bulk load the writer keeps each committed
// triple's ids, compactly, and Snapshot feeds them to the name index's
// builder in place of the SQL read; the index, and so the snapshot, is
// the same (TestBulkNamesFromMemory). The rows stop being kept, and the
// snapshot reads SQLite as before, as soon as a write deletes triples (a
// replaced or deleted document, a deleted collection): a load of a fresh
// site deletes none.

// bulkRows are a bulk load's committed triples, in rowid order, as zigzag
// varints of each value's difference from the same value of the row
// before (rowid, collection, then the columns loadTriples reads): mostly
// 1-2 bytes a value, ~20 bytes a triple against 96 as int64s. They are
// kept in chunks (no copy as they grow) up to maxBulkRowsBytes: past it
// they are dropped, and the name index reads the triples from SQLite, so
// that a load's memory does not grow with its triples (the 33,438 pages
// of docs of issue 25: 2.5M triples, 48 MB).
type bulkRows struct {
	on     bool // keeping rows: a bulk load without deletes so far
	n      int
	chunks [][]byte
	bytes  int             // the chunks' capacity
	last   [bulkCols]int64 // the values of the last row
}

// bulkCols is the values of a row kept: rowid, collection and the eleven
// columns loadTriples reads.
const bulkCols = 13

// bulkChunk is the size of bulkRows' chunks; a row (at most
// bulkCols*binary.MaxVarintLen64 bytes) never spans two. A variable so
// that a test can lower it.
var bulkChunk = 1 << 20

// maxBulkRowsBytes bounds the bytes bulkRows keeps (the OpenJDK API docs'
// 1.38M triples take ~28 MB). A variable so that a test can lower it.
var maxBulkRowsBytes = 32 << 20

// bulkOf is, for each value bulkRows keeps, its column in a row of
// insertTriples' values: rowid, collection, then s_id, s_name, s_type, p,
// o_id, o_name, o_type, literal, chunk_id, doc_url, source_url.
var bulkOf = [bulkCols]int{0, 1, 3, 4, 5, 7, 8, 9, 10, 12, 13, 2, 14}

// add appends the rows of vals (insertTriples' values, the strings as strs
// ids, tripleCols a row), which must follow the rows kept by rowid; rows
// out of order, or past maxBulkRowsBytes, stop the keeping.
func (r *bulkRows) add(vals []any) {
	for i := 0; r.on && i+tripleCols <= len(vals); i += tripleCols {
		row := vals[i : i+tripleCols]
		if row[0].(int64) <= r.last[0] {
			r.stop()
			return
		}
		k := len(r.chunks) - 1
		if k < 0 || cap(r.chunks[k])-len(r.chunks[k]) < bulkCols*binary.MaxVarintLen64 {
			if r.bytes+bulkChunk > maxBulkRowsBytes {
				r.stop()
				return
			}
			r.chunks = append(r.chunks, make([]byte, 0, bulkChunk))
			r.bytes += bulkChunk
			k++
		}
		b := r.chunks[k]
		for k, c := range bulkOf {
			v := row[c].(int64)
			b = binary.AppendVarint(b, v-r.last[k])
			r.last[k] = v
		}
		r.chunks[k] = b
		r.n++
	}
}

// stop drops the rows and keeps no more.
func (r *bulkRows) stop() { *r = bulkRows{} }

// each calls fn with every row of collection coll (its strs id), in rowid
// order, until fn returns false.
func (r *bulkRows) each(coll int64, fn func(rowid int64, ids *[11]int64) bool) {
	var row [bulkCols]int64
	for _, b := range r.chunks {
		for len(b) > 0 {
			for k := range row {
				d, n := binary.Varint(b)
				b = b[n:]
				row[k] += d
			}
			if row[1] != coll {
				continue
			}
			if !fn(row[0], (*[11]int64)(row[2:])) {
				return
			}
		}
	}
}

// matches reports whether the rows kept are all the triples stored, as
// count(*) and max(rowid) of the table tell.
func (r *bulkRows) matches(count, maxRow int64) bool {
	return r.on && int64(r.n) == count && r.last[0] == maxRow && r.n < math.MaxInt32
}
