package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
)

// TestRefusesNewerFormat: an index stamped with a format newer than this
// build knows is refused with a clear error and left as it was (Open used
// to carry on and read it as its own).
func TestRefusesNewerFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	x, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`PRAGMA user_version = 7`); err != nil {
		t.Fatal(err)
	}
	x, err = Open(Config{Path: path})
	if err == nil {
		x.Close()
		t.Fatal("a format 7 index opened")
	}
	if kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE || !strings.Contains(err.Error(), "index.db is format 7, this kgagent reads up to 6: use a newer kgagent") {
		t.Errorf("error %v (code %s)", err, kgagent.ErrorCode(err))
	}
	err = ReadChunks(context.Background(), path, "c", func(kgagent.Chunk) error { return nil })
	if kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE || !strings.Contains(err.Error(), "index.db is format 7, this kgagent reads up to 6") {
		t.Errorf("ReadChunks: %v (code %s)", err, kgagent.ErrorCode(err))
	}
	var ver int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&ver); err != nil || ver != 7 {
		t.Errorf("user_version %d (%v) after the refused open, want 7", ver, err)
	}
}
