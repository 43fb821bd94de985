package sqlite

import (
	"bytes"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/internal/fixture"
)

// TestPackQ8RoundTrip packs vectors of several dimensions (multiples of 8
// and not) and zero shares: the sparse form is used exactly when it is
// shorter, and unpacks to the same bytes.
func TestPackQ8RoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, dim := range []int{1, 2, 7, 8, 9, 384, 385} {
		for _, zeros := range []float64{0, 0.1, 0.5, 0.63, 0.9, 1} {
			for range 20 {
				b := make([]byte, 4, dim+4)
				copy(b, []byte{1, 2, 3, 4})
				nz := 0
				for range dim {
					c := byte(0)
					if r.Float64() >= zeros {
						c = byte(r.IntN(255) + 1)
						nz++
					}
					b = append(b, c)
				}
				p := packQ8(nil, b)
				sparse := 4+(dim+7)/8+nz < dim+4
				if sparse != (len(p) < len(b)) {
					t.Fatalf("dim %d, %d non-zero: packed %d bytes of %d", dim, nz, len(p), len(b))
				}
				if !sparse && !bytes.Equal(p, b) {
					t.Fatalf("dim %d: a dense vector changed", dim)
				}
				got, ok := unpackQ8(nil, p, dim)
				if !ok || !bytes.Equal(got, b) {
					t.Fatalf("dim %d, %d non-zero: unpacked %v, %v; want %v", dim, nz, got, ok, b)
				}
			}
		}
	}
}

// TestUnpackQ8Corrupt: a blob that is neither form is refused, not read
// as a wrong vector.
func TestUnpackQ8Corrupt(t *testing.T) {
	dense := make([]byte, 4+20)
	dense[4], dense[10] = 5, 7
	p := packQ8(nil, dense)
	if len(p) != 4+3+2 {
		t.Fatalf("packed %d bytes, want 9", len(p))
	}
	for name, b := range map[string][]byte{
		"a value missing":     p[:len(p)-1],
		"a value too many":    append(slices.Clone(p), 9),
		"a bit past the last": append(slices.Clone(p[:6]), p[6]|0x80, p[7], p[8]),
		"no bitmap":           p[:5],
		"float32 form":        make([]byte, 4*20),
		"empty":               nil,
	} {
		if got, ok := unpackQ8(nil, b, 20); ok {
			t.Errorf("%s: unpacked to %v", name, got)
		}
	}
}

// FuzzUnpackQ8: any blob either unpacks to dim+4 bytes, whose packed form
// unpacks to the same bytes, or is refused; a sparse blob that lists only
// non-zero values (packQ8's form) packs back to itself. A blob that lists a
// zero among its values (a row no kgagent writes) is read as it says,
// that component 0, rather than left out of the search copy.
func FuzzUnpackQ8(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 0x01, 0, 0, 9}, 20)
	f.Add(make([]byte, 24), 20)
	f.Add([]byte("0000  \x00\x000"), 20) // a zero among the values
	f.Fuzz(func(t *testing.T, b []byte, dim int) {
		if dim <= 0 || dim > 4096 {
			return
		}
		got, ok := unpackQ8(nil, b, dim)
		if !ok {
			return
		}
		if len(got) != dim+4 {
			t.Fatalf("unpacked %d bytes for dim %d", len(got), dim)
		}
		p := packQ8(nil, got)
		if again, ok := unpackQ8(nil, p, dim); !ok || !bytes.Equal(again, got) {
			t.Fatalf("%x unpacked to %x, which packs to %x, which unpacks to %x (%v)", b, got, p, again, ok)
		}
		if len(b) < dim+4 && !bytes.Contains(b[4+(dim+7)/8:], []byte{0}) && !bytes.Equal(p, b) {
			t.Fatalf("%x unpacked to %x, which packs to %x", b, got, p)
		}
	})
}

// TestMigrateSparse opens an index.db written by main at fdc1f51
// (testdata/index-main-fdc1f51.db.gz: `kgagent ingest` of testdata/site
// served on 127.0.0.1:18792 by main's binary; format 4, every vector
// dense): the vectors become sparse where that is shorter (format 5) in
// one transaction, the file shrinks, every row unpacks to the bytes main
// stored (knowledge-fp.sh on the file before: chunks n=102
// a536ae1adf661851, entities n=57 41709c2d0f002f3b, unchanged after), the
// search copy holds the same vectors and scales and every search mode
// ranks the same, and a second open changes nothing.
func TestMigrateSparse(t *testing.T) {
	ctx := t.Context()
	path := fixture.Gunzip(t, "testdata/index-main-fdc1f51.db.gz", "index.db")
	old, ver := rawVectors(t, path)
	if ver != formatPack || len(old) != 159 {
		t.Fatalf("fixture: format %d, %d rows", ver, len(old))
	}
	for rid, b := range old {
		if len(b) != 384+4 {
			t.Fatalf("fixture row %d: %d bytes, want dense int8", rid, len(b))
		}
	}
	if miss := demoFingerprintMisses(t, path); miss != "" {
		t.Fatalf("fixture: %s (knowledge-fp.sh)", miss)
	}
	before, _ := os.Stat(path)

	// The search copy of the rows as main stored them: a copy stamped
	// format 5 by hand, so its vectors stay dense.
	lx := openLegacyCopy(t, path, `PRAGMA user_version = 5`)
	defer lx.Close()

	x, err := Open(Config{Path: path, NoSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	got, ver := rawVectors(t, path)
	if ver != formatNewest || len(got) != len(old) {
		t.Fatalf("migrated: format %d, %d rows", ver, len(got))
	}
	sparse := 0
	for rid, b := range old {
		if len(got[rid]) < len(b) {
			sparse++
		}
		if dense, ok := unpackQ8(nil, got[rid], 384); !ok || !bytes.Equal(dense, b) {
			t.Fatalf("row %d: migrated vector unpacks to other bytes than main stored", rid)
		}
	}
	if sparse < len(old)/2 {
		t.Errorf("%d of %d vectors stored sparse", sparse, len(old))
	}
	for _, coll := range []string{"default", "default__entities"} {
		mx, err := x.collection(ctx, coll)
		if err != nil {
			t.Fatal(err)
		}
		ml, err := lx.collection(ctx, coll)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(mx.vecs, ml.vecs) || !slices.Equal(mx.scales, ml.scales) || !slices.Equal(mx.rids, ml.rids) {
			t.Errorf("%s: the search copy's vectors differ from those of main's rows", coll)
		}
	}
	lex := corpus.NewLexical(corpus.LexicalConfig{Dim: 384})
	for _, q := range []string{"configure the HTTP API port", "install", "python client", "glossary term", "error codes"} {
		for _, mode := range []corpus.Mode{corpus.ModeDense, corpus.ModeHybrid, corpus.ModeKeyword} {
			cq := corpus.Query{Collection: "default", Text: q, Vector: lex.Vector(q), K: 10, Mode: mode}
			g, err := x.Search(ctx, cq)
			if err != nil || len(g) == 0 {
				t.Fatalf("%s search %q after the migration: %v %v", mode, q, g, err)
			}
			w, err := lx.Search(ctx, cq)
			if err != nil || !slices.EqualFunc(g, w, func(a, b corpus.Hit) bool {
				return a.Chunk.ID == b.Chunk.ID && a.Score == b.Score
			}) {
				t.Errorf("%s search %q: migrated %v, dense rows %v (%v)", mode, q, g, w, err)
			}
		}
	}
	x.Close()
	if miss := demoFingerprintMisses(t, path); miss != "" {
		t.Errorf("after the migration: %s (main stored the fixture's)", miss)
	}
	after, _ := os.Stat(path)
	t.Logf("index.db %d bytes before, %d after; %d of %d vectors sparse", before.Size(), after.Size(), sparse, len(old))
	if after.Size() >= before.Size() {
		t.Errorf("index.db did not shrink: %d -> %d bytes", before.Size(), after.Size())
	}

	// A second open changes nothing.
	x, err = Open(Config{Path: path, NoSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	again, _ := rawVectors(t, path)
	for rid, b := range got {
		if !bytes.Equal(again[rid], b) {
			t.Fatalf("row %d changed on a second open", rid)
		}
	}
}

// oldDocuments is Documents as main's fdc1f51 answered it, in SQL over the
// chunks alone (GROUP BY, the title of the first chunk), then each
// document's chunk ids by ordinal.
func oldDocuments(t *testing.T, path, collection string) ([]corpus.DocumentInfo, map[string][]string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT doc_url, COUNT(*), (SELECT title FROM chunks k WHERE k.collection = c.collection AND k.doc_url = c.doc_url ORDER BY ordinal LIMIT 1)
		FROM chunks c WHERE collection = ? GROUP BY doc_url ORDER BY doc_url`, collection)
	if err != nil {
		t.Fatal(err)
	}
	var docs []corpus.DocumentInfo
	for rows.Next() {
		var d corpus.DocumentInfo
		if err := rows.Scan(&d.URL, &d.Chunks, &d.Title); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	rows.Close()
	ids := map[string][]string{}
	for _, d := range docs {
		rows, err := db.Query(`SELECT `+hexSQL("id")+` FROM chunks WHERE collection = ? AND doc_url = ? ORDER BY ordinal`, collection, d.URL)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids[d.URL] = append(ids[d.URL], id)
		}
		rows.Close()
	}
	return docs, ids
}

// TestMigrateDocs opens the index.db main wrote at fdc1f51 (format 4, a
// chunks_doc index on (collection, doc_url)): format 6 records each
// document's row id range in docs and drops the index, and Documents,
// DocumentChunks and Collections answer as main's rows did; a document's
// reads search the row id range, not the table; then a replace and a
// delete keep docs exact.
func TestMigrateDocs(t *testing.T) {
	ctx := t.Context()
	path := fixture.Gunzip(t, "testdata/index-main-fdc1f51.db.gz", "index.db")
	if n := countSQL(t, path, `SELECT count(*) FROM sqlite_schema WHERE name = 'chunks_doc'`); n != 1 {
		t.Fatalf("fixture: %d chunks_doc indexes", n)
	}
	colls := []string{"default", "default__entities"}
	wantDocs := map[string][]corpus.DocumentInfo{}
	wantIDs := map[string]map[string][]string{}
	for _, c := range colls {
		wantDocs[c], wantIDs[c] = oldDocuments(t, path, c)
	}
	if len(wantDocs["default"]) != 35 {
		t.Fatalf("fixture: %d documents", len(wantDocs["default"]))
	}
	x, err := Open(Config{Path: path, NoSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if n := countSQL(t, path, `SELECT count(*) FROM sqlite_schema WHERE name = 'chunks_doc'`); n != 0 {
		t.Errorf("chunks_doc still there after the migration")
	}
	infos, err := x.Collections(ctx)
	if err != nil || len(infos) != 2 {
		t.Fatalf("collections %v %v", infos, err)
	}
	for i, c := range colls {
		got, err := x.Documents(ctx, c, "", 1000)
		if err != nil || !slices.Equal(got, wantDocs[c]) {
			t.Errorf("%s: documents %v (%v), main's rows give %v", c, got, err, wantDocs[c])
		}
		// paged after a URL
		if got, _ := x.Documents(ctx, c, wantDocs[c][2].URL, 3); !slices.Equal(got, wantDocs[c][3:6]) {
			t.Errorf("%s: documents after %s: %v", c, wantDocs[c][2].URL, got)
		}
		chunks := 0
		for _, d := range wantDocs[c] {
			chunks += d.Chunks
			cs, err := x.DocumentChunks(ctx, c, d.URL)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, ch := range cs {
				ids = append(ids, ch.ID)
			}
			if !slices.Equal(ids, wantIDs[c][d.URL]) {
				t.Errorf("%s %s: chunks %v, main's rows give %v", c, d.URL, ids, wantIDs[c][d.URL])
			}
		}
		if infos[i].Name != c || infos[i].Documents != len(wantDocs[c]) || infos[i].Chunks != chunks {
			t.Errorf("collection %v, want %s with %d documents and %d chunks", infos[i], c, len(wantDocs[c]), chunks)
		}
	}

	// A document's chunks are read by their row id range.
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var plan, all string
	rows, err := db.Query(`EXPLAIN QUERY PLAN SELECT rid FROM chunks WHERE `+docRange(""), "default", wantDocs["default"][0].URL)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, parent, unused int
		if err := rows.Scan(&id, &parent, &unused, &plan); err != nil {
			t.Fatal(err)
		}
		all += plan + "; "
	}
	rows.Close()
	if !strings.Contains(all, "SEARCH chunks USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)") {
		t.Errorf("a document's chunks are not read by row id range: %s", all)
	}

	// Replace one document (fewer chunks), delete another: docs follows.
	lex := corpus.NewLexical(corpus.LexicalConfig{Dim: 384})
	d0, d1 := wantDocs["default"][0], wantDocs["default"][1]
	nc := []kgagent.Chunk{{ID: "c1", Collection: "default", DocURL: d0.URL, URL: d0.URL, Title: "New", Text: "new text one", Ordinal: 0},
		{ID: "c2", Collection: "default", DocURL: d0.URL, URL: d0.URL + "#b", Title: "New", Text: "new text two", Ordinal: 1}}
	if err := x.ReplaceDocument(ctx, "default", d0.URL, nc, [][]float32{lex.Vector("new text one"), lex.Vector("new text two")}); err != nil {
		t.Fatal(err)
	}
	if err := x.DeleteDocument(ctx, "default", d1.URL); err != nil {
		t.Fatal(err)
	}
	got, err := x.Documents(ctx, "default", "", 1000)
	if err != nil || len(got) != len(wantDocs["default"])-1 || got[0] != (corpus.DocumentInfo{URL: d0.URL, Title: "New", Chunks: 2}) || got[1] != wantDocs["default"][2] {
		t.Errorf("documents after a replace and a delete: %v %v", got[:3], err)
	}
	if cs, err := x.DocumentChunks(ctx, "default", d0.URL); err != nil || len(cs) != 2 || cs[1].Text != "new text two" {
		t.Errorf("replaced document's chunks: %v %v", cs, err)
	}
	if cs, err := x.DocumentChunks(ctx, "default", d1.URL); err != nil || len(cs) != 0 {
		t.Errorf("deleted document's chunks: %v %v", cs, err)
	}
	if n := countSQL(t, path, `SELECT count(*) FROM docs d WHERE d.n != (SELECT count(*) FROM chunks c WHERE c.rid BETWEEN d.lo AND d.hi)
		OR d.n != d.hi - d.lo + 1`); n != 0 {
		t.Errorf("%d docs rows out of step with the chunks", n)
	}
	if n := countSQL(t, path, `SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM docs d WHERE c.rid BETWEEN d.lo AND d.hi)`); n != 0 {
		t.Errorf("%d chunks outside every document's range", n)
	}
}

// TestWriteDenseThenSparse writes a document whose vectors alternate
// between dense (no zero component) and sparse ones: every stored vector
// unpacks to the bytes appendQ8Bytes gives it. Before, packQ8 returned
// its input for a dense vector, so the writer's sparse scratch aliased the
// quantised vector's buffer and the next sparse vector was packed over
// its own input, storing wrong components.
func TestWriteDenseThenSparse(t *testing.T) {
	ctx := t.Context()
	x, err := Open(Config{NoSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	const dim = 64
	url := "https://x/d"
	var cs []kgagent.Chunk
	var vs [][]float32
	for i := range 6 {
		v := make([]float32, dim)
		for j := range v {
			switch {
			case i%2 == 0:
				v[j] = float32(j%7) + 1 // dense
			case j%9 == i:
				v[j] = float32(j) + 1 // sparse
			}
		}
		cs = append(cs, kgagent.Chunk{ID: corpus.ChunkID("c", url, i), Collection: "c", DocURL: url, URL: url, Title: "t", Text: fmt.Sprint("chunk ", i), Ordinal: i})
		vs = append(vs, v)
	}
	if err := x.ReplaceDocument(ctx, "c", url, cs, vs); err != nil {
		t.Fatal(err)
	}
	rows, err := x.db.Query(`SELECT ordinal, vec FROM chunks ORDER BY ordinal`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n, sparse := 0, 0
	for rows.Next() {
		var ord int
		var vec []byte
		if err := rows.Scan(&ord, &vec); err != nil {
			t.Fatal(err)
		}
		if len(vec) < dim+4 {
			sparse++
		}
		want, _ := appendQ8Bytes(nil, nil, vs[ord])
		got, ok := unpackQ8(nil, vec, dim)
		if !ok || !bytes.Equal(got, want) {
			t.Errorf("chunk %d: stored vector unpacks to %v, %v; want %v", ord, got, ok, want)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(vs) || sparse != len(vs)/2 {
		t.Fatalf("%d rows, %d sparse; want %d, %d", n, sparse, len(vs), len(vs)/2)
	}
}
