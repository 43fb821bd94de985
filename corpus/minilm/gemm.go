package minilm

// The matrix kernel: C = A·B with B packed once into column panels, so the
// inner loop reads B sequentially and keeps an mr×nr tile of C in
// registers. amd64 machines with AVX-512 or AVX2+FMA run an assembly micro
// kernel (gemm_amd64.s); everything else runs the same tiling in Go.

// packed is a K×N matrix B stored as ceil(N/nr) panels of nr columns: panel
// p holds B[k][p*nr+c] at data[p*k*nr + k*nr + c], zero past column N.
type packed struct {
	k, n, nr int
	data     []float32
}

// panels is the number of column panels.
func (p *packed) panels() int { return (p.n + p.nr - 1) / p.nr }

// reset sizes p for a K×N matrix, reusing its storage, and zeroes it.
func (p *packed) reset(k, n, nr int) {
	p.k, p.n, p.nr = k, n, nr
	size := p.panels() * k * nr
	if cap(p.data) < size {
		p.data = make([]float32, size)
	}
	p.data = p.data[:size]
	clear(p.data)
}

// packRows packs the transpose of w, a matrix of n rows of k values with
// row stride ldw (PyTorch's Linear weight [out, in]): B[k][j] = w[j*ldw+k].
func (p *packed) packRows(w []float32, n, k, ldw, nr int) {
	p.reset(k, n, nr)
	for j := 0; j < n; j++ {
		panel, c := j/nr, j%nr
		dst := p.data[panel*k*nr+c:]
		row := w[j*ldw : j*ldw+k]
		for kk, v := range row {
			dst[kk*nr] = v
		}
	}
}

// packCols packs b itself, a matrix of k rows of n values with row stride
// ldb: B[kk][j] = b[kk*ldb+j].
func (p *packed) packCols(b []float32, k, n, ldb, nr int) {
	p.reset(k, n, nr)
	for kk := 0; kk < k; kk++ {
		row := b[kk*ldb : kk*ldb+n]
		for panel := 0; panel*nr < n; panel++ {
			end := min(n, panel*nr+nr)
			copy(p.data[panel*k*nr+kk*nr:], row[panel*nr:end])
		}
	}
}

// kernelFunc computes one mr×nr tile: c[i*ldc+j] = Σ_p a[i*lda+p]·b[p*nr+j]
// for i < mr, j < nr, overwriting c. a must hold mr rows of k values.
type kernelFunc func(k int, a []float32, lda int, b []float32, c []float32, ldc int)

// gemmImpl is the kernel in use: its tile shape and function.
type gemmImpl struct {
	name   string
	mr, nr int
	kernel kernelFunc
}

// impl is chosen at start-up by the CPU's features (gemm_amd64.go).
var impl = genericImpl

// genericImpl is the portable Go kernel.
var genericImpl = gemmImpl{name: "go", mr: 4, nr: 16, kernel: kernelGo}

// gemmScratch holds the edge buffers of one goroutine's gemm calls.
type gemmScratch struct {
	a, c []float32
}

// gemm sets C[i][j] = Σ_k A[i][k]·B[k][j] + bias[j] for i < m, j < b.n, with
// A's rows lda apart and C's rows ldc apart. bias may be nil.
func (g gemmImpl) gemm(s *gemmScratch, m int, a []float32, lda int, b *packed, c []float32, ldc int, bias []float32) {
	k, n, mr, nr := b.k, b.n, g.mr, g.nr
	if b.nr != nr {
		panic("minilm: B packed for another kernel")
	}
	if len(s.c) < mr*nr {
		s.c = make([]float32, mr*nr)
	}
	for i0 := 0; i0 < m; i0 += mr {
		rows := min(mr, m-i0)
		ablk, ald := a[i0*lda:], lda
		if rows < mr || len(ablk) < (mr-1)*lda+k {
			// Too few rows left: copy them into a zero-padded block.
			if len(s.a) < mr*k {
				s.a = make([]float32, mr*k)
			}
			ablk, ald = s.a[:mr*k], k
			clear(ablk)
			for r := 0; r < rows; r++ {
				copy(ablk[r*k:r*k+k], a[(i0+r)*lda:])
			}
		}
		for p := 0; p < b.panels(); p++ {
			j0 := p * nr
			bp := b.data[p*k*nr : (p+1)*k*nr]
			cols := min(nr, n-j0)
			if rows == mr && cols == nr && len(c) >= (i0+mr-1)*ldc+j0+nr {
				g.kernel(k, ablk, ald, bp, c[i0*ldc+j0:], ldc)
			} else {
				g.kernel(k, ablk, ald, bp, s.c, nr)
				for r := 0; r < rows; r++ {
					copy(c[(i0+r)*ldc+j0:(i0+r)*ldc+j0+cols], s.c[r*nr:r*nr+cols])
				}
			}
			if bias != nil {
				for r := 0; r < rows; r++ {
					row := c[(i0+r)*ldc+j0 : (i0+r)*ldc+j0+cols]
					for j := range row {
						row[j] += bias[j0+j]
					}
				}
			}
		}
	}
}

// kernelGo is the portable micro kernel, 4 rows by 16 columns.
func kernelGo(k int, a []float32, lda int, b []float32, c []float32, ldc int) {
	var acc [4][16]float32
	a0, a1, a2, a3 := a[:k], a[lda:lda+k], a[2*lda:2*lda+k], a[3*lda:3*lda+k]
	b = b[:k*16]
	for p := 0; p < k; p++ {
		bv := (*[16]float32)(b[p*16 : p*16+16])
		x0, x1, x2, x3 := a0[p], a1[p], a2[p], a3[p]
		for j := 0; j < 16; j++ {
			bj := bv[j]
			acc[0][j] += x0 * bj
			acc[1][j] += x1 * bj
			acc[2][j] += x2 * bj
			acc[3][j] += x3 * bj
		}
	}
	for i := 0; i < 4; i++ {
		copy(c[i*ldc:i*ldc+16], acc[i][:])
	}
}
