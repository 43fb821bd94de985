package sqlite

import (
	"hash/maphash"
	"unsafe"
)

// termTable is a field index's terms, numbered in the order they were
// added, with no Go string or map entry a term: their bytes end to end in
// one slab, each term's end, and an open-addressing hash of their numbers.
// A map[string][]posting took ~40 bytes a term besides its letters and
// slack, all of it scanned by the collector (~9 MB of the OpenJDK API
// docs' search copies); the table takes 12, none of them a pointer.
type termTable struct {
	slab  []byte
	ends  []uint32 // term i is slab[ends[i-1]:ends[i]]
	slots []int32  // term number + 1 at its hash (probing onwards), 0 empty; a power of two long
}

// termSeed hashes terms; within one process, as a table lives.
var termSeed = maphash.MakeSeed()

// len is how many terms the table holds.
func (t *termTable) len() int { return len(t.ends) }

// term is term i. It aliases the slab: keep it only while the table is
// not added to (a later add may move the slab; the old one stays alive
// while the string does, so this is about memory, not safety).
func (t *termTable) term(i int32) string {
	lo := uint32(0)
	if i > 0 {
		lo = t.ends[i-1]
	}
	hi := t.ends[i]
	if hi == lo {
		return ""
	}
	return unsafe.String(&t.slab[lo], int(hi-lo))
}

// find is the number of term s.
func (t *termTable) find(s string) (int32, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	mask := uint64(len(t.slots) - 1)
	for h := maphash.String(termSeed, s) & mask; ; h = (h + 1) & mask {
		v := t.slots[h]
		if v == 0 {
			return 0, false
		}
		if t.term(v-1) == s {
			return v - 1, true
		}
	}
}

// add copies s, which the table does not hold, into it and returns its
// number.
func (t *termTable) add(s string) int32 {
	if 2*(len(t.ends)+1) > len(t.slots) {
		t.rehash(max(64, 2*len(t.slots)))
	}
	t.slab = append(t.slab, s...)
	t.ends = append(t.ends, uint32(len(t.slab)))
	i := int32(len(t.ends) - 1)
	t.place(i)
	return i
}

// reserve sizes the table for n terms in all.
func (t *termTable) reserve(n int) {
	size := 64
	for size < 2*n {
		size *= 2
	}
	if size > len(t.slots) {
		t.rehash(size)
	}
	if cap(t.ends) < n {
		t.ends = append(make([]uint32, 0, n), t.ends...)
	}
}

// shrink drops the growth slack of the slab and the ends.
func (t *termTable) shrink() {
	if cap(t.slab) > len(t.slab) {
		t.slab = append(make([]byte, 0, len(t.slab)), t.slab...)
	}
	if cap(t.ends) > len(t.ends) {
		t.ends = append(make([]uint32, 0, len(t.ends)), t.ends...)
	}
}

func (t *termTable) rehash(size int) {
	t.slots = make([]int32, size)
	for i := range t.ends {
		t.place(int32(i))
	}
}

// place puts term i at the first free slot from its hash.
func (t *termTable) place(i int32) {
	mask := uint64(len(t.slots) - 1)
	h := maphash.String(termSeed, t.term(i)) & mask
	for t.slots[h] != 0 {
		h = (h + 1) & mask
	}
	t.slots[h] = i + 1
}
