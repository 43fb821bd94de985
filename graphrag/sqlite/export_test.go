package sqlite

import (
	"context"
	"github.com/kgagent/kgagent/internal/snapfile"
	"strconv"
	"strings"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
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

// FailWords makes a bulk load's finish fail at its entity words until the
// returned func is called.
func FailWords() (restore func()) {
	old := insertWordsSQL
	insertWordsSQL = `INSERT INTO no_such_table (collection, word, id)`
	return func() { insertWordsSQL = old }
}

// TallyEntities is the number of entities the store's bulk-load tally
// holds, and whether a finish took them.
func TallyEntities(s *Store) (int, bool) { return len(s.tally.ents), s.tally.taken }
