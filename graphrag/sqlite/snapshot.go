package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
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

// Format 4 writes the nodes, the provenances and the triple rows as
// varints of differences (a row's subject from the row before's, its
// object from its subject, its provenance from the row before's): the
// OpenJDK API docs' name index 22.9 -> 21.5 MB on disk. Format 5 writes
// the triples' strings first and an entity's strings and the words as
// references into them (nameIndex.str), with the few strings no triple
// holds in a table of their own. Format 6 writes a row's literal before its
// object, and no object for a literal (memTriple). A snapshot of an earlier
// format fails the header check and is rebuilt from SQLite. Format 7 starts
// with a byte that says whether the index holds the triples (0) or the
// entities alone (1, nameIndex.entsOnly: no node, provenance or row
// follows).
const namesSnapMagic = "kgagent-graph-names-snapshot-7\n"

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
	return snapHeader(collection, version, maxRow.Int64, ents.Int64), nil
}

// snapHeader is the header of collection's snapshot at this version (none:
// never written by this version of the program, no snapshot), largest
// triple rowid and entity count ("" when none).
func snapHeader(collection string, version sql.NullInt64, maxRow, ents int64) string {
	if !version.Valid {
		return ""
	}
	return snapfile.Header(namesSnapMagic, fmt.Sprintf("%q", collection),
		fmt.Sprintf("%d %d %d", version.Int64, maxRow, ents))
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

// writeNamesSnapshot writes x as collection's snapshot with header,
// straight to the file as it is compressed (snapfile.Create): at the end of
// an OpenJDK API docs ingest the compressed body (23 MB, in a buffer grown
// by doubling) was held beside the whole name index at the process's peak.
func (s *Store) writeNamesSnapshot(collection, header string, x *nameIndex) error {
	tmp, err := s.writeNamesTemp(collection, header, x)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // after the rename: no such file
	return os.Rename(tmp, snapfile.Path(s.snapDir(), collection))
}

// writeNamesTemp writes x as collection's snapshot with header to a
// temporary file beside it and returns its name, for the caller to rename
// into place or remove.
func (s *Store) writeNamesTemp(collection, header string, x *nameIndex) (string, error) {
	e, err := snapfile.Create(snapfile.Path(s.snapDir(), collection), header)
	if err != nil {
		return "", err
	}
	encodeNames(e, x)
	return e.Finish()
}

// removeNamesSnapshot deletes collection's snapshot (a deleted collection;
// its version would not match again anyway).
func (s *Store) removeNamesSnapshot(collection string) {
	_ = os.Remove(snapfile.Path(s.snapDir(), collection))
}

// encodeNames writes the snapshot body of x into e: the interned strings,
// the strings apart, entities, the word index and the triples (the
// adjacency lists are rebuilt).
func encodeNames(e *snapfile.Encoder, x *nameIndex) {
	if x.entsOnly {
		e.Uvarint(1)
	} else {
		e.Uvarint(0)
	}
	for _, t := range []*strTable{&x.strs, &x.extra} {
		e.U32(uint32(t.len()))
		for i := range t.len() {
			e.Str(t.at(int32(i)))
		}
	}
	e.U32(uint32(len(x.ents)))
	for _, n := range x.ents {
		e.Varint(int64(n.id))
		e.Varint(int64(n.name))
		e.Varint(int64(n.typ))
		e.Varint(int64(n.norm))
		e.Uvarint(uint64(n.refs))
	}
	e.U32(uint32(len(x.words)))
	for w, k := range x.words {
		e.Varint(int64(k))
		list := span(x.wordEnts, x.wordEnd, int32(w))
		e.Uvarint(uint64(len(list)))
		for _, i := range list {
			e.Uvarint(uint64(i))
		}
	}
	if x.entsOnly {
		return
	}
	for _, list := range [][][3]int32{x.nodes, x.provs} {
		e.U32(uint32(len(list)))
		var prev [3]int32
		for _, k := range list {
			for j := range 3 {
				e.Varint(int64(k[j] - prev[j]))
			}
			prev = k
		}
	}
	e.U32(uint32(len(x.rows)))
	var prev memTriple
	for _, r := range x.rows {
		e.Varint(int64(r.s - prev.s))
		e.Uvarint(uint64(r.p))
		e.Uvarint(uint64(r.lit()))
		if r.o >= 0 {
			e.Varint(int64(r.o - r.s))
		}
		e.Varint(int64(r.prov - prev.prov))
		prev = r
	}
}

// decodeNames rebuilds a name index from encodeNames' bytes, checking
// every reference. Strings go straight into the index's tables.
func decodeNames(b []byte) (*nameIndex, error) {
	d := &snapfile.Decoder{B: b}
	x := &nameIndex{}
	switch kind := d.Uvarint(); kind {
	case 0:
	case 1:
		x.entsOnly = true
	default:
		if d.Err != nil {
			return nil, d.Err
		}
		return nil, fmt.Errorf("snapshot: index kind %d", kind)
	}
	// each table is sized from the strings' lengths first: growing them
	// cost ~0.3 CPU-s of copying on the OpenJDK docs
	for _, t := range []*strTable{&x.strs, &x.extra} {
		n := d.Count(4)
		*t = newStrTable(n, peekBytes(d.B, n, 1, func(int) int { return 0 }))
		for range n {
			t.addBytes(d.Bytes())
		}
		if t.tooBig() {
			return nil, fmt.Errorf("snapshot: strings of %d bytes", len(t.b))
		}
	}
	ns, nx := int64(x.strs.len()), int64(x.extra.len())
	// ref reads a string reference, or fails with one past its table
	ref := func() (int32, error) {
		k := d.Varint()
		if k >= ns || k < -nx {
			if d.Err != nil {
				return 0, d.Err
			}
			return 0, fmt.Errorf("snapshot: string reference %d past %d and %d strings", k, ns, nx)
		}
		return int32(k), nil
	}
	x.ents = make([]nameEnt, d.Count(5))
	for i := range x.ents {
		n := &x.ents[i]
		for _, f := range []*int32{&n.id, &n.name, &n.typ, &n.norm} {
			k, err := ref()
			if err != nil {
				return nil, err
			}
			*f = k
		}
		refs := d.Uvarint()
		if refs > math.MaxInt32 {
			return nil, fmt.Errorf("snapshot: entity %d has %d references", i, refs)
		}
		n.refs = int32(refs)
	}
	nw := d.Count(2)
	x.words = make([]int32, nw)
	x.wordEnd = make([]int32, nw)
	for i := range nw {
		k, err := ref()
		if err != nil {
			return nil, err
		}
		if i > 0 && x.str(k) <= x.str(x.words[i-1]) {
			return nil, fmt.Errorf("snapshot: words out of order")
		}
		x.words[i] = k
		n := d.Uvarint()
		if n > uint64(len(x.ents)) || n > uint64(len(d.B)) {
			return nil, fmt.Errorf("snapshot: word %d lists %d entities", i, n)
		}
		for range n {
			v := d.Uvarint()
			if v >= uint64(len(x.ents)) {
				return nil, fmt.Errorf("snapshot: entity %d of %d", v, len(x.ents))
			}
			x.wordEnts = append(x.wordEnts, int32(v))
		}
		x.wordEnd[i] = int32(len(x.wordEnts))
	}
	x.wordEnts = shrink(x.wordEnts)
	if x.entsOnly {
		if d.Err != nil {
			return nil, d.Err
		}
		if len(d.B) != 0 {
			return nil, fmt.Errorf("snapshot: %d bytes of trailing data", len(d.B))
		}
		return x, nil
	}
	// a string, node or provenance index past its table
	for _, list := range []*[][3]int32{&x.nodes, &x.provs} {
		*list = make([][3]int32, d.Count(3))
		var prev [3]int64
		for i := range *list {
			for j := range 3 {
				v := prev[j] + d.Varint()
				if v < 0 || v >= ns {
					if d.Err != nil {
						return nil, d.Err
					}
					return nil, fmt.Errorf("snapshot: string %d of %d", v, ns)
				}
				(*list)[i][j], prev[j] = int32(v), v
			}
		}
	}
	rows := make([]memTriple, d.Count(4))
	nn, np := int64(len(x.nodes)), int64(len(x.provs))
	var sv, prov int64
	for i := range rows {
		sv += d.Varint()
		p := d.Uvarint()
		lit := d.Uvarint()
		var o int64
		if lit == 0 {
			o = sv + d.Varint()
		}
		prov += d.Varint()
		if d.Err != nil {
			return nil, d.Err
		}
		if sv < 0 || sv >= nn || o < 0 || o >= nn || p >= uint64(ns) || lit >= uint64(ns) || prov < 0 || prov >= np {
			return nil, fmt.Errorf("snapshot: row %d refers past its tables", i)
		}
		if lit != 0 {
			o = int64(^int32(lit))
		}
		rows[i] = memTriple{s: int32(sv), p: int32(p), o: int32(o), prov: int32(prov)}
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

// peekBytes is the summed length of the strings of n items at the start of
// b, each item per strings (length-prefixed) followed by skip(offset) more
// bytes; it stops at the end of b (the decoder then fails on its own).
func peekBytes(b []byte, n, per int, skip func(at int) int) int {
	total, at := 0, 0
	for range n {
		for range per {
			if at+4 > len(b) {
				return total
			}
			l := int(binary.LittleEndian.Uint32(b[at:]))
			if l > len(b)-at-4 {
				return total
			}
			total += l
			at += 4 + l
		}
		at += skip(at)
	}
	return total
}

// Snapshot makes the collection's name-index snapshot current on disk, so
// the next process on the data dir (serve) reads it back instead of
// building the index from SQLite: kgagent ingest calls it for the
// collection it wrote, at its end, with no write in flight. A bulk load in
// progress is completed first (its indexes, entities and words, as Close
// would), since the snapshot must match the entities stored. A current
// snapshot is left as it is; a collection never written, or too big to
// keep an index of (past maxIndexedEntities), gets none; one past
// maxIndexedTriples gets the snapshot of its entities alone.
//
// The triples of a bulk load it completes come from the writer's memory,
// not SQLite (bulknames.go), when they are all the table holds.
func (s *Store) Snapshot(ctx context.Context, collection string) error {
	return s.SnapshotAfter(ctx, collection, nil)
}

// SnapshotAfter is Snapshot with the steps that hold the most memory
// waiting until ready is closed (nil: no wait): those that follow the
// index builds of a large bulk load it completes (its entities' strings
// and words, past earlyEntities) and a name index built after the load's
// finish (past earlyNamesTriples) or from SQLite. The index builds, which
// hold little of Go's memory, go on meanwhile, so a caller can make other
// snapshots on the second core beside them and close ready when done, and
// never hold their memory beside the name index's. The ready of a small
// load's snapshot, made beside the finish, is not waited for.
func (s *Store) SnapshotAfter(ctx context.Context, collection string, ready <-chan struct{}) error {
	wait := func() {
		if ready != nil {
			s.snapWaits.Add(1)
			select {
			case <-ready:
			case <-ctx.Done():
			}
		}
	}
	var mem *bulkRows
	var early chan earlyTriples
	var ents chan []entityRow
	// takeEarly is the early read's result, waited for once (also on
	// every return: the read ends before Snapshot does)
	var got earlyTriples
	takeEarly := func() earlyTriples {
		if early != nil {
			got, early = <-early, nil
		}
		return got
	}
	// the early snapshot's file, unless renamed into place (after the wait)
	defer func() {
		if got.tmp != "" {
			os.Remove(got.tmp)
		}
	}()
	defer takeEarly()
	// The bulk writer's strings when its cache holds all of strs: the name
	// index takes the strings of its triples from them, early or after the
	// finish, instead of a pass over strs (the finish only adds strings).
	// After the finish that pass made a Go string of each of strs's (728k
	// on the OpenJDK API docs, ~1 CPU-s), while known is held anyway.
	var known *strIDs
	if c := &s.w.strs; s.bulk && c.complete && c.all.committed == c.all.len() {
		known = c.all
		s.knownStrs++
	}
	if s.bulk {
		if s.rows.on && s.rows.n <= earlyNamesTriples {
			// The triples' part of the name index is read from the rows
			// kept while the writer completes the load, on another core:
			// the load's finish adds no triples, and only strings no
			// triple holds. Python docs: the index's 0.3 CPU-s off the
			// ~2.5 s the ingest's end waits for this snapshot.
			// Its entities are the finish's own rows, taken as the
			// writer goes on to write them and commit.
			// Their strings come from the writer's cache when it holds
			// all of strs: the finish does not change its map.
			rows := s.rows
			early = make(chan earlyTriples, 1)
			ents = make(chan []entityRow, 1)
			go func() {
				x, st, err := s.readTriples(ctx, collection, &rows, known)
				all, ok := <-ents
				r := earlyTriples{x: x, err: err}
				if err == nil && ok {
					r.full = true
					// rows nil: too many triples, an index of the
					// entities alone, as loadNamesFrom
					mine := entityRows(all, collection)
					r.x = x.orEntsOnly().entitiesFrom(mine)
					// The snapshot is written now, under the header the
					// finish will leave (it stamps no version and adds no
					// triple; the entities are these), for Snapshot to
					// rename into place once the finish has committed and
					// the header is read back the same: the writer's
					// commit and the encoding (0.1 CPU-s for the Python
					// docs) run at the same time.
					if r.x != nil {
						r.header = snapHeader(collection, st.version, st.maxRow, int64(len(mine)))
						if r.header != "" {
							r.tmp, _ = s.writeNamesTemp(collection, r.header, r.x) // else written after
						}
					}
				}
				early <- r
			}()
		}
		sent := false
		var onEnts func([]entityRow)
		if ents != nil {
			onEnts = func(all []entityRow) {
				ents <- all
				sent = true
			}
		}
		err := finishBulk(&s.w, s.rdb, &s.tally, onEnts, wait)
		if ents != nil && !sent {
			close(ents)
		}
		if err != nil {
			return dbErr(ctx, err, "complete the bulk load")
		}
		s.bulk = false
		s.tally = entityTally{}
		if s.rows.on {
			rows := s.rows
			mem = &rows
		}
		s.rows.stop()
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
	if mem != nil {
		var count, maxRow int64
		if err := tx.QueryRowContext(ctx, `SELECT count(*), coalesce(max(rowid), 0) FROM triples`).Scan(&count, &maxRow); err != nil {
			return dbErr(ctx, err, "snapshot the name index")
		}
		if !mem.matches(count, maxRow) {
			mem = nil
		}
	}
	if mem != nil {
		s.memNames++
	}
	var idx *nameIndex
	if r := takeEarly(); mem != nil && r.err == nil && r.full {
		s.earlyNames++
		s.earlyEnts++
		idx = r.x
		if idx != nil && r.tmp != "" && r.header == header {
			s.earlySnaps++
			got.tmp = ""           // renamed
			defer os.Remove(r.tmp) // after the rename: no such file
			return os.Rename(r.tmp, snapfile.Path(s.snapDir(), collection))
		}
	} else if mem != nil && r.err == nil && r.x != nil {
		s.earlyNames++
		wait()
		idx, err = r.x.orEntsOnly().loadEntities(ctx, tx, collection)
	} else {
		wait()
		idx, err = loadNamesFrom(ctx, tx, collection, 0, mem, known)
	}
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

// earlyNamesTriples caps the bulk loads whose name-index triples Snapshot
// reads while the load finishes (about 90 bytes a triple held beside the
// finish's entity rows: ~36 MB at the cap); a larger load's are read after
// it, as before, so that the two are never in memory together. A variable
// so that a test can lower it.
var earlyNamesTriples = 400_000

// earlyTriples is a name index with only its triples read (readTriples),
// or, when full, the whole index (nil: the collection gets none), or why
// it is not.
type earlyTriples struct {
	x    *nameIndex
	full bool
	err  error
	// the snapshot of a full x written to file tmp with header (""
	// when not written)
	header, tmp string
}

// snapRows is what of a snapshot's header the triples stored give: the
// collection's version and the largest rowid.
type snapRows struct {
	version sql.NullInt64
	maxRow  int64
}

// entityRows are collection's rows of all, a bulk load's entities in the
// entities table's order (by the strs ids of their ids, as writeEntities
// writes them and loadEntities reads them), in that order.
func entityRows(all []entityRow, collection string) []entityRow {
	var mine []entityRow
	for _, e := range all {
		if e.collection == collection {
			mine = append(mine, e)
		}
	}
	return mine
}

// readTriples is a name index of collection with only the triples of mem
// read (loadTriples, their strings from known when not nil), and the
// collection's version and largest triple rowid, in a read transaction of
// its own.
func (s *Store) readTriples(ctx context.Context, collection string, mem *bulkRows, known *strIDs) (*nameIndex, snapRows, error) {
	var st snapRows
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, st, err
	}
	defer tx.Rollback()
	err = tx.QueryRowContext(ctx, `SELECT (SELECT version FROM versions WHERE collection = ?), coalesce((SELECT max(rowid) FROM triples), 0)`, collection).Scan(&st.version, &st.maxRow)
	if err != nil {
		return nil, st, err
	}
	x := &nameIndex{}
	if err := x.loadTriples(ctx, tx, collection, mem, known); err != nil {
		return nil, st, err
	}
	return x, st, nil
}
