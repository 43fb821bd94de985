package sqlitefile_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/kgagent/kgagent/internal/sqlitefile"
	_ "modernc.org/sqlite"
)

// TestURIKeepsThePath: a database opened by URI is the file at the path,
// whatever the path holds ('#', '?', '%', spaces), and nothing is created
// beside it.
func TestURIKeepsThePath(t *testing.T) {
	for _, name := range []string{"plain", "docs#2", "what?x=1", "100%25 sure", "a%b c"} {
		parent := t.TempDir()
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "x.db")
		db, err := sql.Open("sqlite", sqlitefile.URI(path)+"?_pragma=busy_timeout(1000)&_pragma=journal_mode(WAL)")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec("CREATE TABLE t (x)"); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		db.Close()
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%q: the database is not at its path: %v", name, err)
		}
		if ents, _ := os.ReadDir(parent); len(ents) != 1 {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Errorf("%q: files created beside the data dir: %v", name, names)
		}
	}
}
