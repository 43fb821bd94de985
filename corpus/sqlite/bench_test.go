package sqlite

import (
	"math/rand/v2"
	"testing"
)

func randVecs(n, dim int) []float32 {
	r := rand.New(rand.NewPCG(1, 2))
	v := make([]float32, n*dim)
	for i := range v {
		v[i] = r.Float32() - 0.5
	}
	return v
}

// BenchmarkDot measures one 384-dimensional dot product.
func BenchmarkDot(b *testing.B) {
	v := randVecs(2, 384)
	var s float32
	for b.Loop() {
		s += Dot(v[:384], v[384:])
	}
	_ = s
}

// BenchmarkDotInt8 measures one 384-dimensional int8 dot product.
func BenchmarkDotInt8(b *testing.B) {
	v := randVecs(2, 384)
	x, _ := quantize(nil, v[:384])
	y, _ := quantize(nil, v[384:])
	var s int32
	for b.Loop() {
		s += DotInt8(x, y)
	}
	_ = s
}

// BenchmarkScan20k measures an exact top-50 scan over 20k vectors of 384
// dimensions (the size of the Python docs index).
func BenchmarkScan20k(b *testing.B) {
	const n, dim = 20000, 384
	m := newMemColl(dim, [3]float32{1, 1, 1})
	vs := randVecs(n, dim)
	for i := range n {
		m.appendVec(vs[i*dim : (i+1)*dim])
		m.rids = append(m.rids, int64(i))
		m.appendDoc("d")
	}
	q, qs := quantize(nil, vs[:dim])
	for b.Loop() {
		m.topK(q, qs, 50, "", -1, 1)
	}
}

// BenchmarkColScan200k measures the column scan (prefiltered by query mass,
// the default) over 200k vectors of 384 dimensions for a query with 64
// non-zero dimensions (a short question).
func BenchmarkColScan200k(b *testing.B) { benchColScan(b, 200000, 6) }

// BenchmarkColScan30k measures the column scan over 30k vectors of 384
// dimensions (the Python docs index) for a query with 56 non-zero
// dimensions (a question of about ten words under the lexical embedder).
func BenchmarkColScan30k(b *testing.B) { benchColScan(b, 30000, 7) }

// benchColScan ranks n random vectors of 384 dimensions against a query
// that is non-zero on every step-th dimension.
func benchColScan(b *testing.B, n, step int) {
	const dim = 384
	m := newMemColl(dim, [3]float32{1, 1, 1})
	vs := randVecs(4096, dim)
	for i := range n {
		m.appendVec(vs[(i%4096)*dim : (i%4096+1)*dim])
		m.appendRid(int64(i)) // the rescore reads each candidate's row
		m.appendDoc("d")
	}
	q := make([]float32, dim)
	for j := 0; j < dim; j += step {
		q[j] = vs[j]
	}
	qv, qs := quantize(nil, q)
	for b.Loop() {
		m.topK(qv, qs, 50, "", 10000, 0.8)
	}
}

// BenchmarkColScan200kSparse is BenchmarkColScan200k over vectors 40%
// non-zero, as the lexical embedder's chunk vectors are after quantisation
// (OpenJDK API docs).
func BenchmarkColScan200kSparse(b *testing.B) { benchColScanSparse(b, 200000, 6) }

func benchColScanSparse(b *testing.B, n, step int) {
	const dim = 384
	m := newMemColl(dim, [3]float32{1, 1, 1})
	vs := randVecs(4096, dim)
	for i := range vs {
		if i%5 >= 2 {
			vs[i] = 0
		}
	}
	m.reserve(n)
	for i := range n {
		m.appendVec(vs[(i%4096)*dim : (i%4096+1)*dim])
		m.appendRid(int64(i))
		m.appendDoc("d")
	}
	m.compact()
	q := make([]float32, dim)
	for j := 0; j < dim; j += step {
		q[j] = vs[j+1]
	}
	qv, qs := quantize(nil, q)
	for b.Loop() {
		m.topK(qv, qs, 50, "", 10000, 0.8)
	}
}
