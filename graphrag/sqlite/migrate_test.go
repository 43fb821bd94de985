package sqlite_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/graphtest"
	"github.com/kgagent/kgagent/graphrag/sqlite"
)

// legacySchema is the schema of the version before the docs table: one
// index entry per triple found a document's triples, and the lookup indexes
// led with the collection.
const legacySchema = `
CREATE TABLE IF NOT EXISTS triples (
	collection TEXT NOT NULL, doc_url TEXT NOT NULL,
	s_id TEXT NOT NULL, s_name TEXT NOT NULL, s_type TEXT NOT NULL, s_norm TEXT NOT NULL,
	p TEXT NOT NULL,
	o_id TEXT NOT NULL, o_name TEXT NOT NULL, o_type TEXT NOT NULL, o_norm TEXT NOT NULL,
	literal TEXT NOT NULL, chunk_id TEXT NOT NULL, source_url TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS triples_doc ON triples(collection, doc_url);
CREATE INDEX IF NOT EXISTS triples_s ON triples(collection, s_id);
CREATE INDEX IF NOT EXISTS triples_o ON triples(collection, o_id);
CREATE INDEX IF NOT EXISTS triples_sn2 ON triples(collection, s_norm) WHERE s_norm != s_id;
CREATE INDEX IF NOT EXISTS triples_on2 ON triples(collection, o_norm) WHERE o_norm != o_id;
CREATE INDEX IF NOT EXISTS triples_p ON triples(collection, p);
CREATE INDEX IF NOT EXISTS triples_lit ON triples(collection, substr(literal, 1, 64)) WHERE literal != '';
CREATE TABLE IF NOT EXISTS entities (
	collection TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL, norm TEXT NOT NULL,
	refs INTEGER NOT NULL, PRIMARY KEY (collection, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS entity_words (
	collection TEXT NOT NULL, word TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (collection, word, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS extract_cache (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
`

// legacyWrite stores triples the way the earlier version did: rows with
// the next free rowids, and entity reference counts with their words.
func legacyWrite(t *testing.T, db *sql.DB, ts []kgagent.Triple) {
	t.Helper()
	for _, tr := range ts {
		if _, err := db.Exec(`INSERT INTO triples (collection, doc_url, s_id, s_name, s_type, s_norm, p, o_id, o_name, o_type, o_norm, literal, chunk_id, source_url)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, tr.Collection, tr.DocURL,
			tr.Subject.ID, tr.Subject.Name, tr.Subject.Type, graphrag.NormalizeName(tr.Subject.Name), tr.Predicate,
			tr.Object.ID, tr.Object.Name, tr.Object.Type, graphrag.NormalizeName(tr.Object.Name),
			tr.Literal, tr.ChunkID, tr.SourceURL); err != nil {
			t.Fatal(err)
		}
		ents := []kgagent.Entity{tr.Subject}
		if tr.Literal == "" {
			ents = append(ents, tr.Object)
		}
		for _, e := range ents {
			norm := graphrag.NormalizeName(e.Name)
			if _, err := db.Exec(`INSERT INTO entities (collection, id, name, type, norm, refs) VALUES (?, ?, ?, ?, ?, 1)
				ON CONFLICT (collection, id) DO UPDATE SET refs = refs + 1`, tr.Collection, e.ID, e.Name, e.Type, norm); err != nil {
				t.Fatal(err)
			}
			for _, w := range sqlite.Words(norm, e.ID) {
				if _, err := db.Exec(`INSERT OR IGNORE INTO entity_words (collection, word, id) VALUES (?, ?, ?)`, tr.Collection, w, e.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// schemaNames lists the store's tables and indexes.
func schemaNames(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_schema WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// TestMigrateLegacyStore opens a store written by the earlier version, with
// two documents whose rows interleave, and checks that every query and write
// works on it afterwards, including replacing and deleting the old
// documents without leaving a stale triple.
func TestMigrateLegacyStore(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "graph.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(legacySchema); err != nil {
		t.Fatal(err)
	}
	const a, b = "https://x.test/a.html", "https://x.test/b.html"
	var old []kgagent.Triple
	for i := range 6 {
		doc := a
		if i%2 == 1 {
			doc = b // a's rows are 1, 3, 5; b's 2, 4, 6
		}
		old = append(old, graphtest.T("c", doc, fmt.Sprintf("old %d", i), "links_to", "shared", "x"))
	}
	old = append(old, graphtest.L("c", a, "old lit", "is_defined_as", "a literal", "x"))
	legacyWrite(t, db, old)
	db.Close()

	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range schemaNames(t, path) {
		switch name {
		case "triples_doc", "triples_s", "triples_o", "triples_sn2", "triples_on2", "triples_lit":
			t.Errorf("index %s of the earlier version is still there", name)
		}
	}
	if got, err := s.Find(ctx, graphrag.Pattern{Collection: "c", O: "shared", Limit: 100}); err != nil || len(got) != 6 {
		t.Fatalf("find after migration: %d triples, %v; want 6", len(got), err)
	}
	if got, err := s.Find(ctx, graphrag.Pattern{Collection: "c", O: "a literal"}); err != nil || len(got) != 1 {
		t.Fatalf("find literal after migration: %d triples, %v; want 1", len(got), err)
	}

	// Replacing a, whose rows lie around b's, leaves exactly a's new
	// triples and all of b's.
	if err := s.ReplaceDocument(ctx, "c", a, []kgagent.Triple{graphtest.T("c", a, "new a", "links_to", "shared", "y")}); err != nil {
		t.Fatal(err)
	}
	all, err := s.Find(ctx, graphrag.Pattern{Collection: "c", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for _, tr := range all {
		subjects = append(subjects, tr.Subject.ID)
	}
	sort.Strings(subjects)
	if want := "[new a old 1 old 3 old 5]"; fmt.Sprint(subjects) != want {
		t.Errorf("after replacing a: subjects %v, want %s", subjects, want)
	}
	if n, e, err := s.Stats(ctx, "c"); err != nil || n != 4 || e != 5 {
		t.Errorf("after replacing a: %d triples, %d entities, %v; want 4, 5", n, e, err)
	}
	if ents, err := s.Entities(ctx, "c", []string{"old 0"}, 10); err != nil || len(ents) != 0 {
		t.Errorf("entity of a's old triples survived: %v %v", ents, err)
	}
	s.Close()

	// (An earlier version writing the store again after the migration is
	// no longer supported: since the strings are interned (strs), a
	// version before that cannot read or write the migrated tables.)
	s, err = sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.DeleteDocument(ctx, "c", b); err != nil {
		t.Fatal(err)
	}
	if n, e, err := s.Stats(ctx, "c"); err != nil || n != 1 || e != 2 {
		t.Errorf("after deleting b: %d triples, %d entities, %v; want 1, 2", n, e, err)
	}
}

// TestRefusesNewerFormat: a store stamped with a format newer than this
// build knows is refused with a clear error, and its stamp is left alone
// (Open used to stamp its own format over it and read it as its own).
func TestRefusesNewerFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "graph.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA user_version = 4`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err = sqlite.Open(path)
	if err == nil {
		s.Close()
		t.Fatal("a format 4 store opened")
	}
	if kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE || !strings.Contains(err.Error(), "graph.db is format 4, this kgagent reads up to 3: use a newer kgagent") {
		t.Errorf("error %v (code %s)", err, kgagent.ErrorCode(err))
	}
	if n := count(t, path, `PRAGMA user_version`); n != 4 {
		t.Errorf("user_version %d after the refused open, want 4", n)
	}
}

// TestVacuumFailureAfterMigration: when the compaction after a committed
// migration fails (disk full, say), Open still succeeds on the migrated
// store; it used to fail, leaving a migrated store that every open
// refused.
func TestVacuumFailureAfterMigration(t *testing.T) {
	sqlite.FailVacuum(t)
	path := gunzipFixture(t, "graph-main-af80d2c.db.gz")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatalf("open with a failing VACUUM: %v", err)
	}
	defer s.Close()
	if n := count(t, path, `PRAGMA user_version`); n != 3 {
		t.Errorf("user_version %d, want 3", n)
	}
	if n := count(t, path, `SELECT count(*) FROM pragma_table_info('strs') WHERE name = 'h'`); n != 1 {
		t.Error("strs has no hash column: not migrated")
	}
}

// TestMigrationInterruptedLeavesFormat2: a store of the first interned
// layout is brought to format 2 (migrateHashed), then to format 3 (word
// blocks) in a second transaction. When the second does not happen (a
// crash, here a failing insert), the file holds format 2's layout and
// must say 2, so that format 2's binaries still open it; it said 3 and
// they refused it as newer. The next Open completes the migration.
func TestMigrationInterruptedLeavesFormat2(t *testing.T) {
	path := gunzipFixture(t, "graph-main-af80d2c.db.gz")
	restore := sqlite.FailWords()
	if s, err := sqlite.Open(path); err == nil {
		s.Close()
		restore()
		t.Fatal("open with failing word-block inserts succeeded")
	}
	restore()
	if n := count(t, path, `SELECT count(*) FROM pragma_table_info('strs') WHERE name = 'h'`); n != 1 {
		t.Fatal("strs has no hash column: the first migration did not commit")
	}
	if n := count(t, path, `SELECT count(*) FROM sqlite_schema WHERE name = 'entity_words'`); n != 1 {
		t.Fatal("entity_words is gone: the word blocks' migration committed")
	}
	if n := count(t, path, `PRAGMA user_version`); n != 2 {
		t.Errorf("user_version %d with format 2's layout, want 2", n)
	}
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := count(t, path, `PRAGMA user_version`); n != 3 {
		t.Errorf("user_version %d after the next open, want 3", n)
	}
	if n := count(t, path, `SELECT count(*) FROM sqlite_schema WHERE name = 'entity_words'`); n != 0 {
		t.Error("entity_words is still there after the next open")
	}
}
