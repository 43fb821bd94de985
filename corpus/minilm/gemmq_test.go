package minilm

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGemmInt8 checks every int8 kernel against the float64 product of
// the same matrices: within the error 8-bit rounding of both sides allows,
// on sizes with partial tiles, strided A and C, nothing written past N or
// past row M (the last rows' tile writes its rows into C itself); and every
// kernel's result equals the portable one's exactly.
func TestGemmInt8(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, sz := range [][3]int{{1, 1, 1}, {3, 5, 7}, {8, 32, 16}, {13, 47, 33}, {17, 384, 64}, {22, 64, 384}, {40, 100, 384}, {9, 64, 1536}} {
		m, n, kk := sz[0], sz[1], sz[2]
		lda, ldc := kk+3, n+5
		a := make([]float32, m*lda)
		w := make([]float32, n*kk)
		bias := make([]float32, n)
		for i := range a {
			a[i] = rng.Float32()*2 - 0.5
		}
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		for i := range bias {
			bias[i] = rng.Float32()
		}
		var p qpacked
		p.quantizeRows(w, n, kk, kk, bias)
		var first []float32
		for _, k := range qkernels() {
			c := make([]float32, (m+qmr)*ldc) // rows past m must stay as they are
			for i := range c {
				c[i] = 99
			}
			var s qscratch
			k.gemm(&s, m, a, lda, &p, c, ldc)
			for i, v := range c[m*ldc:] {
				if v != 99 {
					t.Fatalf("%s %v: wrote C[%d][%d] past row %d", k.name, sz, m+i/ldc, i%ldc, m)
				}
			}
			c = c[:m*ldc]
			for i := 0; i < m; i++ {
				for j := 0; j < ldc; j++ {
					if j >= n {
						if c[i*ldc+j] != 99 {
							t.Fatalf("%s %v: wrote C[%d][%d] past column %d", k.name, sz, i, j, n)
						}
						continue
					}
					var want, mag float64
					for q := 0; q < kk; q++ {
						want += float64(a[i*lda+q]) * float64(w[j*kk+q])
						mag += math.Abs(float64(a[i*lda+q]) * float64(w[j*kk+q]))
					}
					want += float64(bias[j])
					// Each factor is within 1/254 of its row's or column's
					// range of itself: a bound on the sum of the products.
					if d := math.Abs(float64(c[i*ldc+j]) - want); d > 0.02*mag+1e-5 {
						t.Fatalf("%s %v: C[%d][%d] = %g, want %g (|terms| %g)", k.name, sz, i, j, c[i*ldc+j], want, mag)
					}
				}
			}
			if first == nil {
				first = c
			} else if !slices.Equal(first, c) {
				t.Fatalf("%s %v: differs from %s", k.name, sz, qkernels()[0].name)
			}
		}
	}
}

// TestQuantRow: every quantiser gives quantRowGo's bytes, zero point and
// scale, and the bytes reproduce the row within half a step.
func TestQuantRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 15, 16, 17, 384, 1536, 1541} {
		for _, shift := range []float32{-3, 0, 0.5, 4} {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.NormFloat64()) + shift
			}
			x[rng.IntN(n)] = 40 // an outlier, as the encoder's rows have
			want := make([]uint8, n+4)
			var wz int32
			var ws float32
			quantRowGo(x, want, &wz, &ws)
			for i, v := range x {
				if d := math.Abs(float64(ws)*float64(int32(want[i])-wz) - float64(v)); d > float64(ws)/2*1.001+1e-6 {
					t.Fatalf("n %d: x[%d] = %g comes back as %g", n, i, v, ws*float32(int32(want[i])-wz))
				}
			}
			for _, k := range qkernels() {
				got := make([]uint8, n+4)
				for i := range got {
					got[i] = 7
				}
				var z int32
				var s float32
				k.quant(x, got, &z, &s)
				if !slices.Equal(got, want) || z != wz || s != ws {
					t.Fatalf("%s n %d shift %g: quantiser differs from quantRowGo", k.name, n, shift)
				}
			}
		}
	}
	// A constant row, short (the Go path) and of 16 or more (the AVX-512
	// path's own range check).
	for _, k := range qkernels() {
		for _, n := range []int{2, 16, 37} {
			q := make([]uint8, n+1)
			for i := range q {
				q[i] = uint8(i + 1)
			}
			var z int32 = 5
			var s float32 = 5
			k.quant(make([]float32, n), q, &z, &s)
			if !slices.Equal(q, make([]uint8, n+1)) || z != 0 || s != 0 {
				t.Fatalf("%s: zero row of %d gives %v z %d s %g", k.name, n, q, z, s)
			}
		}
	}
}

// TestQTileRows: each kernel's tile of r rows (1 to 8) writes those r rows
// of C and nothing after them, with the values of the portable tile; rows
// of A past r are never read (they hold bytes that would change the result).
func TestQTileRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const k4, lda, ldc = 24, 4*24 + 8, qnr + 3
	a := make([]uint8, qmr*lda)
	b := make([]int8, k4*4*qnr)
	za, sa := make([]int32, qmr), make([]float32, qmr)
	sum, scale, bias := make([]int32, qnr), make([]float32, qnr), make([]float32, qnr)
	for i := range a {
		a[i] = uint8(rng.IntN(256))
	}
	for i := range b {
		b[i] = int8(rng.IntN(255) - 127)
	}
	for i := range za {
		za[i], sa[i] = int32(rng.IntN(256)), rng.Float32()/100
	}
	for j := range sum {
		sum[j], scale[j], bias[j] = int32(rng.IntN(2000)-1000), rng.Float32()/100, rng.Float32()
	}
	for rows := 1; rows <= qmr; rows++ {
		want := make([]float32, qmr*ldc)
		qkernelGo(rows, k4, a, lda, b, want, ldc, za, sa, sum, scale, bias)
		for _, k := range qkernels() {
			// A's rows past rows are not part of this tile: changing
			// them changes nothing.
			a2 := slices.Clone(a)
			for i := rows * lda; i < len(a2); i++ {
				a2[i] ^= 0x5a
			}
			c := make([]float32, qmr*ldc)
			for i := range c {
				c[i] = 99
			}
			k.kernel(rows, k4, a2[:rows*lda], lda, b, c[:(rows-1)*ldc+qnr], ldc, za[:rows], sa[:rows], sum, scale, bias)
			for i := 0; i < qmr; i++ {
				for j := 0; j < ldc; j++ {
					got := c[i*ldc+j]
					switch {
					case i < rows && j < qnr:
						if got != want[i*ldc+j] {
							t.Fatalf("%s rows %d: C[%d][%d] = %g, portable tile %g", k.name, rows, i, j, got, want[i*ldc+j])
						}
					case got != 99:
						t.Fatalf("%s rows %d: wrote C[%d][%d] outside the tile", k.name, rows, i, j)
					}
				}
			}
		}
	}
}
