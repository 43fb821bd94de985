package sqlite

import (
	"bytes"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

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

// FuzzUnpackQ8: any blob either unpacks to dim+4 bytes that pack back to
// it, or is refused.
func FuzzUnpackQ8(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 0x01, 0, 0, 9}, 20)
	f.Add(make([]byte, 24), 20)
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
		if len(b) < dim+4 && !bytes.Equal(packQ8(nil, got), b) {
			t.Fatalf("%x unpacked to %x, which packs to %x", b, got, packQ8(nil, got))
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
	want := map[string]string{"default": "n=102 a536ae1adf661851", "default__entities": "n=57 41709c2d0f002f3b"}
	for coll, w := range want {
		if n, sha := chunksFingerprint(t, path, coll); fmt.Sprintf("n=%d %s", n, sha) != w {
			t.Fatalf("fixture %s: n=%d %s, knowledge-fp.sh gave %s", coll, n, sha, w)
		}
	}
	before, _ := os.Stat(path)

	// The search copy of the rows as main stored them: a copy stamped
	// format 5 by hand, so its vectors stay dense.
	legacy := filepath.Join(t.TempDir(), "legacy.db")
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(legacy, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+legacy)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA user_version = 5`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	lx, err := Open(Config{Path: legacy, NoSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
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
	for coll, w := range want {
		if n, sha := chunksFingerprint(t, path, coll); fmt.Sprintf("n=%d %s", n, sha) != w {
			t.Errorf("%s after the migration: n=%d %s, main stored %s", coll, n, sha, w)
		}
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
