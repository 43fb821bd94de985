package minilm

import "golang.org/x/sys/cpu"

//go:noescape
func expShiftAVX512(x *float32, n int, c *[16]float32, sum *[16]float32)

//go:noescape
func maxAVX512(x *float32, n int, out *[16]float32)

//go:noescape
func geluAVX512(x *float32, n int, c *[16]float32)

// geluConsts are geluAVX512's constants (see erff).
var geluConsts = [16]float32{
	1 / 1.4142135623730951, 4, -4,
	-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
	-7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02,
	-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
	-1.42647390514189e-02, 0.5,
}

func init() {
	if !cpu.X86.HasAVX512F {
		return
	}
	expRow = func(x []float32) float32 {
		n := len(x) &^ 15
		var lanes [16]float32
		mx := x[0]
		if n > 0 {
			maxAVX512(&x[0], n, &lanes)
			for _, v := range lanes {
				mx = max(mx, v)
			}
		}
		for _, v := range x[n:] {
			mx = max(mx, v)
		}
		c := [16]float32{mx, 1.44269504088896341, 0.693359375, -2.12194440e-4,
			1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1}
		lanes = [16]float32{}
		if n > 0 {
			expShiftAVX512(&x[0], n, &c, &lanes)
		}
		var sum float32
		for _, v := range lanes {
			sum += v
		}
		for i := n; i < len(x); i++ {
			x[i] = expf(x[i] - mx)
			sum += x[i]
		}
		return sum
	}
	gelu = func(x []float32) {
		n := len(x) &^ 15
		if n > 0 {
			geluAVX512(&x[0], n, &geluConsts)
		}
		geluGo(x[n:])
	}
}
