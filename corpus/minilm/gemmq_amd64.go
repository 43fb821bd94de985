package minilm

import "golang.org/x/sys/cpu"

//go:noescape
func kernVNNI(k4 int, a *uint8, lda int, b *int8, c *float32, ldc int, za *int32, sa *float32, sum *int32, scale *float32, bias *float32)

// vnniImpl is the 8×32 int8 tile with AVX-512 VNNI (gemm_amd64.s).
var vnniImpl = qgemmImpl{name: "int8-vnni", kernel: func(k4 int, a []uint8, lda int, b []int8, c []float32, ldc int, za []int32, sa []float32, sum []int32, scale, bias []float32) {
	_ = a[7*lda+4*k4-1]
	_ = b[k4*4*qnr-1]
	_ = c[7*ldc+qnr-1]
	_, _, _, _, _ = za[qmr-1], sa[qmr-1], sum[qnr-1], scale[qnr-1], bias[qnr-1]
	kernVNNI(k4, &a[0], lda, &b[0], &c[0], ldc, &za[0], &sa[0], &sum[0], &scale[0], &bias[0])
}, quant: quantRowAVX512}

// hasVNNI: the CPU runs the int8 kernel (AVX-512 with VNNI).
var hasVNNI = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VNNI

// qkernels lists every int8 kernel this CPU can run, the portable one last.
func qkernels() []qgemmImpl {
	if hasVNNI {
		return []qgemmImpl{vnniImpl, genericQImpl}
	}
	return []qgemmImpl{genericQImpl}
}
