//go:build !amd64

package sqlite

// dotSem is DotInt8 (the AVX2 kernel is amd64's).
func dotSem(a, b []int8) int32 { return DotInt8(a, b) }

// dotRows sets out[i] to dotSem(q, rows[i*len(q):(i+1)*len(q)]) for each i
// of out (sumQ, the sum of q, is for amd64's kernel).
func dotRows(q, rows []int8, _ int32, out []int32) {
	d := len(q)
	for i := range out {
		out[i] = dotSem(q, rows[i*d:(i+1)*d])
	}
}
