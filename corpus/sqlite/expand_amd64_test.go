package sqlite

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/kgagent/kgagent"
)

// TestColumnScanExactWithoutKernel runs TestColumnScanExact's checks with
// the AVX-512 kernel switched off: on a CPU that has it (this package's
// usual test boxes) the Go loop that every other CPU runs was otherwise
// never tested.
func TestColumnScanExactWithoutKernel(t *testing.T) {
	defer func(old bool) { hasExpand = old }(hasExpand)
	hasExpand = false
	testColumnScanExact(t, 5000)
}

// The kernel sums the columns held in full too (their bitmap all ones,
// fullCursor), but for a block holding part of such a column's last word:
// on a collection of sparse and full columns whose slot count is not a
// multiple of 64, scanned by several workers (so blocks start inside a
// word) with and without the kernel, every live row's column-scan score
// is its one-pass dot product, for queries over full columns alone, over
// fewer than four of them with sparse ones (the Go loop's leftovers), and
// over every dimension.
func TestColumnScanFullColumns(t *testing.T) {
	const dim = 40
	r := rand.New(rand.NewPCG(51, 52))
	n := 2*parallelMin + 37
	m := newMemColl(dim, [3]float32{1, 1, 1})
	v := make([]float32, dim)
	for i := range n {
		for j := range v {
			v[j] = 0
			// dimensions below 12 are non-zero in every row
			if j < 12 || r.IntN(3) == 0 {
				v[j] = r.Float32() - 0.5
				for v[j] == 0 || math.Abs(float64(v[j])) < 0.01 {
					v[j] = r.Float32() - 0.5
				}
			}
		}
		v[dim-1] = 1 // quantises to 127: the others stay non-zero
		m.add(int64(i+1), fmt.Sprintf("https://h/%d", i/9), kgagent.Chunk{Text: "w"}, v)
	}
	m.compact()
	var del []int64
	for i := 0; i < n; i += 17 {
		del = append(del, int64(i+1))
	}
	m.remove(del)
	nfull := 0
	for j := range m.cols {
		if m.cols[j].full != nil {
			nfull++
		}
	}
	if !m.byCol || nfull < 12 || nfull == dim {
		t.Fatalf("by column %v, %d of %d columns held in full", m.byCol, nfull, dim)
	}
	expandKernel := hasExpand
	defer func(old bool) { hasExpand = old }(hasExpand)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	row := make([]int8, dim)
	for _, dims := range [][]int{{0, 1, 2, 3, 4, 5, 6}, {3, 20, 9, 33}, {1, 2, 4, 30, 31, 38}, nil} {
		q := make([]int8, dim)
		if dims == nil {
			for j := range q {
				dims = append(dims, j)
			}
		}
		for _, j := range dims {
			q[j] = int8(r.IntN(255) - 127)
		}
		want := map[int64]float64{}
		for s := range m.rids {
			if m.doc(s) != "" {
				want[m.rids[s]] = float64(DotInt8(q, m.rowOf(s, row))) * float64(0.01*m.scales[s])
			}
		}
		for _, kernel := range []bool{false, true} {
			hasExpand = kernel && expandKernel
			for _, procs := range []int{1, 2, 3} {
				runtime.GOMAXPROCS(procs)
				got := m.colScan(q, dims, 0.01, len(m.rids), "")
				if len(got) != len(want) {
					t.Fatalf("dims %v, kernel %v, %d workers: %d rows, want %d", dims, hasExpand, procs, len(got), len(want))
				}
				for _, g := range got {
					if g.score != want[g.rid] {
						t.Fatalf("dims %v, kernel %v, %d workers: row %d scores %v, want %v", dims, hasExpand, procs, g.rid, g.score, want[g.rid])
					}
				}
			}
		}
	}
}
