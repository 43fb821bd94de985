package sqlite

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kgagent/kgagent/corpus"
)

// sameQuantized fails unless quantize gives v exactly the bytes and scale
// of quantizeSlow (Go's min and max: NaNs, infinities and signed zeros
// ordered), appended to the same prefix.
func sameQuantized(t *testing.T, v []float32) {
	t.Helper()
	pre := []int8{5, -3}
	got, gs := quantize(slices.Clone(pre), v)
	want, ws := quantizeSlow(slices.Clone(pre), v)
	if !slices.Equal(got, want) || math.Float32bits(gs) != math.Float32bits(ws) {
		t.Fatalf("quantize(%v) = %v, %v; want %v, %v", v, got, gs, want, ws)
	}
}

// TestQuantizeMatchesSlow: the quantiser's fast path gives the bytes of
// the plain one on lexical vectors, random dense and sparse ones, values
// at the rounding and clamping edges, and degenerate vectors (zeros, -0,
// NaN, infinities, subnormal and huge magnitudes).
func TestQuantizeMatchesSlow(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	tiny := math.Float32frombits(1) // the smallest subnormal
	negZero := math.Float32frombits(1 << 31)
	for _, v := range [][]float32{
		nil, {0, 0, 0}, {negZero, 0}, {1}, {-1}, {1, -1, 0.5, -0.5}, {127, 0.5 / 127 * 127, 1.5, -126.5},
		{1, 1.0 / 254, -1.0 / 254, 3.0 / 254, -3.0 / 254, negZero},
		{nan, 1, 2}, {1, nan}, {inf, 1}, {-inf, 0.5}, {tiny, -tiny, 0}, {tiny, 0.5 * tiny}, {1e-38, 3e-39, -1e-39},
		{math.MaxFloat32, -math.MaxFloat32, 1, 0}, {-math.MaxFloat32, 1e30, -1e-30},
	} {
		sameQuantized(t, v)
	}
	l := corpus.NewLexical(corpus.LexicalConfig{})
	vs, err := l.Embed(context.Background(), []string{"The json module encodes and decodes JSON.", "pickle", "", "a b c d e f g h i j k l m n o p"})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		sameQuantized(t, v)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		v := make([]float32, 1+r.IntN(400))
		scale := float32(math.Pow(10, float64(r.IntN(80)-40)))
		for j := range v {
			if i%2 == 0 && r.IntN(8) != 0 {
				continue // sparse
			}
			v[j] = float32(r.NormFloat64()) * scale
			if r.IntN(50) == 0 {
				v[j] = float32(r.IntN(255)-127) / 127 * scale // on the grid
			}
		}
		sameQuantized(t, v)
	}
}

// FuzzQuantize: any vector (its float32 values as little-endian bits)
// quantises to the plain quantiser's bytes.
func FuzzQuantize(f *testing.F) {
	for _, v := range [][]float32{{1, -1, 0.5}, {float32(math.NaN())}, {math.Float32frombits(1), 0}} {
		var b []byte
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		sameQuantized(t, v)
	})
}

// BenchmarkQuantize measures the quantiser on a chunk's lexical vector
// (384 dimensions, mostly zeros).
func BenchmarkQuantize(b *testing.B) {
	vs, err := corpus.NewLexical(corpus.LexicalConfig{}).Embed(context.Background(), []string{fmt.Sprint("The json module encodes and decodes JSON documents; ",
		"json.dumps returns a string, json.loads parses one. See also the pickle module for Python objects.")})
	if err != nil {
		b.Fatal(err)
	}
	var q []int8
	for b.Loop() {
		q, _ = quantize(q[:0], vs[0])
	}
}
