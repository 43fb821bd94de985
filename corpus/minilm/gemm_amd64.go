package minilm

import "golang.org/x/sys/cpu"

//go:noescape
func kernAVX512(k int, a *float32, lda int, b *float32, c *float32, ldc int)

//go:noescape
func kernAVX2(k int, a *float32, lda int, b *float32, c *float32, ldc int)

// avx512Impl is an 8×32 tile in AVX-512 registers.
var avx512Impl = gemmImpl{name: "avx512", mr: 8, nr: 32, kernel: func(k int, a []float32, lda int, b []float32, c []float32, ldc int) {
	_ = a[7*lda+k-1]
	_ = b[k*32-1]
	_ = c[7*ldc+31]
	kernAVX512(k, &a[0], lda, &b[0], &c[0], ldc)
}}

// avx2Impl is a 6×16 tile in AVX2 registers, with FMA.
var avx2Impl = gemmImpl{name: "avx2", mr: 6, nr: 16, kernel: func(k int, a []float32, lda int, b []float32, c []float32, ldc int) {
	_ = a[5*lda+k-1]
	_ = b[k*16-1]
	_ = c[5*ldc+15]
	kernAVX2(k, &a[0], lda, &b[0], &c[0], ldc)
}}

func init() {
	switch {
	case cpu.X86.HasAVX512F:
		impl = avx512Impl
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		impl = avx2Impl
	}
}

// kernels lists every kernel this CPU can run, the portable one last.
func kernels() []gemmImpl {
	var ks []gemmImpl
	if cpu.X86.HasAVX512F {
		ks = append(ks, avx512Impl)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, avx2Impl)
	}
	return append(ks, genericImpl)
}
