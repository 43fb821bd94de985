package minilm

import "math"

// The int8 matrix product of the linear layers: weights quantised once at
// load, symmetric per output column (w ≈ sw[j]·qw[k][j], qw in −127..127);
// activations quantised per row as each product starts, asymmetric
// (a ≈ sa[i]·(qa[i][k] − za[i]), qa in 0..255); integer dot products of 4
// byte pairs at a time (VPDPBUSD, unsigned by signed), then
//
//	C[i][j] = sa[i]·sw[j]·(Σ_k qa[i][k]·qw[k][j] − za[i]·Σ_k qw[k][j]) + bias[j].
//
// Attention's two products and everything element-wise stay in float32.

// qnr is the column panel width of the int8 kernel, qmr its rows per tile.
const qnr, qmr = 32, 8

// qpacked is a K×N int8 matrix B packed for the int8 kernel: K is padded to
// a multiple of 4, N to a multiple of qnr; panel p holds, for each group g
// of 4 rows, 32 columns of 4 bytes: data[p*k4*128 + g*128 + c*4 + r] =
// B[4g+r][p*32+c].
type qpacked struct {
	k, n, k4 int
	data     []int8
	scale    []float32 // sw per column, zero past N
	sum      []int32   // Σ_k qw[k][j] per column
	bias     []float32 // per column, zero past N
}

func (p *qpacked) panels() int { return (p.n + qnr - 1) / qnr }

// quantizeRows packs w, a PyTorch Linear weight of n rows (outputs) of k
// values with row stride ldw, as B = wᵀ quantised per output, with bias
// (len n, or nil).
func (p *qpacked) quantizeRows(w []float32, n, k, ldw int, bias []float32) {
	p.k, p.n, p.k4 = k, n, (k+3)/4
	np := p.panels() * qnr
	p.data = make([]int8, p.panels()*p.k4*4*qnr)
	p.scale = make([]float32, np)
	p.sum = make([]int32, np)
	p.bias = make([]float32, np)
	copy(p.bias, bias)
	for j := 0; j < n; j++ {
		row := w[j*ldw : j*ldw+k]
		var amax float32
		for _, v := range row {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		if amax == 0 {
			continue
		}
		s := amax / 127
		p.scale[j] = s
		inv := 1 / s
		panel, c := j/qnr, j%qnr
		base := panel * p.k4 * 4 * qnr
		var sum int32
		for kk, v := range row {
			q := int32(math.RoundToEven(float64(v * inv)))
			q = min(max(q, -127), 127)
			sum += q
			p.data[base+(kk/4)*4*qnr+c*4+kk%4] = int8(q)
		}
		p.sum[j] = sum
	}
}

// qscratch is one goroutine's buffers for int8 products.
type qscratch struct {
	a  []uint8   // quantised A, rows padded to a multiple of qmr, row stride 4·k4
	za []int32   // zero point per row
	sa []float32 // scale per row
	c  []float32 // an edge tile
}

// quantizeA quantises m rows of k values of a (row stride lda) into s.a,
// rows of 4·k4 bytes (zero past k), per row asymmetric over [min(x,0),
// max(x,0)].
func (s *qscratch) quantizeA(quantRow func([]float32, []uint8, *int32, *float32), m int, a []float32, lda, k, k4 int) {
	mp := (m + qmr - 1) / qmr * qmr
	ld := 4 * k4
	if cap(s.a) < mp*ld {
		s.a = make([]uint8, mp*ld, mp*ld+mp*ld/4)
	}
	s.a = s.a[:mp*ld]
	if cap(s.za) < mp {
		s.za, s.sa = make([]int32, mp, mp+mp/4), make([]float32, mp, mp+mp/4)
	}
	s.za, s.sa = s.za[:mp], s.sa[:mp]
	for i := 0; i < m; i++ {
		quantRow(a[i*lda:i*lda+k], s.a[i*ld:i*ld+ld], &s.za[i], &s.sa[i])
	}
	clear(s.a[m*ld:])
	clear(s.za[m:])
	clear(s.sa[m:])
}

// quantRowGo quantises x into q (len ≥ len(x); the rest zeroed), setting
// x ≈ s·(q − z). It is the portable quantRow.
func quantRowGo(x []float32, q []uint8, z *int32, s *float32) {
	var mn, mx float32
	for _, v := range x {
		mn, mx = min(mn, v), max(mx, v)
	}
	inv, zp, ok := quantStart(x, q, mn, mx, z, s)
	if ok {
		quantTail(x, q, 0, inv, zp)
	}
}

// quantStart zeroes q past len(x) and, from x's range [mn, mx] (mn ≤ 0 ≤
// mx), sets the row's zero point z and scale s and returns the reciprocal
// scale and zero point the quantiser applies; ok is false for a constant
// row, whose q is then all zero (z = s = 0). Every quantRow shares it, so
// each gives the same bytes.
func quantStart(x []float32, q []uint8, mn, mx float32, z *int32, s *float32) (inv, zp float32, ok bool) {
	clear(q[len(x):])
	if mx == mn {
		clear(q[:len(x)])
		*z, *s = 0, 0
		return 0, 0, false
	}
	scale := (mx - mn) / 255
	inv = 1 / scale
	zp = min(max(float32(math.RoundToEven(float64(-mn*inv))), 0), 255)
	*z, *s = int32(zp), scale
	return inv, zp, true
}

// quantTail quantises x[from:] into q with inv and zp as the assembly
// quantiser does: a product rounded to float32, then the sum (the explicit
// conversion keeps the compiler from fusing them into one FMA), rounded to
// even and clamped to [0, 255].
func quantTail(x []float32, q []uint8, from int, inv, zp float32) {
	for i := from; i < len(x); i++ {
		r := float32(math.RoundToEven(float64(float32(x[i]*inv) + zp)))
		q[i] = uint8(min(max(r, 0), 255))
	}
}

// qkernelFunc computes the first rows (1 to qmr) rows of one qmr×qnr tile
// of C from k4 groups of A's rows (lda bytes apart) and one panel of B, and
// the panel's column terms, and overwrites those rows of c (ldc apart) with
// the dequantised result plus bias. A short input (a search query of ~17
// tokens) computes no padding rows: each row of C depends on its own row of
// A only, so a partial tile gives the whole tile's values.
type qkernelFunc func(rows, k4 int, a []uint8, lda int, b []int8, c []float32, ldc int, za []int32, sa []float32, sum []int32, scale, bias []float32)

// qgemmImpl is an int8 kernel: its name, tile function and row quantiser
// (quantRowGo or one that gives the same bytes).
type qgemmImpl struct {
	name   string
	kernel qkernelFunc
	quant  func(x []float32, q []uint8, z *int32, s *float32)
}

// genericQImpl is the portable int8 kernel (tests and CPUs without VNNI
// that ask for int8).
var genericQImpl = qgemmImpl{name: "int8-go", kernel: qkernelGo, quant: quantRowGo}

// gemm sets C[i][j] = Σ_k A[i][k]·B[k][j] + bias[j] for i < m, j < b.n, in
// int8 (see the top of this file), with A's rows lda apart and C's ldc.
func (g qgemmImpl) gemm(s *qscratch, m int, a []float32, lda int, b *qpacked, c []float32, ldc int) {
	s.quantizeA(g.quant, m, a, lda, b.k, b.k4)
	if len(s.c) < qmr*qnr {
		s.c = make([]float32, qmr*qnr)
	}
	ld := 4 * b.k4
	panel := b.k4 * 4 * qnr
	// Panel outermost: its k·32 bytes stay in the first-level cache while
	// every row block of A streams past it.
	for p := 0; p < b.panels(); p++ {
		j0 := p * qnr
		cols := min(qnr, b.n-j0)
		bp := b.data[p*panel : (p+1)*panel]
		sum, scale, bias := b.sum[j0:j0+qnr], b.scale[j0:j0+qnr], b.bias[j0:j0+qnr]
		for i0 := 0; i0 < m; i0 += qmr {
			rows := min(qmr, m-i0)
			ab := s.a[i0*ld : (i0+qmr)*ld]
			za, sa := s.za[i0:i0+qmr], s.sa[i0:i0+qmr]
			if cols == qnr && len(c) >= (i0+rows-1)*ldc+j0+qnr {
				g.kernel(rows, b.k4, ab, ld, bp, c[i0*ldc+j0:], ldc, za, sa, sum, scale, bias)
				continue
			}
			g.kernel(rows, b.k4, ab, ld, bp, s.c, qnr, za, sa, sum, scale, bias)
			for r := 0; r < rows; r++ {
				copy(c[(i0+r)*ldc+j0:(i0+r)*ldc+j0+cols], s.c[r*qnr:r*qnr+cols])
			}
		}
	}
}

// qkernelGo is the portable int8 tile; it rounds exactly as the assembly
// one does (one fused multiply-add at the end).
func qkernelGo(rows, k4 int, a []uint8, lda int, b []int8, c []float32, ldc int, za []int32, sa []float32, sum []int32, scale, bias []float32) {
	var acc [qmr][qnr]int32
	b = b[:k4*4*qnr]
	for i := 0; i < rows; i++ {
		row := a[i*lda : i*lda+4*k4]
		for g := 0; g < k4; g++ {
			a0, a1, a2, a3 := int32(row[4*g]), int32(row[4*g+1]), int32(row[4*g+2]), int32(row[4*g+3])
			bg := b[g*4*qnr : g*4*qnr+4*qnr]
			for j := 0; j < qnr; j++ {
				acc[i][j] += a0*int32(bg[4*j]) + a1*int32(bg[4*j+1]) + a2*int32(bg[4*j+2]) + a3*int32(bg[4*j+3])
			}
		}
	}
	for i := 0; i < rows; i++ {
		out := c[i*ldc : i*ldc+qnr]
		for j := range out {
			v := float32(acc[i][j] - za[i]*sum[j])
			t := sa[i] * scale[j]
			out[j] = float32(math.FMA(float64(v), float64(t), float64(bias[j])))
		}
	}
}
