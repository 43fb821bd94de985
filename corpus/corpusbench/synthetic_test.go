package corpusbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/hnsw"
	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/sqlite"
)

// zipfWords draws words from a synthetic vocabulary with a Zipf law, like
// natural text.
type zipfWords struct {
	z     *rand.Zipf
	vocab []string
}

func newZipfWords(seed uint64, n int) *zipfWords {
	r := rand.New(rand.NewPCG(seed, seed+1))
	vocab := make([]string, n)
	for i := range vocab {
		var b strings.Builder
		l := 3 + r.IntN(8)
		for range l {
			b.WriteByte(byte('a' + r.IntN(26)))
		}
		vocab[i] = b.String()
	}
	return &zipfWords{z: rand.NewZipf(r, 1.1, 2, uint64(n-1)), vocab: vocab}
}

func (z *zipfWords) text(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = z.vocab[z.z.Uint64()]
	}
	return strings.Join(ws, " ")
}

func rssMiB() (cur, peak float64) {
	data, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			cur = kb / 1024
		case "VmHWM:":
			peak = kb / 1024
		}
	}
	return
}

// TestSynthetic indexes KGAGENT_SYNTH chunks (e.g. 200000) of Zipf text in
// the embedded index, then times hybrid searches and reports RSS.
func TestSynthetic(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("KGAGENT_SYNTH"))
	if n <= 0 {
		t.Skip("set KGAGENT_SYNTH=200000 to run the synthetic index benchmark")
	}
	ctx := context.Background()
	emb := corpus.NewLexical(corpus.LexicalConfig{})
	words := newZipfWords(7, 50000)
	path := os.Getenv("KGAGENT_SYNTH_DB") // reuse an index built by an earlier run
	reuse := false
	if path == "" {
		path = filepath.Join(t.TempDir(), "synth.db")
	} else if _, err := os.Stat(path); err == nil {
		reuse = true
	}
	idx, err := sqlite.Open(sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	const perDoc = 20
	for d := 0; d*perDoc < n && !reuse; d++ {
		url := fmt.Sprintf("https://synth.example/%d/page%d", d%10, d)
		m := min(perDoc, n-d*perDoc)
		chunks := make([]kgagent.Chunk, m)
		texts := make([]string, m)
		for i := range chunks {
			c := kgagent.Chunk{ID: corpus.ChunkID("synth", url, i), Collection: "synth", DocURL: url, URL: url, Title: words.text(5), HeadingPath: []string{words.text(3)}, Ordinal: i, Text: words.text(120)}
			chunks[i] = c
			texts[i] = corpus.IndexText(c)
		}
		vecs, _ := emb.Embed(ctx, texts)
		if err := idx.ReplaceDocument(ctx, "synth", url, chunks, vecs); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("wrote %d chunks in %v", n, time.Since(start).Round(time.Second))
	idx.Close()

	// a fresh process state: reopen, load the search copy, measure
	runtime.GC()
	debug.FreeOSMemory()
	idx, err = sqlite.Open(sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	start = time.Now()
	if err := idx.Warm(ctx, "synth"); err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded the search copy in %v", time.Since(start).Round(time.Millisecond))
	svc, _ := corpus.NewService(corpus.ServiceConfig{Index: idx, Embedder: emb})
	for _, m := range []corpus.Mode{corpus.ModeKeyword, corpus.ModeDense, corpus.ModeHybrid} {
		var lat []time.Duration
		for i := range 200 {
			q := words.text(4 + i%6)
			t0 := time.Now()
			if _, err := svc.Search(ctx, corpus.SearchRequest{Query: q, Collection: "synth", K: 10, Mode: m}); err != nil {
				t.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		p50, p99 := percentiles(lat)
		t.Logf("%d chunks, %-7s k=10: p50 %v p99 %v", n, m, p50, p99)
	}
	// a long query (a pasted paragraph) has more non-zero dimensions than
	// the exact column scan takes, so it goes through the two-stage scan
	var lat []time.Duration
	for range 100 {
		q := words.text(60)
		t0 := time.Now()
		if _, err := svc.Search(ctx, corpus.SearchRequest{Query: q, Collection: "synth", K: 10, Mode: corpus.ModeDense}); err != nil {
			t.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	p50, p99 := percentiles(lat)
	t.Logf("%d chunks, dense k=10, 60-word queries: p50 %v p99 %v", n, p50, p99)
	runtime.GC()
	cur, peak := rssMiB()
	t.Logf("RSS after load and searches: %.0f MiB (peak %.0f MiB over the whole run incl. generation)", cur, peak)
}

// TestHNSWvsExact compares coder/hnsw with the exact scan on KGAGENT_HNSW
// random-text vectors (e.g. 50000): build time, query time, recall@10.
func TestHNSWvsExact(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("KGAGENT_HNSW"))
	if n <= 0 {
		t.Skip("set KGAGENT_HNSW=50000 to compare HNSW with exact search")
	}
	emb := corpus.NewLexical(corpus.LexicalConfig{})
	words := newZipfWords(9, 50000)
	vecs := make([][]float32, n)
	for i := range vecs {
		vecs[i] = emb.Vector(words.text(5) + "\n" + words.text(120))
	}
	g := hnsw.NewGraph[int]()
	g.EfSearch = 64
	start := time.Now()
	for i, v := range vecs {
		g.Add(hnsw.MakeNode(i, v))
	}
	build := time.Since(start)
	var exactLat, hnswLat []time.Duration
	recall := 0.0
	const queries = 100
	for range queries {
		qv := emb.Vector(words.text(6))
		t0 := time.Now()
		exact := topExact(vecs, qv, 10)
		exactLat = append(exactLat, time.Since(t0))
		t0 = time.Now()
		approx := g.Search(qv, 10)
		hnswLat = append(hnswLat, time.Since(t0))
		want := map[int]bool{}
		for _, e := range exact {
			want[e] = true
		}
		for _, a := range approx {
			if want[a.Key] {
				recall++
			}
		}
	}
	e50, e99 := percentiles(exactLat)
	h50, h99 := percentiles(hnswLat)
	t.Logf("%d vectors x %d dims: exact single-thread p50 %v p99 %v; HNSW (M=16, efSearch=64) build %v, p50 %v p99 %v, recall@10 %.3f",
		n, emb.Dimension(), e50, e99, build.Round(time.Millisecond), h50, h99, recall/float64(queries*10))
}

func topExact(vecs [][]float32, q []float32, k int) []int {
	type s struct {
		i int
		v float32
	}
	best := make([]s, 0, k+1)
	for i, v := range vecs {
		d := sqlite.Dot(q, v)
		if len(best) == k && d <= best[k-1].v {
			continue
		}
		j := len(best)
		best = append(best, s{i, d})
		for j > 0 && best[j-1].v < d {
			best[j] = best[j-1]
			j--
		}
		best[j] = s{i, d}
		if len(best) > k {
			best = best[:k]
		}
	}
	out := make([]int, len(best))
	for i, b := range best {
		out[i] = b.i
	}
	return out
}
