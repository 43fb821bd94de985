package sqlite

import (
	"math/rand/v2"
	"testing"
)

// dotSem (AVX2 where the CPU has it) equals DotInt8 on every length,
// extreme values included.
func TestDotSem(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 400; n++ {
		a, b := make([]int8, n), make([]int8, n)
		for i := range a {
			a[i], b[i] = int8(r.IntN(255)-127), int8(r.IntN(255)-127)
			if n == 384 && i%2 == 0 {
				a[i], b[i] = -127, -127 // the largest products
			}
		}
		if got, want := dotSem(a, b), DotInt8(a, b); got != want {
			t.Fatalf("n=%d: dotSem %d, DotInt8 %d", n, got, want)
		}
	}
}

func BenchmarkDotSem384(b *testing.B) {
	x, y := make([]int8, 384), make([]int8, 384)
	for i := range x {
		x[i], y[i] = int8(i), int8(-i)
	}
	b.Run("dotSem", func(b *testing.B) {
		for b.Loop() {
			dotSem(x, y)
		}
	})
	b.Run("DotInt8", func(b *testing.B) {
		for b.Loop() {
			DotInt8(x, y)
		}
	})
}
