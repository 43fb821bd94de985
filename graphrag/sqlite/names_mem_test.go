package sqlite

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag/graphtest"
	"github.com/kgagent/kgagent/internal/snapfile"
)

// TestNameIndexMemory: the name index of an API-docs-like graph holds a
// triple in at most 90 bytes (~87: a row is 16, the rest strings, word
// lists, adjacency and the subject/object and provenance tables; 109 while
// entities and words had string tables of their own, 91 while a row kept
// an object and a literal), whether
// built from SQL or read from its snapshot, and decoding a snapshot
// allocates a few dozen objects, not several per entity and string. Before,
// an entity was four Go strings, every interned string one more, a row
// eleven int32s and a rowid, and the adjacency and word index maps of
// slices: ~245 MB of serve's live heap on the OpenJDK API docs (1.38M
// triples), and 93,607 objects to decode this graph's snapshot.
func TestNameIndexMemory(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "graph.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	const docs, per = 60, 500
	for d := range docs {
		doc := fmt.Sprintf("https://docs.example/api/java.base/java/util/pkg%d/Class%d.html", d%7, d)
		var ts []kgagent.Triple
		for i := range per {
			subj := fmt.Sprintf("java.util.pkg%d.Class%d.method%d(int)", d%7, d, i%90)
			anchor := fmt.Sprintf("method%d(int)", i%90)
			if i%3 == 0 {
				ts = append(ts, graphtest.L("c", doc, subj, "summary", fmt.Sprintf("Returns the element %d of this list.", i), anchor))
			} else {
				ts = append(ts, graphtest.T("c", doc, subj, fmt.Sprintf("rel%d", i%5), fmt.Sprintf("java.util.pkg%d.Type%d", i%7, (d*per+i)%3000), anchor))
			}
		}
		if err := s.ReplaceDocument(ctx, "c", doc, ts); err != nil {
			t.Fatal(err)
		}
	}
	built, err := loadNames(ctx, s.rdb, "c", 0)
	if err != nil || built == nil || len(built.rows) != docs*per {
		t.Fatalf("loaded %v (%v), want %d triples", built, err, docs*per)
	}
	e := &snapfile.Encoder{}
	encodeNames(e, built)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mallocs := ms.Mallocs
	read, err := decodeNames(e.B)
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&ms)
	if n := ms.Mallocs - mallocs; n > 200 {
		t.Errorf("decoding allocated %d objects for %d entities and %d strings, want at most 200", n, len(read.ents), read.strs.len())
	}
	const most = 90
	for name, x := range map[string]*nameIndex{"from SQL": built, "from the snapshot": read} {
		b := x.memBytes()
		t.Logf("%s: %d entities, %d strings, %d triples: %d bytes, %d a triple", name, len(x.ents), x.strs.len(), len(x.rows), b, b/len(x.rows))
		if b > most*len(x.rows) {
			t.Errorf("name index %s: %d bytes, %d a triple, want at most %d", name, b, b/len(x.rows), most)
		}
	}
}

// TestNameIndexTableLimit: a collection whose triples' strings would not
// fit a string table (its end offsets are uint32: 4 GiB) gets a name index
// of its entities alone, as one above maxIndexedTriples does, one whose
// entities' strings would not fit gets none, and a snapshot holding such a
// table is
// refused; before, the offsets wrapped and the index handed out wrong
// strings (or read past its table). The limit is lowered to the test
// graph's size here.
func TestNameIndexTableLimit(t *testing.T) {
	s := storeWithDoc(t, 50, func(doc string, i int) kgagent.Triple {
		return graphtest.L("c", doc, fmt.Sprintf("pkg.Class%d", i), "summary", fmt.Sprintf("The literal text of class %d, long enough to count.", i), "")
	})
	ctx := t.Context()
	full, err := loadNames(ctx, s.rdb, "c", 0)
	if err != nil || full == nil {
		t.Fatalf("no index (%v) with the real limit", err)
	}
	e := &snapfile.Encoder{}
	encodeNames(e, full)
	for i, limit := range []int64{int64(len(full.strs.b)) - 1, int64(len(full.extra.b)) - 1} {
		old := maxTableBytes
		maxTableBytes = limit
		idx, err := loadNames(ctx, s.rdb, "c", 0)
		// past the triples' table: an index of the entities alone (their
		// strings fit); past the entities' too: none
		if entsOnly := i == 0; err != nil || (idx != nil) != entsOnly || (idx != nil && (!idx.entsOnly || idx.extra.tooBig())) {
			t.Errorf("limit %d: built an index (%v: %v), want one of the entities alone: %v", limit, idx != nil, err, entsOnly)
		}
		if x, err := decodeNames(e.B); err == nil {
			t.Errorf("limit %d: decoded a snapshot of %d+%d string bytes", limit, len(x.extra.b), len(x.strs.b))
		}
		maxTableBytes = old
	}
}

// TestStrFinder: strFinder finds every string of a table at its index (the
// first of equal strings), the empty string included, and no string the
// table does not hold.
func TestStrFinder(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 1000} {
		tab := newStrTable(0, 0)
		for i := range n {
			tab.add(fmt.Sprintf("s%d", i%(n/2+1)))
		}
		if n > 0 {
			tab.add("")
		}
		h := newStrFinder(&tab)
		for i := range int32(tab.len()) {
			k, ok := h.find(tab.at(i))
			if !ok || tab.at(k) != tab.at(i) || k > i {
				t.Errorf("n=%d: find(%q) = %d, %v; want the first index of it, at most %d", n, tab.at(i), k, ok, i)
			}
		}
		for _, s := range []string{"x", "s", fmt.Sprintf("s%d", n)} {
			if k, ok := h.find(s); ok {
				t.Errorf("n=%d: found %q at %d, which the table does not hold", n, s, k)
			}
		}
	}
}

// TestStrFinderAdd: a finder made for an empty table and grown by add holds
// each string once, at the index of its first add (the order a map from
// string to index gave refBuilder's extra table, so the same index and
// snapshot bytes), and finds every one of them, the empty string included,
// across the slots' doublings.
func TestStrFinderAdd(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 1000, 5000} {
		tab := newStrTable(0, 0)
		h := newStrFinder(&tab)
		first := map[string]int32{}
		for i := range n {
			s := fmt.Sprintf("s%d", (i*7)%(n/3+1))
			if i%97 == 5 {
				s = ""
			}
			k := h.add(s)
			want, ok := first[s]
			if !ok {
				want = int32(len(first))
				first[s] = want
			}
			if k != want || tab.at(k) != s {
				t.Fatalf("n=%d: add(%q) = %d (%q), want %d", n, s, k, tab.at(k), want)
			}
		}
		if tab.len() != len(first) {
			t.Errorf("n=%d: table of %d strings, want %d distinct", n, tab.len(), len(first))
		}
		for s, want := range first {
			if k, ok := h.find(s); !ok || k != want {
				t.Errorf("n=%d: find(%q) = %d, %v; want %d", n, s, k, ok, want)
			}
		}
		if k, ok := h.find("x"); ok {
			t.Errorf("n=%d: found x at %d, which the table does not hold", n, k)
		}
	}
}

// TestNameIndexSharesStrings: an entity's strings and the words it is
// indexed under refer to the triples' strings; only strings no triple holds
// (here the normalised names and the parts of dotted names) are stored
// apart, each once.
func TestNameIndexSharesStrings(t *testing.T) {
	s := storeWithDoc(t, 40, func(doc string, i int) kgagent.Triple {
		return graphtest.T("c", doc, fmt.Sprintf("pkg.Class%d", i), "extends", fmt.Sprintf("pkg.Base%d", i%4), "")
	})
	x, err := loadNames(t.Context(), s.rdb, "c", 0)
	if err != nil || x == nil {
		t.Fatalf("no index: %v", err)
	}
	inStrs := map[string]bool{}
	for i := range int32(x.strs.len()) {
		inStrs[x.strs.at(i)] = true
	}
	apart := map[string]bool{}
	for i := range int32(x.extra.len()) {
		str := x.extra.at(i)
		if inStrs[str] || apart[str] {
			t.Errorf("%q stored apart although the triples or the table apart hold it", str)
		}
		apart[str] = true
	}
	for _, e := range x.ents {
		for _, k := range []int32{e.id, e.name, e.typ} {
			if k < 0 {
				t.Errorf("entity string %q stored apart", x.str(k))
			}
		}
	}
	if len(apart) == 0 {
		t.Error("no string apart: the normalised names pkg.class0 ... are in no triple")
	}
}

// TestNameIndexLiteralAndObject: a row with both a literal and an object
// entity (kgagent refuses to write one; a foreign writer could) cannot be
// held by the index's 16-byte rows, so the collection's index holds its
// entities alone and SQL answers Expand, rather than the index dropping
// the object.
func TestNameIndexLiteralAndObject(t *testing.T) {
	path := filepath.Join(t.TempDir(), "graph.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	doc := "https://docs.example/a.html"
	if err := s.ReplaceDocument(ctx, "c", doc, []kgagent.Triple{
		graphtest.T("c", doc, "pkg.A", "extends", "pkg.B", ""),
		graphtest.L("c", doc, "pkg.A", "summary", "The class A.", ""),
	}); err != nil {
		t.Fatal(err)
	}
	if x, err := loadNames(ctx, s.rdb, "c", 0); err != nil || x == nil || len(x.rows) != 2 {
		t.Fatalf("valid rows: index %v (%v), want one of 2 rows", x, err)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `UPDATE triples SET o_id = s_id WHERE literal != 1`); err != nil {
		t.Fatal(err)
	}
	if x, err := loadNames(ctx, s.rdb, "c", 0); err != nil || x == nil || !x.entsOnly {
		t.Errorf("a row with a literal and an object: index %v (%v), want one of the entities alone", x, err)
	}
}

// storeWithDoc is a fresh store, closed with the test, holding one document
// of collection "c": the n triples triple(doc, i) makes.
func storeWithDoc(t *testing.T, n int, triple func(doc string, i int) kgagent.Triple) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "graph.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	doc := "https://docs.example/a.html"
	ts := make([]kgagent.Triple, n)
	for i := range ts {
		ts[i] = triple(doc, i)
	}
	if err := s.ReplaceDocument(t.Context(), "c", doc, ts); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAdjacencyByEntity: the name index's adjacency lists are sized by
// entity, not by string (on the OpenJDK API docs 201k of the 695k strings
// are entity ids; names, types, literals, predicates and provenance are
// the rest), and each entity's lists are exactly its rows as subject and
// as object, by rowid. Before, outEnd and inEnd had one end a string.
func TestAdjacencyByEntity(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "graph.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	for d := range 6 {
		doc := fmt.Sprintf("https://docs.example/p/C%d.html", d)
		var ts []kgagent.Triple
		for i := range 40 {
			subj := fmt.Sprintf("p.C%d.m%d", d, i%9)
			if i%3 == 0 {
				ts = append(ts, graphtest.L("c", doc, subj, "summary", fmt.Sprintf("Does thing %d of %d.", i, d), fmt.Sprintf("m%d", i)))
			} else {
				ts = append(ts, graphtest.T("c", doc, subj, "calls", fmt.Sprintf("p.C%d.m%d", (d+i)%6, i%7), fmt.Sprintf("m%d", i)))
			}
		}
		// a self-loop: one out row, no in row
		ts = append(ts, graphtest.T("c", doc, fmt.Sprintf("p.C%d.m0", d), "calls", fmt.Sprintf("p.C%d.m0", d), "self"))
		if err := s.ReplaceDocument(ctx, "c", doc, ts); err != nil {
			t.Fatal(err)
		}
	}
	x, err := loadNames(ctx, s.rdb, "c", 0)
	if err != nil || x == nil {
		t.Fatalf("loaded %v (%v)", x, err)
	}
	if len(x.outEnd) != len(x.ids) || len(x.inEnd) != len(x.ids) || len(x.ids) >= x.strs.len()/2 {
		t.Fatalf("%d out ends, %d in ends for %d entities of %d strings: want one an entity", len(x.outEnd), len(x.inEnd), len(x.ids), x.strs.len())
	}
	for k := range x.ids {
		id := x.strs.at(x.ids[k])
		var out, in []int32
		for i := range x.rows {
			r := &x.rows[i]
			s := x.strs.at(x.nodes[r.s][0])
			o := ""
			if r.o >= 0 {
				o = x.strs.at(x.nodes[r.o][0])
			}
			if s == id {
				out = append(out, int32(i))
			} else if o == id {
				in = append(in, int32(i))
			}
		}
		if got, ok := x.lookupID(id); !ok || got != int32(k) {
			t.Errorf("lookupID(%q) = %d %v, want %d", id, got, ok, k)
		}
		if got := span(x.outRows, x.outEnd, int32(k)); !slices.Equal(got, out) {
			t.Errorf("%s: out rows %v, want %v", id, got, out)
		}
		if got := span(x.inRows, x.inEnd, int32(k)); !slices.Equal(got, in) {
			t.Errorf("%s: in rows %v, want %v", id, got, in)
		}
	}
}

// TestTriplesCopyRepeatedStringsOnce: the triples the index hands out own
// their strings (none points into the index's table), a string shared by
// a run of rows (a subject's id, name and type, a section's provenance) is
// copied once for the run, and every field is the row's. Before, each row's
// eleven strings were copied: 94 of the 1,066 MB serve allocated over 800
// OpenJDK API docs searches and answers.
func TestTriplesCopyRepeatedStringsOnce(t *testing.T) {
	s := storeWithDoc(t, 40, func(doc string, i int) kgagent.Triple {
		tr := graphtest.T("c", doc, "pkg.Main", "calls", fmt.Sprintf("pkg.Helper%d", i), fmt.Sprintf("s%d", i/10))
		if i%7 == 3 {
			tr.Object, tr.Literal = kgagent.Entity{}, fmt.Sprintf("literal %d", i)
		}
		return tr
	})
	x, err := loadNames(t.Context(), s.rdb, "c", 0)
	if err != nil || x == nil {
		t.Fatalf("no index: %v", err)
	}
	rows := make([]int32, len(x.rows))
	for i := range rows {
		rows[i] = int32(i)
	}
	got := x.triples(rows, "c")
	table := unsafe.SliceData(x.strs.b)
	copies := map[*byte]bool{}
	for n, tr := range got {
		r := &x.rows[n]
		sn, pv := x.nodes[r.s], x.provs[r.prov]
		var on [3]int32
		if r.o >= 0 {
			on = x.nodes[r.o]
		}
		want := kgagent.Triple{Collection: "c",
			Subject:   kgagent.Entity{ID: x.str(sn[0]), Name: x.str(sn[1]), Type: x.str(sn[2])},
			Predicate: x.str(r.p), Object: kgagent.Entity{ID: x.str(on[0]), Name: x.str(on[1]), Type: x.str(on[2])},
			Literal: x.str(r.lit()), ChunkID: x.str(pv[0]), DocURL: x.str(pv[1]), SourceURL: x.str(pv[2])}
		if tr != want {
			t.Fatalf("row %d: %+v, want %+v", n, tr, want)
		}
		for _, str := range []string{tr.Subject.ID, tr.Subject.Name, tr.Subject.Type, tr.Predicate, tr.Object.ID,
			tr.Object.Name, tr.Object.Type, tr.Literal, tr.ChunkID, tr.DocURL, tr.SourceURL} {
			if p := unsafe.StringData(str); str != "" {
				if uintptr(unsafe.Pointer(p))-uintptr(unsafe.Pointer(table)) < uintptr(len(x.strs.b)) {
					t.Fatalf("row %d: %q points into the index's table", n, str)
				}
				copies[p] = true
			}
		}
	}
	// a row's own object id and name, a literal, the object's type again
	// after a literal, a section's chunk id and URL: 94 here (388 when
	// each row's strings were copied)
	if len(copies) > 3*len(got) {
		t.Errorf("%d string copies for %d triples", len(copies), len(got))
	}
	if unsafe.StringData(got[0].Subject.ID) != unsafe.StringData(got[len(got)-1].Subject.ID) {
		t.Error("the subject's id copied for each row")
	}
}

// TestEntitiesMaterialiseOnlyKept: the name index ranks Entities'
// candidates as entity numbers and makes Go strings only for the limit it
// returns, with the SQL path's result. Ten words each name 100 entities
// (some with differing reference counts, ties broken by id) and one names
// an entity exactly: 800 candidates for 20 entities. Before, every
// candidate's three strings were copied and it had a map entry and a
// record of its own: 3,231 allocations; now 39 (the strings of the 20
// in one buffer).
func TestEntitiesMaterialiseOnlyKept(t *testing.T) {
	s := storeWithDoc(t, 1000, func(doc string, i int) kgagent.Triple {
		return graphtest.T("c", doc, fmt.Sprintf("word%d thing%d", i%10, i), "rel", fmt.Sprintf("target%d", i%7), "")
	})
	ctx := t.Context()
	terms := []string{"word0", "word1", "word2", "word3", "word4", "word5", "word6", "word7", "word8", "word9", "word3 thing13"}
	viaSQL, viaIndex, err := EntitiesBothWays(ctx, s, "c", terms, 20)
	if err != nil {
		t.Fatal(err)
	}
	if len(viaSQL) != 20 || !slices.Equal(viaSQL, viaIndex) {
		t.Fatalf("index %v, SQL %v", viaIndex, viaSQL)
	}
	if viaIndex[0].ID != "word3 thing13" {
		t.Errorf("first %q, want the exact name", viaIndex[0].ID)
	}
	idx, err := loadNames(ctx, s.rdb, "c", 0)
	if err != nil || idx == nil {
		t.Fatal(idx, err)
	}
	forms := termForms(terms)
	n := testing.AllocsPerRun(20, func() { idx.entities(forms, 20) })
	if n > 60 {
		t.Errorf("%.0f allocations for 20 of 800 candidates, want at most 60", n)
	}
	if testing.Verbose() {
		t.Logf("%.0f allocations", n)
	}
}
