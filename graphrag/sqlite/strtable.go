package sqlite

import (
	"hash/maphash"
	"math"
	"unsafe"
)

// strTable is a list of strings held as one byte slice and their end
// offsets: no Go string header and no allocation per string (the name index
// of a 10,000-page corpus holds over a million strings, and each Go string
// costs 16 bytes of header plus its allocation's rounding).
type strTable struct {
	b   []byte
	end []uint32 // string i is b[end[i-1]:end[i]] (b[:end[0]] for i 0)
}

// maxTableBytes is the most bytes a strTable may hold: its end offsets are
// uint32, and past 4 GiB they would wrap (wrong strings handed out, reads
// past the table). A collection whose triples' strings need more gets an
// index of its entities alone (as above maxIndexedTriples), one whose
// entities' strings do gets none (SQL answers it), and a snapshot holding
// such a table is refused. A variable so that a test can lower it.
var maxTableBytes int64 = math.MaxUint32

// tooBig reports whether t holds more than maxTableBytes.
func (t *strTable) tooBig() bool { return int64(len(t.b)) > maxTableBytes }

// newStrTable returns a table with room for n strings of size bytes in all.
func newStrTable(n, size int) strTable {
	return strTable{b: make([]byte, 0, size), end: make([]uint32, 0, n)}
}

// add appends s and returns its index.
func (t *strTable) add(s string) int32 {
	t.b = append(t.b, s...)
	t.end = append(t.end, uint32(len(t.b)))
	return int32(len(t.end) - 1)
}

// addBytes appends p and returns its index.
func (t *strTable) addBytes(p []byte) int32 {
	t.b = append(t.b, p...)
	t.end = append(t.end, uint32(len(t.b)))
	return int32(len(t.end) - 1)
}

// len is how many strings t holds.
func (t *strTable) len() int { return len(t.end) }

// at is string i, aliasing the table's bytes: for lookups and comparisons
// within the index only. A string handed out of the index is a copy, so
// that nothing a caller keeps holds a whole table alive.
func (t *strTable) at(i int32) string {
	lo := uint32(0)
	if i > 0 {
		lo = t.end[i-1]
	}
	hi := t.end[i]
	if lo == hi {
		return ""
	}
	return unsafe.String(&t.b[lo], hi-lo)
}

// trim drops the table's growth slack when it is more than an eighth.
func (t *strTable) trim() {
	if cap(t.b)-len(t.b) > len(t.b)/8 {
		t.b = append(make([]byte, 0, len(t.b)), t.b...)
	}
	if cap(t.end)-len(t.end) > len(t.end)/8 {
		t.end = append(make([]uint32, 0, len(t.end)), t.end...)
	}
}

// bytes is how much memory t holds.
func (t *strTable) bytes() int { return cap(t.b) + 4*cap(t.end) }

// strFinder finds a string's index in a strTable: an open-addressing table
// of indexes, no copy of the strings (a map[string]int32 over the OpenJDK
// API docs' 695k triple strings would cost ~40 MB more while an index is
// built, at the end of an ingest).
type strFinder struct {
	t     *strTable
	slots []int32 // 1 + a string's index; 0 is empty
	seed  maphash.Seed
}

// newStrFinder indexes every string of t (of equal strings, find returns
// the first: it lies earlier on their probe sequence). t must not change
// while the hash is used, but by add.
func newStrFinder(t *strTable) strFinder {
	n := 8
	for n < 2*t.len() {
		n <<= 1
	}
	h := strFinder{t: t, seed: maphash.MakeSeed()}
	h.rehash(n)
	return h
}

// find returns the index of s in the table.
func (h *strFinder) find(s string) (int32, bool) {
	m := uint64(len(h.slots) - 1)
	for j := maphash.String(h.seed, s) & m; ; j = (j + 1) & m {
		k := h.slots[j]
		if k == 0 {
			return 0, false
		}
		if h.t.at(k-1) == s {
			return k - 1, true
		}
	}
}

// add appends s to the table unless it holds it, and returns its index:
// the finder then grows with its table (a table it was made for empty),
// doubling its slots when they are half full. It is what refBuilder keeps
// the strings of an index's extra table by: a map[string]int32 of them
// cost ~50 bytes a string and kept every earlier copy of the growing table
// alive through its keys, ~600 MB of heap at the peak of building the
// entities-only index of 930k entities (1.64M strings, issue 25).
func (h *strFinder) add(s string) int32 {
	if k, ok := h.find(s); ok {
		return k
	}
	k := h.t.add(s)
	if 2*h.t.len() > len(h.slots) {
		h.rehash(2 * len(h.slots))
	} else {
		h.put(k)
	}
	return k
}

// put places string k of the table in its slot.
func (h *strFinder) put(k int32) {
	m := uint64(len(h.slots) - 1)
	for j := maphash.String(h.seed, h.t.at(k)) & m; ; j = (j + 1) & m {
		if h.slots[j] == 0 {
			h.slots[j] = k + 1
			return
		}
	}
}

// rehash places every string of the table in n slots (a power of two).
func (h *strFinder) rehash(n int) {
	h.slots = make([]int32, n)
	for k := range int32(h.t.len()) {
		h.put(k)
	}
}
