package sqlite

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/internal/snapfile"
	"github.com/kgagent/kgagent/internal/text"
)

// slotTF is one posting spelled out.
type slotTF struct {
	Slot int32
	TF   float32
}

// expandPosts is fi's postings with their frequencies spelled out: two
// copies with the same postings may code the frequencies differently.
func expandPosts(fi *fieldIndex) map[string][]slotTF {
	out := make(map[string][]slotTF, len(fi.lists))
	for t, ps := range fi.lists {
		if len(ps) == 0 {
			continue // a term left only in tombstones (a copy read back lacks it)
		}
		l := make([]slotTF, len(ps))
		for i, p := range ps {
			l[i] = slotTF{p.slot(), fi.tf(int32(t), p)}
		}
		out[fi.terms.term(int32(t))] = l
	}
	return out
}

// postingBytes is what fi's posting lists hold (their backing arrays).
func postingBytes(fi *fieldIndex) (bytes, postings int) {
	for _, ps := range fi.lists {
		bytes += cap(ps) * int(unsafe.Sizeof(posting(0)))
		postings += len(ps)
	}
	return bytes, postings
}

// TestPostingsFourBytes: a posting is held in 4 bytes (slot and frequency
// code), in a copy loaded from SQLite and in one read from its snapshot
// (8 before: slot and frequency as two 32-bit fields), and both copies
// hold the same slots and frequencies.
func TestPostingsFourBytes(t *testing.T) {
	f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
	x := f.open(Config{NoSnapshots: true})
	defer x.Close()
	for i := range 200 {
		f.put(x, "c", fmt.Sprintf("https://x/p%d", i), fmt.Sprintf("page %d about topic %d", i, i%7), strings.Repeat("shared words here ", 1+i%9),
			fmt.Sprintf("more text on item%d and item%d", i%13, i%17))
	}
	m, err := x.collection(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	x.cacheMu.RLock()
	defer x.cacheMu.RUnlock()
	e := &snapfile.Encoder{}
	encodeSnapshot(e, m)
	got, err := decodeSnapshot(e.B, m.dim, m.weights)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*memColl{"loaded": m, "snapshot": got} {
		for _, fi := range []*fieldIndex{&c.all, &c.head} {
			b, n := postingBytes(fi)
			if n < 1000 || b > 4*n {
				t.Errorf("%s: %d postings hold %d bytes, want at most 4 a posting", name, n, b)
			}
		}
	}
	if !reflect.DeepEqual(expandPosts(&got.all), expandPosts(&m.all)) || !reflect.DeepEqual(expandPosts(&got.head), expandPosts(&m.head)) {
		t.Error("postings read back differ")
	}
}

// TestPostingsWideFrequencies: past wideCode distinct frequencies a posting
// keeps its exact frequency (coded wideCode, held beside the lists), built
// row by row and read back from a snapshot, and keyword ranking scores with
// it.
func TestPostingsWideFrequencies(t *testing.T) {
	m := newMemColl(4, [3]float32{6, 2, 1})
	const n = 3 * wideCode
	for i := range n {
		// body term "w" repeated i+1 times: n distinct frequencies
		m.add(int64(i+1), fmt.Sprintf("https://x/p%d", i), kgagent.Chunk{Title: "t", Text: strings.Repeat("w ", i+1)}, []float32{1, 0, 0, 0})
	}
	check := func(name string, c *memColl) {
		w, _ := c.all.terms.find("w")
		ps := c.all.lists[w]
		if len(ps) != n {
			t.Fatalf("%s: %d postings of w, want %d", name, len(ps), n)
		}
		wide := 0
		for _, p := range ps {
			if p&0xff == wideCode {
				wide++
			}
			if got, want := c.all.tf(w, p), float32(p.slot()+1); got != want {
				t.Fatalf("%s: slot %d frequency %v, want %v", name, p.slot(), got, want)
			}
		}
		if wide < n-wideCode {
			t.Errorf("%s: %d postings coded wide, want at least %d", name, wide, n-wideCode)
		}
	}
	check("built", m)
	e := &snapfile.Encoder{}
	encodeSnapshot(e, m)
	got, err := decodeSnapshot(e.B, 4, m.weights)
	if err != nil {
		t.Fatal(err)
	}
	check("snapshot", got)
	if !reflect.DeepEqual(expandPosts(&got.all), expandPosts(&m.all)) {
		t.Error("postings read back differ")
	}
	// BM25 saturates in tf: the chunk that says w most often ranks first
	x := &Index{cfg: Config{K1: 1.2, B: 0.75, IDFExponent: 1}, cache: map[string]*memColl{"c": got}}
	hits, err := x.keyword(context.Background(), corpus.Query{Collection: "c", Text: "w", K: 1}, 1, false)
	if err != nil || len(hits) != 1 {
		t.Fatal(hits, err)
	}
	// every chunk has w, so the IDF is the floor; the longest wins
	if hits[0].rid != n {
		t.Errorf("best rid %d, want %d", hits[0].rid, n)
	}
}

// TestMaxSlots: a collection with maxSlots chunks or more is refused with
// ETOOLARGE (a posting's slot is 24 bits), from SQLite and from a snapshot,
// and a cached copy that grows to it is dropped rather than searched with
// rows left out.
func TestMaxSlots(t *testing.T) {
	old := maxSlots
	defer func() { maxSlots = old }()
	maxSlots = 4
	f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
	x := f.open(Config{NoSnapshots: true})
	defer x.Close()
	f.put(x, "c", "https://x/a", "one chunk", "two chunks", "three chunks")
	m, err := x.collection(context.Background(), "c")
	if err != nil || m == nil {
		t.Fatal(m, err)
	}
	f.put(x, "c", "https://x/b", "four chunks")
	x.cacheMu.RLock()
	cached := x.cache["c"]
	x.cacheMu.RUnlock()
	if cached != nil {
		t.Error("a copy grown to maxSlots is still cached")
	}
	_, err = x.collection(context.Background(), "c")
	var ke *kgagent.Error
	if !errors.As(err, &ke) || ke.Code != kgagent.ETOOLARGE {
		t.Fatalf("load of %d chunks: %v, want ETOOLARGE", maxSlots, err)
	}
	// a search says so (README: its searches fail with TOO_LARGE), and the
	// chunks stay stored
	_, err = x.Search(context.Background(), corpus.Query{Collection: "c", Text: "chunks", K: 3, Mode: corpus.ModeKeyword})
	if !errors.As(err, &ke) || ke.Code != kgagent.ETOOLARGE {
		t.Errorf("search of %d chunks: %v, want ETOOLARGE", maxSlots, err)
	}
	if got, err := x.DocumentChunks(context.Background(), "c", "https://x/a"); err != nil || len(got) != 3 {
		t.Errorf("stored chunks of the first page: %d, %v; want 3", len(got), err)
	}
	big := newMemColl(4, [3]float32{6, 2, 1})
	for i := range maxSlots + 1 {
		big.add(int64(i+1), "https://x/p", kgagent.Chunk{Text: "w"}, []float32{1, 0, 0, 0})
	}
	if len(big.rids) != maxSlots || !big.needsCompaction() {
		t.Errorf("add past maxSlots: %d slots", len(big.rids))
	}
	maxSlots = 5
	e := &snapfile.Encoder{}
	encodeSnapshot(e, big)
	if _, err := decodeSnapshot(e.B, 4, big.weights); err != nil {
		t.Fatal(err)
	}
	maxSlots = 4
	if _, err := decodeSnapshot(e.B, 4, big.weights); err == nil {
		t.Error("a snapshot of maxSlots rows decoded")
	}
}

// TestMaxSlotsMiscounted: the load refuses a collection whose rows reach
// maxSlots even when its docs table counts fewer (a damaged file): the
// count read first only sizes the copy, and a slot past 24 bits would wrap
// in the postings, ranking the wrong chunks without an error.
func TestMaxSlotsMiscounted(t *testing.T) {
	old := maxSlots
	defer func() { maxSlots = old }()
	f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
	x := f.open(Config{NoSnapshots: true})
	defer x.Close()
	f.put(x, "c", "https://x/a", "one chunk", "two chunks", "three chunks")
	f.put(x, "c", "https://x/b", "four chunks", "five chunks")
	if _, err := x.db.Exec(`UPDATE docs SET n = 1`); err != nil {
		t.Fatal(err)
	}
	x.cacheMu.Lock()
	delete(x.cache, "c")
	x.cacheMu.Unlock()
	maxSlots = 4
	m, err := x.collection(context.Background(), "c")
	var ke *kgagent.Error
	if !errors.As(err, &ke) || ke.Code != kgagent.ETOOLARGE {
		n := -1
		if m != nil {
			n = len(m.rids)
		}
		t.Fatalf("load of 5 chunks counted as 2 with maxSlots 4: %d slots, %v; want ETOOLARGE", n, err)
	}
}

// TestSnapshotPostingsInOrder: a snapshot whose posting list repeats a slot
// or goes back to one is refused (the search copy is then built from
// SQLite): encodeSnapshot writes each list's slots rising, and a repeated
// slot would count its frequency twice in BM25 without an error.
func TestSnapshotPostingsInOrder(t *testing.T) {
	build := func() *memColl {
		m := newMemColl(4, [3]float32{6, 2, 1})
		for i := range 3 {
			m.add(int64(i+1), fmt.Sprintf("https://x/p%d", i), kgagent.Chunk{Title: "t", Text: "w v"}, []float32{1, 0, 0, 0})
		}
		return m
	}
	e := &snapfile.Encoder{}
	encodeSnapshot(e, build())
	if _, err := decodeSnapshot(e.B, 4, [3]float32{6, 2, 1}); err != nil {
		t.Fatalf("a snapshot as written: %v", err)
	}
	for name, damage := range map[string]func(ps []posting) []posting{
		"a slot repeated": func(ps []posting) []posting { return append(ps[:2:2], ps[1]) },
		"a slot going back": func(ps []posting) []posting {
			return []posting{ps[0], ps[2], ps[1]}
		},
	} {
		m := build()
		w, _ := m.all.terms.find("w")
		m.all.lists[w] = damage(m.all.lists[w])
		e := &snapfile.Encoder{}
		encodeSnapshot(e, m)
		if _, err := decodeSnapshot(e.B, 4, m.weights); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// TestScorePagesMatchesScoreList checks hybrid search's branch-free posting
// loops (scorePages, and scoreChunks for the headings) against scoreList, term after term as keywordPages
// runs them: the same chunk sums to the bit, the same slots and pages in
// the same order, the same page term frequencies. The lists have deleted
// slots, frequencies coded wideCode (more distinct ones than codes), terms
// in one slot in ten and in nine in ten, and pages of runs of slots; the
// touched list starts with room and without.
func TestScorePagesMatchesScoreList(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 25))
	for round := range 6 {
		m := newMemColl(2, [3]float32{1, 1, 1})
		slots := 500 + r.IntN(3000)
		page := 0
		for s := range slots {
			if r.IntN(8) == 0 {
				page++
			}
			m.add(int64(s+1), fmt.Sprintf("https://x/%d", page), kgagent.Chunk{Text: "w"}, []float32{1, 0})
		}
		var del []int64
		for s := range slots {
			if r.IntN(9) == 0 {
				del = append(del, int64(s+1))
			}
		}
		m.remove(del)
		fi := &fieldIndex{}
		const terms = 6
		fi.lists = make([][]posting, terms)
		fi.lens = make([]float32, slots)
		for s := range fi.lens {
			fi.lens[s] = 1 + 20*r.Float32()
		}
		for term := range int32(terms) {
			density := []float64{0.1, 0.9, 0.5, 0.02, 1, 0.3}[term]
			for s := range int32(slots) {
				if r.Float64() < density {
					fi.push(term, s, float32(1+r.IntN(400))/4) // > 255 distinct: some wide
				}
			}
		}
		if fi.wide == nil {
			t.Fatal("no posting coded wide")
		}
		nd := len(m.pageURL)
		type state struct {
			acc, ptf       []float32
			touched, pterm []int32
		}
		fresh := func(room int) state {
			return state{make([]float32, slots), make([]float32, nd), make([]int32, 0, room), nil}
		}
		a, b := fresh(0), fresh(slots)
		if round%2 == 1 {
			b = fresh(0)
		}
		for term := range int32(terms) {
			bt := text.NewBM25Term(float32(term+1), 1.2, 0.75, 10)
			ps := fi.lists[term]
			pages := round < 4 // rounds 4 and 5: the headings' ranking, no pages
			a.touched, a.pterm = m.scoreList(fi, term, ps, bt, a.acc, a.ptf, a.touched, a.pterm[:0], nil, pages)
			if pages {
				b.touched, b.pterm = m.scorePages(fi, term, ps, bt, b.acc, b.ptf, b.touched, b.pterm[:0])
			} else {
				b.touched, b.pterm = m.scoreChunks(fi, term, ps, bt, b.acc, b.touched), nil
			}
			if !slices.Equal(a.touched, b.touched) {
				t.Fatalf("round %d term %d: touched %v, want %v", round, term, b.touched, a.touched)
			}
			if !slices.Equal(a.pterm, b.pterm) {
				t.Fatalf("round %d term %d: pages %v, want %v", round, term, b.pterm, a.pterm)
			}
			for s := range a.acc {
				if math.Float32bits(a.acc[s]) != math.Float32bits(b.acc[s]) {
					t.Fatalf("round %d term %d: slot %d sums %v, want %v", round, term, s, b.acc[s], a.acc[s])
				}
			}
			for d := range a.ptf {
				if math.Float32bits(a.ptf[d]) != math.Float32bits(b.ptf[d]) {
					t.Fatalf("round %d term %d: page %d frequency %v, want %v", round, term, d, b.ptf[d], a.ptf[d])
				}
			}
			clear(a.ptf)
			clear(b.ptf)
		}
		if len(a.touched) == 0 {
			t.Fatal("nothing scored")
		}
	}
}
