//go:build !amd64

package sqlite

// dotSem is DotInt8 (the AVX2 kernel is amd64's).
func dotSem(a, b []int8) int32 { return DotInt8(a, b) }
