package sqlite_test

import (
	"compress/gzip"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kgagent/kgagent/internal/fixture"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/graphtest"
	"github.com/kgagent/kgagent/graphrag/sqlite"
)

// fingerprint is what a store answers for collection coll through the
// Store API, hashed: sha256 over the sorted rows of every triple (Find),
// and over the sorted answers of Entities for every entity id the triples
// name (limit 10), with the counts of both. The storage change of issue 25
// (interned strings) was checked with it on the Python docs: the same
// before (written and read by main at 2fa9a4d) and after (migrated, and
// written afresh).
type fingerprint struct {
	triples, entities, answers int
	triplesSHA, entitiesSHA    string
}

func (f fingerprint) String() string {
	return fmt.Sprintf("triples=%d entities=%d entity_answers=%d triples_sha256=%s entities_sha256=%s",
		f.triples, f.entities, f.answers, f.triplesSHA, f.entitiesSHA)
}

func fingerprintOf(t *testing.T, s *sqlite.Store, coll string) fingerprint {
	t.Helper()
	ctx := t.Context()
	ts, err := s.Find(ctx, graphrag.Pattern{Collection: coll, Limit: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	ids := map[string]bool{}
	for _, x := range ts {
		rows = append(rows, fmt.Sprintf("%q", []string{x.Collection, x.DocURL, x.Subject.ID, x.Subject.Name, x.Subject.Type, x.Predicate, x.Object.ID, x.Object.Name, x.Object.Type, x.Literal, x.ChunkID, x.SourceURL}))
		ids[x.Subject.ID] = true
		if x.Literal == "" {
			ids[x.Object.ID] = true
		}
	}
	slices.Sort(rows)
	var erows []string
	for id := range ids {
		es, err := s.Entities(ctx, coll, []string{id}, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			erows = append(erows, fmt.Sprintf("%q", []string{id, e.ID, e.Name, e.Type}))
		}
	}
	slices.Sort(erows)
	nt, ne, err := s.Stats(ctx, coll)
	if err != nil {
		t.Fatal(err)
	}
	return fingerprint{nt, ne, len(erows),
		fmt.Sprintf("%x", sha256.Sum256([]byte(strings.Join(rows, "\n")))),
		fmt.Sprintf("%x", sha256.Sum256([]byte(strings.Join(erows, "\n"))))}
}

// checkMigratedFingerprint opens the store at path, which a migration
// has just brought to this version's format, and checks that it answers
// as main did (want: the fingerprint main's code computed on the file as
// written) through SQL and through the name index.
func checkMigratedFingerprint(t *testing.T, path, want string) {
	t.Helper()
	for _, names := range []bool{false, true} {
		s, err := sqlite.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if !names {
			s.NoNameIndexes()
		}
		if got := fingerprintOf(t, s, "default"); got.String() != want {
			t.Errorf("after the migration (name index %v):\n%s\nmain answered\n%s", names, got, want)
		}
		s.Close()
	}
}

// TestFingerprint prints the fingerprint of the store at
// $KGAGENT_GRAPH_FINGERPRINT (collection $KGAGENT_GRAPH_COLLECTION, default
// "default"); skipped without it. Opening a store written before the
// interned strings migrates it: fingerprint a copy.
func TestFingerprint(t *testing.T) {
	path := os.Getenv("KGAGENT_GRAPH_FINGERPRINT")
	if path == "" {
		t.Skip("KGAGENT_GRAPH_FINGERPRINT is not set")
	}
	coll := envCollection()
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.NoNameIndexes()
	fmt.Println("FINGERPRINT", fingerprintOf(t, s, coll))
}

// TestMigrateInterned opens a data dir's graph.db written by main before
// the strings were interned (testdata/graph-main-2fa9a4d.db.gz: `kgagent
// ingest` of testdata/site served on 127.0.0.1:18765, by the binary of
// main at 2fa9a4d): the store is migrated to the interned layout, the file
// shrinks, and it answers exactly as main did (fingerprint computed by
// main's code on the same file), then takes writes.
func TestMigrateInterned(t *testing.T) {
	path := fixture.Gunzip(t, filepath.Join("testdata", "graph-main-2fa9a4d.db.gz"), "graph.db")
	before, _ := os.Stat(path)
	if typ := columnType(t, path, "triples", "s_id"); typ != "TEXT" {
		t.Fatalf("fixture: triples.s_id is %s, want the TEXT of the layout before", typ)
	}

	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.NoNameIndexes()
	got := fingerprintOf(t, s, "default")
	want := "triples=801 entities=298 entity_answers=451 triples_sha256=4e0a267eff1b7c91ffd19fd9df1a80a974dffd9081f72d3601ab9b783472aaf6 entities_sha256=07e019745efe66c3be4ec4f28768cd418493c009267eb82a113d64825ba377f0"
	if got.String() != want {
		t.Errorf("after the migration:\n%s\nmain answered\n%s", got, want)
	}
	if typ := columnType(t, path, "triples", "s_id"); typ != "INTEGER" {
		t.Errorf("after the migration triples.s_id is %s, want INTEGER", typ)
	}
	s.Close() // the vacuumed file reaches its size at the last checkpoint
	after, _ := os.Stat(path)
	t.Logf("graph.db %d bytes before, %d after the migration", before.Size(), after.Size())
	if after.Size() >= before.Size()*3/4 {
		t.Errorf("graph.db %d bytes after the migration, %d before: want it a quarter smaller at least", after.Size(), before.Size())
	}

	// It takes writes, and a reopened store does not migrate again.
	ctx := t.Context()
	s, err = sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := "http://127.0.0.1:18765/faq.html"
	if err := s.ReplaceDocument(ctx, "default", doc, []kgagent.Triple{graphtest.T("default", doc, "faq", "mentions", "migration", "c1")}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts, err := s.Find(ctx, graphrag.Pattern{Collection: "default", S: "faq"})
	if err != nil || len(ts) != 1 || ts[0].Object.ID != "migration" {
		t.Errorf("the write after the migration: %v %v", ts, err)
	}
	if err := s.DeleteCollection(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n := count(t, path, `SELECT count(*) FROM strs WHERE id > 1`); n != 0 {
		t.Errorf("%d strings left after the only collection was deleted", n)
	}
}

func columnType(t *testing.T, path, table, col string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var typ string
	if err := db.QueryRow(`SELECT type FROM pragma_table_info(?) WHERE name = ?`, table, col).Scan(&typ); err != nil {
		t.Fatal(err)
	}
	return typ
}

func count(t *testing.T, path, q string) int {
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

// gunzipFixture writes testdata/name (gzipped) to a file in a temporary
// directory and returns its path.
func gunzipFixture(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "graph.db")
	gz, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer gz.Close()
	zr, err := gzip.NewReader(gz)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, zr); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMigrateHashed opens a data dir's graph.db written by main at af80d2c
// (testdata/graph-main-af80d2c.db.gz: `kgagent ingest` of testdata/site
// served on 127.0.0.1:18792, by main's binary): strings with a UNIQUE
// index, entities holding text. The store is migrated to format 2 (strs
// found by hash, entities as strs ids), the file shrinks, and it answers
// exactly as main did, through SQL and through the name index (the
// fingerprint computed by main's code on the same file, TestFingerprint in
// a checkout of af80d2c); an entity whose name no other row holds keeps
// it; the store then takes writes, and a collection's deletion leaves no
// string behind.
func TestMigrateHashed(t *testing.T) {
	ctx := t.Context()
	const faq = "page:http://127.0.0.1:18792/faq.html"
	path := gunzipFixture(t, "graph-main-af80d2c.db.gz")
	if n := count(t, path, `SELECT count(*) FROM pragma_table_info('strs') WHERE name = 'h'`); n != 0 {
		t.Fatal("fixture: strs has a hash column already")
	}
	if typ := columnType(t, path, "entities", "name"); typ != "TEXT" {
		t.Fatalf("fixture: entities.name is %s, want the TEXT of the layout before", typ)
	}
	// An entity whose name no triple holds (its first triple was retracted
	// since), which the migration must add to strs.
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE entities SET name = 'Orphan Name' WHERE collection = 'default' AND id = ?`, faq); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, _ := os.Stat(path)

	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.NoNameIndexes()
	const want = "triples=820 entities=298 entity_answers=451 triples_sha256=6e7f5a4dfb916c334db78a62438bd265cd6755f4c41f62fcd7b9634ba4fb9193 entities_sha256=1202543a38f70c37b941dcf64324768855f89d92830a64947a1f567db725f1c6"
	ents, err := s.Entities(ctx, "default", []string{faq}, 10)
	if i := slices.IndexFunc(ents, func(e kgagent.Entity) bool { return e.ID == faq }); err != nil || i < 0 || ents[i].Name != "Orphan Name" {
		t.Errorf("entity %s after the migration: %v %v; want its name Orphan Name", faq, ents, err)
	}
	s.Close()
	// Main's fingerprint is of the file as written: put the name back.
	db, err = sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE entities SET name = (SELECT id FROM strs WHERE s = 'FAQ') WHERE id = (SELECT id FROM strs WHERE s = ?)`, faq); err != nil {
		t.Fatal(err)
	}
	db.Close()
	checkMigratedFingerprint(t, path, want)
	if n := count(t, path, `SELECT count(*) FROM pragma_table_info('strs') WHERE name = 'h'`); n != 1 {
		t.Error("after the migration strs has no hash column")
	}
	if n := count(t, path, `SELECT count(*) FROM sqlite_schema WHERE tbl_name = 'strs' AND type = 'index' AND name != 'strs_h'`); n != 0 {
		t.Errorf("after the migration strs has %d indexes besides strs_h", n)
	}
	if typ := columnType(t, path, "entities", "name"); typ != "INTEGER" {
		t.Errorf("after the migration entities.name is %s, want INTEGER", typ)
	}
	if n := count(t, path, `PRAGMA user_version`); n != 3 {
		t.Errorf("user_version %d after the migrations, want 3", n)
	}
	if n := count(t, path, `SELECT count(*) FROM entities WHERE collection NOT IN (SELECT id FROM strs) OR id NOT IN (SELECT id FROM strs)
		OR name NOT IN (SELECT id FROM strs) OR type NOT IN (SELECT id FROM strs) OR norm NOT IN (SELECT id FROM strs)`); n != 0 {
		t.Errorf("%d entities name a string strs lacks", n)
	}
	after, _ := os.Stat(path)
	t.Logf("graph.db %d bytes before, %d after the migration", before.Size(), after.Size())
	if after.Size() >= before.Size() {
		t.Errorf("graph.db %d bytes after the migration, %d before: want it smaller", after.Size(), before.Size())
	}

	// It takes writes, a reopened store does not migrate again, and
	// deleting the collection collects every string.
	s, err = sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := "http://127.0.0.1:18792/faq.html"
	if err := s.ReplaceDocument(ctx, "default", doc, []kgagent.Triple{graphtest.T("default", doc, "faq", "mentions", "migration", "c1")}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts, err := s.Find(ctx, graphrag.Pattern{Collection: "default", S: "faq"})
	if err != nil || len(ts) != 1 || ts[0].Object.ID != "migration" {
		t.Errorf("the write after the migration: %v %v", ts, err)
	}
	if err := s.DeleteCollection(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n := count(t, path, `SELECT count(*) FROM strs WHERE id > 1`); n != 0 {
		t.Errorf("%d strings left after the only collection was deleted", n)
	}
}

// envCollection is the collection the env-driven checks read:
// $KGAGENT_GRAPH_COLLECTION, "default" when unset.
func envCollection() string {
	if c := os.Getenv("KGAGENT_GRAPH_COLLECTION"); c != "" {
		return c
	}
	return "default"
}
