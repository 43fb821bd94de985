package minilm

import "golang.org/x/sys/cpu"

// The int8 tiles with AVX-512 VNNI (gemm_amd64.s): kernVNNI<r> computes r
// rows by 32 columns; kernVNNI8 is the whole tile, the others the last
// rows of a product whose row count is not a multiple of 8.

//go:noescape
func kernVNNI1(k4 int, a *uint8, lda int, b *int8, c *float32, ldc int, za *int32, sa *float32, sum *int32, scale *float32, bias *float32)

//go:noescape
func kernVNNI2(k4 int, a *uint8, lda int, b *int8, c *float32, ldc int, za *int32, sa *float32, sum *int32, scale *float32, bias *float32)

//go:noescape
func kernVNNI3(k4 int, a *uint8, lda int, b *int8, c *float32, ldc int, za *int32, sa *float32, sum *int32, scale *float32, bias *float32)

//go:noescape
func kernVNNI4(k4 int, a *uint8, lda int, b *int8, c *float32, ldc int, za *int32, sa *float32, sum *int32, scale *float32, bias *float32)

//go:noescape
func kernVNNI5(k4 int, a *uint8, lda int, b *int8, c *float32, ldc int, za *int32, sa *float32, sum *int32, scale *float32, bias *float32)

//go:noescape
func kernVNNI6(k4 int, a *uint8, lda int, b *int8, c *float32, ldc int, za *int32, sa *float32, sum *int32, scale *float32, bias *float32)

//go:noescape
func kernVNNI7(k4 int, a *uint8, lda int, b *int8, c *float32, ldc int, za *int32, sa *float32, sum *int32, scale *float32, bias *float32)

//go:noescape
func kernVNNI8(k4 int, a *uint8, lda int, b *int8, c *float32, ldc int, za *int32, sa *float32, sum *int32, scale *float32, bias *float32)

// vnniTiles are the VNNI tiles by row count less one.
var vnniTiles = [qmr]func(k4 int, a *uint8, lda int, b *int8, c *float32, ldc int, za *int32, sa *float32, sum *int32, scale *float32, bias *float32){
	kernVNNI1, kernVNNI2, kernVNNI3, kernVNNI4, kernVNNI5, kernVNNI6, kernVNNI7, kernVNNI8,
}

// vnniImpl is the int8 tile with AVX-512 VNNI, up to 8 rows by 32 columns.
var vnniImpl = qgemmImpl{name: "int8-vnni", kernel: func(rows, k4 int, a []uint8, lda int, b []int8, c []float32, ldc int, za []int32, sa []float32, sum []int32, scale, bias []float32) {
	_ = a[(rows-1)*lda+4*k4-1]
	_ = b[k4*4*qnr-1]
	_ = c[(rows-1)*ldc+qnr-1]
	_, _, _, _, _ = za[rows-1], sa[rows-1], sum[qnr-1], scale[qnr-1], bias[qnr-1]
	if rows == qmr {
		kernVNNI8(k4, &a[0], lda, &b[0], &c[0], ldc, &za[0], &sa[0], &sum[0], &scale[0], &bias[0])
		return
	}
	vnniTiles[rows-1](k4, &a[0], lda, &b[0], &c[0], ldc, &za[0], &sa[0], &sum[0], &scale[0], &bias[0])
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
