package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"

	"github.com/kgagent/kgagent/internal/snapfile"
)

// Name-index snapshots. Building a collection's name index (read.go) from
// SQLite reads every entity and triple again: about 1 CPU-s and several
// seconds of wall time for the Python docs, which `serve` waits for before
// it reports ready. So the index is also written beside the database
// (<graph.db>-snap/<hex collection>, internal/snapfile, the format the
// corpus index's snapshots use) and read back instead.
//
// A snapshot is used only when it is exactly the index SQLite would give:
// its header carries the collection's version (table versions: every write
// transaction of a collection stamps it from a counter that only grows, so
// a collection deleted and created again never repeats one), the largest
// triple rowid and the collection's entity count (which change with any
// write of an earlier version of this program, which does not stamp), and
// the identity of the executable (another build may index differently);
// the body has a checksum. The version and the rows of a load are read in
// one read transaction. Anything else falls back to SQL, and that load
// writes a fresh snapshot in the background.

const namesSnapMagic = "kgagent-graph-names-snapshot-1\n"

// snapDir is where the store's snapshots live.
func (s *Store) snapDir() string { return s.path + "-snap" }

// snapState is what a collection's snapshot must match: read inside the
// load's read transaction.
func snapState(ctx context.Context, q queryer, collection string) (string, error) {
	var version, maxRow, ents sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT (SELECT version FROM versions WHERE collection = ?1),
		(SELECT max(rowid) FROM triples), (SELECT count(*) FROM entities WHERE collection = `+strID("?1")+`)`, collection).Scan(&version, &maxRow, &ents)
	if err != nil {
		return "", err
	}
	if !version.Valid {
		return "", nil // never written by this version: no snapshot
	}
	return snapfile.Header(namesSnapMagic, fmt.Sprintf("%q", collection),
		fmt.Sprintf("%d %d %d", version.Int64, maxRow.Int64, ents.Int64)), nil
}

// queryer is what loads read with: the read transaction.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readNamesSnapshot returns the index in collection's snapshot when its
// header is header, else nil.
func (s *Store) readNamesSnapshot(collection, header string, version int64) *nameIndex {
	body := snapfile.Read(snapfile.Path(s.snapDir(), collection), header)
	if body == nil {
		return nil
	}
	x, err := decodeNames(body)
	if err != nil {
		return nil
	}
	x.version = version
	return x
}

// writeNamesSnapshot writes x as collection's snapshot with header.
func (s *Store) writeNamesSnapshot(collection, header string, x *nameIndex) error {
	path := snapfile.Path(s.snapDir(), collection)
	e := snapfile.NewEncoder()
	encodeNames(e, x)
	tmp, err := snapfile.WriteTemp(path, header, e)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // after the rename: no such file
	return os.Rename(tmp, path)
}

// removeNamesSnapshot deletes collection's snapshot (a deleted collection;
// its version would not match again anyway).
func (s *Store) removeNamesSnapshot(collection string) {
	_ = os.Remove(snapfile.Path(s.snapDir(), collection))
}

// encodeNames writes the snapshot body of x into e: entities, the word
// index, the interned strings and the triples (the adjacency lists are
// rebuilt).
func encodeNames(e *snapfile.Encoder, x *nameIndex) {
	e.U32(uint32(len(x.ents)))
	for _, n := range x.ents {
		e.Str(n.e.ID)
		e.Str(n.e.Name)
		e.Str(n.e.Type)
		e.Str(n.norm)
		e.U64(uint64(n.refs))
	}
	e.U32(uint32(len(x.words)))
	for _, w := range x.words {
		e.Str(w)
		list := x.byWord[w]
		e.U32(uint32(len(list)))
		for _, i := range list {
			e.U32(uint32(i))
		}
	}
	e.U32(uint32(len(x.strs)))
	for _, str := range x.strs {
		e.Str(str)
	}
	e.U32(uint32(len(x.rows)))
	for _, r := range x.rows {
		e.U64(uint64(r.rowid))
		for _, c := range r.col {
			e.U32(uint32(c))
		}
	}
}

// decodeNames rebuilds a name index from encodeNames' bytes, checking
// every reference.
func decodeNames(b []byte) (*nameIndex, error) {
	d := &snapfile.Decoder{B: b}
	x := &nameIndex{}
	x.ents = make([]nameEnt, d.Count(4*4+8))
	for i := range x.ents {
		n := &x.ents[i]
		n.e.ID, n.e.Name, n.e.Type, n.norm = d.Str(), d.Str(), d.Str(), d.Str()
		n.refs = int(d.U64())
	}
	x.words = make([]string, d.Count(4+4))
	x.byWord = make(map[string][]int32, len(x.words))
	for i := range x.words {
		w := d.Str()
		list := make([]int32, d.Count(4))
		for j := range list {
			v := d.U32()
			if int(v) >= len(x.ents) {
				return nil, fmt.Errorf("snapshot: entity %d of %d", v, len(x.ents))
			}
			list[j] = int32(v)
		}
		if i > 0 && w <= x.words[i-1] {
			return nil, fmt.Errorf("snapshot: words out of order")
		}
		x.words[i] = w
		x.byWord[w] = list
	}
	x.strs = make([]string, d.Count(4))
	for i := range x.strs {
		x.strs[i] = d.Str()
	}
	rows := make([]memTriple, d.Count(8+11*4))
	for i := range rows {
		rows[i].rowid = int64(d.U64())
		for j := range rows[i].col {
			v := d.U32()
			if int(v) >= len(x.strs) {
				return nil, fmt.Errorf("snapshot: string %d of %d", v, len(x.strs))
			}
			rows[i].col[j] = int32(v)
		}
	}
	if d.Err != nil {
		return nil, d.Err
	}
	if len(d.B) != 0 {
		return nil, fmt.Errorf("snapshot: %d bytes of trailing data", len(d.B))
	}
	x.link(rows)
	return x, nil
}

// Snapshot makes the collection's name-index snapshot current on disk, so
// the next process on the data dir (serve) reads it back instead of
// building the index from SQLite: kgagent ingest calls it for the
// collection it wrote, at its end, with no write in flight. A bulk load in
// progress is completed first (its indexes, entities and words, as Close
// would), since the snapshot must match the entities stored. A current
// snapshot is left as it is; a collection never written, or too big to
// keep an index of, gets none.
func (s *Store) Snapshot(ctx context.Context, collection string) error {
	if s.bulk {
		if err := finishBulk(&s.w, s.rdb, &s.tally); err != nil {
			return dbErr(ctx, err, "complete the bulk load")
		}
		s.bulk = false
		s.tally = entityTally{}
	}
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return dbErr(ctx, err, "snapshot the name index")
	}
	defer tx.Rollback()
	header, err := snapState(ctx, tx, collection)
	if err != nil {
		return dbErr(ctx, err, "snapshot the name index")
	}
	if header == "" || s.readNamesSnapshot(collection, header, 0) != nil {
		return nil
	}
	idx, err := loadNames(ctx, tx, collection, 0)
	if err != nil {
		return dbErr(ctx, err, "snapshot the name index")
	}
	if idx == nil {
		return nil
	}
	return s.writeNamesSnapshot(collection, header, idx)
}

// Rebuilds counts the name indexes this store built from SQLite rather than
// read back from a current snapshot (serve logs it once warm).
func (s *Store) Rebuilds() int64 { return s.names.sqlLoads.Load() }
