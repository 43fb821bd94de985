package sqlite

import (
	"math"
	"sort"
	"strings"
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
// past the table). A collection whose strings need more gets no name index
// (SQL answers it, as above maxIndexedTriples), and a snapshot holding such
// a table is refused. A variable so that a test can lower it.
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
// within the index only. A string handed out of the index is str's copy, so
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

// str is a copy of string i.
func (t *strTable) str(i int32) string { return strings.Clone(t.at(i)) }

// trim drops the table's growth slack when it is more than an eighth.
func (t *strTable) trim() {
	if cap(t.b)-len(t.b) > len(t.b)/8 {
		t.b = append(make([]byte, 0, len(t.b)), t.b...)
	}
	if cap(t.end)-len(t.end) > len(t.end)/8 {
		t.end = append(make([]uint32, 0, len(t.end)), t.end...)
	}
}

// search returns the first index i of the sorted table whose string is not
// less than s.
func (t *strTable) search(s string) int {
	return sort.Search(t.len(), func(i int) bool { return t.at(int32(i)) >= s })
}

// bytes is how much memory t holds.
func (t *strTable) bytes() int { return cap(t.b) + 4*cap(t.end) }
