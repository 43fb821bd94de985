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
	// maxID 1: ids 2 and 3 numbered in the map, past the slice
	for _, maxID := range []int64{3, 1} {
		local := newLocalIDs(maxID)
		local.num(3)
		local.num(2)
		local.num(3)
		if !slices.Equal(local.ids, []int64{1, 3, 2}) {
			t.Fatalf("numbered %v, want [1 3 2]", local.ids)
		}
		// A cache that holds them all is used as it is: its strings (here
		// not strs's, to tell them apart) at their local numbers.
		known := strIDsOf("", "ALPHA", "BETA", "other")
		got, size, err := localStrings(ctx, s.rdb, local, known)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"", "BETA", "ALPHA"}; !slices.Equal(tableStrings(&got), want) || size != 9 {
			t.Errorf("from the cache: %q, %d bytes; want %q, 9", tableStrings(&got), size, want)
		}
		// One missing (id 3): strs's strings.
		for _, k := range []*strIDs{strIDsOf("", "ALPHA"), nil} {
			got, size, err = localStrings(ctx, s.rdb, local, k)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"", "beta", "alpha"}; !slices.Equal(tableStrings(&got), want) || size != 9 {
				t.Errorf("cache %v: %q, %d bytes; want %q, 9 from strs", k, tableStrings(&got), size, want)
			}
		}
		// Past the table's bound: no table, the size told.
		old := maxTableBytes
		maxTableBytes = 8
		got, size, err = localStrings(ctx, s.rdb, local, nil)
		maxTableBytes = old
		if err != nil || got.len() != 0 || size != 9 {
			t.Errorf("past the bound: %d strings, %d bytes, %v; want none, 9", got.len(), size, err)
		}
	}
}

// tableStrings are the strings of t.
func tableStrings(t *strTable) []string {
	var out []string
	for i := range int32(t.len()) {
		out = append(out, t.at(i))
	}
	return out
}
