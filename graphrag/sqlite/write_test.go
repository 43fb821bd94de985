package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/graphtest"
	"github.com/kgagent/kgagent/graphrag/sqlite"
	"github.com/kgagent/kgagent/internal/poll"
)

// TestGroupCommit queues several writes behind a blocked one so that they
// share one transaction, and checks that each is atomic on its own: the
// successful ones are all stored, a failing one is undone alone, and one
// canceled while queued is skipped. With a failing write the group runs
// again with a savepoint per write; without one it commits in one go.
func TestGroupCommit(t *testing.T) {
	for _, failing := range []bool{true, false} {
		for _, bulk := range []bool{false, true} {
			t.Run(fmt.Sprintf("failing=%v/bulk=%v", failing, bulk), func(t *testing.T) { testGroupCommit(t, failing, bulk) })
		}
	}
}

// With bulk, the writes run in a bulk load, which gives new strings their
// ids from the writer's cache while it holds every stored string: the
// failing write's rollback to its savepoint drops the strings the writes
// before it learned, which stay stored, so the writes after it must look
// strings up again (one string stored twice otherwise).
func testGroupCommit(t *testing.T, failing, bulk bool) {
	s := open(t)
	ctx := t.Context()
	if bulk {
		if on, err := s.BulkLoad(ctx); err != nil || !on {
			t.Fatalf("BulkLoad: %v %v", on, err)
		}
	}
	release := make(chan struct{})
	inside := make(chan struct{})
	blockerDone := make(chan error, 1)
	go func() {
		blockerDone <- sqlite.WriteForTest(ctx, s, func(exec func(string, ...any) error) error {
			close(inside)
			<-release
			return exec(`INSERT INTO extract_cache (key, value) VALUES ('blocker', 'v')`)
		})
	}()
	<-inside // the blocker leads alone and waits inside its transaction

	const docs = 5
	errs := make([]error, docs)
	var wg sync.WaitGroup
	for i := range docs {
		wg.Go(func() {
			doc := fmt.Sprintf("https://x.test/%d.html", i)
			var ts []kgagent.Triple
			for j := range 100 {
				ts = append(ts, graphtest.T("c", doc, fmt.Sprintf("s%d", i), "links_to", fmt.Sprintf("o%d %d", i, j), ""))
			}
			errs[i] = s.ReplaceDocument(ctx, "c", doc, ts)
		})
	}
	boom := errors.New("boom")
	var failErr error
	queued := docs + 1
	if failing {
		queued++
		wg.Go(func() {
			failErr = sqlite.WriteForTest(ctx, s, func(exec func(string, ...any) error) error {
				if err := exec(`INSERT INTO extract_cache (key, value) VALUES ('failed', 'v')`); err != nil {
					return err
				}
				return boom
			})
		})
	}
	cctx, cancel := context.WithCancel(ctx)
	var canceledErr error
	wg.Go(func() {
		canceledErr = s.ReplaceDocument(cctx, "c", "https://x.test/canceled.html",
			[]kgagent.Triple{graphtest.T("c", "https://x.test/canceled.html", "gone", "links_to", "x", "")})
	})
	waitQueue(t, s, queued)
	cancel()
	close(release)
	wg.Wait()
	if err := <-blockerDone; err != nil {
		t.Fatalf("blocker: %v", err)
	}
	for i, err := range errs {
		if err != nil {
			t.Errorf("doc %d: %v", i, err)
		}
	}
	if failing && !errors.Is(failErr, boom) {
		t.Errorf("failing write returned %v, want %v", failErr, boom)
	}
	if !errors.Is(canceledErr, context.Canceled) {
		t.Errorf("canceled write returned %v, want context.Canceled", canceledErr)
	}
	for i := range docs {
		got, err := s.Find(ctx, graphrag.Pattern{Collection: "c", S: fmt.Sprintf("s%d", i), Limit: 1000})
		if err != nil || len(got) != 100 {
			t.Errorf("doc %d: %d triples, %v; want 100", i, len(got), err)
		}
	}
	if got, _ := s.Find(ctx, graphrag.Pattern{Collection: "c", S: "gone"}); len(got) != 0 {
		t.Errorf("canceled write stored %d triples", len(got))
	}
	if bulk {
		if sqlite.StrsComplete(s) == failing {
			t.Errorf("string cache complete %v after the group, want %v", sqlite.StrsComplete(s), !failing)
		}
		if err := s.Snapshot(ctx, "c"); err != nil { // completes the load
			t.Fatal(err)
		}
	}
	if n := sqlite.DuplicateStrs(t, s); n != 0 {
		t.Errorf("%d strings stored twice", n)
	}
	if _, ok, _ := s.Get(ctx, "blocker"); !ok {
		t.Error("blocker's write is missing")
	}
	if _, ok, _ := s.Get(ctx, "failed"); ok {
		t.Error("the failed write's row survived its rollback")
	}
	if n, e, err := s.Stats(ctx, "c"); err != nil || n != docs*100 || e != docs+docs*100 {
		t.Errorf("stats %d triples, %d entities, %v; want %d, %d", n, e, err, docs*100, docs+docs*100)
	}
}

// waitQueue polls until n writes are queued.
func waitQueue(t *testing.T, s *sqlite.Store, n int) {
	t.Helper()
	poll.Until(t, 10*time.Second, func() error {
		if q := sqlite.QueuedWrites(s); q != n {
			return fmt.Errorf("%d writes queued, want %d", q, n)
		}
		return nil
	})
}

// TestManyWriters replaces documents from many goroutines at once, several
// times each, and checks the final counts (the group commit path under the
// race detector).
func TestManyWriters(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			doc := fmt.Sprintf("https://x.test/w%d.html", w)
			for round := range 4 {
				var ts []kgagent.Triple
				for j := range 70 { // more than one multi-row INSERT
					ts = append(ts, graphtest.T("c", doc, "shared subject", "links_to", fmt.Sprintf("w%d r%d n%d", w, round, j), ""))
				}
				if err := s.ReplaceDocument(ctx, "c", doc, ts); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n, e, err := s.Stats(ctx, "c"); err != nil || n != 8*70 || e != 1+8*70 {
		t.Errorf("stats %d triples, %d entities, %v; want %d, %d", n, e, err, 8*70, 1+8*70)
	}
	ents, err := s.Entities(ctx, "c", []string{"shared subject"}, 5)
	if err != nil || len(ents) != 1 {
		t.Fatalf("Entities(shared subject) = %v, %v", ents, err)
	}
}

// TestEntityRemovedByAnotherWriter checks that the writer does not take an
// entity for existing that another connection removed: it is created again,
// words and all, when a document refers to it.
func TestEntityRemovedByAnotherWriter(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "graph.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, b := "https://x.test/a.html", "https://x.test/b.html"
	if err := s.ReplaceDocument(ctx, "c", a, []kgagent.Triple{graphtest.T("c", a, "alpha", "links_to", "json encoder", "")}); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, q := range []string{`DELETE FROM entities WHERE id = (SELECT id FROM strs WHERE s = 'json encoder')`,
		`DELETE FROM word_blocks`} {
		if _, err := other.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.ReplaceDocument(ctx, "c", b, []kgagent.Triple{graphtest.T("c", b, "beta", "links_to", "json encoder", "")}); err != nil {
		t.Fatal(err)
	}
	viaSQL, viaIndex, err := sqlite.EntitiesBothWays(ctx, s, "c", []string{"encoder"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(viaSQL) != 1 || viaSQL[0].ID != "json encoder" || len(viaIndex) != 1 {
		t.Errorf("entity removed by another connection and referred to again: by words %v, by snapshot %v; want json encoder", viaSQL, viaIndex)
	}
}
