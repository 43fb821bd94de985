//go:build !amd64

package minilm

// vecImpl is one implementation of the element-wise steps.
type vecImpl struct {
	name   string
	expRow func([]float32) float32
	gelu   func([]float32)
}

// vecImpls lists the implementations this CPU runs: the portable one.
func vecImpls() []vecImpl { return []vecImpl{{"go", expRowGo, geluGo}} }
