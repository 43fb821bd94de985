package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kgagent/kgagent"
)

// Bulk loads. Filling an empty store page by page pays, for every triple,
// an entry in each of the six secondary indexes and, for every new entity,
// its index words: random B-tree inserts whose pages every group
// commit writes to the WAL again. On the Python docs that was about half of
// the graph writer's CPU. Into an empty store the indexes are instead built
// once at the end (CREATE INDEX sorts), and the entities, whose reference
// counts every page updated at random places of their B-tree, are tallied
// in memory (entityTally) and written with their words in key order at the
// end, which costs a fraction of that.
//
// A bulk load is recorded in table bulk_load in the transaction that drops
// the indexes, so a process that dies during one leaves a store that the
// next Open completes (finishBulk) before anything reads it.

// BulkLoad makes the writes that follow a bulk load when the store holds no
// triples and no entities at all (a fresh data dir): the secondary indexes
// are dropped and no entities nor their words written until Close builds
// them all. It reports whether it did. Until Close, lookups by name or
// object scan the table and Entities finds nothing, so only a process
// that writes and does not read the graph (kgagent ingest) should call it,
// before its first write.
func (s *Store) BulkLoad(ctx context.Context) (bool, error) {
	on, already := false, false
	err := s.write(ctx, "start a bulk load", func(x *wtx) error {
		if x.s.bulk {
			on, already = true, true // its rows are kept on
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
		// Into a strs table that holds only "" the writer alone adds
		// strings, and its cache learns each one (strCache.complete): no
		// string need be looked up by hash until the load's end, so the
		// hash index goes too (the inserts' random places in its B-tree
		// were a third of the strings' cost) and finishBulk builds it.
		var others bool
		if err := x.s.w.conn.QueryRowContext(x.ectx, `SELECT EXISTS (SELECT 1 FROM strs WHERE id != 1)`).Scan(&others); err != nil {
			return err
		}
		if !others {
			if _, err := x.s.w.conn.ExecContext(x.ectx, `DROP INDEX IF EXISTS strs_h`); err != nil {
				return err
			}
			x.s.w.noStrsH = true
			x.s.w.strs.startComplete()
		}
		// Without its secondary indexes the load mostly appends, so the
		// writer's page cache goes from 32 to 8 MiB for the rest of the
		// store's life (a bulk load is a one-shot ingest). With 32 MiB the
		// OpenJDK docs' ingest peaked far above it: 3,000 pages 488 -> 374
		// MB of peak RSS at the same CPU (48.9 + 3.5 vs 49.0 + 3.2 s), the
		// memory SQLite keeps (outside Go's heap) after the index builds at
		// the load's end.
		if _, err := x.s.w.conn.ExecContext(x.ectx, fmt.Sprintf(`PRAGMA cache_size = %d`, bulkCacheKiB)); err != nil {
			return err
		}
		// Its commits from the next on do not fsync: the writes wait
		// for that beside the writer (durable.go).
		x.s.w.normalNext = true
		on = true
		return nil
	})
	if err != nil {
		return false, err
	}
	// Only this store's writer reads bulk, and only after this write
	// (groupcommit hands the lead over under its mutex).
	s.bulk = on
	if !already {
		s.rows = bulkRows{on: on}
	}
	return on, nil
}

// bulkCacheKiB is the writer's cache_size during and after a bulk load
// (negative: KiB), against -32768 otherwise (Open).
const bulkCacheKiB = -8192

// finishBulk completes a bulk load recorded in bulk_load, if any, and
// creates the secondary indexes that are missing, in one transaction on the
// writer w. The entities are those of tally, the load's own (Close), or,
// when it is nil (Open after a load that did not finish), derived from the
// triples stored. They, their strings' strs ids and, for a load of up to
// earlyEntities entities, the rows of entities and words to write are
// computed on reader (the writer when nil) while the writer builds the
// indexes, so that most of the end of a load runs on another core; all
// are stored in key order. onEnts, when not nil, is given the entities in
// the entities table's order (by their strs ids) once, before they are
// written, from either goroutine (Snapshot builds the name index's
// entities from them); it may keep them but not change them. wait, when
// not nil, is called before the entities' strings and words of a load
// above earlyEntities are made, which are then made on reader while the
// writer builds the indexes as a smaller load's are (SnapshotAfter: the
// caller's other memory is gone once wait returns); without it they are
// made after the index builds.
func finishBulk(w *writer, reader queryer, tally *entityTally, onEnts func([]entityRow), wait func()) error {
	ctx := context.Background()
	var pending int
	if err := w.conn.QueryRowContext(ctx, `SELECT count(*) FROM bulk_load`).Scan(&pending); err != nil {
		return err
	}
	// The finish commits with synchronous=FULL, and its fsync makes every
	// commit of the load durable with it.
	if w.normal {
		if err := w.setSynchronous(ctx, false); err != nil {
			return err
		}
	}
	// A string cache that holds all of strs (a bulk load's writer's, see
	// strCache) gives the entities' strings their ids without a pass over
	// strs; the writer does not touch it before it has the entities.
	var known *strIDs
	if c := &w.strs; c.complete && c.all.committed == c.all.len() {
		known = c.all
	}
	derived := make(chan *bulkEntities, 1)
	derive := func(c queryer) {
		b := &bulkEntities{}
		if tally != nil && !tally.lost {
			// The rows to write come as they are from the tally, and
			// their strings from known or strs.
			b.rows, b.tallied = tally.rows(), true
			// The tally's map is garbage from here; a finish that fails
			// derives the entities from the triples again.
			tally.lose()
			// The strings and words are found and made here unless they
			// are many: then after the index builds, so that they and
			// the sorts' memory outside Go's heap are not held together
			// (the OpenJDK docs' words alone are ~54 MB), or, with wait,
			// here once wait returns (the caller's other memory gone).
			if len(b.rows) <= earlyEntities || wait != nil {
				waited := len(b.rows) > earlyEntities
				if waited {
					wait()
				}
				b.err = b.makeWords(ctx, c, known, onEnts, w.dir)
				if b.err == nil && waited {
					w.waitedWords++ // read once derived is received
				}
			}
			derived <- b
			return
		}
		b.ents, b.err = entitiesFromTriples(ctx, c)
		// The ids and the rows to write are found and made here unless
		// they are many, as the tally's above.
		if b.err == nil && len(b.ents) <= earlyEntities {
			b.err = b.find(ctx, c, known)
			if b.err == nil && len(b.missing) == 0 {
				b.order(onEnts != nil)
				b.hand(onEnts)
				b.words = entityWords(b.ents, b.id)
			}
		}
		derived <- b
	}
	if pending > 0 {
		if reader == nil {
			derive(w.conn)
		} else {
			go derive(reader)
		}
	}
	// The index builds sort every triple: with the writer's in-memory temp
	// store those sorts sat whole in SQLite's heap, outside Go's memory
	// limit (the end of a 3,000-page OpenJDK ingest went ~50 MB above the
	// crawl's resident set). On file, a sorter keeps about the page
	// cache's worth in memory and spills the rest. Set outside the
	// transaction: SQLite refuses to change it inside one.
	if _, err := w.conn.ExecContext(ctx, `PRAGMA temp_store = FILE`); err != nil {
		if pending > 0 {
			(<-derived).runs.close()
		}
		return err
	}
	// reset even when ctx ends: the connection outlives this load
	defer func() {
		w.conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA temp_store = MEMORY`)
		w.tempFile = false
	}()
	if err := w.begin(ctx); err != nil {
		if pending > 0 {
			(<-derived).runs.close()
		}
		return err
	}
	// Strings are added below (the entities' words), not through the
	// cache: it is no longer complete.
	w.strs.leave()
	err := func() error {
		_, err := w.conn.ExecContext(ctx, indexes+createStrsH)
		if pending == 0 {
			return err
		}
		b := <-derived
		defer func() { b.runs.close() }()
		if err != nil {
			return err
		}
		if b.err != nil {
			return b.err
		}
		if wait != nil && !b.made && b.words == nil && len(b.rows)+len(b.ents) > 0 {
			wait()
		}
		switch {
		case b.tallied && !b.made:
			if err := b.makeWords(ctx, w.conn, known, onEnts, w.dir); err != nil {
				return err
			}
		case b.tallied:
		default:
			if b.ids == nil && b.known == nil {
				if err := b.find(ctx, w.conn, known); err != nil {
					return err
				}
			}
			if b.rows == nil {
				if err := b.add(ctx, w.conn); err != nil {
					return err
				}
				b.order(onEnts != nil)
				b.hand(onEnts)
			}
		}
		if err := writeEntities(ctx, w.conn, b.rows); err != nil {
			return err
		}
		// Only the words' rows are needed from here: they hold the strs
		// ids and the word strings (which share the entities' text), or
		// the runs hold them.
		if runs := b.runs; runs != nil {
			*b = bulkEntities{runs: runs}
			w.wordsHeld, w.wordRuns = runs.held, len(runs.ends)
			if err := writeBlocksFrom(ctx, w.conn, runs.each); err != nil {
				return err
			}
		} else {
			words := b.words
			if words == nil {
				words = entityWords(b.ents, b.id)
			}
			*b = bulkEntities{}
			w.wordsHeld, w.wordRuns = len(words), 0
			if err := writeBlocks(ctx, w.conn, words); err != nil {
				return err
			}
		}
		_, err = w.conn.ExecContext(ctx, `DELETE FROM bulk_load`)
		return err
	}()
	if err != nil {
		w.rollback(ctx)
		return err
	}
	w.strsHPend = true // noStrsH clears when this commits
	return w.commit(ctx)
}

// earlyEntities caps the bulk loads whose entities' and words' rows
// finishBulk makes while the writer builds the indexes (the Python docs:
// ~60k entities; the OpenJDK docs' 201k are made after them). A variable:
// a test lowers it.
var earlyEntities = 120_000

// bulkEntities is what finishBulk writes of a bulk load's entities, made in
// steps: the entities; the strs ids of their strings (find, then add for
// those strs lacks); then the rows to write (order, entityWords). The
// entities may come in any order. Or, tallied, the rows to write are the
// tally's, and only the strings of their ids are looked up (strings), for
// the words (rowWords) and the entities handed over (handRows).
type bulkEntities struct {
	tallied bool
	str     *idStrs // the strings of a tally's rows
	ents    []entityRow
	// known holds every string of ents (a complete cache's strings), or
	// else ids maps every string of ents to its strs id; 0 for those
	// missing from strs when find looked, which are missing, sorted, and
	// strs's largest id then was top.
	known   *strIDs
	ids     map[string]int64
	missing []string
	top     int64
	// rows are the entities' rows (strs ids and refs) in the table's key
	// order, inTable (when asked for) ents in that order, and words their
	// words in key order.
	rows    [][6]int64
	inTable []entityRow
	words   []wordRow
	// runs hold the words instead of words (a large tally's); made:
	// makeWords made either
	runs *wordRuns
	made bool
	err  error
}

// makeWords makes the words of b.rows (a tally's): in runs (makeWordRuns,
// in dir) when they are more than streamEntities and onEnts is nil, else
// whole after looking up their strings (strings, handing the entities to
// onEnts).
func (b *bulkEntities) makeWords(ctx context.Context, c queryer, known *strIDs, onEnts func([]entityRow), dir string) error {
	if onEnts == nil && len(b.rows) > streamEntities {
		runs, err := makeWordRuns(ctx, c, b.rows, known, dir)
		b.runs, b.made = runs, err == nil
		return err
	}
	if err := b.strings(ctx, c, known, onEnts != nil); err != nil {
		return err
	}
	b.handRows(onEnts)
	b.words, b.made = b.rowWords(), true
	return nil
}

// strings looks up the strings of the ids of b.rows (a tally's) that
// rowWords needs, and with all those handRows needs too: in known, when it
// is not nil and holds them all, else in one pass over strs on c.
func (b *bulkEntities) strings(ctx context.Context, c queryer, known *strIDs, all bool) error {
	cols := []int{1, 4} // id, norm
	if all {
		cols = []int{0, 1, 2, 3, 4}
	}
	if known != nil && knowsAll(known, b.rows, cols) {
		b.str = &idStrs{known: known}
		return nil
	}
	var ids []int64
	for _, r := range b.rows {
		for _, k := range cols {
			ids = append(ids, r[k])
		}
	}
	slices.Sort(ids)
	str, err := readStrs(ctx, c, slices.Compact(ids))
	b.str = str
	return err
}

// handRows gives onEnts (if any) the entities of b.rows (a tally's, with
// all their strings looked up) in the table's order, once.
func (b *bulkEntities) handRows(onEnts func([]entityRow)) {
	if onEnts == nil {
		return
	}
	ents := make([]entityRow, len(b.rows))
	for i, r := range b.rows {
		ents[i] = entityRow{collection: b.str.get(r[0]), id: b.str.get(r[1]), name: b.str.get(r[2]),
			typ: b.str.get(r[3]), norm: b.str.get(r[4]), refs: int(r[5])}
	}
	onEnts(ents)
}

// rowWords are the words of b.rows (a tally's, with their strings looked
// up), as entityWords makes them.
func (b *bulkEntities) rowWords() []wordRow {
	var all []wordRow
	for _, r := range b.rows {
		for _, w := range Words(b.str.get(r[4]), b.str.get(r[1])) {
			all = append(all, wordRow{r[0], w, r[1]})
		}
	}
	sortWords(all)
	return all
}

// idStrs are the strings of some strs ids: those of known, or else ids
// (sorted) with the strings in one text, each ending at its end.
type idStrs struct {
	known *strIDs
	ids   []int64
	end   []int
	text  string
}

// readStrs reads the strings of ids (sorted, no repeats) in one pass over
// strs on c.
func readStrs(ctx context.Context, c queryer, ids []int64) (*idStrs, error) {
	t := &idStrs{ids: ids, end: make([]int, 0, len(ids))}
	if len(ids) == 0 {
		return t, nil
	}
	var text []byte
	err := eachStr(ctx, c, ids[0], ids[len(ids)-1], func(id int64, str []byte) bool {
		if id == ids[len(t.end)] {
			text = append(text, str...)
			t.end = append(t.end, len(text))
		}
		return len(t.end) < len(ids)
	})
	if err != nil {
		return nil, err
	}
	if len(t.end) < len(ids) {
		return nil, fmt.Errorf("graph store: strs lacks string %d of the entities", ids[len(t.end)])
	}
	t.text = string(text)
	return t, nil
}

// eachStr calls f with each string of strs whose id is in [lo, hi], in id
// order, in one pass on c, until f returns false. The bytes are valid only
// during the call.
func eachStr(ctx context.Context, c queryer, lo, hi int64, f func(id int64, str []byte) bool) error {
	rows, err := c.QueryContext(ctx, `SELECT id, s FROM strs WHERE id BETWEEN ? AND ? ORDER BY id`, lo, hi)
	if err != nil {
		return err
	}
	defer rows.Close()
	var id int64
	var str sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&id, &str); err != nil {
			return err
		}
		if !f(id, str) {
			break
		}
	}
	return rows.Err()
}

// get is the string of id, which t holds.
func (t *idStrs) get(id int64) string {
	if t.known != nil {
		s, _ := t.known.str(id)
		return s
	}
	i, _ := slices.BinarySearch(t.ids, id)
	lo := 0
	if i > 0 {
		lo = t.end[i-1]
	}
	return t.text[lo:t.end[i]]
}

// hand gives onEnts (if any) the entities in the table's order, once.
func (b *bulkEntities) hand(onEnts func([]entityRow)) {
	if onEnts != nil {
		onEnts(b.inTable)
	}
	b.inTable = nil
}

// find looks up the strs ids of every string of b.ents: in known, when it
// is not nil and holds them all (it is then b.known, not to be changed);
// otherwise on c, in one pass over strs.
func (b *bulkEntities) find(ctx context.Context, c queryer, known *strIDs) error {
	if known != nil && b.all(known) {
		b.known = known
		return nil
	}
	b.ids = map[string]int64{}
	for _, e := range b.ents {
		b.ids[e.collection], b.ids[e.id], b.ids[e.name], b.ids[e.typ], b.ids[e.norm] = 0, 0, 0, 0, 0
	}
	top, err := scanStrs(ctx, c, 0, b.ids)
	if err != nil {
		return err
	}
	b.top = top
	for s, id := range b.ids {
		if id == 0 {
			b.missing = append(b.missing, s)
		}
	}
	slices.Sort(b.missing)
	return nil
}

// id is the strs id of s, a string of b.ents, once find has run.
func (b *bulkEntities) id(s string) int64 {
	if b.known != nil {
		id, _ := b.known.get(s)
		return id
	}
	return b.ids[s]
}

// all reports whether ids holds every string of b.ents.
func (b *bulkEntities) all(ids *strIDs) bool {
	for _, e := range b.ents {
		for _, s := range [...]string{e.collection, e.id, e.name, e.typ, e.norm} {
			if _, ok := ids.get(s); !ok {
				return false
			}
		}
	}
	return true
}

// add adds the strings strs lacks (b.missing, in their order) on c, the
// writer, and looks up their ids: strs's rows past those find saw.
func (b *bulkEntities) add(ctx context.Context, c *sql.Conn) error {
	if len(b.missing) == 0 {
		return nil
	}
	if err := insertAll(ctx, c, `INSERT INTO strs (h, s)`, 2, len(b.missing), func(i int, vals []any) []any {
		return append(vals, strHash(b.missing[i]), b.missing[i])
	}, "write strings"); err != nil {
		return err
	}
	if _, err := scanStrs(ctx, c, b.top, b.ids); err != nil {
		return err
	}
	n := 0
	for _, s := range b.missing {
		if b.ids[s] == 0 {
			n++
		}
	}
	if n > 0 {
		return fmt.Errorf("graph store: %d strings not interned", n)
	}
	b.missing = nil
	return nil
}

// scanStrs sets the value of each key of ids that strs holds, among its
// rows with an id above after, to its strs id, and returns the largest id
// it read (after when none).
func scanStrs(ctx context.Context, c queryer, after int64, ids map[string]int64) (int64, error) {
	rows, err := c.QueryContext(ctx, `SELECT id, s FROM strs WHERE id > ?`, after)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	top := after
	var id int64
	var str sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&id, &str); err != nil {
			return 0, err
		}
		if _, ok := ids[string(str)]; ok {
			ids[string(str)] = id
		}
		top = max(top, id)
	}
	return top, rows.Err()
}

// order makes the rows of b's entities from them and their strs ids, and,
// with inTable, the entities in the table's order.
func (b *bulkEntities) order(inTable bool) {
	type keyed struct {
		row [6]int64
		at  int
	}
	keys := make([]keyed, len(b.ents))
	for i, e := range b.ents {
		keys[i] = keyed{[6]int64{b.id(e.collection), b.id(e.id), b.id(e.name), b.id(e.typ), b.id(e.norm), int64(e.refs)}, i}
	}
	slices.SortFunc(keys, func(a, b keyed) int { return compareKeys(a.row, b.row) })
	b.rows = make([][6]int64, len(keys))
	for i := range keys {
		b.rows[i] = keys[i].row
	}
	if inTable {
		b.inTable = make([]entityRow, len(keys))
		for i := range keys {
			b.inTable[i] = b.ents[keys[i].at]
		}
	}
}

// createStrsH creates the index by which strings are found, which a bulk
// load drops.
const createStrsH = `CREATE INDEX IF NOT EXISTS strs_h ON strs(h);`

// entityTally is a bulk load's entities, kept in memory instead of the
// entities table, whose reference counts every page would update at random
// places of its B-tree: each committed write's changes (bulkDelta) are
// applied as addRefs applies them to the table, so Close stores the same
// rows a page-by-page load would have. An entity is its strs ids and
// reference count, 24 bytes a map slot: it was its five strings, cloned
// (the collection's too), and a map entry, ~300 bytes, 115 MB for the
// 400k entities of 33,438 pages of docs (Python, OpenJDK, PostgreSQL,
// Rust), most of a bulk load's memory that grew with its pages.
type entityTally struct {
	ents map[tallyKey]tallyEnt
	// lost: the tally does not hold the load's entities (a finish took
	// them and dropped them, a collection was deleted, or an id is past
	// 32 bits), so a finish derives them from the triples.
	lost bool
}

// tallyKey is an entity's primary key: the strs ids of its collection and
// id.
type tallyKey struct{ coll, id uint32 }

// tallyEnt is an entity's strs ids of its name, type and normalised name,
// and its reference count.
type tallyEnt struct {
	name, typ, norm uint32
	refs            int32
}

// bulkDelta is one write's changes to the entities: reference-count deltas
// by the strs ids of the collection coll's entities, and the strs ids of
// name, type and normalised name of those it may create (the first triple
// that names one). drop: the write deleted a collection.
type bulkDelta struct {
	coll int64
	refs map[int64]int
	ents map[int64][3]int64
	drop bool
}

// addRows counts the entities of triple rows (insertTriples' values, the
// strings as strs ids, tripleCols a row) as newDocPlan counts them: the
// subject, and the object of a row without a literal.
func (d *bulkDelta) addRows(vals []any) {
	for i := 0; i+tripleCols <= len(vals); i += tripleCols {
		r := vals[i : i+tripleCols]
		d.coll = r[1].(int64)
		d.add(r[3].(int64), r[4].(int64), r[5].(int64), r[6].(int64))
		if r[12].(int64) == 1 { // no literal ("" is id 1)
			d.add(r[8].(int64), r[9].(int64), r[10].(int64), r[11].(int64))
		}
	}
}

// add counts a reference to entity id with these strings.
func (d *bulkDelta) add(id, name, typ, norm int64) {
	d.refs[id]++
	if _, ok := d.ents[id]; !ok {
		d.ents[id] = [3]int64{name, typ, norm}
	}
}

// apply adds d's changes (nil: none) to the tally.
func (t *entityTally) apply(d *bulkDelta) {
	if d == nil || t.lost {
		return
	}
	if d.drop || !fits32(d.coll) {
		t.lose()
		return
	}
	if t.ents == nil {
		t.ents = map[tallyKey]tallyEnt{}
	}
	for id, n := range d.refs {
		if !fits32(id) {
			t.lose()
			return
		}
		k := tallyKey{uint32(d.coll), uint32(id)}
		e, ok := t.ents[k]
		switch {
		case n > 0 && !ok:
			r, ok := d.ents[id]
			if !ok {
				r = [3]int64{1, 1, 1} // no triple names it: ""
			}
			if !fits32(r[0]) || !fits32(r[1]) || !fits32(r[2]) || n > math.MaxInt32 {
				t.lose()
				return
			}
			t.ents[k] = tallyEnt{name: uint32(r[0]), typ: uint32(r[1]), norm: uint32(r[2]), refs: int32(n)}
		case ok:
			refs := int64(e.refs) + int64(n)
			switch {
			case refs <= 0:
				delete(t.ents, k)
			case refs > math.MaxInt32:
				t.lose()
				return
			default:
				e.refs = int32(refs)
				t.ents[k] = e
			}
		}
	}
}

// fits32 reports whether a strs id fits the tally's 32 bits.
func fits32(id int64) bool { return id > 0 && id <= math.MaxUint32 }

// lose drops the tally's entities: a finish derives them from the triples.
func (t *entityTally) lose() { *t = entityTally{lost: true} }

// rows are the tally's entities as rows of the entities table (strs ids
// and reference count), in its key order (by collection and id).
func (t *entityTally) rows() [][6]int64 {
	all := make([][6]int64, 0, len(t.ents))
	for k, e := range t.ents {
		all = append(all, [6]int64{int64(k.coll), int64(k.id), int64(e.name), int64(e.typ), int64(e.norm), int64(e.refs)})
	}
	slices.SortFunc(all, compareKeys)
	return all
}

// compareKeys orders rows of the entities table by their key (collection,
// id); no two rows tie.
func compareKeys(a, b [6]int64) int {
	if c := cmp.Compare(a[0], b[0]); c != 0 {
		return c
	}
	return cmp.Compare(a[1], b[1])
}

// entityRow is one row of the entities table.
type entityRow struct {
	collection, id, name, typ, norm string
	refs                            int
}

// entitiesFromTriples are the rows the entities table holds for the triples
// stored, in key order: every subject, and every object of a triple without
// a literal, counted once per triple that names it (as ReplaceDocument
// counts references), with the name, type and normalised name of the
// earliest stored triple that names it (by rowid, subject before object):
// the triple a page-by-page load created the entity with, unless that one
// was retracted since while others kept the entity.
func entitiesFromTriples(ctx context.Context, c queryer) ([]entityRow, error) {
	// Grouped by string ids (min(k) picks the bare columns of its row),
	// then the strings joined and sorted.
	rows, err := c.QueryContext(ctx, `SELECT c.s, i.s, n.s, ty.s, nm.s, g.k, g.refs FROM (
		SELECT collection, id, name, type, norm, min(k) AS k, count(*) AS refs FROM (
			SELECT collection, s_id AS id, s_name AS name, s_type AS type, s_norm AS norm, rowid * 2 AS k FROM triples
			UNION ALL
			SELECT collection, o_id, o_name, o_type, o_norm, rowid * 2 + 1 FROM triples WHERE literal = 1
		) GROUP BY collection, id) AS g
		CROSS JOIN strs AS c ON c.id = g.collection CROSS JOIN strs AS i ON i.id = g.id CROSS JOIN strs AS n ON n.id = g.name
		CROSS JOIN strs AS ty ON ty.id = g.type CROSS JOIN strs AS nm ON nm.id = g.norm
		ORDER BY c.s, i.s`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var all []entityRow
	for rows.Next() {
		var e entityRow
		var k int64
		if err := rows.Scan(&e.collection, &e.id, &e.name, &e.typ, &e.norm, &k, &e.refs); err != nil {
			return nil, err
		}
		all = append(all, e)
	}
	return all, rows.Err()
}

// writeEntities replaces the entities table by rows, the entities' strs
// ids and reference counts in key order.
func writeEntities(ctx context.Context, c *sql.Conn, rows [][6]int64) error {
	if _, err := c.ExecContext(ctx, `DELETE FROM entities`); err != nil {
		return err
	}
	return insertAll(ctx, c, `INSERT INTO entities (collection, id, name, type, norm, refs)`, 6, len(rows), func(i int, vals []any) []any {
		r := &rows[i]
		return append(vals, r[0], r[1], r[2], r[3], r[4], r[5])
	}, "write entities")
}

// wordRow is one word of an entity: the strs ids of its collection and
// entity, and the word.
type wordRow struct {
	collection int64
	word       string
	id         int64
}

// entityWords are the words of ents (every entity's
// words, see Words), with the strs ids of their collections and entity ids
// (id gives them), in key order. 32 bytes a row beside the words'
// text, which shares the entities' strings: the OpenJDK docs' 764k words
// held a row of three strings and then a second row of ids each before.
func entityWords(ents []entityRow, ids func(string) int64) []wordRow {
	var all []wordRow
	for _, e := range ents {
		c, id := ids(e.collection), ids(e.id)
		for _, w := range Words(e.norm, e.id) {
			all = append(all, wordRow{c, w, id})
		}
	}
	sortWords(all)
	return all
}

// sortWords puts words rows in key order.
func sortWords(all []wordRow) {
	slices.SortFunc(all, func(a, b wordRow) int {
		if a.collection != b.collection {
			return cmp.Compare(a.collection, b.collection)
		}
		if c := strings.Compare(a.word, b.word); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
}

// insertWordsSQL heads writeBlocks' and migrateWordBlocks' INSERTs (a
// variable: a test makes it fail).
var insertWordsSQL = `INSERT INTO word_blocks (collection, first, words)`

// insertAll inserts nrows rows, each the ncols values row(i, vals) appends
// to vals, with multi-row INSERTs of head on c, outside the writer's
// statement cache. The values of one INSERT at a time are held: all of
// them at once, boxed in interfaces, were ~60 MB for the OpenJDK API docs'
// 763k entity words, at the bulk load's finish, where an ingest's peak RSS
// is.
func insertAll(ctx context.Context, c *sql.Conn, head string, ncols, nrows int, row func(i int, vals []any) []any, what string) error {
	stmts := map[int]*sql.Stmt{}
	defer func() {
		for _, st := range stmts {
			st.Close()
		}
	}()
	vals := make([]any, 0, ncols*rowsPerInsert)
	for at := 0; at < nrows; {
		n := min(nrows-at, rowsPerInsert)
		vals = vals[:0]
		for i := at; i < at+n; i++ {
			vals = row(i, vals)
		}
		at += n
		st, ok := stmts[n]
		if !ok {
			var err error
			if st, err = c.PrepareContext(ctx, insertSQL(head, ncols, n)); err != nil {
				return err
			}
			stmts[n] = st
		}
		if _, err := st.ExecContext(ctx, vals...); err != nil {
			return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "graph store: %s", what)
		}
	}
	return nil
}
