package sqlite

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/internal/snapfile"
)

// EntitiesBothWays answers Entities by SQL and by a freshly built name
// index, for tests that the two agree.
func EntitiesBothWays(ctx context.Context, s *Store, collection string, terms []string, limit int) (viaSQL, viaIndex []kgagent.Entity, err error) {
	forms := termForms(terms)
	viaSQL, err = s.entitiesSQL(ctx, collection, forms, limit)
	if err != nil {
		return nil, nil, err
	}
	idx, err := loadNames(ctx, s.rdb, collection, 0)
	if err != nil {
		return nil, nil, err
	}
	return viaSQL, idx.entities(forms, limit), nil
}

// NamesCurrent reports whether Entities would answer collection from a
// current name index now (starting a build when one is due).
func NamesCurrent(ctx context.Context, s *Store, collection string) bool {
	return s.currentNames(ctx, collection) != nil
}

// ExpandBothWays runs Expand with SQL and from a freshly built snapshot.
func ExpandBothWays(ctx context.Context, s *Store, collection string, seeds []string, lim graphrag.ExpandLimits) (viaSQL, viaIndex []kgagent.Triple, err error) {
	viaSQL, err = s.expand(ctx, collection, seeds, lim, nil)
	if err != nil {
		return nil, nil, err
	}
	idx, err := loadNames(ctx, s.rdb, collection, 0)
	if err != nil {
		return nil, nil, err
	}
	viaIndex, err = s.expand(ctx, collection, seeds, lim, idx)
	return viaSQL, viaIndex, err
}

// LoadSnapshot builds the in-memory snapshot of a collection and reports its
// entity and triple counts; snap keeps it alive.
func LoadSnapshot(ctx context.Context, s *Store, collection string) (snap any, entities, triples int, err error) {
	idx, err := loadNames(ctx, s.rdb, collection, 0)
	if err != nil || idx == nil {
		return nil, 0, 0, err
	}
	return idx, len(idx.ents), len(idx.rows), nil
}

// FindPlan is SQLite's query plan for Find(p), one line per step.
func FindPlan(ctx context.Context, s *Store, p graphrag.Pattern) (string, error) {
	q, args := findQuery(p)
	rows, err := s.rdb.QueryContext(ctx, `EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return "", err
		}
		b.WriteString(detail)
		b.WriteByte('\n')
	}
	return b.String(), rows.Err()
}

// NamesLoadedFromSQL is how many name indexes the store built from SQL
// rather than read from a snapshot.
func NamesLoadedFromSQL(s *Store) int64 { return s.names.sqlLoads.Load() }

// EncodeNames is the snapshot body of collection's name index, loaded now.
func EncodeNames(ctx context.Context, s *Store, collection string) ([]byte, error) {
	idx, err := loadNames(ctx, s.rdb, collection, 0)
	if err != nil {
		return nil, err
	}
	e := &snapfile.Encoder{}
	encodeNames(e, idx)
	return e.B, nil
}

// DecodeNames decodes a snapshot body and encodes the index again.
func DecodeNames(b []byte) ([]byte, error) {
	idx, err := decodeNames(b)
	if err != nil {
		return nil, err
	}
	e := &snapfile.Encoder{}
	encodeNames(e, idx)
	return e.B, nil
}

// EntitiesFromTriples are the entities that Open stores for a bulk load
// that did not finish, in the form of bulk_test.go's dump.
func EntitiesFromTriples(ctx context.Context, s *Store) ([]string, error) {
	ents, err := entitiesFromTriples(ctx, s.rdb)
	var out []string
	for _, e := range ents {
		out = append(out, strings.Join([]string{"entity", e.collection, e.id, e.name, e.typ, e.norm, strconv.Itoa(e.refs)}, " "))
	}
	return out, err
}

// FailVacuum makes the compaction after a migration fail until the test
// ends.
func FailVacuum(t interface{ Cleanup(func()) }) {
	old := vacuumSQL
	vacuumSQL = `VACUUM no_such_schema`
	t.Cleanup(func() { vacuumSQL = old })
}

// FailWords makes a bulk load's finish, and the migration to word blocks,
// fail at their entity words until the returned func is called.
func FailWords() (restore func()) {
	old := insertWordsSQL
	insertWordsSQL = `INSERT INTO no_such_table (collection, first, words)`
	return func() { insertWordsSQL = old }
}

// TallyEntities is the number of entities the store's bulk-load tally
// holds, and whether a finish took them.
func TallyEntities(s *Store) (int, bool) { return len(s.tally.ents), s.tally.lost }

// WordRows are the (collection strs id, word, entity strs id) rows the word
// blocks (first, data) of a store hold, for tests that compare stores.
func WordRows(coll int64, first string, data []byte) ([][3]any, error) {
	ents, err := decodeBlock(first, data)
	var out [][3]any
	for _, e := range ents {
		for _, id := range e.ids {
			out = append(out, [3]any{coll, e.word, id})
		}
	}
	return out, err
}

// CheckWordBlocks reports what is wrong with the word blocks of s, if
// anything: a block that does not decode, is empty, does not
// start with its first word, or holds a word at or past the next block's
// first; or words that differ from those of its entities (Words). It
// returns the number of blocks.
func CheckWordBlocks(ctx context.Context, s *Store) (int, error) {
	type key struct {
		coll int64
		word string
		id   int64
	}
	want := map[key]bool{}
	rows, err := s.rdb.QueryContext(ctx, `SELECT e.collection, e.id, i.s, nm.s FROM entities AS e
		JOIN strs AS i ON i.id = e.id JOIN strs AS nm ON nm.id = e.norm`)
	if err != nil {
		return 0, err
	}
	for rows.Next() {
		var coll, sid int64
		var id, norm string
		if err := rows.Scan(&coll, &sid, &id, &norm); err != nil {
			rows.Close()
			return 0, err
		}
		for _, w := range Words(norm, id) {
			want[key{coll, w, sid}] = true
		}
	}
	rows.Close()
	rows, err = s.rdb.QueryContext(ctx, `SELECT collection, first, words FROM word_blocks ORDER BY collection, first`)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var blocks [][]wordEntry
	var colls []int64
	var firsts []string
	for rows.Next() {
		var coll int64
		var first string
		var data []byte
		if err := rows.Scan(&coll, &first, &data); err != nil {
			return 0, err
		}
		ents, err := decodeBlock(first, data)
		if err != nil {
			return 0, fmt.Errorf("block %q: %v", first, err)
		}
		if len(ents) == 0 || ents[0].word != first {
			return 0, fmt.Errorf("block %q: starts with %v", first, ents)
		}
		blocks, colls, firsts = append(blocks, ents), append(colls, coll), append(firsts, first)
	}
	got := 0
	for i, ents := range blocks {
		for _, e := range ents {
			if i+1 < len(blocks) && colls[i+1] == colls[i] && e.word >= firsts[i+1] {
				return 0, fmt.Errorf("block %q holds %q, at or past the next block's %q", firsts[i], e.word, firsts[i+1])
			}
			for _, id := range e.ids {
				if !want[key{colls[i], e.word, id}] {
					return 0, fmt.Errorf("word %q of entity %d: no entity has it", e.word, id)
				}
				got++
			}
		}
	}
	if got != len(want) {
		return 0, fmt.Errorf("%d words in blocks, the entities have %d", got, len(want))
	}
	return len(blocks), rows.Err()
}

// EncodeWordBlock is the encoding of words (sorted, each with ascending
// positive ids) as one block, whatever its size, and its first word.
func EncodeWordBlock(words []string, ids [][]int64) (first string, data []byte) {
	var ents []wordEntry
	for i, w := range words {
		ents = append(ents, wordEntry{w, ids[i]})
	}
	if len(ents) == 0 {
		return "", nil
	}
	var buf []byte
	for i, e := range ents {
		prev := ents[0].word
		if i > 0 {
			prev = ents[i-1].word
		}
		buf = appendEntry(buf, prev, e)
	}
	return ents[0].word, buf
}

// DecodeWordBlock decodes a block into its words and their ids.
func DecodeWordBlock(first string, data []byte) (words []string, ids [][]int64, err error) {
	ents, err := decodeBlock(first, data)
	for _, e := range ents {
		words, ids = append(words, e.word), append(ids, e.ids)
	}
	return words, ids, err
}

// SmallWordBlocks makes word blocks at most n bytes until the test ends.
func SmallWordBlocks(t interface{ Cleanup(func()) }, n int) {
	old := blockCap
	blockCap = n
	t.Cleanup(func() { blockCap = old })
}

// TallyBytes is about how many bytes of Go's heap the store's bulk-load
// tally holds: the live heap with it less without it (it is dropped).
func TallyBytes(s *Store) int {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	with := m.HeapAlloc
	s.tally = entityTally{}
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int(with) - int(m.HeapAlloc)
}
