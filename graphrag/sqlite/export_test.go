package sqlite

import (
	"context"

	"github.com/kgagent/kgagent"
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
