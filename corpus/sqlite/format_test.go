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
	if _, err := db.Exec(`PRAGMA user_version = 9`); err != nil {
		t.Fatal(err)
	}
	x, err = Open(Config{Path: path})
	if err == nil {
		x.Close()
		t.Fatal("a format 9 index opened")
	}
	if kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE || !strings.Contains(err.Error(), "index.db is format 9, this kgagent reads up to 8: use a newer kgagent") {
		t.Errorf("error %v (code %s)", err, kgagent.ErrorCode(err))
	}
	err = ReadChunks(context.Background(), path, "c", func(kgagent.Chunk) error { return nil })
	if kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE || !strings.Contains(err.Error(), "index.db is format 9, this kgagent reads up to 8") {
		t.Errorf("ReadChunks: %v (code %s)", err, kgagent.ErrorCode(err))
	}
	var ver int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&ver); err != nil || ver != 9 {
		t.Errorf("user_version %d (%v) after the refused open, want 9", ver, err)
	}
}

// TestPageSize: a new index file has 16 KiB pages (pageSize: with 4 KiB a
// quarter of every chunk page was left unused); a file made with 4 KiB
// pages, as every earlier kgagent made them, keeps them and is read and
// written as before.
func TestPageSize(t *testing.T) {
	ctx := t.Context()
	pageSizeOf := func(path string) int {
		t.Helper()
		return countSQL(t, path, `PRAGMA page_size`)
	}
	old := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", "file:"+old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; CREATE TABLE t (x)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, c := range []struct {
		path string
		want int
	}{
		{filepath.Join(t.TempDir(), "index.db"), 16384},
		{old, 4096},
	} {
		x, err := Open(Config{Path: c.path})
		if err != nil {
			t.Fatal(err)
		}
		url := "https://x/a"
		ch := kgagent.Chunk{ID: "0a1b", Collection: "c", DocURL: url, URL: url, Title: "t", Text: "some text"}
		if err := x.ReplaceDocument(ctx, "c", url, []kgagent.Chunk{ch}, [][]float32{{1, 0}}); err != nil {
			t.Fatal(err)
		}
		got, err := x.DocumentChunks(ctx, "c", url)
		if err != nil || len(got) != 1 || got[0].Text != "some text" {
			t.Errorf("%s: read back %v, %v", c.path, got, err)
		}
		x.Close()
		if n := pageSizeOf(c.path); n != c.want {
			t.Errorf("%s: page size %d, want %d", filepath.Base(c.path), n, c.want)
		}
	}
}
