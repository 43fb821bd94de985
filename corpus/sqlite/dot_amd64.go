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

//go:noescape
func dotRowsVNNI(q, rows *int8, dim, n int, out *int32)

// hasVNNI selects the AVX-512 VNNI kernel of dotRows.
var hasVNNI = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VNNI

// dotRows sets out[i] to dotSem(q, rows[i*len(q):(i+1)*len(q)]) for each i
// of out: with AVX-512 VNNI where the CPU has it and len(q) is a multiple
// of 64 (the same integers, several times faster than dotSem's AVX2 on
// 384 dimensions), else with dotSem. sumQ is the sum of q's elements.
func dotRows(q, rows []int8, sumQ int32, out []int32) {
	d := len(q)
	if len(out) == 0 {
		return
	}
	rows = rows[:len(out)*d]
	if hasVNNI && d > 0 && d%64 == 0 {
		dotRowsVNNI(&q[0], &rows[0], d, len(out), &out[0])
		bias := 128 * sumQ
		for i := range out {
			out[i] -= bias
		}
		return
	}
	for i := range out {
		out[i] = dotSem(q, rows[i*d:(i+1)*d])
	}
}
