package sqlite

import (
	"runtime"
	"unsafe"
)

// colArena is one block of memory that a search copy read from its
// snapshot carves its columns' arrays out of (decodeSnapshot), so that they
// lie together in 2 MB-aligned memory the kernel is asked to back with
// transparent huge pages (adviseHuge, Linux; elsewhere nothing is asked).
// The dense rescore reads ~50 columns at each of its ~100 candidates,
// three arrays a column, all over ~45 MB on the OpenJDK API docs: with
// 4 KB pages nearly every read missed the TLB. The block is an ordinary
// Go allocation, so the collector frees it with the copy; its huge-page
// advice is taken back then (MADV_NOHUGEPAGE), so the heap memory it
// leaves is not collapsed into huge pages for later, sparser objects.
// Asking for huge pages over the Go heap's whole range instead (an
// experiment at stop 19) faulted in its free holes: twice the RSS.
type colArena struct {
	buf []byte // the block, from a 2 MB boundary
	off int    // bytes handed out
}

// hugePage is the size of a transparent huge page on amd64 and arm64.
const hugePage = 2 << 20

// arenaAlign is where every array in a colArena starts: a cache line.
const arenaAlign = 64

// arenaSize is the bytes a colArena needs for arrays of the given sizes
// in bytes (each rounded up to arenaAlign).
func arenaSize(sizes ...int) int {
	var n int
	for _, s := range sizes {
		n += (s + arenaAlign - 1) &^ (arenaAlign - 1)
	}
	return n
}

// newColArena returns an arena of size bytes, advised for huge pages.
func newColArena(size int) *colArena {
	raw := make([]byte, size+hugePage)
	start := int(-uintptr(unsafe.Pointer(unsafe.SliceData(raw))) & (hugePage - 1))
	a := &colArena{buf: raw[start : start+size : start+size]}
	if size >= hugePage {
		adviseHuge(a.buf)
		// the advice is dropped when the block is freed; the range is
		// computed now, as the cleanup may not hold the block
		p, n := uintptr(unsafe.Pointer(unsafe.SliceData(a.buf))), len(a.buf)
		runtime.AddCleanup(unsafe.SliceData(raw), func(r [2]uintptr) { unadviseHuge(r[0], int(r[1])) }, [2]uintptr{p, uintptr(n)})
	}
	return a
}

// take returns the next n bytes, at a multiple of arenaAlign.
func (a *colArena) take(n int) []byte {
	b := a.buf[a.off : a.off+n : a.off+n]
	a.off += (n + arenaAlign - 1) &^ (arenaAlign - 1)
	return b
}

// done collapses the filled arena into huge pages where its advice did not
// give them (memory the heap had already faulted in as small pages).
func (a *colArena) done() {
	if len(a.buf) >= hugePage {
		collapseHuge(a.buf)
	}
}

// arenaSlice is an empty slice of T with room for n, from a (T is a
// number type whose size divides arenaAlign).
func arenaSlice[T ~int8 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32](a *colArena, n int) []T {
	var z T
	if n == 0 {
		return nil
	}
	b := a.take(n * int(unsafe.Sizeof(z)))
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)[:0]
}

// slotArrays are the arrays of a search copy, one entry a slot, that
// decodeSnapshot takes from its arena beside the columns: keyword search
// reads docID and lens at every posting, dense search scales, rids and
// docID at its candidates, all at random.
type slotArrays struct {
	rids   []int64
	docID  []int32
	scales []float32
	lens   [2][]float32 // all's, head's
}
