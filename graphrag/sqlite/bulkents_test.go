package sqlite

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag/graphtest"
)

// TestBulkEntitiesAdd: the strings of a bulk load's entities that strs
// lacks when finishBulk looks them up beside the index builds are added by
// the writer, in sorted order, and get the ids strs stores for them; the
// others keep theirs. A cache of strs's strings that lacks some is not
// used: find looks them up in strs.
func TestBulkEntitiesAdd(t *testing.T) {
	ctx := t.Context()
	s, err := Open(filepath.Join(t.TempDir(), "graph.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	doc := "https://docs.example/a.html"
	if err := s.ReplaceDocument(ctx, "c", doc, []kgagent.Triple{
		graphtest.T("c", doc, "json.loads", "returns", "Python object", "x"),
	}); err != nil {
		t.Fatal(err)
	}
	ents := []entityRow{
		{collection: "c", id: "json.loads", name: "zz new name", typ: "", norm: "aa new norm", refs: 1},
	}
	// a cache holding all but the new strings
	known := map[string]int64{}
	cache := newStrIDs()
	rows, err := s.rdb.QueryContext(ctx, `SELECT id, s FROM strs ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var str string
		if err := rows.Scan(&id, &str); err != nil {
			t.Fatal(err)
		}
		known[str] = id
		if got := cache.add(str); got != id {
			t.Fatalf("strs ids not 1, 2, ...: %q is %d", str, id)
		}
	}
	rows.Close()
	if known["json.loads"] == 0 || known[""] != 1 {
		t.Fatalf("strs read as %v", known)
	}
	b := &bulkEntities{ents: ents}
	if err := b.find(ctx, s.rdb, cache); err != nil {
		t.Fatal(err)
	}
	if want := []string{"aa new norm", "zz new name"}; !slices.Equal(b.missing, want) {
		t.Fatalf("missing %q, want %q", b.missing, want)
	}
	loads := b.ids["json.loads"]
	if loads != known["json.loads"] || b.top < loads {
		t.Fatalf("json.loads id %d, top %d", loads, b.top)
	}
	if err := b.add(ctx, s.w.conn); err != nil {
		t.Fatal(err)
	}
	if len(b.missing) != 0 {
		t.Errorf("still missing %q", b.missing)
	}
	for str, got := range b.ids {
		var want int64
		if err := s.w.conn.QueryRowContext(ctx, `SELECT id FROM strs WHERE s = ?`, str).Scan(&want); err != nil {
			t.Fatalf("%q: %v", str, err)
		}
		if got != want {
			t.Errorf("%q: id %d, strs holds %d", str, got, want)
		}
	}
	if b.ids["json.loads"] != loads {
		t.Errorf("json.loads id %d after add, was %d", b.ids["json.loads"], loads)
	}
	if a, z := b.ids["aa new norm"], b.ids["zz new name"]; a != b.top+1 || z != b.top+2 {
		t.Errorf("added strings got ids %d, %d; want %d, %d (sorted, after strs's last)", a, z, b.top+1, b.top+2)
	}
}

// TestBulkEntitiesKnown: when the writer's string cache holds every string
// of the entities, find takes their ids from it, without reading strs.
func TestBulkEntitiesKnown(t *testing.T) {
	known := strIDsOf("", "c", "json.loads", "loads", "function")
	b := &bulkEntities{ents: []entityRow{{collection: "c", id: "json.loads", name: "json.loads", typ: "function", norm: "loads", refs: 2}}}
	// a nil queryer: any read of strs would fail
	if err := b.find(t.Context(), nil, known); err != nil {
		t.Fatal(err)
	}
	if b.known != known || b.ids != nil {
		t.Fatalf("ids from %p and %v, want the cache %p only", b.known, b.ids, known)
	}
	b.order(true)
	if want := [][6]int64{{2, 3, 3, 5, 4, 2}}; !slices.Equal(b.rows, want) {
		t.Errorf("rows %v, want %v", b.rows, want)
	}
	if len(b.inTable) != 1 || b.inTable[0].id != "json.loads" {
		t.Errorf("in the table's order: %v", b.inTable)
	}
}

// strIDsOf is a strIDs holding strs, with ids 1, 2, ... in their order.
func strIDsOf(strs ...string) *strIDs {
	t := newStrIDs()
	for _, s := range strs {
		t.add(s)
	}
	t.commit()
	return t
}
