//go:build !amd64

package minilm

// hasVNNI: no int8 kernel in assembly on this architecture.
const hasVNNI = false

// qkernels lists every int8 kernel this CPU can run: the portable one.
func qkernels() []qgemmImpl { return []qgemmImpl{genericQImpl} }
