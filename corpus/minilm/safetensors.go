package minilm

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"sort"
	"unsafe"

	"github.com/kgagent/kgagent"
)

// littleEndian is whether this CPU stores floats as safetensors files do,
// so an aligned F32 tensor can be copied whole.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// maxHeaderBytes bounds a safetensors header (the format's own limit is
// 100 MB; real headers are a few kilobytes per hundred tensors).
const maxHeaderBytes = 100 << 20

// Tensor is one tensor of a safetensors file: its element type as the file
// names it (F32, F16, BF16, I64, ...), its shape, and its raw little-endian
// bytes (a slice of the file's data, not a copy).
type Tensor struct {
	DType string
	Shape []int
	Data  []byte
}

// Len is the number of elements the shape holds.
func (t Tensor) Len() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Float32 returns the tensor's elements as float32, converting F16 and BF16.
// Other element types are an EINVALID error.
func (t Tensor) Float32() ([]float32, error) {
	n := t.Len()
	out := make([]float32, n)
	switch t.DType {
	case "F32":
		if n > 0 && littleEndian && uintptr(unsafe.Pointer(&t.Data[0]))%4 == 0 {
			copy(out, unsafe.Slice((*float32)(unsafe.Pointer(&t.Data[0])), n))
			break
		}
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
	case "F16":
		for i := range out {
			out[i] = halfToFloat(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	case "BF16":
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(t.Data[2*i:])) << 16)
		}
	default:
		return nil, kgagent.Errorf(kgagent.EINVALID, "safetensors: tensor of type %s is not a float tensor", t.DType)
	}
	return out, nil
}

// dtypeSize is the byte width of each element type the format defines.
var dtypeSize = map[string]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8,
}

// ParseSafetensors decodes a safetensors file held in data: an 8-byte
// little-endian header length, a JSON header naming each tensor's dtype,
// shape and [begin, end) byte offsets into the data that follows, then that
// data. The tensors' Data slices alias data. Every offset, shape and size is
// checked (no overlap, no gap past the end, sizes matching dtype × shape);
// a malformed file is an EINVALID error, never a panic.
func ParseSafetensors(data []byte) (map[string]Tensor, error) {
	bad := func(format string, args ...any) error {
		return kgagent.Errorf(kgagent.EINVALID, "safetensors: "+format, args...)
	}
	if len(data) < 8 {
		return nil, bad("file of %d bytes is shorter than its 8-byte header length", len(data))
	}
	hlen := binary.LittleEndian.Uint64(data)
	if hlen > maxHeaderBytes || hlen > uint64(len(data)-8) {
		return nil, bad("header length %d does not fit the file (%d bytes)", hlen, len(data))
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(data[8:8+hlen], &header); err != nil {
		return nil, kgagent.WrapError(kgagent.EINVALID, err, "safetensors: header is not a JSON object")
	}
	body := data[8+hlen:]
	type entry struct {
		DType   string   `json:"dtype"`
		Shape   []int    `json:"shape"`
		Offsets []uint64 `json:"data_offsets"`
	}
	out := make(map[string]Tensor, len(header))
	type span struct {
		begin, end uint64
		name       string
	}
	var spans []span
	for name, raw := range header {
		if name == "__metadata__" {
			continue
		}
		var e entry
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, kgagent.WrapError(kgagent.EINVALID, err, "safetensors: tensor %q: bad entry", name)
		}
		size, ok := dtypeSize[e.DType]
		if !ok {
			return nil, bad("tensor %q: unknown dtype %q", name, e.DType)
		}
		if len(e.Offsets) != 2 || e.Offsets[0] > e.Offsets[1] || e.Offsets[1] > uint64(len(body)) {
			return nil, bad("tensor %q: data_offsets %v outside the %d data bytes", name, e.Offsets, len(body))
		}
		n := uint64(size)
		for _, d := range e.Shape {
			if d < 0 {
				return nil, bad("tensor %q: negative dimension in shape %v", name, e.Shape)
			}
			if d > 0 && n > uint64(len(body))/uint64(d)+1 {
				return nil, bad("tensor %q: shape %v is larger than the file", name, e.Shape)
			}
			n *= uint64(d)
		}
		if n != e.Offsets[1]-e.Offsets[0] {
			return nil, bad("tensor %q: %s%v needs %d bytes, offsets give %d", name, e.DType, e.Shape, n, e.Offsets[1]-e.Offsets[0])
		}
		out[name] = Tensor{DType: e.DType, Shape: e.Shape, Data: body[e.Offsets[0]:e.Offsets[1]:e.Offsets[1]]}
		spans = append(spans, span{e.Offsets[0], e.Offsets[1], name})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].begin < spans[j].begin })
	for i := 1; i < len(spans); i++ {
		if spans[i].begin < spans[i-1].end {
			return nil, bad("tensors %q and %q overlap", spans[i-1].name, spans[i].name)
		}
	}
	return out, nil
}

// halfToFloat converts an IEEE 754 binary16 value to float32.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := int32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise the mantissa
		e := int32(1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		mant &= 0x3ff
		return math.Float32frombits(sign | uint32(e+127-15)<<23 | mant<<13)
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	}
	return math.Float32frombits(sign | uint32(exp+127-15)<<23 | mant<<13)
}

// expectShape checks that t has exactly shape want.
func expectShape(name string, t Tensor, want ...int) error {
	if len(t.Shape) != len(want) {
		return kgagent.Errorf(kgagent.EINVALID, "model: tensor %s has shape %v, want %v", name, t.Shape, want)
	}
	for i := range want {
		if t.Shape[i] != want[i] {
			return kgagent.Errorf(kgagent.EINVALID, "model: tensor %s has shape %v, want %v", name, t.Shape, want)
		}
	}
	return nil
}
