package sqlite

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/internal/fixture"
	"github.com/kgagent/kgagent/internal/snapfile"
)

// chunksFingerprint is the chunk fingerprint of knowledge-fp.sh (`sqlite3`
// over index.db) for collection: the rows id|doc_url|url|title|headings|
// anchor|ordinal|body|hash|hex(vec), as sqlite3 prints them (a body's
// newlines split a row into lines), their lines sorted bytewise, sha256,
// the first 16 hex digits. Bodies, URLs, ids and hashes are read as the
// store reads them (packedText, urlSQL, hexSQL), and a sparse vector
// (format 5) as its dense form (unpackQ8), so the value is the same for a
// file of any format.
func chunksFingerprint(t *testing.T, path, collection string) (int, string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// format 7 reads a row's collection, document URL and title through
	// its docs row, format 8 derives the id, anchor and hash stored as
	// derivedMark; older files hold them in the row
	q := `SELECT ` + idSQL("k.") + `, d.doc_url, ` + urlSQL("d.doc_url", "k.url") + `, COALESCE(k.title, d.title), k.headings, ` + anchorSQL("k.") + `, k.ordinal, k.body, ` + hashSQL("k.") + `, k.vec,
		coalesce((SELECT dim FROM collections WHERE name = d.collection), 0)
		FROM ` + collRows
	var legacy int
	if err := db.QueryRow(`SELECT COUNT(*) FROM pragma_table_info('chunks') WHERE name = 'collection'`).Scan(&legacy); err != nil {
		t.Fatal(err)
	}
	if legacy > 0 {
		q = `SELECT ` + hexSQL("id") + `, doc_url, ` + urlSQL("doc_url", "url") + `, title, headings, anchor, ordinal, body, ` + hexSQL("hash") + `, vec,
		coalesce((SELECT dim FROM collections WHERE name = chunks.collection), 0)
		FROM chunks WHERE collection = ?1`
	}
	rows, err := db.Query(q, collection)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	n := 0
	for rows.Next() {
		var doc, url, title, heads string
		var dc derivedCols
		var ord int
		var body packedText
		var blob []byte
		var dim int
		if err := rows.Scan(&dc.id, &doc, &url, &title, &heads, &dc.anchor, &ord, &body, &dc.hash, &blob, &dim); err != nil {
			t.Fatal(err)
		}
		c := kgagent.Chunk{Collection: collection, DocURL: doc, URL: url, Ordinal: ord, Text: string(body)}
		dc.fill(&c)
		id, anchor, hash := c.ID, c.Anchor, c.Hash
		if d, ok := unpackQ8(nil, blob, dim); ok {
			blob = d
		}
		vec := strings.ToUpper(hex.EncodeToString(blob))
		n++
		row := strings.Join([]string{id, doc, url, title, heads, anchor, strconv.Itoa(ord), string(body), hash, vec}, "|")
		lines = append(lines, strings.Split(row, "\n")...)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n") + "\n"))
	return n, fmt.Sprintf("%x", sum[:8])
}

// TestFingerprint prints the chunk fingerprints (knowledge-fp.sh's chunks
// and entities lines) of the index.db at $KGAGENT_INDEX_FINGERPRINT,
// collection $KGAGENT_INDEX_COLLECTION (default "default") and its
// __entities collection; skipped without it. It does not open the file as
// an Index, so nothing is migrated.
func TestFingerprint(t *testing.T) {
	path, coll := envIndex(t, "KGAGENT_INDEX_FINGERPRINT")
	n, sha := chunksFingerprint(t, path, coll)
	fmt.Printf("FINGERPRINT chunks   n=%d sha=%s\n", n, sha)
	n, sha = chunksFingerprint(t, path, coll+"__entities")
	fmt.Printf("FINGERPRINT entities n=%d sha=%s\n", n, sha)
}

// TestMigrateZBody opens an index.db written by main at af80d2c
// (testdata/index-main-af80d2c.db.gz: `kgagent ingest` of testdata/site
// served on 127.0.0.1:18792 by main's binary; format 2, bodies as text):
// the bodies become S2 blocks where that is shorter (format 3) and the
// URLs relative, ids and hashes bytes (format 4), in one transaction, the
// file does not grow, every chunk reads back as main
// stored it (knowledge-fp.sh on the file before: chunks n=102
// a536ae1adf661851, entities n=57 41709c2d0f002f3b), the search copy
// finds the same chunks, and a second open changes nothing.
func TestMigrateZBody(t *testing.T) {
	ctx := t.Context()
	path := fixture.Gunzip(t, "testdata/index-main-af80d2c.db.gz", "index.db")
	_, ver := rawVectors(t, path)
	if ver != formatSemQ8 {
		t.Fatalf("fixture: format %d, want %d", ver, formatSemQ8)
	}
	if n := countSQL(t, path, `SELECT count(*) FROM chunks WHERE typeof(body) = 'blob'`); n != 0 {
		t.Fatalf("fixture: %d compressed bodies", n)
	}
	if miss := demoFingerprintMisses(t, path); miss != "" {
		t.Fatalf("fixture: %s (knowledge-fp.sh)", miss)
	}
	before, _ := os.Stat(path)

	// The search copy of the rows as main stored them: a copy stamped
	// format 4 by hand, so its text columns are not migrated.
	lx := openLegacyCopy(t, path, `PRAGMA user_version = 4`)
	defer lx.Close()

	x, err := Open(Config{Path: path, NoSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"configure the HTTP API port", "install", "python client", "glossary term", "error codes"} {
		// (The vectors are not touched: keyword search is what reads the
		// bodies.)
		cq := corpus.Query{Collection: "default", Text: q, K: 10, Mode: corpus.ModeKeyword}
		got, err := x.Search(ctx, cq)
		if err != nil || len(got) == 0 {
			t.Fatalf("search %q after the migration: %v %v", q, got, err)
		}
		want, err := lx.Search(ctx, cq)
		if err != nil || !slices.EqualFunc(got, want, func(a, b corpus.Hit) bool {
			return a.Chunk.ID == b.Chunk.ID && a.Text == b.Text && a.Score == b.Score
		}) {
			t.Errorf("search %q: migrated %v, text rows %v (%v)", q, got, want, err)
		}
	}
	x.Close()
	if _, ver := rawVectors(t, path); ver != formatNewest {
		t.Errorf("format %d after the migration, want %d", ver, formatNewest)
	}
	// 94 bodies are 64 bytes or longer; 24 of those shrink (the demo's
	// bodies are short).
	nz := countSQL(t, path, `SELECT count(*) FROM chunks WHERE typeof(body) = 'blob'`)
	if nz < 20 {
		t.Errorf("%d compressed bodies after the migration, want 24", nz)
	}
	// Every id and hash is hex (or derived, format 8: an empty blob),
	// every URL its document's or one of its fragments (the demo's entity
	// chunks cite the page itself).
	if n := countSQL(t, path, `SELECT count(*) FROM chunks WHERE typeof(id) != 'blob' OR typeof(hash) != 'blob' OR length(id) NOT IN (0, 16) OR length(hash) NOT IN (0, 32)`); n != 0 {
		t.Errorf("%d chunks with a text id or hash after the migration", n)
	}
	if n := countSQL(t, path, `SELECT count(*) FROM chunks WHERE url != '' AND substr(url, 1, 1) != '#'`); n != 0 {
		t.Errorf("%d chunk URLs not stored relative to their document's", n)
	}
	if miss := demoFingerprintMisses(t, path); miss != "" {
		t.Errorf("after the migration: %s (main stored the fixture's)", miss)
	}
	after, _ := os.Stat(path)
	t.Logf("index.db %d bytes before, %d after; %d bodies compressed", before.Size(), after.Size(), nz)
	if after.Size() > before.Size() {
		t.Errorf("index.db grew: %d -> %d bytes", before.Size(), after.Size())
	}

	// A second open changes nothing.
	x, err = Open(Config{Path: path, NoSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	if n := countSQL(t, path, `SELECT count(*) FROM chunks WHERE typeof(body) = 'blob'`); n != nz {
		t.Errorf("%d compressed bodies after a second open, %d after the first", n, nz)
	}
}

func countSQL(t *testing.T, path, q string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// demoFingerprints are the chunk fingerprints of the demo site's fixtures
// as main stored them (deploy/knowledge-fp.sh), by collection.
var demoFingerprints = map[string]string{"default": "n=102 a536ae1adf661851", "default__entities": "n=57 41709c2d0f002f3b"}

// demoFingerprintMisses says which collections of the index.db at path
// differ from demoFingerprints ("" when none does).
func demoFingerprintMisses(t *testing.T, path string) string {
	t.Helper()
	var miss []string
	for _, coll := range slices.Sorted(maps.Keys(demoFingerprints)) {
		if n, sha := chunksFingerprint(t, path, coll); fmt.Sprintf("n=%d %s", n, sha) != demoFingerprints[coll] {
			miss = append(miss, fmt.Sprintf("%s n=%d %s, want %s", coll, n, sha, demoFingerprints[coll]))
		}
	}
	return strings.Join(miss, "; ")
}

// openLegacyCopy opens a copy of the index.db at path after running stmt
// on it (a format stamped by hand, so Open migrates nothing): the search
// copy of the rows as an older binary stored them.
func openLegacyCopy(t *testing.T, path, stmt string) *Index {
	t.Helper()
	legacy := filepath.Join(t.TempDir(), "legacy.db")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(legacy, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+legacy)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(stmt); err != nil {
		t.Fatal(err)
	}
	db.Close()
	lx, err := Open(Config{Path: legacy, NoSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	return lx
}

// TestSnapshotMatchesSQL checks the search copies an ingest left in the
// snapshots beside the index.db at $KGAGENT_INDEX_SNAPCHECK (collection
// $KGAGENT_INDEX_COLLECTION, default "default", and its __entities
// collection; a copy: opening it may migrate it) against the copies SQLite's
// rows give: rows, lengths, postings and vectors the same (the ingest's
// copies take the terms the embedder took, SQLite's tokenise the rows);
// skipped without it.
func TestSnapshotMatchesSQL(t *testing.T) {
	path, coll := envIndex(t, "KGAGENT_INDEX_SNAPCHECK")
	// the snapshots name the kgagent binary that wrote them: read them as
	// that binary
	head, err := os.ReadFile(snapfile.Path(path+"-snap", coll))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(string(head[:min(len(head), 4096)]), "\n", 3)
	if len(lines) < 3 {
		t.Fatal("snapshot header unreadable")
	}
	defer func(old func() string) { snapfile.ExeIdentity = old }(snapfile.ExeIdentity)
	snapfile.ExeIdentity = func() string { return lines[1] }
	f := &snapFixture{t: t, path: path}
	x := f.open(Config{})
	defer x.Close()
	for _, c := range []string{coll, coll + "__entities"} {
		m, err := x.collection(t.Context(), c)
		if err != nil || m == nil {
			t.Fatalf("%s: %v %v", c, m, err)
		}
		if x.snapHits.Load() == 0 || x.sqlLoads.Load() != 0 {
			t.Fatalf("%s: not read from its snapshot (%d snapshot reads, %d SQL loads)", c, x.snapHits.Load(), x.sqlLoads.Load())
		}
		f.sameAsSQLite(m, c)
		fmt.Printf("SNAPCHECK %s rows=%d terms=%d equal\n", c, len(m.rids), m.all.terms.len())
	}
}

// envIndex returns the index.db path the environment variable pathVar
// names and the collection $KGAGENT_INDEX_COLLECTION (default "default"),
// skipping the test when pathVar is not set.
func envIndex(t *testing.T, pathVar string) (path, coll string) {
	t.Helper()
	path = os.Getenv(pathVar)
	if path == "" {
		t.Skip(pathVar + " is not set")
	}
	coll = os.Getenv("KGAGENT_INDEX_COLLECTION")
	if coll == "" {
		coll = "default"
	}
	return path, coll
}
