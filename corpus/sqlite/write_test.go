package sqlite

import (
	"context"
	"encoding/json"
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

// TestMultiRowInsert writes documents whose chunks take every size of
// multi-row INSERT (37 = 16+16+4+1 and 27 = 16+8+2+1 chunks), then
// replaces one with fewer (21 = 16+4+1): every stored field and vector reads back as
// written, row ids are unique, and the search copy (loaded before the
// replacement, updated by it) holds exactly the table's rows.
func TestMultiRowInsert(t *testing.T) {
	ctx := context.Background()
	x, err := Open(Config{Path: filepath.Join(t.TempDir(), "corpus.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	const dim = 8
	doc := func(url string, n int, gen int) ([]kgagent.Chunk, [][]float32) {
		var cs []kgagent.Chunk
		var vs [][]float32
		for i := range n {
			var hp []string
			switch i % 3 {
			case 1:
				hp = []string{"Top", fmt.Sprintf("Sec <%d> & \"ü\"", i/6)}
			case 2:
				hp = []string{}
			}
			cs = append(cs, kgagent.Chunk{ID: fmt.Sprintf("%s#%d-%d", url, i, gen), Collection: "c", DocURL: url, URL: fmt.Sprintf("%s#a%d", url, i/4),
				Title: "T " + url, HeadingPath: hp, Anchor: fmt.Sprintf("a%d", i/4), Ordinal: i, Text: fmt.Sprintf("chunk %d gen %d word%d – ünïcode", i, gen, i), Hash: fmt.Sprintf("h%d-%d", i, gen)})
			v := make([]float32, dim)
			for j := range v {
				v[j] = float32(i*dim+j+gen) / 100
			}
			vs = append(vs, v)
		}
		return cs, vs
	}
	check := func(url string, want []kgagent.Chunk, wantV [][]float32) {
		t.Helper()
		got, err := x.DocumentChunks(ctx, "c", url)
		if err != nil || len(got) != len(want) {
			t.Fatalf("%s: %d chunks, %v; want %d", url, len(got), err, len(want))
		}
		for i := range want {
			w := want[i]
			if len(w.HeadingPath) == 0 {
				w.HeadingPath = nil
			}
			if fmt.Sprint(got[i]) != fmt.Sprint(w) {
				t.Errorf("%s chunk %d:\n got %+v\nwant %+v", url, i, got[i], w)
			}
			var blob []byte
			if err := x.db.QueryRow(`SELECT vec FROM chunks WHERE id = ?`, w.ID).Scan(&blob); err != nil {
				t.Fatal(err)
			}
			if want, _ := appendQ8Bytes(nil, nil, wantV[i]); string(blob) != string(want) {
				t.Errorf("%s vector %d: got %v, want %v (the int8 form of %v)", url, i, blob, want, wantV[i])
			}
		}
	}
	a, av := doc("https://x.test/a", 37, 0)
	b, bv := doc("https://x.test/b", 27, 0)
	for _, d := range []struct {
		url string
		cs  []kgagent.Chunk
		vs  [][]float32
	}{{"https://x.test/a", a, av}, {"https://x.test/b", b, bv}} {
		if err := x.ReplaceDocument(ctx, "c", d.url, d.cs, d.vs); err != nil {
			t.Fatal(err)
		}
	}
	check("https://x.test/a", a, av)
	check("https://x.test/b", b, bv)
	if _, err := x.Search(ctx, corpus.Query{Collection: "c", Text: "chunk", K: 5, Mode: corpus.ModeKeyword}); err != nil {
		t.Fatal(err) // loads the search copy
	}
	a2, av2 := doc("https://x.test/a", 21, 1)
	if err := x.ReplaceDocument(ctx, "c", "https://x.test/a", a2, av2); err != nil {
		t.Fatal(err)
	}
	check("https://x.test/a", a2, av2)
	check("https://x.test/b", b, bv)

	rows, err := x.db.Query(`SELECT k.rid, d.doc_url FROM `+collRows, "c")
	if err != nil {
		t.Fatal(err)
	}
	table := map[int64]string{}
	for rows.Next() {
		var rid int64
		var url string
		if err := rows.Scan(&rid, &url); err != nil {
			t.Fatal(err)
		}
		table[rid] = url
	}
	rows.Close()
	if len(table) != 21+27 {
		t.Fatalf("%d rows, want %d", len(table), 21+27)
	}
	x.cacheMu.RLock()
	m := x.cache["c"]
	live := map[int64]string{}
	for slot, rid := range m.rids {
		if m.doc(slot) != "" {
			live[rid] = m.doc(slot)
		}
	}
	x.cacheMu.RUnlock()
	if fmt.Sprint(live) != fmt.Sprint(table) {
		t.Errorf("search copy rows %v\nwant the table's %v", live, table)
	}
}

// FuzzHeadingsJSON checks the heading path encoder against json.Marshal.
func FuzzHeadingsJSON(f *testing.F) {
	f.Add("Top", "Sec 1", "")
	f.Add("a<b>", "\"q\" & \\", "\x01\u2028ü\xff")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		for _, path := range [][]string{nil, {}, {a}, {a, b}, {a, b, c}} {
			want, _ := json.Marshal(nonNil(path))
			if got := headingsJSON(nonNil(path)); got != string(want) {
				t.Fatalf("headingsJSON(%q) = %s, want %s", path, got, want)
			}
		}
	})
}
