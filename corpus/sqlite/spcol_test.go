package sqlite

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestSpColBoundaries: a column built slot by slot (push), 64 slots at a
// time (pushWord, as a snapshot is read) and then slot by slot (a write
// after the read), trimmed or not, reads back and adds up as the dense
// column at every size around the bitmap's words and rank blocks, all-zero,
// all-non-zero and mixed, with the extreme int8 values.
func TestSpColBoundaries(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 63, 64, 65, 127, 128, 255, 256, 257, 511, 512, 513, 1000} {
		for _, density := range []int{0, 2, 5} { // fifths non-zero
			dense := make([]int8, n)
			for s := range dense {
				if r.IntN(5) < density {
					for dense[s] == 0 {
						dense[s] = int8(r.IntN(256) - 128)
					}
				}
			}
			if n > 2 && density > 0 {
				dense[0], dense[n-1] = -128, 127
			}
			rows := make([]byte, n)
			for s, v := range dense {
				rows[s] = byte(v)
			}
			nz := 0
			for _, v := range dense {
				if v != 0 {
					nz++
				}
			}
			build := map[string]func() spCol{
				"push": func() spCol {
					var c spCol
					for _, v := range dense {
						c.push(v)
					}
					return c
				},
				"pushWord": func() spCol {
					c := newSpCol(n, nz)
					for lo := 0; lo < n; lo += 64 {
						c.pushWord(rows, 1, 0, lo, min(lo+64, n))
					}
					return c
				},
				"pushWord+push": func() spCol {
					h := n / 2 &^ 63
					c := newSpCol(h, nz)
					for lo := 0; lo < h; lo += 64 {
						c.pushWord(rows, 1, 0, lo, min(lo+64, h))
					}
					for _, v := range dense[h:] {
						c.push(v)
					}
					return c
				},
				"sized": func() spCol {
					c := newSpCol(n, nz)
					for _, v := range dense {
						c.push(v)
					}
					return c
				},
			}
			for name, mk := range build {
				for _, trim := range []bool{false, true} {
					c := mk()
					if trim {
						c.trim()
					}
					checkSpCol(t, fmt.Sprintf("%s n %d density %d trim %v", name, n, density, trim), &c, dense, r, 50)
				}
			}
		}
	}
}

// TestExpandAddMatchesAddTo: the AVX-512 kernel's sums over several sparse
// columns (random densities, the extreme values and weights, an all-zero
// column) equal addTo's, column by column, over blocks that start and end
// inside a bitmap word, on a word, and at the column's end. Skipped where
// the CPU lacks the kernel.
func TestExpandAddMatchesAddTo(t *testing.T) {
	if !hasExpand {
		t.Skip("no AVX-512 VBMI2")
	}
	r := rand.New(rand.NewPCG(7, 8))
	const n = 5000
	var cols []spCol
	for k, density := range []int{0, 1, 3, 5, 7, 9, 10} { // tenths non-zero, kept sparse (no trim)
		c := newSpCol(n, n)
		if c.full != nil {
			c = spCol{bits: []uint64{}, rank: []uint32{}, vals: []int8{}}
		}
		for s := range n {
			var v int8
			if r.IntN(10) < density {
				for v == 0 {
					v = int8(r.IntN(256) - 128)
				}
			}
			if k == 3 && s%97 == 0 {
				v = -128
			}
			c.push(v)
		}
		cols = append(cols, c)
	}
	weights := []int32{127, -128, 1, -1, 55, -7, 100}
	for _, blk := range [][2]int{{0, 64}, {0, 2048}, {1, 2049}, {63, 65}, {64, 128}, {100, 101}, {4000, 5000}, {4990, 5000}, {2047, 4095}, {0, n}} {
		lo, hi := blk[0], blk[1]
		want := make([]int32, hi-lo)
		var cur []expCursor
		for j := range cols {
			cols[j].addTo(want, lo, hi, weights[j])
			cur = append(cur, cols[j].cursor(lo/64, weights[j]))
		}
		wlo, whi := lo/64, (hi+63)/64
		wide := make([]int32, 64*(whi-wlo))
		for i := range wide {
			wide[i] = 12345 // the kernel sets, not adds
		}
		expandAdd(wide, cur)
		got := wide[lo-64*wlo : hi-64*wlo]
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("block %d-%d slot %d: kernel %d, addTo %d", lo, hi, lo+i, got[i], want[i])
			}
		}
		clear(wide)
		expandAdd(wide, nil)
		for i, v := range wide {
			if v != 0 {
				t.Fatalf("no columns: slot %d is %d", i, v)
			}
		}
	}
}
