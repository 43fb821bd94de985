package sqlite

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/snapfile"
)

// within says whether the array of n elements of size bytes at p lies in
// b.
func within[T any](s []T, b []byte) bool {
	if cap(s) == 0 {
		return true
	}
	var z T
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= lo && p+uintptr(cap(s))*unsafe.Sizeof(z) <= lo+uintptr(len(b))
}

// outside says whether the array of s shares no byte with b.
func outside[T any](s []T, b []byte) bool {
	if cap(s) == 0 {
		return true
	}
	var z T
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p+uintptr(cap(s))*unsafe.Sizeof(z) <= lo || p >= lo+uintptr(len(b))
}

// TestSnapshotColumnsInArena: a big copy read back from its snapshot holds
// every column's arrays in one 2 MB-aligned arena, each exactly its length
// (no slack, nothing past the arena), and its slot arrays (slotArrays)
// there too, with the columns, slot arrays and dense rankings of the copy
// it was written from; the first write moves them all out of
// the arena into arrays of their own (none left inside it to keep it
// alive), and the copy still ranks as the written one does.
func TestSnapshotColumnsInArena(t *testing.T) {
	const dim, n = 96, 3*colMin + 7
	r := rand.New(rand.NewPCG(5, 6))
	vs := randVecs(n+1, dim)
	for i := range vs {
		switch {
		case i%dim%3 == 0:
			vs[i] = 0.01 + float32(r.IntN(100)) // columns held in full
		case r.IntN(5) >= 2:
			vs[i] = 0
		}
	}
	src := newMemColl(dim, [3]float32{1, 1, 1})
	for i := range n {
		src.add(int64(i+1), "https://a/", kgagent.Chunk{Text: "x"}, vs[i*dim:(i+1)*dim])
	}
	var e snapfile.Encoder
	encodeSnapshot(&e, src)
	m, err := decodeSnapshot(e.B, dim, [3]float32{1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	a := m.arena
	if a == nil {
		t.Fatal("columns read back from a snapshot hold no arena")
	}
	if p := uintptr(unsafe.Pointer(unsafe.SliceData(a.buf))); p%hugePage != 0 {
		t.Errorf("arena at %#x, not on a 2 MB boundary", p)
	}
	if a.off != len(a.buf) {
		t.Errorf("arena of %d bytes, %d handed out", len(a.buf), a.off)
	}
	full := 0
	for j := range m.cols {
		c := &m.cols[j]
		if c.full != nil {
			full++
		}
		if !within(c.full, a.buf) || !within(c.bits, a.buf) || !within(c.rank, a.buf) || !within(c.vals, a.buf) {
			t.Fatalf("column %d has an array outside the arena", j)
		}
		if cap(c.full) != len(c.full) || cap(c.bits) != len(c.bits) || cap(c.rank) != len(c.rank) || cap(c.vals) != len(c.vals) {
			t.Fatalf("column %d has slack: full %d/%d bits %d/%d rank %d/%d vals %d/%d", j,
				len(c.full), cap(c.full), len(c.bits), cap(c.bits), len(c.rank), cap(c.rank), len(c.vals), cap(c.vals))
		}
	}
	if full != dim/3 {
		t.Errorf("%d columns held in full, want %d", full, dim/3)
	}
	slotArrays := func(m *memColl) map[string][2]int {
		return map[string][2]int{"rids": {len(m.rids), cap(m.rids)}, "docID": {len(m.docID), cap(m.docID)},
			"scales": {len(m.scales), cap(m.scales)}, "all.lens": {len(m.all.lens), cap(m.all.lens)}, "head.lens": {len(m.head.lens), cap(m.head.lens)}}
	}
	if !within(m.rids, a.buf) || !within(m.docID, a.buf) || !within(m.scales, a.buf) || !within(m.all.lens, a.buf) || !within(m.head.lens, a.buf) {
		t.Errorf("slot arrays outside the arena: %v", slotArrays(m))
	}
	for name, lc := range slotArrays(m) {
		if lc != [2]int{n, n} {
			t.Errorf("%s: length and capacity %v, want %d", name, lc, n)
		}
	}
	if !slices.Equal(m.rids, src.rids) || !slices.Equal(m.docID, src.docID) || !slices.Equal(m.scales, src.scales) ||
		!slices.Equal(m.all.lens, src.all.lens) || !slices.Equal(m.head.lens, src.head.lens) {
		t.Error("slot arrays differ from the written copy's")
	}
	same := func(label string) {
		t.Helper()
		for j := range m.cols {
			if !slices.Equal(denseCol(&m.cols[j]), denseCol(&src.cols[j])) || !reflect.DeepEqual(m.cols[j].rank, src.cols[j].rank) {
				t.Fatalf("%s: column %d differs from the written copy's", label, j)
			}
		}
		for _, i := range []int{3, 700, n - 1} {
			q, qs := quantize(nil, vs[i*dim:(i+1)*dim])
			if got, want := m.topK(q, qs, 20, "", 0, 1), src.topK(q, qs, 20, "", 0, 1); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: dense ranking %v, want %v", label, got, want)
			}
			if got, want := m.topK(q, qs, 20, "", 1, 0.5), src.topK(q, qs, 20, "", 1, 0.5); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: prefiltered ranking %v, want %v", label, got, want)
			}
		}
	}
	same("read back")
	// a write moves every column out
	for _, c := range []*memColl{m, src} {
		c.add(int64(n+1), "https://b/", kgagent.Chunk{Text: "y"}, vs[n*dim:(n+1)*dim])
	}
	if m.arena != nil {
		t.Error("a write left the columns in their arena")
	}
	for j := range m.cols {
		c := &m.cols[j]
		if !outside(c.full, a.buf) || !outside(c.bits, a.buf) || !outside(c.rank, a.buf) || !outside(c.vals, a.buf) {
			t.Fatalf("column %d still has an array in the arena after a write", j)
		}
	}
	if !outside(m.rids, a.buf) || !outside(m.docID, a.buf) || !outside(m.scales, a.buf) || !outside(m.all.lens, a.buf) || !outside(m.head.lens, a.buf) {
		t.Errorf("slot arrays left in the arena after a write: %v", slotArrays(m))
	}
	if !slices.Equal(m.rids, src.rids) || !slices.Equal(m.docID, src.docID) || !slices.Equal(m.scales, src.scales) ||
		!slices.Equal(m.all.lens, src.all.lens) || !slices.Equal(m.head.lens, src.head.lens) {
		t.Error("slot arrays differ from the written copy's after a write")
	}
	same("after a write")
}

// TestSnapshotPostingsInArena: a big copy read back holds every posting
// list in one arena sized by postingsAhead, back to back in the order they
// are read, each exactly its length, filling the arena exactly; a copy
// too small for it keeps the blocks.
func TestSnapshotPostingsInArena(t *testing.T) {
	defer func(n int) { hugePostingsMin = n }(hugePostingsMin)
	const dim, n = 8, colMin + 100
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"}
	src := newMemColl(dim, [3]float32{3, 2, 1})
	r := rand.New(rand.NewPCG(7, 8))
	vs := randVecs(n, dim)
	for i := range n {
		text := ""
		for range 1 + r.IntN(6) {
			text += words[r.IntN(len(words))] + " "
		}
		src.add(int64(i+1), "https://a/"+words[i%len(words)], kgagent.Chunk{Title: words[r.IntN(len(words))], HeadingPath: []string{words[i%3]}, Text: text}, vs[i*dim:(i+1)*dim])
	}
	var e snapfile.Encoder
	encodeSnapshot(&e, src)
	for _, min := range []int{1, 1 << 30} {
		hugePostingsMin = min
		m, err := decodeSnapshot(e.B, dim, src.weights)
		if err != nil {
			t.Fatal(err)
		}
		if min > 1 {
			if m.postings != nil {
				t.Error("a small copy's postings in an arena")
			}
			continue
		}
		if m.postings == nil {
			t.Fatal("no posting arena")
		}
		buf := m.postings.buf
		end := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
		for _, fi := range []*fieldIndex{&m.all, &m.head} {
			for i, ps := range fi.lists {
				if cap(ps) != len(ps) || !within(ps, buf) {
					t.Fatalf("list %d: %d postings, room for %d, in the arena %v", i, len(ps), cap(ps), within(ps, buf))
				}
				if p := uintptr(unsafe.Pointer(unsafe.SliceData(ps))); len(ps) > 0 && p != end {
					t.Fatalf("list %d at %#x, not after the one before (%#x)", i, p, end)
				}
				end += 4 * uintptr(len(ps))
			}
		}
		if start := uintptr(unsafe.Pointer(unsafe.SliceData(buf))); end != start+uintptr(len(buf)) {
			t.Errorf("lists fill %d of the arena's %d bytes", end-start, len(buf))
		}
	}
}
