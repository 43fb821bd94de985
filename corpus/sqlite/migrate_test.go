package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/kgagent/kgagent/internal/fixture"

	"github.com/kgagent/kgagent/corpus"
)

// q8Fixture is an index.db written by the binary of main at 6dd58a9
// (float32 chunk and semantic vectors, format 0): `kgagent ingest
// --semantic` of testdata/site served on loopback (35 pages, 102 chunks,
// 57 entity chunks, 159 all-MiniLM-L6-v2 vectors).
const q8Fixture = "testdata/index-main-6dd58a9.db.gz"

// rawVectors reads every chunk's rid and vector blob with plain SQL (sem:
// the semantic vectors instead).
func rawVectors(t *testing.T, path string, sem ...bool) (map[int64][]byte, int) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ver int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&ver); err != nil {
		t.Fatal(err)
	}
	q := `SELECT rid, vec FROM chunks`
	if len(sem) > 0 {
		q = `SELECT rid, vec FROM semvecs`
	}
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64][]byte{}
	for rows.Next() {
		var rid int64
		var b []byte
		if err := rows.Scan(&rid, &b); err != nil {
			t.Fatal(err)
		}
		out[rid] = b
	}
	return out, ver
}

// TestMigrateQ8 opens a data dir's index.db written by the old binary: the
// float32 vectors become the int8 form (exactly what a new write stores
// for the same floats), the file shrinks, the chunks read back unchanged,
// and the search copy — vectors, scales and the hits of every search mode
// — equals the one built from the old rows.
func TestMigrateQ8(t *testing.T) {
	ctx := context.Background()
	path := fixture.Gunzip(t, q8Fixture, "index.db")
	old, ver := rawVectors(t, path)
	if ver != 0 || len(old) != 159 {
		t.Fatalf("fixture: format %d, %d rows", ver, len(old))
	}
	for rid, b := range old {
		if len(b) != 4*384 {
			t.Fatalf("fixture row %d: %d bytes, want float32s", rid, len(b))
		}
	}
	oldSem, _ := rawVectors(t, path, true)
	if len(oldSem) != 159 {
		t.Fatalf("fixture: %d semantic vectors", len(oldSem))
	}
	before, _ := os.Stat(path)

	// the old rows as the old binary's search copy saw them: the loader
	// still reads float32 chunk rows (format stamped by hand, no
	// migration; the semantic vectors, whose format the stamp decides,
	// are checked on their own below)
	lx := openLegacyCopy(t, path, `DELETE FROM semvecs; PRAGMA user_version = 2`)
	defer lx.Close()

	x, err := Open(Config{Path: path, NoSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	after, _ := os.Stat(path)
	if after.Size() >= before.Size()*3/4 {
		t.Errorf("index.db %d -> %d bytes: not compacted", before.Size(), after.Size())
	}
	got, ver := rawVectors(t, path)
	if ver != formatNewest || len(got) != len(old) {
		t.Fatalf("migrated: format %d, %d rows", ver, len(got))
	}
	for rid, b := range old {
		want, _ := appendQ8Bytes(nil, nil, appendVec(nil, b))
		if dense, ok := unpackQ8(nil, got[rid], 384); !ok || !bytes.Equal(dense, want) {
			t.Fatalf("row %d: migrated vector differs from a new write's", rid)
		}
	}

	gotSem, _ := rawVectors(t, path, true)
	if len(gotSem) != len(oldSem) {
		t.Fatalf("migrated: %d semantic vectors, want %d", len(gotSem), len(oldSem))
	}
	for rid, b := range oldSem {
		want, _ := appendQ8Bytes(nil, nil, appendVec(nil, b))
		if !bytes.Equal(gotSem[rid], want) {
			t.Fatalf("semantic row %d: migrated vector differs from a new write's", rid)
		}
	}

	lex := corpus.NewLexical(corpus.LexicalConfig{Dim: 384})
	for _, coll := range []string{"default", "default__entities"} {
		docs, err := x.Documents(ctx, coll, "", 1000)
		if err != nil || len(docs) == 0 {
			t.Fatalf("%s: %d documents, %v", coll, len(docs), err)
		}
		for _, d := range docs {
			a, err1 := x.DocumentChunks(ctx, coll, d.URL)
			b, err2 := lx.DocumentChunks(ctx, coll, d.URL)
			if err1 != nil || err2 != nil || fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("%s %s: chunks differ after migration (%v %v)", coll, d.URL, err1, err2)
			}
		}
		m, err := x.collection(ctx, coll)
		if err != nil {
			t.Fatal(err)
		}
		lm, err := lx.collection(ctx, coll)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(m.vecs, lm.vecs) || !slices.Equal(m.scales, lm.scales) || !slices.Equal(m.rids, lm.rids) {
			t.Fatalf("%s: search copy differs after migration", coll)
		}
		// the semantic set holds what the old binary quantised from its floats
		for model, set := range m.sem {
			for rid, b := range oldSem {
				slot, ok := m.slotOf(rid)
				if !ok {
					continue
				}
				q, scale := quantize(nil, appendVec(nil, b))
				if !slices.Equal(set.row(int(slot)), q) || set.scales[slot] != scale {
					t.Fatalf("%s %s: semantic vector of row %d differs after migration", coll, model, rid)
				}
			}
		}
		if len(m.sem) != 1 {
			t.Fatalf("%s: %d semantic sets after migration, want 1", coll, len(m.sem))
		}
		for j := range m.cols {
			if !slices.Equal(denseCol(&m.cols[j]), denseCol(&lm.cols[j])) {
				t.Fatalf("%s: column %d differs after migration", coll, j)
			}
		}
		for _, text := range []string{"install the widget", "configuration options", "error handling retry", "API reference"} {
			for _, mode := range []corpus.Mode{corpus.ModeDense, corpus.ModeKeyword, corpus.ModeHybrid} {
				q := corpus.Query{Collection: coll, Text: text, Vector: lex.Vector(text), K: 10, Mode: mode}
				h1, err1 := x.Search(ctx, q)
				h2, err2 := lx.Search(ctx, q)
				if err1 != nil || err2 != nil || (len(h1) == 0 && coll == "default") || fmt.Sprint(h1) != fmt.Sprint(h2) {
					t.Fatalf("%s %q %v: %d vs %d hits (%v %v)", coll, text, mode, len(h1), len(h2), err1, err2)
				}
			}
		}
	}

	// a second open finds nothing to convert
	x.Close()
	x2, err := Open(Config{Path: path, NoSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	x2.Close()
	again, _ := rawVectors(t, path)
	for rid := range got {
		if !bytes.Equal(got[rid], again[rid]) {
			t.Fatalf("row %d changed on a second open", rid)
		}
	}
}

// TestMigrateQ8InSmallRounds migrates the fixture three rows a round, with
// every chunk holding semantic vectors of two models, so rounds end inside
// a chunk's vectors: every row of both tables is converted, each to what a
// new write stores for its floats.
func TestMigrateQ8InSmallRounds(t *testing.T) {
	defer func(n int) { q8Batch = n }(q8Batch)
	q8Batch = 3
	path := fixture.Gunzip(t, q8Fixture, "index.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO semvecs (rid, model, vec) SELECT rid, 'other-model', vec FROM semvecs`); err != nil {
		t.Fatal(err)
	}
	type key struct {
		table, model string
		rid          int64
	}
	read := func() map[key][]byte {
		out := map[key][]byte{}
		for _, q := range []string{`SELECT 'chunks', '', rid, vec FROM chunks`, `SELECT 'semvecs', model, rid, vec FROM semvecs`} {
			rows, err := db.Query(q)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var k key
				var b []byte
				if err := rows.Scan(&k.table, &k.model, &k.rid, &b); err != nil {
					t.Fatal(err)
				}
				out[k] = b
			}
			rows.Close()
		}
		return out
	}
	old := read()
	db.Close()
	if len(old) != 159*3 {
		t.Fatalf("fixture: %d rows, want %d", len(old), 159*3)
	}
	x, err := Open(Config{Path: path, NoSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	if db, err = sql.Open("sqlite", "file:"+path); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got := read()
	var q []int8
	for k, b := range old {
		want, _ := appendQ8Bytes(nil, q, appendVec(nil, b))
		g := got[k]
		if k.table == "chunks" { // chunk vectors are then packed (format 5)
			g, _ = unpackQ8(nil, g, 384)
		}
		if !bytes.Equal(g, want) {
			t.Fatalf("%v: %d bytes after the migration, want the int8 form of its floats", k, len(got[k]))
		}
	}
}
