package sqlite

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/internal/poll"
)

// crashChild keeps rewriting documents until it is killed: version v of a
// document has v+1 chunks, each saying "version v".
func crashChild(path string) {
	x, err := Open(Config{Path: path})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	emb := corpus.NewLexical(corpus.LexicalConfig{Dim: 32})
	ctx := context.Background()
	for v := 0; ; v++ {
		url := fmt.Sprintf("https://ex.org/doc%d", v%5)
		n := v%7 + 1
		chunks := make([]kgagent.Chunk, n)
		vecs := make([][]float32, n)
		for i := range chunks {
			text := fmt.Sprintf("version %d of %d", v, n)
			chunks[i] = kgagent.Chunk{ID: corpus.ChunkID("c", url, i), Collection: "c", DocURL: url, URL: url, Ordinal: i, Text: text}
			vecs[i] = emb.Vector(text)
		}
		if err := x.ReplaceDocument(ctx, "c", url, chunks, vecs); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	}
}

func TestMain(m *testing.M) {
	if p := os.Getenv("KGAGENT_CRASH_CHILD"); p != "" {
		crashChild(p)
		return
	}
	os.Exit(m.Run())
}

// TestKillDuringWrites kills a writing process with SIGKILL at random
// moments and checks that every document is exactly one whole version.
func TestKillDuringWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "KGAGENT_CRASH_CHILD="+path)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// poll until the child has committed some writes, then kill it
		// mid-stream (a new file's schema alone, one 16 KiB page and
		// page 1 per statement, takes ~300 KiB of WAL: 256 KiB was
		// sometimes reached before the first document)
		t.Cleanup(func() { cmd.Process.Kill() })
		poll.True(t, 20*time.Second, "the child committed writes", func() bool {
			fi, err := os.Stat(path + "-wal")
			return err == nil && fi.Size() > int64(1<<20*(round+1))
		})
		if err := cmd.Process.Kill(); err != nil { // SIGKILL
			t.Fatal(err)
		}
		cmd.Wait()

		x, err := Open(Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		rows, err := x.db.Query(`SELECT d.doc_url, k.body FROM `+collRows, "c")
		if err != nil {
			t.Fatal(err)
		}
		bodies := map[string][]string{}
		for rows.Next() {
			var doc string
			var body packedText
			rows.Scan(&doc, &body)
			bodies[doc] = append(bodies[doc], string(body))
		}
		rows.Close()
		if len(bodies) == 0 {
			t.Fatal("no documents survived")
		}
		maxV := 0
		for doc, bs := range bodies {
			var v, n int
			fmt.Sscanf(bs[0], "version %d of %d", &v, &n)
			maxV = max(maxV, v)
			if len(bs) != n {
				t.Errorf("round %d: %s has %d chunks of a %d-chunk version", round, doc, len(bs), n)
			}
			for _, b := range bs {
				if b != bs[0] {
					t.Errorf("round %d: %s mixes %q and %q", round, doc, bs[0], b)
				}
			}
		}
		t.Logf("round %d: killed after version %d", round, maxV)
		// the search copy agrees with the table
		hits, err := x.Search(context.Background(), corpus.Query{Collection: "c", Text: "version", K: 100, Mode: corpus.ModeKeyword})
		total := 0
		for _, bs := range bodies {
			total += len(bs)
		}
		if err != nil || len(hits) != total {
			t.Errorf("round %d: keyword search finds %d of %d chunks (%v)", round, len(hits), total, err)
		}
		for _, h := range hits {
			if !strings.HasPrefix(h.Text, "version ") {
				t.Errorf("odd hit %q", h.Text)
			}
		}
		x.Close()
	}
}
