package sqlite

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestLocalStrings: the name index's strings come from the string cache
// given (a bulk load's writer's, which holds all of strs) without reading
// strs, and from strs when the cache lacks one of them.
func TestLocalStrings(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "graph.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	if _, err := s.w.conn.ExecContext(ctx, `INSERT INTO strs (id, h, s) VALUES (2, 0, 'alpha'), (3, 0, 'beta')`); err != nil {
		t.Fatal(err)
	}
	local := map[int64]int32{1: 0, 3: 1, 2: 2}
	// A cache that holds them all is used as it is: its strings (here not
	// strs's, to tell them apart) at their local numbers.
	known := strIDsOf("", "ALPHA", "BETA", "other")
	got, size, err := localStrings(ctx, s.rdb, local, known)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"", "BETA", "ALPHA"}; !slices.Equal(got, want) || size != 9 {
		t.Errorf("from the cache: %q, %d bytes; want %q, 9", got, size, want)
	}
	// One missing (id 3): strs's strings.
	for _, k := range []*strIDs{strIDsOf("", "ALPHA"), nil} {
		got, size, err = localStrings(ctx, s.rdb, local, k)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"", "beta", "alpha"}; !slices.Equal(got, want) || size != 9 {
			t.Errorf("cache %v: %q, %d bytes; want %q, 9 from strs", k, got, size, want)
		}
	}
}
