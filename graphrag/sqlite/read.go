package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
	"golang.org/x/sync/errgroup"
)

// The in-memory snapshot: Entities and Expand answer from an in-memory copy
// of a collection's entity table (word -> entities, by reference count) and
// triples (adjacency by subject and object), instead of one or two SQL
// queries per question term (~15 ms a question on the Python docs graph, 57k
// entities) and one per expanded entity (~7 ms, 156k triples). The copy is
// tied to SQLite's data_version, read on a reader connection of its own: any
// commit by another connection (this store's writer or another process)
// changes it, so a stale copy is never used. A stale or missing copy is
// rebuilt in the background, at most once per max(1s, 5 × the last build's
// duration), while Entities and Expand fall back to SQL, so a question never
// waits for a build and a long ingestion does not spend its CPU rebuilding
// the copy for every page. Strings are interned into byte tables, a triple
// is five int32s (subject and object into a table of id/name/type triples,
// provenance into one of chunk/doc/source triples) and every list an offset
// array, and an entity's strings and the words it is indexed under are
// references into the triples' string table (only the strings no triple
// holds, mostly normalised names, are stored apart): ~80 bytes a triple on
// an API-docs-like graph (TestNameIndexMemory), with a few dozen heap
// objects in all.

// maxIndexedEntities bounds the entities of a collection kept in memory: a
// larger collection is always answered by SQL. A collection of more than
// maxIndexedTriples triples (or whose triples' strings pass a table's
// bound) keeps its entities and words alone (nameIndex.entsOnly): Entities
// answers from memory, Expand with SQL. At the 97,977-page point of issue
// 25 (7.68M triples, 930k entities) the whole index would take ~600 MB
// (~80 bytes a triple, TestNameIndexMemory), the entities' part takes 134
// MB (144 bytes an entity, with their 910k words). Before, such a
// collection had no index at all, and every Entities ran entitiesSQL
// (~400 ms an answer there). A variable so that a test can lower it.
const maxIndexedEntities = 2_000_000

var maxIndexedTriples = 4_000_000

// nameEnt is one entity of the name index: its strings as string
// references (nameIndex.str), and how many triples refer to it.
type nameEnt struct {
	id, name, typ, norm int32
	refs                int32
}

// nameIndex is a collection's entities at one data version. It holds no Go
// string, map or slice per entry: strings live in strTables, lists in
// offset arrays (CSR), so a 10,000-page corpus (1.3M triples) takes a
// fraction of the memory the maps took, and the garbage collector has a
// few dozen objects to scan instead of millions.
type nameIndex struct {
	version int64
	// entsOnly: the index holds the collection's entities and words
	// alone, no triple (a collection past maxIndexedTriples): Expand
	// answers with SQL
	entsOnly bool
	ents     []nameEnt
	// extra are the strings of entities and words that no triple holds
	// (1.3 of 35 MB on the OpenJDK API docs: normalised names); the
	// others are strs indexes
	extra strTable
	// words are the words entities are indexed under, as string
	// references sorted by their strings; wordEnts[wordEnd[w-1]:wordEnd[w]]
	// are word w's entities, most referenced first (then by id)
	words    []int32
	wordEnts []int32
	wordEnd  []int32

	strs  strTable    // interned strings of the triples
	rows  []memTriple // the collection's triples, by rowid
	nodes [][3]int32  // a subject or object: id, name and type as strs indexes
	provs [][3]int32  // where a triple is from: chunk id, doc URL, source URL as strs indexes
	// ids are the strs indexes of the subjects' and objects' ids (not
	// the empty one), by string: entity k is ids[k]; nodeEnt is node i's
	// entity (-1: the empty id)
	ids     []int32
	nodeEnt []int32
	// an entity's rows as subject, by rowid: outRows[outEnd[k-1]:outEnd[k]]
	// for entity k; as object (not as subject too): inRows, inEnd. They
	// are sized by entity, not by string: 201k ids of 695k strings on the
	// OpenJDK API docs
	outRows, outEnd []int32
	inRows, inEnd   []int32
}

// memTriple is one triple row: its subject as an index into
// nameIndex.nodes, predicate into nameIndex.strs, provenance into
// nameIndex.provs, and its object as a nodes index, or ^k for a literal
// (strs index k ≥ 1), whose object is the empty entity: 16 bytes (the
// eleven string columns were 44, and a row kept both an object and a
// literal until a triple with both was refused anyway).
type memTriple struct {
	s, p, o, prov int32
}

// lit is the strs index of r's literal, 0 ("") for an entity object.
func (r *memTriple) lit() int32 {
	if r.o < 0 {
		return ^r.o
	}
	return 0
}

// str is the string of reference k: strs index k when k ≥ 0, else extra
// index ^k. It aliases the tables, as strTable.at does.
func (x *nameIndex) str(k int32) string {
	if k >= 0 {
		return x.strs.at(k)
	}
	return x.extra.at(^k)
}

// sent and oent are the entities of r's subject and object, -1 for none
// (a literal's object, or the empty id).
func (x *nameIndex) sent(r *memTriple) int32 { return x.nodeEnt[r.s] }
func (x *nameIndex) oent(r *memTriple) int32 {
	if r.o < 0 {
		return -1
	}
	return x.nodeEnt[r.o]
}

// span is list[end[k-1]:end[k]].
func span(list, end []int32, k int32) []int32 {
	lo := int32(0)
	if k > 0 {
		lo = end[k-1]
	}
	return list[lo:end[k]]
}

// wordList is the entities indexed under word w, or nil.
func (x *nameIndex) wordList(w string) []int32 {
	i := x.wordSearch(w)
	if i == len(x.words) || x.str(x.words[i]) != w {
		return nil
	}
	return span(x.wordEnts, x.wordEnd, int32(i))
}

// wordSearch returns the first word index whose word is not less than w.
func (x *nameIndex) wordSearch(w string) int {
	return sort.Search(len(x.words), func(i int) bool { return x.str(x.words[i]) >= w })
}

// lookupID is the entity whose id is id.
func (x *nameIndex) lookupID(id string) (int32, bool) {
	i := sort.Search(len(x.ids), func(i int) bool { return x.strs.at(x.ids[i]) >= id })
	if i == len(x.ids) || x.strs.at(x.ids[i]) != id {
		return 0, false
	}
	return int32(i), true
}

// memBytes is how much memory the index holds (its arrays; the few headers
// aside).
func (x *nameIndex) memBytes() int {
	n := x.extra.bytes() + x.strs.bytes()
	n += int(unsafe.Sizeof(nameEnt{}))*cap(x.ents) + int(unsafe.Sizeof(memTriple{}))*cap(x.rows) + 12*(cap(x.nodes)+cap(x.provs))
	for _, l := range [][]int32{x.words, x.wordEnts, x.wordEnd, x.outRows, x.outEnd, x.inRows, x.inEnd, x.ids, x.nodeEnt} {
		n += 4 * cap(l)
	}
	return n
}

// triples materialises rows, their strings copied into one buffer: one
// allocation for the lot rather than one a string (a question's expansion
// returns hundreds of triples), and nothing a caller keeps holds the
// index's tables alive. A column's string is copied once for a run of rows
// that share it (an entity's rows as subject share its id, name and type,
// a section's rows their provenance): the buffer was 94 of the 1,066 MB
// serve allocated over 800 OpenJDK API docs searches and answers.
func (x *nameIndex) triples(rows []int32, collection string) []kgagent.Triple {
	if len(rows) == 0 {
		return nil
	}
	// cols are row i's strings: subject id, name, type, predicate, object
	// id, name, type, literal, chunk id, doc URL, source URL
	var ids [11]int32
	cols := func(i int32) *[11]int32 {
		r := &x.rows[i]
		sn, pv := &x.nodes[r.s], &x.provs[r.prov]
		var on [3]int32 // a literal's object: "" (strs index 0)
		if r.o >= 0 {
			on = x.nodes[r.o]
		}
		ids = [11]int32{sn[0], sn[1], sn[2], r.p, on[0], on[1], on[2], r.lit(), pv[0], pv[1], pv[2]}
		return &ids
	}
	size := 0
	var prev [11]int32 // 0 is "", which takes no bytes
	for _, i := range rows {
		for j, k := range cols(i) {
			if k != prev[j] {
				size += len(x.strs.at(k))
				prev[j] = k
			}
		}
	}
	buf := make([]byte, 0, size)
	var last [11]string
	prev = [11]int32{}
	str := func(j int, k int32) string {
		if k != prev[j] {
			s := x.strs.at(k)
			last[j], prev[j] = "", k
			if s != "" {
				lo := len(buf)
				buf = append(buf, s...)
				last[j] = unsafe.String(&buf[lo], len(s))
			}
		}
		return last[j]
	}
	out := make([]kgagent.Triple, len(rows))
	for n, i := range rows {
		c := cols(i)
		out[n] = kgagent.Triple{
			Collection: collection,
			Subject:    kgagent.Entity{ID: str(0, c[0]), Name: str(1, c[1]), Type: str(2, c[2])},
			Predicate:  str(3, c[3]),
			Object:     kgagent.Entity{ID: str(4, c[4]), Name: str(5, c[5]), Type: str(6, c[6])},
			Literal:    str(7, c[7]),
			ChunkID:    str(8, c[8]),
			DocURL:     str(9, c[9]),
			SourceURL:  str(10, c[10]),
		}
	}
	return out
}

// sharedTriples materialises rows as triples whose strings are the
// index's own (strTable.at): nothing is copied, and the triples keep the
// tables alive while they are referenced (graphrag.SharedExpander). They
// are written into buf when it has room, every field of each, else into a
// new slice.
func (x *nameIndex) sharedTriples(rows []int32, collection string, buf []kgagent.Triple) []kgagent.Triple {
	if len(rows) == 0 {
		return nil
	}
	out := buf[:0]
	if cap(out) < len(rows) {
		out = make([]kgagent.Triple, len(rows))
	}
	out = out[:len(rows)]
	for n, i := range rows {
		r := &x.rows[i]
		sn, pv := &x.nodes[r.s], &x.provs[r.prov]
		// one literal: every field is written, so a reused buf keeps
		// nothing of an earlier answer's triple
		out[n] = kgagent.Triple{Collection: collection,
			Subject:   kgagent.Entity{ID: x.strs.at(sn[0]), Name: x.strs.at(sn[1]), Type: x.strs.at(sn[2])},
			Predicate: x.strs.at(r.p),
			ChunkID:   x.strs.at(pv[0]), DocURL: x.strs.at(pv[1]), SourceURL: x.strs.at(pv[2])}
		if r.o >= 0 {
			on := &x.nodes[r.o]
			out[n].Object = kgagent.Entity{ID: x.strs.at(on[0]), Name: x.strs.at(on[1]), Type: x.strs.at(on[2])}
		} else {
			out[n].Literal = x.strs.at(^r.o)
		}
	}
	return out
}

// nameCache holds the name indexes of the store's collections. Its zero value
// is ready to use.
type nameCache struct {
	mu       sync.Mutex
	conn     *sql.Conn // the reader connection data_version is read on
	idx      map[string]*nameIndex
	building map[string]bool
	next     map[string]time.Time // no rebuild of a collection before this
	ctx      context.Context      // cancelled by close
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	closed   bool
	off      bool         // no name indexes: SQL answers (one-shot processes)
	sqlLoads atomic.Int64 // name indexes built from SQL rather than read from a snapshot
	gen      int          // bumped when conn is replaced

	// the last data_version read, the writer's count of ended
	// transactions before it was read, and when
	v       int64
	vWrites uint64
	vAt     time.Time
}

// versionRecheck is how long a data_version read stays trusted while this
// process's writer has ended no transaction. Every write of this process
// goes through that writer, and the data dir lock keeps other processes
// out, so the bound only matters for a foreign connection writing the file
// (an older version, a repair tool): its writes show within this time.
const versionRecheck = 100 * time.Millisecond

// version reads data_version on the cache's own connection, or returns the
// last one read when the writer has ended no transaction since (writes is
// its count) and that read is younger than versionRecheck: a question asks
// for the version several times, and each read is a query under c.mu that
// every concurrent reader waits for. The caller holds c.mu.
func (c *nameCache) version(ctx context.Context, db *sql.DB, writes uint64) (int64, error) {
	if c.conn != nil && !c.vAt.IsZero() && writes == c.vWrites && time.Since(c.vAt) < versionRecheck {
		return c.v, nil
	}
	if c.conn == nil {
		conn, err := db.Conn(ctx)
		if err != nil {
			return 0, err
		}
		c.conn = conn
	}
	var v int64
	if err := c.conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v); err != nil {
		// A broken connection is replaced on the next call. Its
		// successor counts data versions afresh, so no snapshot labelled
		// with this one's counts (nor one being built) may be used.
		c.conn.Close()
		c.conn = nil
		c.gen++
		clear(c.idx)
		c.vAt = time.Time{}
		return 0, err
	}
	c.v, c.vWrites, c.vAt = v, writes, time.Now()
	return v, nil
}

// get returns the collection's name index when it is current, else nil
// (after starting a rebuild when one is due).
func (s *Store) currentNames(ctx context.Context, collection string) *nameIndex {
	c := &s.names
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.off {
		return nil
	}
	v, err := c.version(ctx, s.rdb, s.writes.Load())
	if err != nil {
		return nil
	}
	if idx := c.idx[collection]; idx != nil && idx.version == v {
		return idx
	}
	// A stale snapshot is never used again (data_version only moves on):
	// free them all, also those of collections no longer asked about.
	for coll, idx := range c.idx {
		if idx.version != v {
			delete(c.idx, coll)
		}
	}
	if c.building[collection] || time.Now().Before(c.next[collection]) {
		return nil
	}
	if c.ctx == nil {
		c.ctx, c.cancel = context.WithCancel(context.Background())
		c.idx = map[string]*nameIndex{}
		c.building = map[string]bool{}
		c.next = map[string]time.Time{}
	}
	c.building[collection] = true
	gen := c.gen
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		start := time.Now()
		idx, err := s.buildNames(c.ctx, collection, v)
		took := time.Since(start)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.building[collection] = false
		c.next[collection] = time.Now().Add(max(time.Second, 5*took))
		if err == nil && idx != nil && gen == c.gen {
			c.idx[collection] = idx
		} else {
			delete(c.idx, collection)
		}
	}()
	return nil
}

// buildNames returns collection's name index, labelled with version (read
// before): from its snapshot when that is current, else loaded from SQL,
// after which the snapshot is written in the background. The state the
// snapshot must match and the rows are read in one read transaction.
func (s *Store) buildNames(ctx context.Context, collection string, version int64) (*nameIndex, error) {
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	header, err := snapState(ctx, tx, collection)
	if err != nil {
		return nil, err
	}
	if header != "" {
		if idx := s.readNamesSnapshot(collection, header, version); idx != nil {
			return idx, nil
		}
	}
	idx, err := loadNames(ctx, tx, collection, version)
	s.names.sqlLoads.Add(1)
	if err != nil || idx == nil || header == "" {
		return idx, err
	}
	c := &s.names
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		_ = s.writeNamesSnapshot(collection, header, idx)
	}()
	return idx, nil
}

// NoNameIndexes stops the store from building in-memory name indexes: every
// Entities and Expand runs in SQL. A process that answers one question and
// exits (kgagent ask) would only spend CPU on a build it never uses.
func (s *Store) NoNameIndexes() {
	s.names.mu.Lock()
	s.names.off = true
	s.names.mu.Unlock()
}

// Warm builds the collection's name index now instead of at its first
// question, and returns when it is built (or found too big to keep: past
// maxIndexedEntities). serve calls it before reporting ready.
func (s *Store) Warm(ctx context.Context, collection string) error {
	if s.currentNames(ctx, collection) != nil {
		return nil
	}
	for {
		s.names.mu.Lock()
		building := s.names.building[collection]
		s.names.mu.Unlock()
		if !building {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// closeNames stops the builds and releases the connection.
func (s *Store) closeNames() {
	c := &s.names
	c.mu.Lock()
	c.closed = true
	if c.cancel != nil {
		c.cancel()
	}
	c.mu.Unlock()
	c.wg.Wait()
	c.mu.Lock()
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
	c.idx = nil
	c.mu.Unlock()
}

// loadNames reads a collection's entities into a name index labelled with
// version, which was read before the load started: a commit in between makes
// the index look stale later, never current when it is not. It returns nil
// for collections above maxIndexedEntities or whose entities' strings pass
// maxTableBytes, and an index of the entities alone for those above
// maxIndexedTriples or whose triples' strings pass it.
func loadNames(ctx context.Context, db queryer, collection string, version int64) (*nameIndex, error) {
	return loadNamesFrom(ctx, db, collection, version, nil, nil)
}

// loadNamesFrom is loadNames with the triples taken from mem, when not nil,
// instead of the table (bulknames.go), and their strings from known, when
// not nil and it holds them (see loadTriples): the same index.
//
// A collection past maxIndexedTriples gets an index of its entities alone
// (entsOnly): past the bound by the count of its documents' triples
// (tripleBound), its triples are not read at all; past it as they are read
// (or past a string table's bound), the rows read are dropped.
func loadNamesFrom(ctx context.Context, db queryer, collection string, version int64, mem *bulkRows, known *strIDs) (*nameIndex, error) {
	idx := &nameIndex{version: version}
	n := int64(0)
	if mem != nil {
		n = int64(mem.n)
	} else {
		var err error
		if n, err = tripleBound(ctx, db, collection); err != nil {
			return nil, err
		}
	}
	if n <= int64(maxIndexedTriples) {
		// The triples first: the entities' strings and words are
		// references into their string table.
		if err := idx.loadTriples(ctx, db, collection, mem, known); err != nil {
			return nil, err
		}
	}
	return idx.orEntsOnly().loadEntities(ctx, db, collection)
}

// orEntsOnly is x when it holds the triples it read, else (loadTriples
// left rows nil: too many triples, or their strings past a table's bound)
// an empty index of x's version for the entities alone (entsOnly).
func (x *nameIndex) orEntsOnly() *nameIndex {
	if x.rows != nil {
		return x
	}
	return &nameIndex{version: x.version, entsOnly: true}
}

// tripleBound is at least the number of collection's triples: the sum of
// its documents' rowid ranges (table docs; a document's triples take
// consecutive rowids), read from one row a document rather than by
// counting the 7.68M index entries of the 97,977-page point (issue 25).
func tripleBound(ctx context.Context, db queryer, collection string) (int64, error) {
	var n int64
	err := db.QueryRowContext(ctx, `SELECT coalesce(sum(hi - lo + 1), 0) FROM docs WHERE collection = ?`, collection).Scan(&n)
	return n, err
}

// loadEntities completes x, whose triples loadTriples read (or which holds
// no triple: entsOnly), with the collection's entities and their words
// (loadNamesFrom).
func (idx *nameIndex) loadEntities(ctx context.Context, db queryer, collection string) (*nameIndex, error) {
	rows, err := db.QueryContext(ctx, `SELECT `+entCols+` FROM entities AS e`+entJoin+` WHERE e.collection = `+strID("?1"), collection)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	l := newEntityLoader(idx)
	for rows.Next() {
		var id, name, typ, norm string
		var refs int64
		if err := rows.Scan(&id, &name, &typ, &norm, &refs); err != nil {
			return nil, err
		}
		if !l.add(id, name, typ, norm, refs) {
			return nil, nil
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	return l.done(), nil
}

// entitiesFrom is loadEntities with the entities taken from ents, the
// collection's rows of the entities table in its order (a bulk load's
// finish writes them, entityRows): the same index.
func (idx *nameIndex) entitiesFrom(ents []entityRow) *nameIndex {
	l := newEntityLoader(idx)
	for _, e := range ents {
		if !l.add(e.id, e.name, e.typ, e.norm, int64(e.refs)) {
			return nil
		}
	}
	return l.done()
}

// entityLoader adds a collection's entities, in the entities table's
// order, to a name index whose triples are read. The words' entities are
// gathered as (word, entity) pairs, 8 bytes each, grouped by word at the
// end: a map of a slice per word held ~36 MB for the 390k entities of
// 33,438 pages of docs (issue 25), at the end of their ingest.
type entityLoader struct {
	idx   *nameIndex
	b     *refBuilder
	pairs []wordEnt
}

// wordEnt is a word (its string reference) an entity is indexed under.
type wordEnt struct{ w, e int32 }

func newEntityLoader(idx *nameIndex) *entityLoader {
	return &entityLoader{idx: idx, b: newRefBuilder(idx)}
}

// add adds an entity; false: the collection gets no index (above
// maxIndexedEntities, or a string table past its bound).
func (l *entityLoader) add(id, name, typ, norm string, refs int64) bool {
	idx := l.idx
	if len(idx.ents) >= maxIndexedEntities {
		return false
	}
	i := int32(len(idx.ents))
	idx.ents = append(idx.ents, l.b.entity(id, name, typ, norm, refs))
	// The words the writer indexed it under (word_blocks).
	for _, w := range Words(norm, id) {
		l.pairs = append(l.pairs, wordEnt{l.b.ref(w), i})
	}
	return !idx.extra.tooBig()
}

// done orders the word index and returns the index.
func (l *entityLoader) done() *nameIndex {
	idx := l.idx
	pairs := l.pairs
	l.pairs = nil
	// Grouped by word (a word's string has one reference), each group
	// then ordered as the words are, by string.
	slices.SortFunc(pairs, func(a, b wordEnt) int { return cmp.Compare(a.w, b.w) })
	type group struct{ w, lo, hi int32 }
	var groups []group
	for i := 0; i < len(pairs); {
		j := i + 1
		for j < len(pairs) && pairs[j].w == pairs[i].w {
			j++
		}
		groups = append(groups, group{pairs[i].w, int32(i), int32(j)})
		i = j
	}
	slices.SortFunc(groups, func(a, b group) int { return strings.Compare(idx.str(a.w), idx.str(b.w)) })
	idx.words = make([]int32, len(groups))
	idx.wordEnd = make([]int32, len(groups))
	idx.wordEnts = make([]int32, 0, len(pairs))
	for i, g := range groups {
		at := len(idx.wordEnts)
		for _, p := range pairs[g.lo:g.hi] {
			idx.wordEnts = append(idx.wordEnts, p.e)
		}
		list := idx.wordEnts[at:]
		sort.Slice(list, func(a, b int) bool { return idx.before(list[a], list[b]) })
		idx.words[i] = g.w
		idx.wordEnd[i] = int32(len(idx.wordEnts))
	}
	idx.extra.trim()
	idx.ents = shrink(idx.ents)
	idx.wordEnts = shrink(idx.wordEnts)
	return idx
}

// refBuilder makes string references (nameIndex.str) for an index whose
// strs table is complete: a string strs holds is its strs index, any other
// is added to extra once (found again through extra's own finder, which
// grows with it; extra starts empty).
type refBuilder struct {
	x        *nameIndex
	h, extra strFinder
}

func newRefBuilder(x *nameIndex) *refBuilder {
	return &refBuilder{x: x, h: newStrFinder(&x.strs), extra: newStrFinder(&x.extra)}
}

// ref is the reference of s.
func (b *refBuilder) ref(s string) int32 {
	if k, ok := b.h.find(s); ok {
		return k
	}
	return ^b.extra.add(s)
}

// entity is an entity of the index with these strings.
func (b *refBuilder) entity(id, name, typ, norm string, refs int64) nameEnt {
	return nameEnt{id: b.ref(id), name: b.ref(name), typ: b.ref(typ), norm: b.ref(norm), refs: int32(min(refs, math.MaxInt32))}
}

// loadTriples reads the collection's triples into the adjacency lists. It
// leaves x.rows nil for collections above maxIndexedTriples or whose strings
// exceed maxTableBytes. The rows are read as strs ids, and the strings they
// name in one pass over strs, not with a join per column and row. The rows
// are those of mem when not nil (a bulk load's, bulknames.go). Either way
// they come in rowid order, so the strings, nodes and provenances are
// numbered the same. known, when not nil, holds every string of strs by
// its id (a bulk load's writer's complete cache, see strCache; not
// changed): the strings are then found there, not in strs.
func (x *nameIndex) loadTriples(ctx context.Context, db queryer, collection string, mem *bulkRows, known *strIDs) error {
	// local numbers the strings the rows use, "" (strs id 1) as 0.
	var maxID int64
	if known != nil {
		maxID = int64(known.len())
	} else if err := db.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM strs`).Scan(&maxID); err != nil {
		return err
	}
	local := newLocalIDs(maxID)
	// The rows come in rowid order (mem's are kept so, the query asks
	// for it): they are the index's rows as read, with no rowid kept or
	// sort (24 bytes a row, and a copy, on top of the 16 of the rows: ~100
	// MB at 2.5M triples, at the end of an ingest).
	size := 1024
	if mem != nil {
		size = mem.n
	}
	list := make([]memTriple, 0, size)
	nodes, provs := map[[3]int32]int32{}, map[[3]int32]int32{}
	intern := func(m map[[3]int32]int32, list *[][3]int32, k [3]int32) int32 {
		i, ok := m[k]
		if !ok {
			i = int32(len(*list))
			m[k] = i
			*list = append(*list, k)
		}
		return i
	}
	var c [11]int32
	// add adds a row (its strs ids in the query's order); false: the
	// collection gets no index (too many rows, or one it cannot hold)
	add := func(_ int64, ids *[11]int64) bool {
		if len(list) >= maxIndexedTriples {
			return false
		}
		for i, id := range ids {
			c[i] = local.num(id)
		}
		t := memTriple{
			s:    intern(nodes, &x.nodes, [3]int32{c[0], c[1], c[2]}),
			p:    c[3],
			prov: intern(provs, &x.provs, [3]int32{c[8], c[9], c[10]}),
		}
		switch {
		case c[7] == 0:
			t.o = intern(nodes, &x.nodes, [3]int32{c[4], c[5], c[6]})
		case c[4] == 0 && c[5] == 0 && c[6] == 0:
			t.o = ^c[7]
		default:
			// A literal and an object entity (no kgagent writes one:
			// graphrag.ValidateTriple refuses it): no row to hold it,
			// SQL answers.
			return false
		}
		list = append(list, t)
		return true
	}
	if mem != nil {
		// 0 when strs lacks it: no row is of collection 0
		var coll int64
		if known != nil {
			coll, _ = known.get(collection)
		} else {
			err := db.QueryRowContext(ctx, `SELECT coalesce(`+strID("?1")+`, 0)`, collection).Scan(&coll)
			if err != nil {
				return err
			}
		}
		all := true
		mem.each(coll, func(rowid int64, ids *[11]int64) bool {
			all = add(rowid, ids)
			return all
		})
		if !all {
			return nil
		}
	} else {
		// In rowid order, as mem's come: the strings, nodes and
		// provenances are numbered in the order rows are read, which must
		// not depend on the plan SQLite picks (the index on the collection
		// gives them by predicate).
		rows, err := db.QueryContext(ctx, `SELECT rowid, s_id, s_name, s_type, p, o_id, o_name, o_type, literal, chunk_id, doc_url, source_url
			FROM triples WHERE collection = `+strID("?1")+` ORDER BY rowid`, collection)
		if err != nil {
			return err
		}
		defer rows.Close()
		var ids [11]int64
		dest := make([]any, 12)
		var rowid int64
		dest[0] = &rowid
		for i := range ids {
			dest[i+1] = &ids[i]
		}
		for rows.Next() {
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			if !add(rowid, &ids) {
				return nil
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
	}
	strs, size, err := localStrings(ctx, db, local, known)
	if err != nil {
		return err
	}
	if int64(size) > maxTableBytes {
		return nil // too big to keep: x.rows stays nil
	}
	x.strs = strs
	if cap(list)-len(list) > len(list)/8 {
		list = shrink(list)
	}
	x.nodes, x.provs = shrink(x.nodes), shrink(x.provs)
	x.link(list)
	return nil
}

// localIDs numbers strs ids in the order they are first met (a name
// index's string numbers): ids[n] is number n's strs id. Ids up to
// maxDenseIDs find their numbers in a slice by id (4 bytes an id of
// strs), any above it in a map: a map[int64]int32 over the 1.36M strings
// of the 33,438 pages of issue 25 held ~40 MB while the index was built.
type localIDs struct {
	ids   []int64
	dense []int32 // by strs id: 1 + its number, 0 when not met
	more  map[int64]int32
}

// maxDenseIDs bounds the strs ids localIDs holds in a slice (32 MB).
const maxDenseIDs = 1 << 23

// newLocalIDs returns numbers for the ids of a strs table whose largest id
// is maxID, "" (id 1) numbered 0.
func newLocalIDs(maxID int64) *localIDs {
	l := &localIDs{}
	if maxID <= maxDenseIDs {
		l.dense = make([]int32, max(maxID, 1)+1)
	}
	l.num(1)
	return l
}

// num is the number of id, given the next one when it has none.
func (l *localIDs) num(id int64) int32 {
	if n, ok := l.find(id); ok {
		return n
	}
	n := int32(len(l.ids))
	l.ids = append(l.ids, id)
	if id >= 0 && id < int64(len(l.dense)) {
		l.dense[id] = n + 1
		return n
	}
	if l.more == nil {
		l.more = map[int64]int32{}
	}
	l.more[id] = n
	return n
}

// find is the number of id, if it has one.
func (l *localIDs) find(id int64) (int32, bool) {
	if id >= 0 && id < int64(len(l.dense)) {
		n := l.dense[id]
		return n - 1, n > 0
	}
	n, ok := l.more[id]
	return n, ok
}

// localStrings are the strings of local's strs ids, at their numbers, as
// a table (empty when their summed length, also returned, is past
// maxTableBytes): from known (all of strs by id) when it is not nil and
// has them all, else from two passes over strs, one for their lengths and
// one to copy each into its place in the table. The Python docs' name
// index: a pass was ~0.2 CPU-s at the end of an ingest. One pass that made
// a Go string of each held the strings twice with a header each while the
// table was filled: ~200 MB for the 79 MB of strings of 33,438 pages.
func localStrings(ctx context.Context, db queryer, local *localIDs, known *strIDs) (strTable, int, error) {
	if known != nil {
		size, all := 0, true
		for _, id := range local.ids {
			str, ok := known.str(id)
			if !ok {
				all = false
				break
			}
			size += len(str)
		}
		if all {
			if int64(size) > maxTableBytes {
				return strTable{}, size, nil
			}
			t := newStrTable(len(local.ids), size)
			for _, id := range local.ids {
				str, _ := known.str(id)
				t.add(str)
			}
			return t, size, nil
		}
	}
	// Strings strs lacks (none should) stay empty.
	lens := make([]uint32, len(local.ids))
	size := 0
	rows, err := db.QueryContext(ctx, `SELECT id, length(CAST(s AS BLOB)) FROM strs`)
	if err != nil {
		return strTable{}, 0, err
	}
	defer rows.Close()
	var id, l int64
	for rows.Next() {
		if err := rows.Scan(&id, &l); err != nil {
			return strTable{}, 0, err
		}
		if n, ok := local.find(id); ok {
			lens[n] = uint32(min(l, math.MaxUint32))
			size += int(l)
		}
	}
	if err := rows.Err(); err != nil || int64(size) > maxTableBytes {
		return strTable{}, size, err
	}
	rows.Close()
	t := strTable{b: make([]byte, size), end: make([]uint32, len(lens))}
	at := uint32(0)
	for n, l := range lens {
		at += l
		t.end[n] = at
	}
	changed := false
	err = eachStr(ctx, db, math.MinInt64, math.MaxInt64, func(id int64, str []byte) bool {
		if n, ok := local.find(id); ok {
			lo := uint32(0)
			if n > 0 {
				lo = t.end[n-1]
			}
			if uint32(len(str)) != t.end[n]-lo {
				changed = true
				return false
			}
			copy(t.b[lo:], str)
		}
		return true
	})
	if err == nil && changed {
		err = errors.New("graph store: a string changed length while read")
	}
	if err != nil {
		return strTable{}, 0, err
	}
	return t, size, nil
}

// link makes list, ordered by rowid, x's triples, with the ids of their
// entities and their adjacency lists.
func (x *nameIndex) link(list []memTriple) {
	n := x.strs.len()
	if n == 0 {
		x.rows = list
		return
	}
	// the entities: the ids of nodes that are a triple's subject or
	// object, by string
	isID := make([]bool, n)
	for i := range list {
		r := &list[i]
		isID[x.nodes[r.s][0]] = true
		if r.o >= 0 {
			isID[x.nodes[r.o][0]] = true
		}
	}
	isID[0] = false // the empty id is no entity
	x.ids = x.ids[:0]
	for k, ok := range isID {
		if ok {
			x.ids = append(x.ids, int32(k))
		}
	}
	x.ids = shrink(x.ids)
	slices.SortFunc(x.ids, func(a, b int32) int { return strings.Compare(x.strs.at(a), x.strs.at(b)) })
	ent := make([]int32, n) // strs index to entity, for the nodes
	for k := range ent {
		ent[k] = -1
	}
	for e, k := range x.ids {
		ent[k] = int32(e)
	}
	x.nodeEnt = make([]int32, len(x.nodes))
	for i, nd := range x.nodes {
		x.nodeEnt[i] = ent[nd[0]]
	}
	m := len(x.ids)
	x.outEnd = make([]int32, m)
	x.inEnd = make([]int32, m)
	for i := range list {
		s, o := x.sent(&list[i]), x.oent(&list[i])
		if s >= 0 {
			x.outEnd[s]++
		}
		if o != s && o >= 0 {
			x.inEnd[o]++
		}
	}
	// counts to end offsets
	var o, in int32
	for k := range m {
		o += x.outEnd[k]
		x.outEnd[k] = o
		in += x.inEnd[k]
		x.inEnd[k] = in
	}
	x.outRows = make([]int32, o)
	x.inRows = make([]int32, in)
	// fill each list from its end backwards, rows in descending order, so
	// every list ends up by rowid
	for i := len(list) - 1; i >= 0; i-- {
		s, o := x.sent(&list[i]), x.oent(&list[i])
		if s >= 0 {
			x.outEnd[s]--
			x.outRows[x.outEnd[s]] = int32(i)
		}
		if o != s && o >= 0 {
			x.inEnd[o]--
			x.inRows[x.inEnd[o]] = int32(i)
		}
	}
	// the fill left each end at its list's start: shift to ends
	if m > 0 {
		copy(x.outEnd, x.outEnd[1:])
		x.outEnd[m-1] = o
		copy(x.inEnd, x.inEnd[1:])
		x.inEnd[m-1] = in
	}
	x.rows = list
}

// shrink returns list in an array of its length (no growth slack).
func shrink[T any](list []T) []T {
	if cap(list) == len(list) {
		return list
	}
	return append(make([]T, 0, len(list)), list...)
}

// before orders entities by reference count, most first, then by id.
func (x *nameIndex) before(a, b int32) bool {
	ea, eb := &x.ents[a], &x.ents[b]
	if ea.refs != eb.refs {
		return ea.refs > eb.refs
	}
	return x.str(ea.id) < x.str(eb.id)
}

// entities is Entities over the index, with the same rules as the SQL path.
// Candidates are entity numbers until the best limit of them are known:
// only those are materialised, their strings in one buffer (a Python docs question's 13 term forms find
// ~340 candidates for 20 seeds). The order is RankEntities': ids are unique
// in a collection, so it is total and the result the same.
func (x *nameIndex) entities(forms []string, limit int) []kgagent.Entity {
	var cands []entCand
	at := map[int32]int{} // entity -> its cands index
	add := func(i int32, term string, words bool) bool {
		n := &x.ents[i]
		id, norm := x.str(n.id), x.str(n.norm)
		if words && !graphrag.ContainsWords(norm, term) && id != term {
			return false
		}
		exact := norm == term || id == term
		if j, ok := at[i]; ok {
			cands[j].exact = cands[j].exact || exact
			return true
		}
		at[i] = len(cands)
		cands = append(cands, entCand{i: i, exact: exact})
		return true
	}
	for _, term := range forms {
		if term == "" {
			continue
		}
		list := x.wordList(lookupWord(term))
		matched := 0
		for _, i := range list[:min(len(list), limit*4)] {
			if add(i, term, true) {
				matched++
			}
		}
		if matched == 0 && len(term) >= 4 && !strings.Contains(term, " ") {
			// Words that start with the term (and are not the term).
			var pre []int32
			seen := map[int32]bool{}
			for w := x.wordSearch(term); w < len(x.words); w++ {
				word := x.str(x.words[w])
				if !strings.HasPrefix(word, term) {
					break
				}
				if word == term {
					continue
				}
				for _, i := range span(x.wordEnts, x.wordEnd, int32(w)) {
					if !seen[i] {
						seen[i] = true
						pre = append(pre, i)
					}
				}
			}
			sort.Slice(pre, func(a, b int) bool { return x.before(pre[a], pre[b]) })
			for _, i := range pre[:min(len(pre), limit)] {
				add(i, term, false)
			}
		}
	}
	// graphrag.RankEntities' order: exact names first, then by reference
	// count, most first, then by id (x.before)
	slices.SortFunc(cands, func(a, b entCand) int {
		if a.exact != b.exact {
			if a.exact {
				return -1
			}
			return 1
		}
		if a.i == b.i {
			return 0
		}
		if x.before(a.i, b.i) {
			return -1
		}
		return 1
	})
	cands = cands[:min(len(cands), max(limit, 0))]
	// their strings copied into one buffer (as triples does)
	size := 0
	for _, c := range cands {
		n := &x.ents[c.i]
		size += len(x.str(n.id)) + len(x.str(n.name)) + len(x.str(n.typ))
	}
	buf := make([]byte, 0, size)
	str := func(k int32) string {
		s := x.str(k)
		if s == "" {
			return ""
		}
		lo := len(buf)
		buf = append(buf, s...)
		return unsafe.String(&buf[lo], len(s))
	}
	out := make([]kgagent.Entity, len(cands))
	for j, c := range cands {
		n := &x.ents[c.i]
		out[j] = kgagent.Entity{ID: str(n.id), Name: str(n.name), Type: str(n.typ)}
	}
	return out
}

// entCand is an entity nameIndex.entities may return: its number, and
// whether it is named exactly like a term.
type entCand struct {
	i     int32
	exact bool
}

// lookupWord is the word a term is looked up by: its first word, or for
// multi-word terms the rarest-looking (longest) one.
func lookupWord(term string) string {
	fs := strings.Fields(term)
	first := fs[0]
	for _, w := range fs[1:] {
		if len(w) > len(first) {
			first = w
		}
	}
	return first
}

// termForms are the forms Entities looks terms up in: each term as given
// (lower-cased, spaces collapsed) and its normalised form, so "dumps" finds
// json.dumps although it normalises to "dump".
func termForms(terms []string) []string {
	var forms []string
	for _, raw := range terms {
		low := strings.Join(strings.Fields(strings.ToLower(raw)), " ")
		forms = append(forms, low)
		if n := graphrag.NormalizeName(raw); n != low {
			forms = append(forms, n)
		}
	}
	return forms
}

// rankCands orders candidates as every Store does (graphrag.RankEntities)
// and keeps limit of them.
func rankCands(cands map[string]*cand, limit int) []kgagent.Entity {
	ms := make([]graphrag.EntityMatch, 0, len(cands))
	for _, c := range cands {
		ms = append(ms, graphrag.EntityMatch{Entity: c.e, Exact: c.exact, Degree: int64(c.refs)})
	}
	return graphrag.RankEntities(ms, limit)
}

// Entities implements graphrag.Store. A term matches an entity when it is one
// of the entity's index words (see Words) or, for multi-word terms, when the
// entity's normalised name contains it; when no entity matches a one-word
// term of four or more bytes that way, entities with a word that starts with
// the term are the fallback ("serializ" finds "serialization"), a range scan
// of the word index rather than a scan of every name.
// Entities named exactly like a term come first, then by how many triples
// refer to them. It answers from the in-memory name index when that is
// current, else with SQL.
func (s *Store) Entities(ctx context.Context, collection string, terms []string, limit int) ([]kgagent.Entity, error) {
	if err := graphrag.ValidateCollection(collection); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 50
	}
	forms := termForms(terms)
	if len(forms) == 0 {
		return []kgagent.Entity{}, nil
	}
	if idx := s.currentNames(ctx, collection); idx != nil {
		return idx.entities(forms, limit), nil
	}
	return s.entitiesSQL(ctx, collection, forms, limit)
}

// entCols are an entity's id, name, type, normalised name and reference
// count, of the entities aliased e joined with strs by entJoin.
const entCols = `i.s, n.s, ty.s, nm.s, e.refs`

// entJoin joins the strings of entCols to the entities aliased e.
const entJoin = ` CROSS JOIN strs AS i ON i.id = e.id CROSS JOIN strs AS n ON n.id = e.name
	CROSS JOIN strs AS ty ON ty.id = e.type CROSS JOIN strs AS nm ON nm.id = e.norm`

// entitiesByWordSQL selects the entities of collection ?1 indexed under
// word ?2, most referenced first (then by id), at most ?3 of them.
var entitiesByWordSQL = `SELECT ` + entCols + ` FROM entities e` + entJoin + `
	WHERE e.collection = ` + strID("?1") + ` AND e.id IN (` + strings.ReplaceAll(wordIDsSQL, "?1", strID("?1")) + `)
	ORDER BY e.refs DESC, i.s LIMIT ?3`

// entitiesByPrefixSQL selects the entities of collection ?1 indexed under
// a word w with ?2 < w < ?3, most referenced first (then by id), at most
// ?4 of them.
var entitiesByPrefixSQL = `SELECT ` + entCols + ` FROM entities e` + entJoin + `
	WHERE e.collection = ` + strID("?1") + ` AND e.id IN (` + strings.ReplaceAll(prefixIDsSQL, "?1", strID("?1")) + `)
	ORDER BY e.refs DESC, i.s LIMIT ?4`

// entitiesSQL is Entities answered by the word blocks and the entities table.
func (s *Store) entitiesSQL(ctx context.Context, collection string, forms []string, limit int) ([]kgagent.Entity, error) {
	cands := map[string]*cand{}
	for _, term := range forms {
		if term == "" {
			continue
		}
		rows, err := s.stWord.QueryContext(ctx, collection, lookupWord(term), limit*4)
		if err != nil {
			return nil, dbErr(ctx, err, "entities")
		}
		n, err := addCands(rows, cands, term, true)
		if err != nil {
			return nil, dbErr(ctx, err, "entities")
		}
		if n == 0 && len(term) >= 4 && !strings.Contains(term, " ") {
			rows, err := s.stPrefix.QueryContext(ctx, collection, term, term+"\uffff", limit)
			if err != nil {
				return nil, dbErr(ctx, err, "entities")
			}
			if _, err := addCands(rows, cands, term, false); err != nil {
				return nil, dbErr(ctx, err, "entities")
			}
		}
	}
	return rankCands(cands, limit), nil
}

// cand is an entity Entities may return, with what it is ranked by.
type cand struct {
	e     kgagent.Entity
	exact bool
	refs  int
}

// addCands adds the entity rows to m; with words set, only entities that
// contain term on word boundaries count. It returns how many matched.
func addCands(rows *sql.Rows, m map[string]*cand, term string, words bool) (int, error) {
	defer rows.Close()
	n := 0
	for rows.Next() {
		var c cand
		var norm string
		if err := rows.Scan(&c.e.ID, &c.e.Name, &c.e.Type, &norm, &c.refs); err != nil {
			return n, err
		}
		if words && !graphrag.ContainsWords(norm, term) && c.e.ID != term {
			continue
		}
		n++
		c.exact = norm == term || c.e.ID == term
		if old, ok := m[c.e.ID]; ok {
			old.exact = old.exact || c.exact
			continue
		}
		m[c.e.ID] = &c
	}
	return n, rows.Err()
}

// Expand implements graphrag.Store with a breadth-first frontier walk: each
// hop fetches at most lim.TriplesPerEntity triples per frontier entity
// (outgoing first, then incoming, each by rowid), and entities already
// visited are never expanded again, so cycles terminate. It answers from the
// in-memory snapshot when that is current, else with SQL.
func (s *Store) Expand(ctx context.Context, collection string, seeds []string, lim graphrag.ExpandLimits) ([]kgagent.Triple, error) {
	if err := graphrag.ValidateCollection(collection); err != nil {
		return nil, err
	}
	return s.expand(ctx, collection, seeds, lim, s.currentTriples(ctx, collection))
}

// currentTriples is the collection's current name index when it holds the
// triples (not entsOnly), else nil.
func (s *Store) currentTriples(ctx context.Context, collection string) *nameIndex {
	if idx := s.currentNames(ctx, collection); idx != nil && !idx.entsOnly {
		return idx
	}
	return nil
}

// ExpandShared implements graphrag.SharedExpander: Expand, whose triples'
// strings, when it answers from the in-memory snapshot, are the snapshot's
// own (no copy: Retrieve reads ~570 triples a question and keeps a few).
// The snapshot's triples are written into buf when it has room.
func (s *Store) ExpandShared(ctx context.Context, collection string, seeds []string, lim graphrag.ExpandLimits, buf []kgagent.Triple) ([]kgagent.Triple, error) {
	if err := graphrag.ValidateCollection(collection); err != nil {
		return nil, err
	}
	if idx := s.currentTriples(ctx, collection); idx != nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hops, per := expandDefaults(lim)
		return idx.sharedTriples(idx.expandRows(seeds, hops, per), collection, buf), nil
	}
	return s.expand(ctx, collection, seeds, lim, nil)
}

// expandDefaults are lim's hops and triples per entity, defaults applied.
func expandDefaults(lim graphrag.ExpandLimits) (hops, per int) {
	hops, per = lim.Hops, lim.TriplesPerEntity
	if hops <= 0 {
		hops = 2
	}
	if per <= 0 {
		per = 30
	}
	return hops, per
}

// expand is Expand from idx, or with SQL when idx is nil or holds no
// triples (entsOnly): the SQL path runs
// each hop's lookups on several reader connections and merges them in
// frontier order, so the outcome does not depend on timing.
func (s *Store) expand(ctx context.Context, collection string, seeds []string, lim graphrag.ExpandLimits, idx *nameIndex) ([]kgagent.Triple, error) {
	hops, per := expandDefaults(lim)
	if idx != nil && !idx.entsOnly {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return idx.expand(collection, seeds, hops, per), nil
	}
	lookup := func(frontier []string) ([][]kgagent.Triple, [][]int64, error) {
		return s.nearSQL(ctx, collection, frontier, per)
	}

	visited := map[string]bool{}
	var frontier []string
	for _, id := range seeds {
		if id != "" && !visited[id] {
			visited[id] = true
			frontier = append(frontier, id)
		}
	}
	seen := map[int64]bool{}
	var result []kgagent.Triple
	for hop := 0; hop < hops && len(frontier) > 0; hop++ {
		found, ids, err := lookup(frontier)
		if err != nil {
			return nil, dbErr(ctx, err, "expand")
		}
		var next []string
		for i := range frontier {
			for j, t := range found[i] {
				if seen[ids[i][j]] {
					continue
				}
				seen[ids[i][j]] = true
				result = append(result, t)
				for _, e := range []string{t.Subject.ID, t.Object.ID} {
					if t.Literal == "" && e != "" && !visited[e] {
						visited[e] = true
						next = append(next, e)
					}
				}
			}
		}
		frontier = next
	}
	return result, nil
}

// expand is Expand over the snapshot: the same walk as the SQL path, on
// string indexes and row positions, with no intermediate lists.
func (x *nameIndex) expand(collection string, seeds []string, hops, per int) []kgagent.Triple {
	return x.triples(x.expandRows(seeds, hops, per), collection)
}

// expandRows is expand's walk: the rows it returns, in order. Visited
// entities and seen rows are bits of pooled bitsets (walkMarks), not maps
// (a Python docs question's walks take ~570 rows), and the last hop marks
// no entity: only a next hop would expand them.
func (x *nameIndex) expandRows(seeds []string, hops, per int) []int32 {
	m := marksPool.Get().(*walkMarks)
	m.fit(len(x.ids), len(x.rows))
	defer m.clear()
	var frontier []int32
	for _, id := range seeds {
		if id == "" {
			continue
		}
		k, ok := x.lookupID(id)
		if ok && m.visit(k) {
			frontier = append(frontier, k)
		}
	}
	var taken []int32
	for hop := 0; hop < hops && len(frontier) > 0; hop++ {
		last := hop == hops-1
		var next []int32
		take := func(r int32) {
			if !mark(m.rows, r) {
				return
			}
			taken = append(taken, r)
			row := &x.rows[r]
			if last || row.o < 0 { // a literal: its object is no entity
				return
			}
			for _, e := range [2]int32{x.sent(row), x.oent(row)} {
				if e >= 0 && m.visit(e) {
					next = append(next, e)
				}
			}
		}
		for _, k := range frontier {
			out := span(x.outRows, x.outEnd, k)
			for _, r := range out[:min(len(out), per)] {
				take(r)
			}
			if len(out) < per {
				in := span(x.inRows, x.inEnd, k)
				for _, r := range in[:min(len(in), per-len(out))] {
					take(r)
				}
			}
		}
		frontier = next
	}
	m.taken = taken
	return taken
}

// walkMarks are an expansion's visited entities and seen rows: bitsets
// over an index's entities and rows, reused through marksPool, and what
// was set in them (visited, taken), which clear unsets.
type walkMarks struct {
	ents, rows []uint64
	visited    []int32
	taken      []int32
}

var marksPool = sync.Pool{New: func() any { return new(walkMarks) }}

// fit makes the bitsets hold ents entities and rows rows.
func (m *walkMarks) fit(ents, rows int) {
	if n := (ents + 63) / 64; len(m.ents) < n {
		m.ents = make([]uint64, n)
	}
	if n := (rows + 63) / 64; len(m.rows) < n {
		m.rows = make([]uint64, n)
	}
}

// visit marks entity k visited and reports whether it was not yet.
func (m *walkMarks) visit(k int32) bool {
	if !mark(m.ents, k) {
		return false
	}
	m.visited = append(m.visited, k)
	return true
}

// clear unsets what the walk set and puts m back in the pool.
func (m *walkMarks) clear() {
	for _, k := range m.visited {
		m.ents[k>>6] = 0
	}
	for _, r := range m.taken {
		m.rows[r>>6] = 0
	}
	m.visited, m.taken = m.visited[:0], nil
	marksPool.Put(m)
}

// mark sets bit i of b and reports whether it was unset.
func mark(b []uint64, i int32) bool {
	w, bit := i>>6, uint64(1)<<(i&63)
	if b[w]&bit != 0 {
		return false
	}
	b[w] |= bit
	return true
}

// nearSQL runs the expansion statement for each frontier entity on several
// reader connections; results come back in frontier order, so the outcome
// does not depend on timing.
func (s *Store) nearSQL(ctx context.Context, collection string, frontier []string, per int) ([][]kgagent.Triple, [][]int64, error) {
	found := make([][]kgagent.Triple, len(frontier))
	ids := make([][]int64, len(frontier))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(ExpandWorkers)
	for i, id := range frontier {
		g.Go(func() error {
			rows, err := s.stNear.QueryContext(gctx, collection, id, per)
			if err != nil {
				return err
			}
			found[i], ids[i], err = scanIDs(rows, collection)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	return found, ids, nil
}

// ExpandWorkers is how many lookups of one expansion hop run at once on the
// SQL path.
const ExpandWorkers = 4
