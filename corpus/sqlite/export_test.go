package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// TestReadChunks: ReadChunks reads a file index's chunks of one collection
// in write order with the text the store packed (an S2-compressed body, a
// URL stored relative to its document's, id and hash stored as bytes)
// read back as written, changes nothing in the file, stops at fn's error,
// and a missing file is NOT_FOUND.
func TestReadChunks(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "index.db")
	x, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 20)
	var want []kgagent.Chunk
	put := func(coll, url string, texts ...string) {
		t.Helper()
		var cs []kgagent.Chunk
		var vs [][]float32
		for i, s := range texts {
			sum := sha256.Sum256([]byte(s))
			c := kgagent.Chunk{ID: corpus.ChunkID(coll, url, i), Collection: coll, DocURL: url, URL: url + "#s" + string(rune('a'+i)),
				Title: "T " + url, HeadingPath: []string{"T", "H" + string(rune('a'+i))}, Anchor: "s" + string(rune('a'+i)), Ordinal: i,
				Text: s, Hash: hex.EncodeToString(sum[:])}
			if i == 0 {
				c.URL, c.Anchor, c.HeadingPath = url, "", nil
			}
			cs = append(cs, c)
			vs = append(vs, []float32{1, 0})
			if coll == "c" {
				want = append(want, c)
			}
		}
		if err := x.ReplaceDocument(ctx, coll, url, cs, vs); err != nil {
			t.Fatal(err)
		}
	}
	put("c", "https://x/b", long+"b", "b one")
	put("other", "https://x/z", long)
	put("c", "https://x/a", "a zero", long+"a")
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	var got []kgagent.Chunk
	if err := ReadChunks(ctx, path, "c", func(c kgagent.Chunk) error { got = append(got, c); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadChunks:\n got %+v\nwant %+v", got, want)
	}
	if after, err := os.ReadFile(path); err != nil || string(after) != string(before) {
		t.Errorf("ReadChunks changed the file (%v)", err)
	}
	// The long bodies are stored packed, so the test reads what it means to.
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var packed int
	if err := db.QueryRow(`SELECT COUNT(*) FROM chunks WHERE typeof(body) = 'blob' AND typeof(id) = 'blob'`).Scan(&packed); err != nil || packed != 3 {
		t.Errorf("packed rows: %d %v, want 3", packed, err)
	}

	stop := errors.New("stop")
	n := 0
	if err := ReadChunks(ctx, path, "c", func(kgagent.Chunk) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("fn's error: %v after %d chunks, want stop after 1", err, n)
	}
	if err := ReadChunks(ctx, path, "nothing", func(kgagent.Chunk) error { n++; return nil }); err != nil || n != 1 {
		t.Errorf("unknown collection: %v, %d chunks", err, n-1)
	}
	if err := ReadChunks(ctx, filepath.Join(t.TempDir(), "no.db"), "c", func(kgagent.Chunk) error { return nil }); kgagent.ErrorCode(err) != kgagent.ENOTFOUND {
		t.Errorf("missing file: %v, want %s", err, kgagent.ENOTFOUND)
	}
}
