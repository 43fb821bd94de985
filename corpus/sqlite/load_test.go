package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/internal/poll"
)

// loadFixture writes docs documents of 10 chunks each into collection "c"
// of an index kept in memory, and returns the fixture, the index and its
// kept copy (built by the writes, never read from SQLite).
func loadFixture(t *testing.T, docs int) (*snapFixture, *Index, *memColl) {
	t.Helper()
	f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
	x := f.openKept(Config{NoSnapshots: true})
	for d := range docs {
		var texts []string
		for i := range 10 {
			texts = append(texts, fmt.Sprintf("chunk %d of page %d about zebra%d and giraffe%d, the json module item%d", i, d, d%11, i%7, (d*10+i)%13))
		}
		f.put(x, "c", fmt.Sprintf("https://x/p%03d", d), texts...)
	}
	x.cacheMu.RLock()
	kept := x.cache["c"]
	x.cacheMu.RUnlock()
	if kept == nil {
		t.Fatal("no kept copy")
	}
	return f, x, kept
}

// TestLoadFromSQLiteInBatches: a search copy built from SQLite, its rows
// read in batches and tokenised on several goroutines (rowLoader), is the
// copy the writes built row by row: the same rows in the same slots, the
// same postings and lengths, over several batches (1,200 rows, batches of
// loadBatchRows).
func TestLoadFromSQLiteInBatches(t *testing.T) {
	f, x, kept := loadFixture(t, 120)
	defer x.Close()
	if n := len(kept.rids); n <= 4*loadBatchRows {
		t.Fatalf("%d rows, want more than %d batches' worth", n, 4)
	}
	f.sameAsSQLite(kept, "c")
}

// TestLoadFromSQLiteStopsEarly: a load that fails part way (more rows than
// the search copy may hold, a docs table that counts fewer) returns its
// error and leaves no goroutine of the load behind, however far the reader
// had got.
func TestLoadFromSQLiteStopsEarly(t *testing.T) {
	old := maxSlots
	defer func() { maxSlots = old }()
	_, x, _ := loadFixture(t, 120)
	defer x.Close()
	if _, err := x.db.Exec(`UPDATE docs SET n = 1`); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	for _, limit := range []int{300, 1000} {
		x.cacheMu.Lock()
		delete(x.cache, "c")
		x.cacheMu.Unlock()
		maxSlots = limit
		m, err := x.collection(context.Background(), "c")
		var ke *kgagent.Error
		if !errors.As(err, &ke) || ke.Code != kgagent.ETOOLARGE || m != nil {
			t.Fatalf("maxSlots %d: load of 1,200 rows gave %v, %v; want ETOOLARGE", limit, m != nil, err)
		}
	}
	poll.True(t, 10*time.Second, "the load's goroutines end", func() bool { return runtime.NumGoroutine() <= before })
}
