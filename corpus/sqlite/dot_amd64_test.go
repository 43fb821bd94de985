package sqlite

import "testing"

// On a CPU with AVX-512 VNNI, TestDotRows and TestDotSem check only the
// kernels it selects; the paths of CPUs without it (AVX2 rows, the Go loop)
// are checked here by turning the features off, so every path gives the
// same integers as DotInt8 on whichever machine runs the tests.
func TestDotFallbacks(t *testing.T) {
	vnni, avx2 := hasVNNI, hasAVX2
	defer func() { hasVNNI, hasAVX2 = vnni, avx2 }()
	for _, f := range []struct {
		name       string
		vnni, avx2 bool
	}{{"avx2", false, avx2}, {"go", false, false}, {"vnni-go", vnni, false}} {
		hasVNNI, hasAVX2 = f.vnni, f.avx2
		t.Run(f.name, func(t *testing.T) {
			TestDotSem(t)
			TestDotRows(t)
			TestSemTopExact(t)
		})
	}
}
