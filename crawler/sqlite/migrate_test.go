package sqlite_test

import (
	"crypto/sha256"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kgagent/kgagent/internal/fixture"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/crawler/sqlite"
	"github.com/kgagent/kgagent/knowledge"
)

// pagesFingerprint is the page-state fingerprint of knowledge-fp.sh
// (`sqlite3` over crawl.db): the lines of url|etag|last_modified|
// content_hash|links of every page of the collection (links joined by
// newlines, so a page spans several lines), sorted bytewise, sha256, the
// first 16 hex digits; read here through the Store API, so the same value
// holds for a file of any format.
func pagesFingerprint(t *testing.T, s *sqlite.Store, collection string) (int, string) {
	t.Helper()
	pages, err := s.ListPages(t.Context(), collection)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, p := range pages {
		row := strings.Join([]string{p.URL, p.ETag, p.LastModified, p.ContentHash, strings.Join(p.Links, "\n")}, "|")
		lines = append(lines, strings.Split(row, "\n")...)
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n") + "\n"))
	return len(pages), fmt.Sprintf("%x", sum[:8])
}

// TestFingerprint prints the page-state fingerprint of the crawl.db at
// $KGAGENT_CRAWL_FINGERPRINT (collection $KGAGENT_CRAWL_COLLECTION, default
// "default"); skipped without it. Opening a format 0 file migrates it:
// fingerprint a copy.
func TestFingerprint(t *testing.T) {
	path := os.Getenv("KGAGENT_CRAWL_FINGERPRINT")
	if path == "" {
		t.Skip("KGAGENT_CRAWL_FINGERPRINT is not set")
	}
	coll := os.Getenv("KGAGENT_CRAWL_COLLECTION")
	if coll == "" {
		coll = "default"
	}
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n, sha := pagesFingerprint(t, s, coll)
	fmt.Printf("FINGERPRINT pages n=%d sha=%s\n", n, sha)
}

func sqlInt(t *testing.T, path, q string) int {
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

// TestMigrateLinks opens a crawl.db written by main at af80d2c
// (testdata/crawl-main-af80d2c.db.gz: `kgagent ingest` of testdata/site
// served on 127.0.0.1:18792, by main's binary; links as text): the links
// are compressed in one transaction (format 1), every page reads back as
// it did (the fingerprint knowledge-fp.sh computed with sqlite3 on the
// file before: pages n=35 sha=3d253a6aa43785a6), the file does not grow,
// a page written after reads back, and a second open changes nothing.
func TestMigrateLinks(t *testing.T) {
	path := fixture.Gunzip(t, filepath.Join("testdata", "crawl-main-af80d2c.db.gz"), "crawl.db")
	if n := sqlInt(t, path, `SELECT count(*) FROM pages WHERE typeof(links) = 'text' AND links != ''`); n != 33 {
		t.Fatalf("fixture: %d pages with text links, want 33", n)
	}
	before, _ := os.Stat(path)

	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if n, sha := pagesFingerprint(t, s, "default"); n != 35 || sha != "3d253a6aa43785a6" {
		t.Errorf("after the migration: pages n=%d sha=%s; main's file: n=35 sha=3d253a6aa43785a6", n, sha)
	}
	s.Close()
	if n := sqlInt(t, path, `SELECT count(*) FROM pages WHERE typeof(links) = 'blob'`); n != 33 {
		t.Errorf("%d pages with compressed links after the migration, want 33", n)
	}
	if n := sqlInt(t, path, `PRAGMA user_version`); n != 1 {
		t.Errorf("user_version %d after the migration, want 1", n)
	}
	after, _ := os.Stat(path)
	t.Logf("crawl.db %d bytes before, %d after", before.Size(), after.Size())
	if after.Size() > before.Size() {
		t.Errorf("crawl.db grew: %d -> %d bytes", before.Size(), after.Size())
	}

	s, err = sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, sha := pagesFingerprint(t, s, "default"); n != 35 || sha != "3d253a6aa43785a6" {
		t.Errorf("after a second open: pages n=%d sha=%s", n, sha)
	}
}

// TestCorruptLinks: a page whose stored links are not a zstd frame is a
// clear error, not a page without links.
func TestCorruptLinks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crawl.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutPage(t.Context(), knowledge.PageState{Collection: "c", URL: "http://h/a", Links: []string{"http://h/b", "http://h/c"}}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ListPages(t.Context(), "c"); err != nil || len(got) != 1 || !slices.Equal(got[0].Links, []string{"http://h/b", "http://h/c"}) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE pages SET links = x'00010203'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ListPages(t.Context(), "c"); kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
		t.Errorf("ListPages over corrupt links: %v, want %s", err, kgagent.EUNAVAILABLE)
	}
}

// TestRefusesNewerFormat: a file stamped with a format newer than this
// build knows is refused with a clear error and left as it was (Open used
// to read it as its own).
func TestRefusesNewerFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA user_version = 2`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err = sqlite.Open(path)
	if err == nil {
		s.Close()
		t.Fatal("a format 2 file opened")
	}
	if kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE || !strings.Contains(err.Error(), sqlite.FileName+" is format 2, this kgagent reads up to 1: use a newer kgagent") {
		t.Errorf("error %v (code %s)", err, kgagent.ErrorCode(err))
	}
	if n := sqlInt(t, path, `PRAGMA user_version`); n != 2 {
		t.Errorf("user_version %d after the refused open, want 2", n)
	}
}

// TestVacuumFailureAfterMigration: when the compaction after the committed
// migration fails (disk full, say), Open still succeeds and the pages read
// back; it used to fail.
func TestVacuumFailureAfterMigration(t *testing.T) {
	sqlite.FailVacuum(t)
	path := fixture.Gunzip(t, filepath.Join("testdata", "crawl-main-af80d2c.db.gz"), "crawl.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatalf("open with a failing VACUUM: %v", err)
	}
	defer s.Close()
	if n, sha := pagesFingerprint(t, s, "default"); n != 35 || sha != "3d253a6aa43785a6" {
		t.Errorf("pages n=%d sha=%s, want n=35 sha=3d253a6aa43785a6", n, sha)
	}
	if n := sqlInt(t, path, `PRAGMA user_version`); n != 1 {
		t.Errorf("user_version %d, want 1", n)
	}
}
