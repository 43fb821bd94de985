package minilm

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGemm checks every kernel against a plain triple loop, on sizes that
// leave partial tiles in both directions, with A and C rows strided.
func TestGemm(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range kernels() {
		for _, sz := range [][3]int{{1, 1, 1}, {3, 5, 7}, {8, 32, 16}, {13, 47, 33}, {17, 384, 64}, {40, 100, 384}} {
			m, n, kk := sz[0], sz[1], sz[2]
			lda, ldc := kk+3, n+5
			a := make([]float32, m*lda)
			w := make([]float32, n*kk) // [n, k] as a Linear weight
			bias := make([]float32, n)
			for i := range a {
				a[i] = rng.Float32()*2 - 1
			}
			for i := range w {
				w[i] = rng.Float32()*2 - 1
			}
			for i := range bias {
				bias[i] = rng.Float32()
			}
			c := make([]float32, m*ldc)
			for i := range c {
				c[i] = 99 // outside the result: must stay
			}
			var p packed
			p.packRows(w, n, kk, kk, k.nr)
			var s gemmScratch
			k.gemm(&s, m, a, lda, &p, c, ldc, bias)
			// The same product with B given as [k, n] (packCols).
			wt := make([]float32, kk*n)
			for i := 0; i < n; i++ {
				for j := 0; j < kk; j++ {
					wt[j*n+i] = w[i*kk+j]
				}
			}
			var p2 packed
			p2.packCols(wt, kk, n, n, k.nr)
			c2 := make([]float32, m*ldc)
			k.gemm(&s, m, a, lda, &p2, c2, ldc, nil)
			for i := 0; i < m; i++ {
				for j := 0; j < ldc; j++ {
					if j >= n {
						if c[i*ldc+j] != 99 {
							t.Fatalf("%s %v: wrote C[%d][%d] past column %d", k.name, sz, i, j, n)
						}
						continue
					}
					var want float64
					for q := 0; q < kk; q++ {
						want += float64(a[i*lda+q]) * float64(w[j*kk+q])
					}
					if d := math.Abs(float64(c[i*ldc+j]) - want - float64(bias[j])); d > 1e-4*math.Sqrt(float64(kk)) {
						t.Fatalf("%s %v: C[%d][%d] = %g, want %g", k.name, sz, i, j, c[i*ldc+j], want+float64(bias[j]))
					}
					if d := math.Abs(float64(c2[i*ldc+j]) - want); d > 1e-4*math.Sqrt(float64(kk)) {
						t.Fatalf("%s %v packCols: C[%d][%d] = %g, want %g", k.name, sz, i, j, c2[i*ldc+j], want)
					}
				}
			}
		}
	}
}

func TestErfExp(t *testing.T) {
	var worstErf, worstExp float64
	for x := -6.0; x <= 6; x += 0.0007 {
		worstErf = max(worstErf, math.Abs(float64(erff(float32(x)))-math.Erf(x)))
	}
	for x := -80.0; x <= 80; x += 0.013 {
		want := math.Exp(float64(float32(x)))
		worstExp = max(worstExp, math.Abs(float64(expf(float32(x)))-want)/want)
	}
	if worstErf > 2e-6 {
		t.Errorf("erff: worst absolute error %g", worstErf)
	}
	if worstExp > 1e-6 {
		t.Errorf("expf: worst relative error %g", worstExp)
	}
	if expf(-100) != 0 || !math.IsInf(float64(expf(100)), 1) {
		t.Errorf("expf out of range: %g %g", expf(-100), expf(100))
	}
}

// TestVectorMath checks softmax and GELU, each implementation this CPU
// runs, against float64 math, on lengths with and without a tail.
func TestVectorMath(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, v := range vecImpls() {
		for _, n := range []int{1, 7, 8, 16, 33, 256, 1000} {
			x := make([]float32, n)
			for i := range x {
				x[i] = rng.Float32()*40 - 30
			}
			x[n/2] = -200 // far below the row's max: underflows to 0
			sm := append([]float32(nil), x...)
			inv := 1 / v.expRow(sm)
			mx := math.Inf(-1)
			for _, e := range x {
				mx = max(mx, float64(e))
			}
			var sum float64
			for _, e := range x {
				sum += math.Exp(float64(e) - mx)
			}
			for i, e := range x {
				want := math.Exp(float64(e)-mx) / sum
				if d := math.Abs(float64(sm[i]*inv) - want); d > 1e-6*want+1e-12 {
					t.Fatalf("%s softmax n=%d [%d] = %g, want %g", v.name, n, i, sm[i]*inv, want)
				}
			}
			g := make([]float32, n)
			for i := range g {
				g[i] = rng.Float32()*12 - 6
			}
			in := append([]float32(nil), g...)
			v.gelu(g)
			for i, e := range in {
				w := 0.5 * float64(e) * (1 + math.Erf(float64(e)/math.Sqrt2))
				if d := math.Abs(float64(g[i]) - w); d > 2e-6*(1+math.Abs(w)) {
					t.Fatalf("%s gelu n=%d (%g) = %g, want %g", v.name, n, e, g[i], w)
				}
			}
		}
	}
}

// TestLayerNormRows: normalising rows four at a time gives every bit that
// normalising each row alone gives (the same additions in the same order),
// for row counts around the group of four and a hidden size not a multiple
// of a vector.
func TestLayerNormRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, h := range []int{384, 37} {
		g, b := make([]float32, h), make([]float32, h)
		for i := range g {
			g[i], b[i] = rng.Float32()+0.5, rng.Float32()-0.5
		}
		for rows := 0; rows <= 9; rows++ {
			x := make([]float32, (rows+1)*h)
			for i := range x {
				x[i] = float32(rng.NormFloat64()*3) + float32(i%7)
			}
			want := slices.Clone(x)
			for r := 0; r < rows; r++ {
				layerNorm(want[r*h:r*h+h], g, b, 1e-12)
			}
			layerNormRows(x, rows, h, g, b, 1e-12)
			for i := range x {
				if math.Float32bits(x[i]) != math.Float32bits(want[i]) {
					t.Fatalf("h %d rows %d: x[%d] = %g, one row at a time %g", h, rows, i, x[i], want[i])
				}
			}
		}
	}
}
