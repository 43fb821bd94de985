package minilm

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kgagent/kgagent"
)

// encodeSafetensors writes a safetensors file from a header and data.
func encodeSafetensors(header map[string]any, data []byte) []byte {
	h, _ := json.Marshal(header)
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(out, h...), data...)
}

func TestParseSafetensors(t *testing.T) {
	var data []byte
	for _, v := range []float32{1, -2, 3.5, 0.25} {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
	}
	for _, h := range []uint16{0x3c00, 0xc000, 0x0001, 0x7c00} { // 1, -2, smallest subnormal, +Inf
		data = binary.LittleEndian.AppendUint16(data, h)
	}
	data = binary.LittleEndian.AppendUint16(data, 0x3fc0) // bf16 1.5
	file := encodeSafetensors(map[string]any{
		"__metadata__": map[string]string{"format": "pt"},
		"w":            map[string]any{"dtype": "F32", "shape": []int{2, 2}, "data_offsets": []int{0, 16}},
		"h":            map[string]any{"dtype": "F16", "shape": []int{4}, "data_offsets": []int{16, 24}},
		"b":            map[string]any{"dtype": "BF16", "shape": []int{1}, "data_offsets": []int{24, 26}},
	}, data)
	ts, err := ParseSafetensors(file)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ts["w"].Float32()
	if err != nil || !slices.Equal(w, []float32{1, -2, 3.5, 0.25}) || !slices.Equal(ts["w"].Shape, []int{2, 2}) {
		t.Errorf("w = %v %v, %v", w, ts["w"].Shape, err)
	}
	h, _ := ts["h"].Float32()
	if h[0] != 1 || h[1] != -2 || h[2] != float32(math.Ldexp(1, -24)) || !math.IsInf(float64(h[3]), 1) {
		t.Errorf("f16 = %v", h)
	}
	if b, _ := ts["b"].Float32(); b[0] != 1.5 {
		t.Errorf("bf16 = %v", b)
	}
}

func TestParseSafetensorsRejects(t *testing.T) {
	ok := make([]byte, 16)
	for name, file := range map[string][]byte{
		"short":        {1, 2, 3},
		"header past":  binary.LittleEndian.AppendUint64(nil, 1000),
		"not json":     append(binary.LittleEndian.AppendUint64(nil, 3), "abc"...),
		"bad dtype":    encodeSafetensors(map[string]any{"x": map[string]any{"dtype": "Q4", "shape": []int{1}, "data_offsets": []int{0, 1}}}, ok),
		"past the end": encodeSafetensors(map[string]any{"x": map[string]any{"dtype": "F32", "shape": []int{8}, "data_offsets": []int{0, 32}}}, ok),
		"size":         encodeSafetensors(map[string]any{"x": map[string]any{"dtype": "F32", "shape": []int{3}, "data_offsets": []int{0, 16}}}, ok),
		"negative":     encodeSafetensors(map[string]any{"x": map[string]any{"dtype": "F32", "shape": []int{-1, -4}, "data_offsets": []int{0, 16}}}, ok),
		"overflow":     encodeSafetensors(map[string]any{"x": map[string]any{"dtype": "F32", "shape": []int{1 << 30, 1 << 30, 1 << 30}, "data_offsets": []int{0, 16}}}, ok),
		"overlap": encodeSafetensors(map[string]any{
			"x": map[string]any{"dtype": "F32", "shape": []int{2}, "data_offsets": []int{0, 8}},
			"y": map[string]any{"dtype": "F32", "shape": []int{2}, "data_offsets": []int{4, 12}},
		}, ok),
		"reversed": encodeSafetensors(map[string]any{"x": map[string]any{"dtype": "F32", "shape": []int{0}, "data_offsets": []int{8, 4}}}, ok),
	} {
		if _, err := ParseSafetensors(file); kgagent.ErrorCode(err) != kgagent.EINVALID {
			t.Errorf("%s: %v, want INVALID_ARGUMENT", name, err)
		}
	}
	if _, err := (Tensor{DType: "I64", Shape: []int{1}, Data: make([]byte, 8)}).Float32(); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("I64 as float: %v", err)
	}
}

// FuzzParseSafetensors: any input is decoded or rejected with
// INVALID_ARGUMENT, and a decoded tensor's data matches its dtype and shape.
func FuzzParseSafetensors(f *testing.F) {
	f.Add(encodeSafetensors(map[string]any{"x": map[string]any{"dtype": "F16", "shape": []int{2}, "data_offsets": []int{0, 4}}}, make([]byte, 4)))
	f.Add(encodeSafetensors(map[string]any{"__metadata__": map[string]string{}, "a": map[string]any{"dtype": "BF16", "shape": []int{}, "data_offsets": []int{0, 2}}}, make([]byte, 2)))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, file []byte) {
		ts, err := ParseSafetensors(file)
		if err != nil {
			if kgagent.ErrorCode(err) != kgagent.EINVALID {
				t.Fatalf("error code %q: %v", kgagent.ErrorCode(err), err)
			}
			return
		}
		for name, tn := range ts {
			if len(tn.Data) != tn.Len()*dtypeSize[tn.DType] {
				t.Fatalf("%s: %d bytes for %s%v", name, len(tn.Data), tn.DType, tn.Shape)
			}
			if v, err := tn.Float32(); err == nil && len(v) != tn.Len() {
				t.Fatalf("%s: %d floats for %v", name, len(v), tn.Shape)
			}
		}
	})
}

// TestFloatToHalf: every float16 converts to float32 and back unchanged,
// and a float32 between two float16 values rounds to the nearer (ties to
// even), overflowing to infinity.
func TestFloatToHalf(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := halfToFloat(uint16(h))
		if f != f { // NaN stays NaN
			if g := halfToFloat(floatToHalf(f)); g == g {
				t.Fatalf("NaN %#04x came back as %g", h, g)
			}
			continue
		}
		if got := floatToHalf(f); got != uint16(h) {
			t.Fatalf("half %#04x = %g comes back as %#04x", h, f, got)
		}
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for range 200000 {
		f := float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(40)-25)))
		got := float64(halfToFloat(floatToHalf(f)))
		// No float16 is nearer to f than the one chosen.
		h := floatToHalf(f)
		for _, n := range []uint16{h - 1, h + 1} {
			if alt := float64(halfToFloat(n)); math.Abs(alt-float64(f)) < math.Abs(got-float64(f)) && !math.IsInf(got, 0) {
				t.Fatalf("%g rounds to %g, but %g is nearer", f, got, alt)
			}
		}
	}
	if got := halfToFloat(floatToHalf(1e6)); !math.IsInf(float64(got), 1) {
		t.Fatalf("1e6 -> %g, want +Inf", got)
	}
}
