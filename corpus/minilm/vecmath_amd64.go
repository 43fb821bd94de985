package minilm

import (
	"math"

	"golang.org/x/sys/cpu"
)

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

//go:noescape
func expShiftAVX2(x *float32, n int, c *[16][8]float32, sum *[8]float32)

//go:noescape
func geluAVX2(x *float32, n int, c *[16][8]float32)

//go:noescape
func maxAVX2(x *float32, n int, out *[8]float32)

//go:noescape
func minMaxAVX512(x *float32, n int, out *[32]float32)

//go:noescape
func quantAVX512(x *float32, n int, q *uint8, inv float32, zp float32)

// quantRowAVX512 is quantRowGo with AVX-512, to the same bytes.
func quantRowAVX512(x []float32, q []uint8, z *int32, s *float32) {
	n := len(x) &^ 15
	if n == 0 {
		quantRowGo(x, q, z, s)
		return
	}
	var lanes [32]float32
	minMaxAVX512(&x[0], n, &lanes)
	var mn, mx float32
	for l := 0; l < 16; l++ {
		mn, mx = min(mn, lanes[l]), max(mx, lanes[16+l])
	}
	for _, v := range x[n:] {
		mn, mx = min(mn, v), max(mx, v)
	}
	inv, zp, ok := quantStart(x, q, mn, mx, z, s)
	if !ok {
		return
	}
	quantAVX512(&x[0], n, &q[0], inv, zp)
	quantTail(x, q, n, inv, zp)
}

// vecImpl is one implementation of the element-wise steps.
type vecImpl struct {
	name   string
	expRow func([]float32) float32
	gelu   func([]float32)
}

// vecImpls lists the implementations this CPU runs, the fastest first.
func vecImpls() []vecImpl {
	var v []vecImpl
	if cpu.X86.HasAVX512F {
		v = append(v, vecImpl{"avx512", expRowAVX512, geluVecAVX512})
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		v = append(v, vecImpl{"avx2", expRowAVX2, geluVecAVX2})
	}
	return append(v, vecImpl{"go", expRowGo, geluGo})
}

// broadcast8 repeats each of c's values over 8 lanes.
func broadcast8(c [16]float32) (out [16][8]float32) {
	for i, v := range c {
		for l := range out[i] {
			out[i][l] = v
		}
	}
	return out
}

// geluConsts8 are geluConsts for geluAVX2.
var geluConsts8 = broadcast8(geluConsts)

// expConsts8 are expShiftAVX2's constants after the first (the row max).
var expConsts8 = broadcast8([16]float32{0, -87.3, 1.44269504088896341, 0.693359375, -2.12194440e-4,
	1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1, math.Float32frombits(127)})

func expRowAVX2(x []float32) float32 {
	n := len(x) &^ 7
	mx := x[0]
	if n > 0 {
		var lanes [8]float32
		maxAVX2(&x[0], n, &lanes)
		for _, v := range lanes {
			mx = max(mx, v)
		}
	}
	for _, v := range x[n:] {
		mx = max(mx, v)
	}
	var sum float32
	if n > 0 {
		c := expConsts8
		for l := range c[0] {
			c[0][l] = mx
		}
		var lanes [8]float32
		expShiftAVX2(&x[0], n, &c, &lanes)
		for _, v := range lanes {
			sum += v
		}
	}
	for i := n; i < len(x); i++ {
		x[i] = expf(x[i] - mx)
		sum += x[i]
	}
	return sum
}

func geluVecAVX2(x []float32) {
	n := len(x) &^ 7
	if n > 0 {
		geluAVX2(&x[0], n, &geluConsts8)
	}
	geluGo(x[n:])
}

func expRowAVX512(x []float32) float32 {
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

func geluVecAVX512(x []float32) {
	n := len(x) &^ 15
	if n > 0 {
		geluAVX512(&x[0], n, &geluConsts)
	}
	geluGo(x[n:])
}
