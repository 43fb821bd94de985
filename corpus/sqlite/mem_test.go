package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/internal/snapfile"
)

// The two-stage scan finds what the exact scan finds when the query is one
// of the stored vectors, and respects the URL prefix.
func TestTopKPrefilter(t *testing.T) {
	const n, dim = 3000, 64
	m := newMemColl(dim, [3]float32{1, 1, 1})
	vs := randVecs(n, dim)
	for i := range n {
		m.appendVec(vs[i*dim : (i+1)*dim])
		m.appendRid(int64(i))
		doc := "https://a/"
		if i%2 == 1 {
			doc = "https://b/"
		}
		m.appendDoc(doc)
	}
	tests := []struct {
		query  int
		prefix string
		want   int64 // top hit
	}{
		{17, "", 17},
		{2048, "", 2048},
		{17, "https://b/", -1}, // 17 is under a/, so not the top hit
		{1001, "https://b/", 1001},
	}
	for _, tt := range tests {
		q, qs := quantize(nil, vs[tt.query*dim:(tt.query+1)*dim])
		exact := m.topK(q, qs, 10, tt.prefix, -1, 1)
		fast := m.topK(q, qs, 10, tt.prefix, 1000, 0.8)
		if len(fast) != 10 || len(exact) != 10 {
			t.Fatalf("query %d: %d and %d hits", tt.query, len(fast), len(exact))
		}
		if tt.want >= 0 && (fast[0].rid != tt.want || exact[0].rid != tt.want) {
			t.Errorf("query %d: top %d (two-stage) and %d (exact), want %d", tt.query, fast[0].rid, exact[0].rid, tt.want)
		}
		for _, h := range fast {
			if tt.prefix != "" && m.doc(int(h.rid))[:len(tt.prefix)] != tt.prefix {
				t.Errorf("query %d: hit %d outside prefix", tt.query, h.rid)
			}
		}
		same := 0
		for _, f := range fast {
			for _, e := range exact {
				if f.rid == e.rid {
					same++
				}
			}
		}
		if same < 6 { // random vectors have near-tied neighbours; real ones agree more
			t.Errorf("query %d: two-stage top-10 shares only %d with exact", tt.query, same)
		}
	}
}

// The column scan over a sparse query's non-zero dimensions gives exactly
// the scores of the row scan, with and without a URL prefix, and keeps
// working after rows are added and removed.
func TestColumnScanExact(t *testing.T) {
	// Below and above parallelMin: the second size splits the scans over
	// workers, which a plain one-pass scan (want) must agree with.
	for _, n := range []int{5000, parallelMin + 1234} {
		t.Run(fmt.Sprint(n), func(t *testing.T) { testColumnScanExact(t, n) })
	}
}

func testColumnScanExact(t *testing.T, n int) {
	const dim = 96
	m := newMemColl(dim, [3]float32{1, 1, 1})
	vs := randVecs(n, dim)
	for i := range n {
		doc := "https://a/"
		if i%3 == 1 {
			doc = "https://b/"
		}
		m.add(int64(i+1), doc, kgagent.Chunk{Text: "x"}, vs[i*dim:(i+1)*dim])
	}
	m.remove([]int64{5, 6, 7})
	for _, tt := range []struct {
		name   string
		nonzer int // non-zero query dimensions
		prefix string
	}{
		{"sparse", 20, ""},
		{"sparse prefix", 20, "https://b/"},
		{"one dim", 1, ""},
		{"dense exact", dim, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := make([]float32, dim)
			copy(q[:tt.nonzer], vs[4*dim:4*dim+tt.nonzer]) // row 4 (rid 5) is deleted
			qv, qs := quantize(nil, q)
			cols := m.topK(qv, qs, 20, tt.prefix, -1, 1)
			var all []scored
			row := make([]int8, dim)
			for i := range m.rids {
				if doc := m.doc(i); doc != "" && strings.HasPrefix(doc, tt.prefix) {
					all = append(all, scored{m.rids[i], float64(DotInt8(qv, m.rowOf(i, row))) * float64(qs*m.scales[i])})
				}
			}
			// Every live row is scanned exactly once: ask for all of them.
			var dims []int
			for j, x := range qv {
				if x != 0 {
					dims = append(dims, j)
				}
			}
			if full := m.colScan(qv, dims, qs, len(m.rids), tt.prefix); len(full) != len(all) {
				t.Fatalf("column scan for every row found %d rows, want %d", len(full), len(all))
			}
			want := best(all, 20)
			if len(cols) != 20 || len(want) != 20 {
				t.Fatalf("got %d and %d hits", len(cols), len(want))
			}
			for i := range want {
				if cols[i] != want[i] {
					t.Fatalf("hit %d: column scan %+v, one pass %+v", i, cols[i], want[i])
				}
				if cols[i].rid >= 5 && cols[i].rid <= 7 {
					t.Fatalf("deleted row %d returned", cols[i].rid)
				}
			}
		})
	}
}

// vecBytes is the memory the collection's vectors hold (capacity).
func (m *memColl) vecBytes() int {
	n := cap(m.vecs)
	for j := range m.cols {
		n += m.cols[j].bytes()
	}
	return n
}

// Each vector is held once: row by row below colMin slots, column by column
// from there on (it was held both ways: 2 bytes a dimension), whether the
// collection grows row by row, is sized up front as a load from SQLite does,
// or is read back from its snapshot; and the rows read back are the rows
// written.
func TestVectorsHeldOnce(t *testing.T) {
	const dim = 48
	for _, n := range []int{colMin - 1, colMin, 3*colMin + 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			vs := randVecs(n, dim)
			grown := newMemColl(dim, [3]float32{1, 1, 1})
			sized := newMemColl(dim, [3]float32{1, 1, 1})
			sized.reserve(n)
			for i := range n {
				grown.add(int64(i+1), "https://a/", kgagent.Chunk{Text: "x"}, vs[i*dim:(i+1)*dim])
				sized.add(int64(i+1), "https://a/", kgagent.Chunk{Text: "x"}, vs[i*dim:(i+1)*dim])
			}
			sized.compact() // as a load from SQLite ends
			var e snapfile.Encoder
			encodeSnapshot(&e, grown)
			read, err := decodeSnapshot(e.B, dim, [3]float32{1, 1, 1})
			if err != nil {
				t.Fatal(err)
			}
			wantCol := n >= colMin
			for name, m := range map[string]*memColl{"grown": grown, "sized": sized, "snapshot": read} {
				if m.byCol != wantCol || (m.vecs == nil) != wantCol || (m.cols == nil) == wantCol {
					t.Errorf("%s: byCol %v, rows held %v, columns held %v; want by column %v", name, m.byCol, m.vecs != nil, m.cols != nil, wantCol)
				}
				// a grown column keeps at most a quarter of slack
				if got, most := m.vecBytes(), n*dim*5/4+dim; got > most {
					t.Errorf("%s: vectors take %d bytes for %d rows of %d, want at most %d", name, got, n, dim, most)
				}
				a, b := make([]int8, dim), make([]int8, dim)
				for _, s := range []int{0, n / 2, n - 1} {
					want, _ := quantize(nil, vs[s*dim:(s+1)*dim])
					if got := m.rowOf(s, a); !slices.Equal(got, want) {
						t.Errorf("%s: row %d is %v, want %v", name, s, got, want)
					}
					if got := grown.rowOf(s, b); !slices.Equal(got, m.rowOf(s, a)) {
						t.Errorf("%s: row %d differs from the grown copy", name, s)
					}
				}
			}
		})
	}
}

// denseCol is c's values, one a slot.
func denseCol(c *spCol) []int8 {
	out := make([]int8, c.n)
	for s := range out {
		out[s] = c.at(s)
	}
	return out
}

// TestSpColMatchesDense: a sparse column hands out the values pushed, and
// adds them over any slot range (bitmap words cut anywhere) exactly as the
// dense column did.
func TestSpColMatchesDense(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 63, 64, 65, 255, 256, 257, 1000, 5000} {
		dense := make([]int8, n)
		var c spCol
		for s := range dense {
			if r.IntN(5) < 2 {
				dense[s] = int8(r.IntN(255) - 127)
			}
			c.push(dense[s])
		}
		checkSpCol(t, fmt.Sprintf("n %d", n), &c, dense, r, 200)
	}
}

// checkSpCol fails t unless c holds dense: every slot read back, and tries
// sums (addTo) over random slot ranges the dense column's.
func checkSpCol(t *testing.T, label string, c *spCol, dense []int8, r *rand.Rand, tries int) {
	t.Helper()
	n := len(dense)
	if c.n != n {
		t.Fatalf("%s: %d slots, want %d", label, c.n, n)
	}
	for s, want := range dense {
		if got := c.at(s); got != want {
			t.Fatalf("%s: slot %d is %d, want %d", label, s, got, want)
		}
	}
	for range tries {
		lo := r.IntN(n + 1)
		hi := lo + r.IntN(n-lo+1)
		w := int32(r.IntN(255) - 127)
		got, want := make([]int32, hi-lo), make([]int32, hi-lo)
		for i := range got {
			got[i] = int32(i) // addTo adds
			want[i] = int32(i) + w*int32(dense[lo+i])
		}
		c.addTo(got, lo, hi, w)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: addTo over %d..%d differs", label, lo, hi)
		}
	}
}

// TestColumnsSparse: a big collection's columns hold only the non-zero
// values (a bitmap beside them): vectors 40% non-zero, as the lexical
// embedder's chunk vectors are after quantisation, take under 0.6 bytes a
// dimension sized as a SQL load sizes them or read back from a snapshot,
// and under 0.8 grown row by row (one byte a dimension before, with a
// quarter more of growth slack), and dense search ranks as a scan of the
// rows does.
func TestColumnsSparse(t *testing.T) {
	const dim, n = 96, 3*colMin + 7
	r := rand.New(rand.NewPCG(3, 4))
	vs := randVecs(n, dim)
	for i := range vs {
		if r.IntN(5) >= 2 {
			vs[i] = 0
		}
	}
	grown := newMemColl(dim, [3]float32{1, 1, 1})
	sized := newMemColl(dim, [3]float32{1, 1, 1})
	sized.reserve(n)
	for i := range n {
		grown.add(int64(i+1), "https://a/", kgagent.Chunk{Text: "x"}, vs[i*dim:(i+1)*dim])
		sized.add(int64(i+1), "https://a/", kgagent.Chunk{Text: "x"}, vs[i*dim:(i+1)*dim])
	}
	sized.compact()
	var e snapfile.Encoder
	encodeSnapshot(&e, grown)
	read, err := decodeSnapshot(e.B, dim, [3]float32{1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	q, qs := quantize(nil, vs[5*dim:6*dim])
	want := grown.scanRows(q, qs, 20)
	for name, m := range map[string]*memColl{"grown": grown, "sized": sized, "snapshot": read} {
		most := n * dim * 6 / 10
		if name == "grown" {
			most = n * dim * 8 / 10 // the values' growth slack
		}
		if got := m.vecBytes(); got > most {
			t.Errorf("%s: vectors take %d bytes for %d rows of %d, want at most %d", name, got, n, dim, most)
		}
		if got := m.topK(q, qs, 20, "", 0, 1); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: dense ranking %v, want %v", name, got, want)
		}
		for j := range m.cols {
			if !slices.Equal(denseCol(&m.cols[j]), denseCol(&grown.cols[j])) || !reflect.DeepEqual(m.cols[j].rank, grown.cols[j].rank) {
				t.Fatalf("%s: column %d differs from the grown one", name, j)
			}
		}
	}
	// columns held in full beside sparse ones (every third dimension
	// never 0), scanned together
	mixed := newMemColl(dim, [3]float32{1, 1, 1})
	for i := range n {
		v := slices.Clone(vs[i*dim : (i+1)*dim])
		for j := 0; j < dim; j += 3 {
			v[j] = 0.01 + float32(r.IntN(100))
		}
		mixed.add(int64(i+1), "https://a/", kgagent.Chunk{Text: "x"}, v)
	}
	full := 0
	for j := range mixed.cols {
		if mixed.cols[j].full != nil {
			full++
		}
	}
	if full != dim/3 {
		t.Errorf("%d columns held in full, want %d", full, dim/3)
	}
	for _, q := range [][]float32{vs[7*dim : 8*dim], slices.Repeat([]float32{1, -2, 3}, dim/3)} {
		q, qs := quantize(nil, q)
		if got, want := mixed.topK(q, qs, 20, "", 0, 1), mixed.scanRows(q, qs, 20); !reflect.DeepEqual(got, want) {
			t.Errorf("mixed: dense ranking %v, want %v", got, want)
		}
	}
}

// scanRows ranks every row by its dot product with q, one row at a time.
func (m *memColl) scanRows(q []int8, qs float32, n int) []scored {
	h := topHeap{n: n}
	row := make([]int8, m.dim)
	for s := range m.rids {
		h.push(scored{m.rids[s], float64(DotInt8(q, m.rowOf(s, row))) * float64(qs*m.scales[s])})
	}
	return best(h.items, n)
}

// TestHitCacheBoundedByBytes: the search-hit cache keeps its chunks within
// hitCacheBytes as well as hitCacheSize entries (before, 16,384 chunks of
// any size: 2,000 chunks of 10 KB stayed, 20 MB), counts a replaced slot
// once, and keeps no chunk that alone would take a sixteenth of it.
func TestHitCacheBoundedByBytes(t *testing.T) {
	var c hitCache
	text := strings.Repeat("x", 10_000)
	for i := range int32(2000) {
		c.put(i, kgagent.Chunk{ID: fmt.Sprint(i), Text: text, HeadingPath: []string{"h"}}, nil)
		c.put(i, kgagent.Chunk{ID: fmt.Sprint(i), Text: text, HeadingPath: []string{"h"}}, nil) // the same slot again
		if c.bytes > hitCacheBytes || len(c.m) > hitCacheSize {
			t.Fatalf("after %d chunks: %d bytes in %d entries, want at most %d", i+1, c.bytes, len(c.m), hitCacheBytes)
		}
		if _, _, ok := c.get(i); !ok {
			t.Fatalf("chunk %d not kept right after its put", i)
		}
	}
	sum := 0
	for _, e := range c.m {
		sum += chunkBytes(&e.ch)
	}
	if sum != c.bytes || len(c.m) < hitCacheBytes/(2*len(text)) {
		t.Errorf("%d entries of %d bytes, counted %d", len(c.m), sum, c.bytes)
	}
	c.put(5000, kgagent.Chunk{Text: strings.Repeat("y", hitCacheBytes/16)}, nil)
	if _, _, ok := c.get(5000); ok {
		t.Error("kept a chunk of a sixteenth of the cache")
	}
	small := hitCache{}
	for i := range int32(hitCacheSize + 10) {
		small.put(i, kgagent.Chunk{ID: "a"}, nil)
	}
	if len(small.m) != hitCacheSize {
		t.Errorf("%d small chunks kept, want %d", len(small.m), hitCacheSize)
	}
}

// slotDocs is every slot's doc URL ("" for a deleted slot).
func slotDocs(m *memColl) []string {
	docs := make([]string, len(m.rids))
	for s := range docs {
		docs[s] = m.doc(s)
	}
	return docs
}

// TestSlotArraysHoldNoPointers: a search copy's per-slot arrays hold no
// pointer (a slot's doc URL is a page id): the collector visits each
// pointer at every collection, and a copy has one slot per chunk (72k in
// the OpenJDK API docs' chunk copy).
func TestSlotArraysHoldNoPointers(t *testing.T) {
	m := newMemColl(4, [3]float32{1, 1, 1})
	m.reserve(3)
	for i := range 3 {
		m.addTerms(int64(i+1), fmt.Sprintf("https://d/%d", i%2), &chunkTerms{})
	}
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Slice || f.Len() != len(m.rids) {
			continue
		}
		switch f.Type().Elem().Kind() {
		case reflect.String, reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
			t.Errorf("memColl.%s, one per slot, is a %s", v.Type().Field(i).Name, f.Type())
		}
	}
	if got := slotDocs(m); !reflect.DeepEqual(got, []string{"https://d/0", "https://d/1", "https://d/0"}) {
		t.Errorf("docs %q", got)
	}
}

// TestSlotOfWithoutMap: a search copy whose rows come in ascending row id
// order keeps no row id map (it was ~4 MB of the OpenJDK API docs' copy)
// and finds each live row's slot by binary search, a reused top rowid
// included; a row id below the last one makes the map, and every live row
// is still found, no removed one.
func TestSlotOfWithoutMap(t *testing.T) {
	m := newMemColl(4, [3]float32{1, 1, 1})
	v := []float32{1, 0, 0, 0}
	for rid := int64(10); rid < 20; rid++ {
		m.add(rid, fmt.Sprintf("https://d/%d", rid/3), kgagent.Chunk{ID: fmt.Sprint(rid), Text: "alpha beta"}, v)
	}
	m.remove([]int64{19, 12})
	m.add(19, "https://d/6", kgagent.Chunk{ID: "19b", Text: "gamma"}, v) // SQLite reuses the deleted top rowid
	if m.pos != nil {
		t.Fatalf("row ids ascending: a map of %d rows, want none", len(m.pos))
	}
	want := map[int64]int32{10: 0, 11: 1, 13: 3, 14: 4, 15: 5, 16: 6, 17: 7, 18: 8, 19: 10}
	check := func(stage string) {
		t.Helper()
		for rid := int64(0); rid < 25; rid++ {
			slot, ok := m.slotOf(rid)
			if w, live := want[rid]; ok != live || slot != w {
				t.Errorf("%s: slotOf(%d) = %d %v, want %d %v", stage, rid, slot, ok, w, live)
			}
		}
	}
	check("ascending")
	m.add(12, "https://d/4", kgagent.Chunk{ID: "12b", Text: "delta"}, v)
	want[12] = 11
	if m.pos == nil {
		t.Fatal("row id 12 after 19: no map")
	}
	check("with the map")
	m.remove([]int64{12, 15})
	delete(want, 12)
	delete(want, 15)
	check("removed")
}

// The prefilter's rescore, which reads only the dimensions the prefilter
// did not, gives each candidate the score of its whole dot product, as
// reading every dimension again did: the same hits, in the same order,
// with equal scores (sparse random vectors, zero vectors, deletes, a URL
// prefix, one and two scan workers).
func TestPrefilterRescoreExact(t *testing.T) {
	const dim = 96
	r := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{3000, parallelMin + 777} {
		m := newMemColl(dim, [3]float32{1, 1, 1})
		v := make([]float32, dim)
		for i := range n {
			clear(v)
			if i%50 != 7 { // every 50th vector all zero
				for j := range v {
					if r.IntN(5) < 2 {
						v[j] = r.Float32() - 0.5
					}
				}
			}
			m.add(int64(10*i), fmt.Sprintf("https://%c/%d", 'a'+i%3, i/7), kgagent.Chunk{Text: "w"}, v)
		}
		m.compact()
		var del []int64
		for i := 0; i < n; i += 13 {
			del = append(del, int64(10*i))
		}
		m.remove(del)
		for q := range 40 {
			clear(v)
			for j := range v {
				if r.IntN(3) == 0 {
					v[j] = r.Float32() - 0.5
				}
			}
			if q%7 == 0 {
				v[r.IntN(dim)] = 4 // one heavy dimension
			}
			qv, qs := quantize(nil, v)
			prefix := ""
			if q%3 == 1 {
				prefix = "https://b/"
			}
			got := m.topK(qv, qs, 20, prefix, 1000, 0.5)
			// what the rescore computed before: every non-zero dimension
			var dims []int
			for j, x := range qv {
				if x != 0 {
					dims = append(dims, j)
				}
			}
			limit := heaviest(qv, slices.Clone(dims), 0.5)
			heavy := slices.Clone(dims)
			heaviest(qv, heavy, 0.5)
			if limit >= len(dims) {
				t.Fatalf("query %d: no prefilter (limit %d of %d)", q, limit, len(dims))
			}
			cands := best(m.colScan(qv, heavy[:limit], qs, prefilterKeep(20), prefix), prefilterKeep(20))
			for i, c := range cands {
				s, _ := m.slotOf(c.rid)
				var dot int32
				for _, j := range dims {
					dot += int32(qv[j]) * int32(m.cols[j].at(int(s)))
				}
				cands[i].score = float64(dot) * float64(qs*m.scales[s])
			}
			want := best(cands, 20)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("n %d query %d: rescore gives %v, want %v", n, q, got, want)
			}
		}
	}
}

// The prefilter rescores the same candidates however many scan workers
// share the rows (it kept prefilterKeep(n) a worker, so the hits and
// their order depended on the number of cores): the dense hits of a
// prefiltered collection are equal with 1, 2, 3 and 5 workers.
func TestPrefilterSameForAnyWorkers(t *testing.T) {
	const dim = 64
	r := rand.New(rand.NewPCG(21, 22))
	n := 3 * parallelMin
	m := newMemColl(dim, [3]float32{1, 1, 1})
	v := make([]float32, dim)
	for i := range n {
		clear(v)
		for j := range v {
			if r.IntN(3) == 0 {
				v[j] = r.Float32() - 0.5
			}
		}
		m.add(int64(i+1), fmt.Sprintf("https://h/%d", i/9), kgagent.Chunk{Text: "w"}, v)
	}
	m.compact()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for q := range 30 {
		for j := range v {
			v[j] = 0
			if r.IntN(2) == 0 {
				v[j] = r.Float32() - 0.5
			}
		}
		qv, qs := quantize(nil, v)
		var want []scored
		for _, procs := range []int{1, 2, 3, 5} {
			runtime.GOMAXPROCS(procs)
			got := m.topK(qv, qs, 10, "", 1000, 0.3)
			if want == nil {
				want = got
			} else if !reflect.DeepEqual(got, want) {
				t.Fatalf("query %d: %d workers give %v, one gives %v", q, procs, got, want)
			}
		}
	}
}

// pagesUnder marks the pages whose URL starts with a prefix exactly as
// testing each page's URL does, for pages added in any order (appendDoc
// keeps byURL sorted) and for a copy read from its snapshot (sortPages):
// prefixes that are a page's whole URL, a directory of several, one past
// every URL, one before every URL, none matching, and "".
func TestPagesUnder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	m := newMemColl(4, [3]float32{1, 1, 1})
	var urls []string
	for range 300 {
		u := fmt.Sprintf("https://h/%c/%c%d.html", 'a'+r.IntN(4), 'k'+r.IntN(3), r.IntN(40))
		m.add(int64(len(m.rids)+1), u, kgagent.Chunk{Text: "w"}, []float32{1, 0, 0, 0})
		urls = append(urls, u)
	}
	prefixes := []string{"", "https://h/b/", "https://h/b/l", "https://h/c/m1", "https://h/z", "a", "https://h/", "https://h/d/k39.html", "https://h/d/k39.htmlx"}
	for range 20 {
		prefixes = append(prefixes, urls[r.IntN(len(urls))])
	}
	e := &snapfile.Encoder{}
	encodeSnapshot(e, m)
	read, err := decodeSnapshot(e.B, 4, m.weights)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*memColl{"added": m, "snapshot": read} {
		for _, p := range prefixes {
			got := make([]uint8, len(c.pageURL))
			c.pagesUnder(p, got)
			n := 0
			for d, u := range c.pageURL {
				want := uint8(2)
				if strings.HasPrefix(u, p) {
					want = 1
					n++
				}
				if got[d] != want {
					t.Fatalf("%s: prefix %q, page %q: %d, want %d", name, p, u, got[d], want)
				}
			}
			if p == "https://h/b/" && n == 0 {
				t.Fatalf("%s: no page under %q", name, p)
			}
		}
	}
}

// TestPagesUnderLoaded: a copy built from SQLite's rows (pages read in row
// order, not URL order; byURL appended unsorted and sorted once at the end
// of the load) and pages written to it afterwards (inserted in order) find
// the same pages under a prefix as strings.HasPrefix.
func TestPagesUnderLoaded(t *testing.T) {
	f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
	x := f.open(Config{NoSnapshots: true})
	defer x.Close()
	r := rand.New(rand.NewPCG(5, 6))
	url := func() string { return fmt.Sprintf("https://h/%c/%c%d.html", 'a'+r.IntN(4), 'k'+r.IntN(3), r.IntN(40)) }
	for range 40 {
		f.put(x, "c", url(), "some words")
	}
	x.cacheMu.Lock()
	delete(x.cache, "c")
	x.cacheMu.Unlock()
	m, err := x.collection(t.Context(), "c")
	if err != nil || m == nil {
		t.Fatalf("load: %v", err)
	}
	check := func(when string) {
		t.Helper()
		x.cacheMu.RLock()
		defer x.cacheMu.RUnlock()
		if m.urlsLater {
			t.Fatalf("%s: byURL left unsorted", when)
		}
		for _, p := range []string{"", "https://h/b/", "https://h/c/m1", "https://h/d/k39.html", "https://h/z", m.pageURL[0]} {
			got := make([]uint8, len(m.pageURL))
			m.pagesUnder(p, got)
			for d, u := range m.pageURL {
				if want := map[bool]uint8{true: 1, false: 2}[strings.HasPrefix(u, p)]; got[d] != want {
					t.Fatalf("%s: prefix %q, page %q: %d, want %d", when, p, u, got[d], want)
				}
			}
		}
	}
	check("loaded")
	for range 10 {
		f.put(x, "c", url(), "more words")
	}
	check("written after the load")
}

// TestColumnScanStack: a column scan's worker frame fits a 16 KiB
// goroutine stack. Its block sums are on the stack, and with the AVX-512
// kernel's array beside the Go loop's (17 KB) every goroutine that scanned
// grew to 32 KiB (serve's searching goroutines, and scanParallel's).
// Goroutines that only wait are the baseline (the runtime may start
// stacks above 8 KiB).
func TestColumnScanStack(t *testing.T) {
	const dim, n, g = 32, 3000, 64
	m := newMemColl(dim, [3]float32{1, 1, 1})
	vs := randVecs(n, dim)
	for i := range n {
		m.add(int64(i+1), "https://a/", kgagent.Chunk{Text: "x"}, vs[i*dim:(i+1)*dim])
	}
	qv, qs := quantize(nil, vs[:dim])
	dims := []int{}
	for j, x := range qv {
		if x != 0 {
			dims = append(dims, j)
		}
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // a collection would shrink the stacks
	runtime.GC()
	stack := func(scan bool) int64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var ready, done sync.WaitGroup
		stop := make(chan struct{})
		for range g {
			ready.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				if scan && len(m.colScan(qv, dims, qs, 10, "")) == 0 {
					t.Error("no hits")
				}
				ready.Done()
				<-stop
			}()
		}
		ready.Wait()
		runtime.ReadMemStats(&after)
		close(stop)
		done.Wait()
		return (int64(after.StackInuse) - int64(before.StackInuse)) / g
	}
	base := stack(false)
	if per := stack(true); per > base+16<<10 {
		t.Errorf("%d bytes of stack a goroutine that scanned, %d one that did not; want at most 16 KiB more", per, base)
	}
}

// TestPrefixSpans checks keyword search under a URL prefix with the
// postings cut to the slots of the pages under it (slotsUnder) against the
// search over every posting: the same hits and scores for prefixes that
// are a page, a directory, every page and none, on a copy whose pages were
// rewritten (a page's new slots after other pages', its old ones
// tombstones) and deleted, and again after more slots are added to pages
// already searched (the spans are computed again).
func TestPrefixSpans(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 7))
	x, err := Open(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	words := strings.Fields("alpha beta gamma delta eps zeta")
	m := newMemColl(2, x.weights())
	x.cache["c"] = m
	rid := int64(0)
	pageRids := map[string][]int64{}
	write := func(u string) {
		m.remove(pageRids[u])
		pageRids[u] = nil
		for c := range 1 + r.IntN(4) {
			ws := make([]string, 1+r.IntN(5))
			for i := range ws {
				ws[i] = words[r.IntN(len(words))]
			}
			rid++
			pageRids[u] = append(pageRids[u], rid)
			m.add(rid, u, kgagent.Chunk{Title: u, Ordinal: c, Text: strings.Join(ws, " ")}, []float32{1, 0})
		}
	}
	var urls []string
	for i := range 120 {
		u := fmt.Sprintf("https://h/%c/p%d.html", 'a'+r.IntN(4), i)
		urls = append(urls, u)
		write(u)
	}
	ctx := context.Background()
	check := func(stage string) {
		t.Helper()
		prefixes := []string{"https://h/", "https://h/b/", "https://h/z/", "https://h/c/p1"}
		for range 20 {
			prefixes = append(prefixes, urls[r.IntN(len(urls))])
		}
		under := 0
		for _, p := range prefixes {
			for _, k := range []int{3, 1000} {
				q := corpus.Query{Collection: "c", Text: strings.Join(words[:1+r.IntN(4)], " "), K: k, Mode: corpus.ModeKeyword, URLPrefix: p}
				got, err := x.keyword(ctx, q, k, false)
				if err != nil {
					t.Fatal(err)
				}
				prefixSpans = false
				want, _ := x.keyword(ctx, q, k, false)
				prefixSpans = true
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: prefix %q k %d: %v, want %v", stage, p, k, got, want)
				}
				under += len(got)
			}
		}
		if under == 0 {
			t.Fatalf("%s: no hit under any prefix", stage)
		}
	}
	check("added")
	for range 40 { // rewrites: a page's slots no longer one run
		write(urls[r.IntN(len(urls))])
	}
	var del []int64
	for _, u := range urls[:10] {
		del = append(del, pageRids[u]...)
	}
	m.remove(del)
	check("rewritten")
	for range 40 {
		write(urls[r.IntN(len(urls))])
	}
	check("written after a search")
	if lo, hi := m.slotsUnder("https://nowhere/"); lo <= hi {
		t.Fatalf("no page under the prefix: slots %d..%d", lo, hi)
	}
}

// The column scan's workers share their heaps' floors (sharedFloor) and
// the prefilter's candidates are rescored in two halves at once: the
// dense hits are still those of a plain ranking of every row, ties
// broken by slot, on a collection whose rows repeat a few vectors (so
// whole runs of rows tie at the heaps' floors) with some rows deleted
// and under a URL prefix, with 1, 2, 3 and 5 workers, with the
// prefilter and without it.
func TestSharedFloorMatchesPlainRanking(t *testing.T) {
	const dim = 48
	r := rand.New(rand.NewPCG(41, 42))
	n := 3 * parallelMin
	m := newMemColl(dim, [3]float32{1, 1, 1})
	protos := make([][]float32, 40)
	for p := range protos {
		protos[p] = make([]float32, dim)
		for j := range protos[p] {
			if r.IntN(3) == 0 {
				protos[p][j] = r.Float32() - 0.5
			}
		}
	}
	for i := range n {
		// runs of equal rows, also far apart (both workers' ranges)
		m.add(int64(i+1), fmt.Sprintf("https://%c/%d", 'a'+i%3, i/9), kgagent.Chunk{Text: "w"}, protos[(i/50+i%7)%len(protos)])
	}
	m.compact()
	var del []int64
	for i := 0; i < n; i += 11 {
		del = append(del, int64(i+1))
	}
	m.remove(del)
	if !m.byCol {
		t.Fatal("the collection is not held by column")
	}
	deleted := map[int64]bool{}
	for _, d := range del {
		deleted[d] = true
	}
	// plain ranks every live row under prefix by its dot product over
	// dims, ties by slot, and keeps k (slots in rid).
	plain := func(qv []int8, qs float32, dims []int, k int, prefix string) []scored {
		var all []scored
		for s := range m.rids {
			if deleted[m.rids[s]] || !strings.HasPrefix(m.doc(s), prefix) {
				continue
			}
			var dot int32
			for _, j := range dims {
				dot += int32(qv[j]) * int32(m.cols[j].at(s))
			}
			all = append(all, scored{int64(s), float64(dot) * float64(qs*m.scales[s])})
		}
		return best(all, k)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	v := make([]float32, dim)
	for q := range 24 {
		copy(v, protos[r.IntN(len(protos))])
		for j := range v {
			if r.IntN(4) == 0 {
				v[j] += r.Float32() - 0.5
			}
		}
		qv, qs := quantize(nil, v)
		var dims []int
		for j, x := range qv {
			if x != 0 {
				dims = append(dims, j)
			}
		}
		prefix := ""
		if q%3 == 1 {
			prefix = "https://b/"
		}
		const k = 10
		// without the prefilter: the best k of all
		want := plain(qv, qs, dims, k, prefix)
		for i := range want {
			want[i].rid = m.rids[want[i].rid]
		}
		// with it: the best prefilterKeep(k) over the heaviest
		// dimensions, rescored over all of them
		heavy := slices.Clone(dims)
		limit := heaviest(qv, heavy, 0.5)
		if limit >= len(dims) {
			t.Fatalf("query %d: no prefilter (limit %d of %d)", q, limit, len(dims))
		}
		cands := plain(qv, qs, heavy[:limit], prefilterKeep(k), prefix)
		for i, c := range cands {
			var dot int32
			for _, j := range dims {
				dot += int32(qv[j]) * int32(m.cols[j].at(int(c.rid)))
			}
			cands[i] = scored{m.rids[c.rid], float64(dot) * float64(qs*m.scales[c.rid])}
		}
		wantPre := best(cands, k)
		ties := 0
		for i := 1; i < len(wantPre); i++ {
			if wantPre[i].score == wantPre[i-1].score {
				ties++
			}
		}
		if ties == 0 {
			t.Fatalf("query %d: no ties among the hits %v", q, wantPre)
		}
		for _, procs := range []int{1, 2, 3, 5} {
			runtime.GOMAXPROCS(procs)
			if got := m.topK(qv, qs, k, prefix, 0, 0.5); !reflect.DeepEqual(got, want) {
				t.Fatalf("query %d, %d workers, no prefilter: %v, want %v", q, procs, got, want)
			}
			if got := m.topK(qv, qs, k, prefix, 1000, 0.5); !reflect.DeepEqual(got, wantPre) {
				t.Fatalf("query %d, %d workers, prefilter: %v, want %v", q, procs, got, wantPre)
			}
		}
	}
}
