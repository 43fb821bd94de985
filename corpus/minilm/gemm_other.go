//go:build !amd64

package minilm

// kernels lists every kernel this CPU can run: only the portable one.
func kernels() []gemmImpl { return []gemmImpl{genericImpl} }
