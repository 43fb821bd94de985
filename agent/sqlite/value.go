package sqlite

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// MaxValueSize bounds one encoded user-storage value.
const MaxValueSize = 1 << 20

// Value tags of the stored encoding: every value is a JSON object with one
// member whose name says the type, so ints and bytes come back exactly
// (plain JSON would turn 1<<60 into a float and bytes into a string).
//
//	{"null":null} {"bool":true} {"int":"42"} {"float":"0.1"} {"str":"x"}
//	{"bytes":"<base64>"} {"list":[...]} {"map":{"k":...}}
//
// Ints and floats are decimal strings: JSON numbers lose precision in many
// readers, and NaN and ±Inf have no JSON number.
const (
	tagNull  = "null"
	tagBool  = "bool"
	tagInt   = "int"
	tagFloat = "float"
	tagStr   = "str"
	tagBytes = "bytes"
	tagList  = "list"
	tagMap   = "map"
)

// NormalizeValue checks that v is a user-storage value (seed 001: bool, int,
// float, string, nil, bytes, or a list or string-keyed map of those) and
// returns it in canonical form: bool, int64, float64, string, nil, []byte,
// []any or map[string]any. Any Go int or uint type that fits int64, float32,
// []string and map[string]string are accepted for convenience. Lists and
// maps hold primitives only, as in the reference SDK; strings and map keys
// must be valid UTF-8. Anything else fails with EINVALID.
func NormalizeValue(v any) (any, error) { return normalize(v, 0) }

func normalize(v any, depth int) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case bool:
		return x, nil
	case int:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int64:
		return x, nil
	case uint:
		return uintValue(uint64(x))
	case uint8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint64:
		return uintValue(x)
	case float32:
		return float64(x), nil
	case float64:
		return x, nil
	case string:
		if !utf8.ValidString(x) {
			return nil, kgagent.Errorf(kgagent.EINVALID, "user storage string is not valid UTF-8")
		}
		return x, nil
	case []byte:
		if x == nil {
			return []byte{}, nil
		}
		return bytes.Clone(x), nil
	case []string:
		l := make([]any, len(x))
		for i, s := range x {
			l[i] = s
		}
		return normalize(l, depth)
	case map[string]string:
		m := make(map[string]any, len(x))
		for k, s := range x {
			m[k] = s
		}
		return normalize(m, depth)
	case []any:
		if depth > 0 {
			return nil, kgagent.Errorf(kgagent.EINVALID, "user storage lists and maps hold only bool, int, float, string, null or bytes")
		}
		out := make([]any, len(x))
		for i, e := range x {
			n, err := normalize(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case map[string]any:
		if depth > 0 {
			return nil, kgagent.Errorf(kgagent.EINVALID, "user storage lists and maps hold only bool, int, float, string, null or bytes")
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			if !utf8.ValidString(k) {
				return nil, kgagent.Errorf(kgagent.EINVALID, "user storage map key is not valid UTF-8")
			}
			n, err := normalize(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	}
	return nil, kgagent.Errorf(kgagent.EINVALID, "user storage cannot hold a value of type %T", v)
}

func uintValue(u uint64) (any, error) {
	if u > math.MaxInt64 {
		return nil, kgagent.Errorf(kgagent.EINVALID, "user storage int %d does not fit 64-bit signed", u)
	}
	return int64(u), nil
}

// EncodeValue normalizes v (see NormalizeValue) and returns its stored,
// type-tagged JSON encoding. It fails with EINVALID for a value of another
// type and ETOOLARGE for an encoding over MaxValueSize.
func EncodeValue(v any) ([]byte, error) {
	n, err := NormalizeValue(v)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	encode(&b, n)
	if b.Len() > MaxValueSize {
		return nil, kgagent.Errorf(kgagent.ETOOLARGE, "user storage value over %d bytes encoded", MaxValueSize)
	}
	return b.Bytes(), nil
}

// encode writes a normalized value.
func encode(b *bytes.Buffer, v any) {
	str := func(s string) {
		j, _ := json.Marshal(s) // valid UTF-8: checked by normalize
		b.Write(j)
	}
	tag := func(t string) { b.WriteString(`{"` + t + `":`) }
	switch x := v.(type) {
	case nil:
		b.WriteString(`{"null":null}`)
		return
	case bool:
		tag(tagBool)
		b.WriteString(strconv.FormatBool(x))
	case int64:
		tag(tagInt)
		str(strconv.FormatInt(x, 10))
	case float64:
		tag(tagFloat)
		str(strconv.FormatFloat(x, 'g', -1, 64))
	case string:
		tag(tagStr)
		str(x)
	case []byte:
		tag(tagBytes)
		str(base64.StdEncoding.EncodeToString(x))
	case []any:
		tag(tagList)
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			encode(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		tag(tagMap)
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			str(k)
			b.WriteByte(':')
			encode(b, x[k])
		}
		b.WriteByte('}')
	}
	b.WriteByte('}')
}

// DecodeValue reads an encoding written by EncodeValue and returns the value
// in canonical form. Anything else (not JSON, an unknown or missing tag, a
// member of the wrong JSON type, an int out of range, nested containers)
// fails with EINVALID.
func DecodeValue(data []byte) (any, error) {
	if len(data) > MaxValueSize {
		return nil, kgagent.Errorf(kgagent.ETOOLARGE, "user storage value over %d bytes encoded", MaxValueSize)
	}
	return decode(data, 0)
}

func decode(raw []byte, depth int) (any, error) {
	bad := func(format string, args ...any) error {
		return kgagent.Errorf(kgagent.EINVALID, "bad stored value: "+format, args...)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, bad("not a tagged JSON object")
	}
	if len(obj) != 1 {
		return nil, bad("%d members, want one type tag", len(obj))
	}
	var t string
	var v json.RawMessage
	for t, v = range obj {
	}
	v = bytes.TrimSpace(v)
	first := byte(0)
	if len(v) > 0 {
		first = v[0]
	}
	quoted := func() (string, error) {
		var s string
		if first != '"' {
			return "", bad("%s member is not a string", t)
		}
		if err := json.Unmarshal(v, &s); err != nil {
			return "", bad("%s member: %v", t, err)
		}
		return s, nil
	}
	switch t {
	case tagNull:
		if string(v) != "null" {
			return nil, bad("null member is not null")
		}
		return nil, nil
	case tagBool:
		switch string(v) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, bad("bool member is not true or false")
	case tagInt:
		s, err := quoted()
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, bad("int %q: %v", s, err)
		}
		return n, nil
	case tagFloat:
		s, err := quoted()
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, bad("float %q: %v", s, err)
		}
		return f, nil
	case tagStr:
		return quoted()
	case tagBytes:
		s, err := quoted()
		if err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, bad("bytes: %v", err)
		}
		return b, nil
	case tagList, tagMap:
		if depth > 0 {
			return nil, bad("nested %s", t)
		}
		if t == tagList {
			var items []json.RawMessage
			if first != '[' || json.Unmarshal(v, &items) != nil {
				return nil, bad("list member is not an array")
			}
			out := make([]any, len(items))
			for i, it := range items {
				e, err := decode(it, depth+1)
				if err != nil {
					return nil, err
				}
				out[i] = e
			}
			return out, nil
		}
		var items map[string]json.RawMessage
		if first != '{' || json.Unmarshal(v, &items) != nil {
			return nil, bad("map member is not an object")
		}
		out := make(map[string]any, len(items))
		for k, it := range items {
			e, err := decode(it, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = e
		}
		return out, nil
	}
	return nil, bad("unknown type tag %q", text.Truncate(t, 40))
}
