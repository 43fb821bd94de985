package sqlite

import "golang.org/x/sys/cpu"

//go:noescape
func dotInt8AVX2(a, b *int8, n int) int32

// hasAVX2 selects the AVX2 kernel of dotSem.
var hasAVX2 = cpu.X86.HasAVX2

// dotSem is DotInt8 for the semantic scan: AVX2 over the first multiple of
// 16 elements where the CPU has it (8-10x the Go loop on 384 dimensions).
func dotSem(a, b []int8) int32 {
	b = b[:len(a)]
	n := 0
	var s int32
	if hasAVX2 {
		n = len(a) &^ 15
		if n > 0 {
			s = dotInt8AVX2(&a[0], &b[0], n)
		}
	}
	if n < len(a) {
		s += DotInt8(a[n:], b[n:])
	}
	return s
}
