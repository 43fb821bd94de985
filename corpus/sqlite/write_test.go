package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/internal/poll"
)

// TestGroupCommit queues writes behind a running one so that they share a
// transaction, one of them failing inside it (a vector dimension the
// collection does not hold): that write alone fails, every other document
// is stored and searchable, and the search copy loaded before agrees.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	x, err := Open(Config{Path: filepath.Join(t.TempDir(), "corpus.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	doc := func(i, dim int) (string, []kgagent.Chunk, [][]float32) {
		url := fmt.Sprintf("https://x.test/p%d", i)
		v := make([]float32, dim)
		v[i%dim] = 1
		return url, []kgagent.Chunk{{ID: fmt.Sprintf("c%d", i), DocURL: url, URL: url, Title: fmt.Sprintf("page%d", i), Text: fmt.Sprintf("word%d shared", i)}}, [][]float32{v}
	}
	url, cs, vs := doc(0, 4)
	if err := x.ReplaceDocument(ctx, "c", url, cs, vs); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Search(ctx, corpus.Query{Collection: "c", Text: "shared", K: 5, Mode: corpus.ModeKeyword}); err != nil {
		t.Fatal(err) // loads the search copy, which the group must update
	}

	const n = 8
	bad := 5
	errs := make([]error, n+1)
	var wg sync.WaitGroup
	x.writeMu.Lock() // the first writer leads and waits here; the others queue
	for i := 1; i <= n; i++ {
		dim := 4
		if i == bad {
			dim = 3
		}
		url, cs, vs := doc(i, dim)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = x.ReplaceDocument(ctx, "c", url, cs, vs)
		}()
		if i == 1 {
			poll.True(t, 10*time.Second, "the first write leads", func() bool { return x.writes.Busy() && x.writes.Waiting() == 0 })
		}
	}
	poll.True(t, 10*time.Second, "the other writes queue", func() bool { return x.writes.Waiting() == n-1 })
	x.writeMu.Unlock()
	wg.Wait()

	for i := 1; i <= n; i++ {
		if i == bad {
			if kgagent.ErrorCode(errs[i]) != kgagent.EINVALID {
				t.Errorf("write %d: got %v, want EINVALID", i, errs[i])
			}
			continue
		}
		if errs[i] != nil {
			t.Errorf("write %d: %v", i, errs[i])
		}
		hits, err := x.Search(ctx, corpus.Query{Collection: "c", Text: fmt.Sprintf("word%d", i), K: 5, Mode: corpus.ModeKeyword})
		if err != nil || len(hits) != 1 || hits[0].Chunk.ID != fmt.Sprintf("c%d", i) {
			t.Errorf("search word%d: %v %v", i, hits, err)
		}
	}
	infos, err := x.Collections(ctx)
	if err != nil || len(infos) != 1 || infos[0].Chunks != n {
		t.Errorf("collections: %+v %v, want %d chunks", infos, err, n)
	}
	if hits, _ := x.Search(ctx, corpus.Query{Collection: "c", Text: fmt.Sprintf("word%d", bad), K: 5, Mode: corpus.ModeKeyword}); len(hits) != 0 {
		t.Errorf("the failed write left %v", hits)
	}
}
