package minilm

import (
	"encoding/binary"
	"encoding/json"
	"io"
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

	// A tensor of a file opened by openSafetensors has no Data: its bytes
	// are read from src at off when converted.
	src io.ReaderAt
	off int64
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
	if t.src != nil {
		size, ok := dtypeSize[t.DType]
		if !ok || t.DType != "F32" && size != 2 {
			return nil, kgagent.Errorf(kgagent.EINVALID, "safetensors: tensor of type %s is not a float tensor", t.DType)
		}
		if t.DType == "F32" && littleEndian && n > 0 {
			// Straight into the result: no copy of the file's bytes.
			if _, err := t.src.ReadAt(unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), 4*n), t.off); err != nil {
				return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "reading model.safetensors")
			}
			return out, nil
		}
		t.Data = make([]byte, n*size)
		if _, err := t.src.ReadAt(t.Data, t.off); err != nil {
			return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "reading model.safetensors")
		}
	}
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
	if len(data) < 8 {
		return nil, badTensors("file of %d bytes is shorter than its 8-byte header length", len(data))
	}
	hlen := binary.LittleEndian.Uint64(data)
	if hlen > maxHeaderBytes || hlen > uint64(len(data)-8) {
		return nil, badTensors("header length %d does not fit the file (%d bytes)", hlen, len(data))
	}
	body := data[8+hlen:]
	return parseTensors(data[8:8+hlen], uint64(len(body)), func(t *Tensor, begin, end uint64) {
		t.Data = body[begin:end:end]
	})
}

// openSafetensors reads the header of the safetensors file f (size bytes),
// checked as ParseSafetensors checks it; the tensors' bytes stay in the
// file until Float32 reads them, so a load never holds the whole file.
func openSafetensors(f io.ReaderAt, size int64) (map[string]Tensor, error) {
	var lenBuf [8]byte
	if size < 8 {
		return nil, badTensors("file of %d bytes is shorter than its 8-byte header length", size)
	}
	if _, err := f.ReadAt(lenBuf[:], 0); err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "reading model.safetensors")
	}
	hlen := binary.LittleEndian.Uint64(lenBuf[:])
	if hlen > maxHeaderBytes || hlen > uint64(size-8) {
		return nil, badTensors("header length %d does not fit the file (%d bytes)", hlen, size)
	}
	header := make([]byte, hlen)
	if _, err := f.ReadAt(header, 8); err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "reading model.safetensors")
	}
	base := 8 + int64(hlen)
	return parseTensors(header, uint64(size-base), func(t *Tensor, begin, end uint64) {
		t.src, t.off = f, base+int64(begin)
	})
}

func badTensors(format string, args ...any) error {
	return kgagent.Errorf(kgagent.EINVALID, "safetensors: "+format, args...)
}

// parseTensors decodes a safetensors JSON header whose data section is
// bodyLen bytes long, checking every entry; place attaches each tensor's
// bytes [begin, end) of the data section.
func parseTensors(head []byte, bodyLen uint64, place func(t *Tensor, begin, end uint64)) (map[string]Tensor, error) {
	bad := badTensors
	var header map[string]json.RawMessage
	if err := json.Unmarshal(head, &header); err != nil {
		return nil, kgagent.WrapError(kgagent.EINVALID, err, "safetensors: header is not a JSON object")
	}
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
		if len(e.Offsets) != 2 || e.Offsets[0] > e.Offsets[1] || e.Offsets[1] > bodyLen {
			return nil, bad("tensor %q: data_offsets %v outside the %d data bytes", name, e.Offsets, bodyLen)
		}
		n := uint64(size)
		for _, d := range e.Shape {
			if d < 0 {
				return nil, bad("tensor %q: negative dimension in shape %v", name, e.Shape)
			}
			if d > 0 && n > bodyLen/uint64(d)+1 {
				return nil, bad("tensor %q: shape %v is larger than the file", name, e.Shape)
			}
			n *= uint64(d)
		}
		if n != e.Offsets[1]-e.Offsets[0] {
			return nil, bad("tensor %q: %s%v needs %d bytes, offsets give %d", name, e.DType, e.Shape, n, e.Offsets[1]-e.Offsets[0])
		}
		t := Tensor{DType: e.DType, Shape: e.Shape}
		place(&t, e.Offsets[0], e.Offsets[1])
		out[name] = t
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

// floatToHalf rounds f to the nearest float16 (ties to even; overflow to
// infinity, NaN kept a NaN).
func floatToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case b>>23&0xff == 0xff: // infinity or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp >= 31:
		return sign | 0x7c00
	case exp <= 0: // subnormal half (or zero)
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		h := mant >> shift
		rem, half := mant&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || rem == half && h&1 == 1 {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(exp)<<10 | mant>>13
	if rem := mant & 0x1fff; rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++ // may carry into the exponent, as rounding should
	}
	return sign | uint16(h)
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
