package sqlite

import (
	"math/bits"
	"unsafe"
)

// spCol is one dimension of a big collection's vectors (memColl.cols), its
// slots in order and only the non-zero values held: a bitmap of which slots
// have one, the values themselves, and a count of the values before every
// rankWords-th word of the bitmap. The lexical embedder's chunk vectors are
// 40% non-zero after quantisation (OpenJDK API docs), so a column takes
// ~0.56 bytes a slot instead of one, and a scan reads less memory. The
// values and their sums are the dense column's: every score is the same.
// A column mostly non-zero (a dense model's vectors) is held as it is, in
// full: the bitmap would only add to it.
type spCol struct {
	full []int8   // every slot's value, when the column is held in full (then bits, rank and vals are unused)
	bits []uint64 // bit s%64 of bits[s/64] is set when slot s's value is not 0
	rank []uint32 // rank[i]: how many values the slots below i*64*rankWords hold
	vals []int8   // the non-zero values, by slot
	n    int      // slots
}

// rankWords is how many bitmap words one rank entry covers.
const rankWords = 4

// fullAt says whether a column of n slots with nz non-zero values is held
// in full: from 7/8 non-zero on (a bitmap takes an eighth of a byte a slot).
func fullAt(n, nz int) bool { return 8*nz > 7*n }

// spColLens are the lengths of the arrays of a column of n slots holding
// nz values: held in full (fullAt), full's; else bits', rank's and vals'.
// newSpCol, spColSize and newSpColIn size a column by them.
func spColLens(n, nz int) (full bool, bits, rank, vals int) {
	if fullAt(n, nz) {
		return true, 0, 0, n
	}
	w := (n + 63) / 64
	return false, w, (w + rankWords - 1) / rankWords, nz
}

// newSpCol returns an empty column with room for n slots holding nz values
// (held in full when that is smaller).
func newSpCol(n, nz int) spCol {
	full, bits, rank, vals := spColLens(n, nz)
	if full {
		return spCol{full: make([]int8, 0, vals)}
	}
	return spCol{bits: make([]uint64, 0, bits), rank: make([]uint32, 0, rank), vals: make([]int8, 0, vals)}
}

// spColSize is the bytes of a column newSpCol(n, nz) returns, as the
// arena sizes for newSpColIn.
func spColSize(n, nz int) []int {
	full, bits, rank, vals := spColLens(n, nz)
	if full {
		return []int{vals}
	}
	return []int{8 * bits, 4 * rank, vals}
}

// newSpColIn is newSpCol with the column's arrays taken from a, each with
// room for exactly n slots and nz values: filled, a column holds no slack,
// and a later push moves the array it grows out of a (memColl.ownArena).
func newSpColIn(a *colArena, n, nz int) spCol {
	full, bits, rank, vals := spColLens(n, nz)
	if full {
		return spCol{full: arenaSlice[int8](a, vals)}
	}
	return spCol{bits: arenaSlice[uint64](a, bits), rank: arenaSlice[uint32](a, rank), vals: arenaSlice[int8](a, vals)}
}

// own moves c's arrays out of the arena they were taken from into arrays
// of its own, with room to grow by a quarter.
func (c *spCol) own() {
	c.full = grown(c.full)
	c.bits = grown(c.bits)
	c.rank = grown(c.rank)
	c.vals = grown(c.vals)
}

// grown is a copy of s with room for a quarter more; nil for nil.
func grown[T int8 | uint32 | uint64](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)+len(s)/4+1), s...)
}

// push appends the next slot's value.
func (c *spCol) push(x int8) {
	if c.full != nil {
		c.full = append(c.full, x)
		c.n++
		return
	}
	s := c.n
	if s%64 == 0 {
		if s%(64*rankWords) == 0 {
			c.rank = append(c.rank, uint32(len(c.vals)))
		}
		c.bits = append(c.bits, 0)
	}
	if x != 0 {
		c.bits[s/64] |= 1 << (s % 64)
		c.vals = append(c.vals, x)
	}
	c.n++
}

// pushWord appends slots lo..hi-1 (lo is n and a multiple of 64, hi-lo at
// most 64), slot s's value being rows[s*dim+j]: push for a word at a time.
func (c *spCol) pushWord(rows []byte, dim, j, lo, hi int) {
	if c.full != nil {
		for s := lo; s < hi; s++ {
			c.full = append(c.full, int8(rows[s*dim+j]))
		}
		c.n = hi
		return
	}
	if lo%(64*rankWords) == 0 {
		c.rank = append(c.rank, uint32(len(c.vals)))
	}
	var w uint64
	for s := lo; s < hi; s++ {
		if v := rows[s*dim+j]; v != 0 {
			w |= 1 << (s - lo)
			c.vals = append(c.vals, int8(v))
		}
	}
	c.bits = append(c.bits, w)
	c.n = hi
}

// before is how many values the slots below s hold (s <= n).
func (c *spCol) before(s int) int {
	if s >= c.n {
		return len(c.vals)
	}
	w := s / 64
	r := int(c.rank[w/rankWords])
	for i := w &^ (rankWords - 1); i < w; i++ {
		r += bits.OnesCount64(c.bits[i])
	}
	return r + bits.OnesCount64(c.bits[w]&(1<<(s%64)-1))
}

// at is slot s's value.
func (c *spCol) at(s int) int8 {
	if c.full != nil {
		return c.full[s]
	}
	if c.bits[s/64]>>(s%64)&1 == 0 {
		return 0
	}
	return c.vals[c.before(s)]
}

// addTo adds w times the values of slots lo..hi-1 to a[0..hi-lo-1].
func (c *spCol) addTo(a []int32, lo, hi int, w int32) {
	if lo >= hi {
		return
	}
	if c.full != nil {
		col := c.full[lo:hi]
		a = a[:len(col)]
		for i, x := range col {
			a[i] += w * int32(x)
		}
		return
	}
	k := c.before(lo)
	vals := c.vals
	for wi := lo / 64; wi*64 < hi; wi++ {
		b := c.bits[wi]
		base := wi*64 - lo
		if base < 0 {
			b &= ^uint64(0) << (lo % 64) // the slots below lo
		}
		if rest := hi - wi*64; rest < 64 {
			b &= 1<<rest - 1 // the slots from hi on
		}
		for b != 0 {
			i := bits.TrailingZeros64(b)
			a[base+i] += w * int32(vals[k])
			k++
			b &= b - 1
		}
	}
}

// trim drops the growth slack of the values, and holds the column in full
// when that is smaller.
func (c *spCol) trim() {
	if c.full == nil && c.n > 0 && fullAt(c.n, len(c.vals)) {
		full := make([]int8, c.n)
		for s := range full {
			full[s] = c.at(s)
		}
		*c = spCol{full: full, n: c.n}
		return
	}
	if cap(c.full)-len(c.full) > len(c.full)/16 {
		c.full = append(make([]int8, 0, len(c.full)), c.full...)
	}
	if cap(c.vals)-len(c.vals) > len(c.vals)/16 {
		c.vals = append(make([]int8, 0, len(c.vals)), c.vals...)
	}
}

// bytes is how much memory c holds.
func (c *spCol) bytes() int { return cap(c.full) + 8*cap(c.bits) + 4*cap(c.rank) + cap(c.vals) }

// expCursor is a sparse column's place in a block of a column scan for
// the AVX-512 kernel (expandAddAsm): the address of its bitmap word where
// the block starts, of the value of the first slot from there that holds
// one (the kernel advances it), and the query's weight on the column. The
// addresses are into the column's own arrays, which the search copy
// keeps alive while it is read.
type expCursor struct {
	bits uintptr
	vals uintptr
	w    int64
}

// cursor is c's expCursor from bitmap word wi on, with weight w (c sparse,
// wi below its word count).
func (c *spCol) cursor(wi int, w int32) expCursor {
	return expCursor{
		bits: uintptr(unsafe.Pointer(&c.bits[wi])),
		vals: uintptr(unsafe.Pointer(unsafe.SliceData(c.vals))) + uintptr(c.before(wi*64)),
		w:    int64(w),
	}
}

// allOnes is the bitmap of a column held in full for the kernel: every
// slot of a block's words holds a value (a block spans at most
// colBlock/64+1 words). It is a global: the cursors hold its address as a
// uintptr, which a goroutine's stack, moved when it grows, would outdate.
var allOnes = func() (a [colBlock/64 + 2]uint64) {
	for i := range a {
		a[i] = ^uint64(0)
	}
	return a
}()

// fullCursor is the expCursor of a column held in full (values full) from
// word wi on, with weight w: its bitmap all ones, so the kernel reads its
// values 64 at a time as a sparse column's, and its sums are those of
// addTo. The block's words must be whole in full (64 times the block's
// last word at most len(full)) and at most len(allOnes).
func fullCursor(full []int8, wi int, w int32) expCursor {
	return expCursor{
		bits: uintptr(unsafe.Pointer(&allOnes[0])),
		vals: uintptr(unsafe.Pointer(&full[64*wi])),
		w:    int64(w),
	}
}

// expandAdd sets out[i] to the sum over cols of w times the value of slot
// 64*wlo+i, for i below len(out) (a multiple of 64; every column sparse and
// holding those slots' words). It is addTo for many columns at once, with
// the AVX-512 kernel where the CPU has it (hasExpand): VPEXPANDB spreads a
// bitmap word's values to their 64 slots, which are widened, multiplied
// and summed in registers, so the sums are the same integers.
func expandAdd(out []int32, cur []expCursor) {
	if len(cur) == 0 {
		clear(out)
		return
	}
	expandAddAsm(out, cur)
}
