package sqlite

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
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

// dotRows (AVX-512 VNNI where the CPU has it) equals DotInt8 row by row,
// on dimensions that are and are not multiples of 64, extreme values
// (-128, whose XOR with 0x80 is 0, and 127) included.
func TestDotRows(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, d := range []int{0, 16, 64, 100, 128, 192, 384, 448} {
		for _, n := range []int{0, 1, 2, 7, 64} {
			q, rows := make([]int8, d), make([]int8, n*d)
			for i := range q {
				q[i] = int8(r.IntN(256) - 128)
			}
			for i := range rows {
				rows[i] = int8(r.IntN(256) - 128)
				switch i % 7 {
				case 0:
					rows[i] = -128
				case 1:
					rows[i] = 127
				}
			}
			if d == 384 {
				for i := range q {
					q[i] = -128 // the largest sums
				}
			}
			var sum int32
			for _, v := range q {
				sum += int32(v)
			}
			out := make([]int32, n)
			dotRows(q, rows, sum, out)
			for i := range out {
				if want := DotInt8(q, rows[i*d:(i+1)*d]); out[i] != want {
					t.Fatalf("d=%d n=%d row %d: dotRows %d, DotInt8 %d", d, n, i, out[i], want)
				}
			}
		}
	}
}

func BenchmarkDotRows384(b *testing.B) {
	const rows = 4096
	q, vs := make([]int8, 384), make([]int8, rows*384)
	for i := range vs {
		vs[i] = int8(i * 7)
	}
	for i := range q {
		q[i] = int8(-i)
	}
	out := make([]int32, 64)
	b.Run("dotRows", func(b *testing.B) {
		for b.Loop() {
			for r := 0; r < rows; r += 64 {
				dotRows(q, vs[r*384:(r+64)*384], 0, out)
			}
		}
	})
	b.Run("dotSem", func(b *testing.B) {
		for b.Loop() {
			for r := range rows {
				out[r%64] = dotSem(q, vs[r*384:(r+1)*384])
			}
		}
	})
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

// semTop ranks exactly as a one-pass scan with DotInt8 does, whether it
// computes the dot products in blocks (most slots have a vector) or row
// by row (a set still being filled), below and above parallelMin, with
// removed rows, rows whose block of the set holds no vector yet, and a URL
// prefix.
func TestSemTopExact(t *testing.T) {
	const dim = 384
	for _, tt := range []struct {
		rows, every, upto int // every: one slot in every below upto has a vector
		blocks            bool
	}{{3000, 1, 3000, true}, {3000, 1, 2048, true}, {3000, 3, 3000, false}, {parallelMin + 777, 1, parallelMin + 777, true}, {parallelMin + 777, 4, parallelMin, false}} {
		t.Run(fmt.Sprint(tt.rows, "/", tt.every, "/", tt.upto), func(t *testing.T) {
			m := newMemColl(8, [3]float32{1, 1, 1})
			lex := make([]float32, 8)
			vs := randVecs(tt.rows, dim)
			for i := range tt.rows {
				doc := "https://a/"
				if i%5 == 1 {
					doc = "https://b/"
				}
				lex[i%8] = 1
				m.add(int64(i+1), doc, kgagent.Chunk{Text: "x"}, lex)
				lex[i%8] = 0
				if i%tt.every == 0 && i < tt.upto {
					m.setSem("m", int32(i), vs[i*dim:(i+1)*dim])
				}
			}
			m.remove([]int64{1, 2, 3, 4, 5, 6, 7})
			s := m.sem["m"]
			if blocks := 2*s.n >= len(s.scales); blocks != tt.blocks {
				t.Fatalf("dot products in blocks: %v, want %v", blocks, tt.blocks)
			}
			for _, prefix := range []string{"", "https://b/"} {
				qv, qs := quantize(nil, vs[9*dim:10*dim])
				got := m.semTop(s, qv, qs, tt.rows, prefix)
				var want []scored
				for i := range m.rids {
					if sc := s.scales[i]; sc != 0 && m.doc(i) != "" && strings.HasPrefix(m.doc(i), prefix) {
						want = append(want, scored{m.rids[i], float64(DotInt8(qv, s.row(i))) * float64(qs*sc)})
					}
				}
				want = best(want, tt.rows)
				if !slices.Equal(got, want) {
					t.Fatalf("prefix %q: semTop ranks %d rows, the one-pass scan %d, or differently", prefix, len(got), len(want))
				}
				if len(want) < 100 {
					t.Fatalf("only %d rows ranked", len(want))
				}
			}
		})
	}
}
