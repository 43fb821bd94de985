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
