package sqlite

import (
	"hash/maphash"
	"unsafe"
)

// strIDs is every string of strs by id, for a bulk load's writer whose
// cache is complete (strCache): the strings' bytes in chunks, id order, and
// an open-addressing table from a string's hash to its id. It replaces a
// map[string]int64 there: no Go string per entry (the map held a header, a
// key allocation and ~30 bytes of slot each, all scanned by every
// collection), and no cap at 2^18 strings, past which the OpenJDK API docs'
// load (728k strings, 44.7 MB) looked every string of every later page up
// in SQL (~12 of its ~90 CPU-s). Ids run from 1 (the first string added)
// without gaps, as a complete cache gives them.
//
// Strings added since the last commit are the uncommitted ones; rollback
// drops them (the slots are rebuilt: rollbacks are rare).
type strIDs struct {
	chunks [][]byte // strings' bytes; a string never spans two chunks
	// at is each string's chunk and offset (chunk<<strChunkBits | offset);
	// its end is the next string's start in the same chunk, or the
	// chunk's end.
	at        []uint32
	slots     []int32 // 1 + index into at; 0 is empty
	bytes     int     // string bytes held
	committed int     // len(at) at the last commit
}

// strChunkBits sizes the chunks (1 MiB); a longer string gets a chunk of its
// own.
const strChunkBits = 20

// maxStrChunks bounds the chunks so that at's chunk numbers fit: 4 GiB of
// 1 MiB chunks.
const maxStrChunks = 1 << (32 - strChunkBits)

// strSeed seeds every strIDs' hash, so that a string's hash can be found
// before it is looked up (docPlan: in the goroutine of the page's write,
// beside the single writer).
var strSeed = maphash.MakeSeed()

// strIDsHash is the hash strIDs finds s by.
func strIDsHash(s string) uint64 { return maphash.String(strSeed, s) }

// newStrIDs returns an empty table.
func newStrIDs() *strIDs {
	return &strIDs{slots: make([]int32, 1024)}
}

// len is how many strings t holds (the largest id).
func (t *strIDs) len() int { return len(t.at) }

// str returns the string of id, aliasing t's bytes (valid while t is), and
// whether t holds it.
func (t *strIDs) str(id int64) (string, bool) {
	if id < 1 || id > int64(len(t.at)) {
		return "", false
	}
	k := id - 1
	a := t.at[k]
	c := a >> strChunkBits
	lo := a & (1<<strChunkBits - 1)
	hi := uint32(len(t.chunks[c]))
	if k+1 < int64(len(t.at)) && t.at[k+1]>>strChunkBits == c {
		hi = t.at[k+1] & (1<<strChunkBits - 1)
	}
	if lo == hi {
		return "", true
	}
	return unsafe.String(&t.chunks[c][lo], hi-lo), true
}

// get returns the id of s, if t holds it.
func (t *strIDs) get(s string) (int64, bool) { return t.getHash(s, strIDsHash(s)) }

// getHash is get with s's hash (strIDsHash).
func (t *strIDs) getHash(s string, h uint64) (int64, bool) {
	m := uint64(len(t.slots) - 1)
	for j := h & m; ; j = (j + 1) & m {
		k := t.slots[j]
		if k == 0 {
			return 0, false
		}
		if got, _ := t.str(int64(k)); got == s {
			return int64(k), true
		}
	}
}

// fits reports whether t can add s (its chunk numbers and int32 ids are
// bounded).
func (t *strIDs) fits(s string) bool {
	return len(t.chunks) < maxStrChunks-1 && len(t.at) < 1<<31-2 && len(s) < 1<<31
}

// add appends s, which t must not hold and must fit, and returns its id.
func (t *strIDs) add(s string) int64 { return t.addHash(s, strIDsHash(s)) }

// addHash is add with s's hash (strIDsHash).
func (t *strIDs) addHash(s string, h uint64) int64 {
	n := len(t.chunks)
	if n == 0 || len(t.chunks[n-1])+len(s) > cap(t.chunks[n-1]) || len(t.chunks[n-1]) >= 1<<strChunkBits {
		t.chunks = append(t.chunks, make([]byte, 0, max(1<<strChunkBits, len(s))))
		n++
	}
	c := &t.chunks[n-1]
	t.at = append(t.at, uint32(n-1)<<strChunkBits|uint32(len(*c)))
	*c = append(*c, s...)
	t.bytes += len(s)
	if 2*len(t.at) > len(t.slots) {
		t.rehash(2 * len(t.slots))
	} else {
		t.placeHash(int32(len(t.at)), h)
	}
	return int64(len(t.at))
}

// place puts id in its slot.
func (t *strIDs) place(id int32) {
	s, _ := t.str(int64(id))
	t.placeHash(id, strIDsHash(s))
}

// placeHash puts id, whose string's hash is h, in its slot.
func (t *strIDs) placeHash(id int32, h uint64) {
	m := uint64(len(t.slots) - 1)
	j := h & m
	for t.slots[j] != 0 {
		j = (j + 1) & m
	}
	t.slots[j] = id
}

// rehash rebuilds the slots, n of them (a power of two), for every string.
func (t *strIDs) rehash(n int) {
	t.slots = make([]int32, n)
	for id := range int32(len(t.at)) {
		t.place(id + 1)
	}
}

// commit keeps the strings added so far.
func (t *strIDs) commit() { t.committed = len(t.at) }

// rollback drops the strings added since the last commit.
func (t *strIDs) rollback() {
	if len(t.at) == t.committed {
		return
	}
	for len(t.at) > t.committed {
		k := len(t.at) - 1
		s, _ := t.str(int64(k + 1))
		t.bytes -= len(s)
		c := t.at[k] >> strChunkBits
		t.chunks[c] = t.chunks[c][:t.at[k]&(1<<strChunkBits-1)]
		t.at = t.at[:k]
	}
	for len(t.chunks) > 0 && len(t.chunks[len(t.chunks)-1]) == 0 &&
		(len(t.at) == 0 || int(t.at[len(t.at)-1]>>strChunkBits) < len(t.chunks)-1) {
		t.chunks = t.chunks[:len(t.chunks)-1]
	}
	t.rehash(len(t.slots))
}

// memory is about how many bytes t holds.
func (t *strIDs) memory() int {
	n := 4*cap(t.at) + 4*len(t.slots)
	for _, c := range t.chunks {
		n += cap(c)
	}
	return n
}
