package sqlite

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/internal/snapfile"
)

// TestSnapshotStreamed: Snapshot of a collection whose search copy the
// index does not hold writes its snapshot without building the copy (it
// is still not held after), byte for byte the file the copy built from
// SQLite gives, also when the postings go through many runs (a low
// streamPostings) and after pages were replaced and deleted; the next
// process reads it back instead of rebuilding.
func TestSnapshotStreamed(t *testing.T) {
	words := []string{"zebra", "stripes", "json", "parser", "module", "giraffe", "leaves", "tall", "trees", "socket", "thread", "queue"}
	for _, limit := range []int{1 << 30, 37} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			defer func(old int) { streamPostings = old }(streamPostings)
			streamPostings = limit
			f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
			x := f.open(Config{})
			for i := range 60 {
				var texts []string
				for j := range 1 + i%4 {
					texts = append(texts, fmt.Sprintf("%s %s page %d part %d %s", words[(i+j)%len(words)], words[(i*7+j)%len(words)], i, j, words[(i*3)%len(words)]))
				}
				f.put(x, "c", fmt.Sprintf("https://x/p%02d", i%45), texts...) // 15 replaced
			}
			if err := x.DeleteDocument(context.Background(), "c", "https://x/p07"); err != nil {
				t.Fatal(err)
			}
			f.put(x, "d", "https://x/other", "another collection about zebra")
			before := x.Rebuilds()
			if err := x.Snapshot(context.Background(), "c"); err != nil {
				t.Fatal(err)
			}
			if x.Holds("c") {
				t.Fatal("Snapshot built the search copy")
			}
			if n := x.Rebuilds() - before; n != 1 {
				t.Fatalf("%d rebuilds counted, want 1", n)
			}
			x.Close()
			path := snapfile.Path(f.path+"-snap", "c")
			streamed, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			// the same snapshot from the copy built from SQLite
			x = f.open(Config{})
			if err := x.Warm(context.Background(), "c"); err != nil {
				t.Fatal(err)
			}
			x.Close()
			built, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(streamed, built) {
				t.Fatalf("streamed snapshot (%d bytes) differs from the built copy's (%d bytes)", len(streamed), len(built))
			}
			entries, _ := os.ReadDir(filepath.Dir(path))
			if len(entries) != 1 {
				t.Errorf("snapshot dir holds %d files, want the snapshot alone", len(entries))
			}
			x = f.open(Config{})
			defer x.Close()
			want := f.fresh("c")
			if got := f.results(x, "c"); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("results %v, want %v", got, want)
			}
			if n := x.Rebuilds(); n != 0 {
				t.Errorf("%d search copies rebuilt after the streamed snapshot", n)
			}
		})
	}
}

// TestStreamTempsSwept: the temporary files streamSnapshot writes (vectors
// and posting runs, tens of MB) are of the kind snapfile's stale-file sweep
// removes: those a process killed mid-snapshot left are gone after a later
// snapshot's write in the directory, while a streamed snapshot leaves none
// of its own. Before, they were named ".stream-*", which no sweep removed.
func TestStreamTempsSwept(t *testing.T) {
	f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
	x := f.open(Config{})
	defer x.Close()
	for i := range 5 {
		f.put(x, "c", fmt.Sprintf("https://x/p%d", i), fmt.Sprintf("zebra stripes page %d", i))
		f.put(x, "d", fmt.Sprintf("https://x/q%d", i), fmt.Sprintf("giraffe leaves page %d", i))
	}
	x.Release("c")
	x.Release("d")
	if x.Holds("c") || x.Holds("d") {
		t.Fatal("copies still held")
	}
	dir := filepath.Dir(snapfile.Path(f.path+"-snap", "c"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// what a killed streamSnapshot left: a file named as its temporaries
	// are, not written to for two hours
	left, err := os.CreateTemp(dir, streamTemp)
	if err != nil {
		t.Fatal(err)
	}
	left.WriteString("partial vectors")
	left.Close()
	long := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(left.Name(), long, long); err != nil {
		t.Fatal(err)
	}
	before := x.Rebuilds()
	for _, c := range []string{"c", "d"} {
		if err := x.Snapshot(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	if x.Holds("c") || x.Holds("d") || x.Rebuilds()-before != 2 {
		t.Fatalf("snapshots not streamed (held %v %v, %d rebuilds)", x.Holds("c"), x.Holds("d"), x.Rebuilds()-before)
	}
	if _, err := os.Stat(left.Name()); !os.IsNotExist(err) {
		t.Errorf("a killed snapshot's temporary file %s is still there (%v)", filepath.Base(left.Name()), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("snapshot dir holds %v, want the two snapshots alone", names)
	}
}
