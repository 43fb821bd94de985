package sqlite

import (
	"bytes"
	"math"
	"reflect"
	"testing"

	"github.com/kgagent/kgagent"
)

// equalValues compares canonical values, NaN equal to NaN and -0 to -0.
func equalValues(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y && math.Signbit(x) == math.Signbit(y) || math.IsNaN(x) && math.IsNaN(y))
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalValues(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k := range x {
			if _, ok := y[k]; !ok || !equalValues(x[k], y[k]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

func TestValueRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"nil", nil, nil},
		{"true", true, true},
		{"false", false, false},
		{"int", 42, int64(42)},
		{"max int64", int64(math.MaxInt64), int64(math.MaxInt64)},
		{"min int64", int64(math.MinInt64), int64(math.MinInt64)},
		{"2^60 stays an int", int64(1) << 60, int64(1) << 60},
		{"uint8", uint8(7), int64(7)},
		{"uint64 that fits", uint64(math.MaxInt64), int64(math.MaxInt64)},
		{"float", 0.1, 0.1},
		{"float32", float32(1.5), 1.5},
		{"smallest float", math.SmallestNonzeroFloat64, math.SmallestNonzeroFloat64},
		{"NaN", math.NaN(), math.NaN()},
		{"+Inf", math.Inf(1), math.Inf(1)},
		{"-0", math.Copysign(0, -1), math.Copysign(0, -1)},
		{"string", "héllo \"wörld\"\n", "héllo \"wörld\"\n"},
		{"empty string", "", ""},
		{"bytes", []byte{0, 1, 0xff, 0xfe}, []byte{0, 1, 0xff, 0xfe}},
		{"nil bytes", []byte(nil), []byte{}},
		{"list", []any{1, "a", nil, true, 2.5, []byte("x")}, []any{int64(1), "a", nil, true, 2.5, []byte("x")}},
		{"empty list", []any{}, []any{}},
		{"string slice", []string{"a", "b"}, []any{"a", "b"}},
		{"map", map[string]any{"n": 1, "s": "x", "b": []byte{9}, "z": nil}, map[string]any{"n": int64(1), "s": "x", "b": []byte{9}, "z": nil}},
		{"string map", map[string]string{"k": "v"}, map[string]any{"k": "v"}},
		{"empty map", map[string]any{}, map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc, err := EncodeValue(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeValue(enc)
			if err != nil {
				t.Fatalf("decode %s: %v", enc, err)
			}
			if !equalValues(got, tt.want) {
				t.Fatalf("got %#v, want %#v (encoded %s)", got, tt.want, enc)
			}
		})
	}
}

func TestEncodeValueRejects(t *testing.T) {
	type custom struct{ A int }
	tests := []struct {
		name string
		in   any
		code string
	}{
		{"struct", custom{1}, kgagent.EINVALID},
		{"pointer", new(int), kgagent.EINVALID},
		{"nested list", []any{[]any{1}}, kgagent.EINVALID},
		{"list in map", map[string]any{"a": []any{1}}, kgagent.EINVALID},
		{"map in list", []any{map[string]any{}}, kgagent.EINVALID},
		{"uint64 too big", uint64(math.MaxUint64), kgagent.EINVALID},
		{"invalid utf-8", "\xff", kgagent.EINVALID},
		{"invalid utf-8 key", map[string]any{"\xff": 1}, kgagent.EINVALID},
		{"int map", map[int]any{1: 1}, kgagent.EINVALID},
		{"func", func() {}, kgagent.EINVALID},
		{"too large", bytes.Repeat([]byte("x"), MaxValueSize), kgagent.ETOOLARGE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := EncodeValue(tt.in)
			if got := kgagent.ErrorCode(err); got != tt.code {
				t.Fatalf("code = %q (%v), want %q", got, err, tt.code)
			}
		})
	}
}

func TestDecodeValueRejects(t *testing.T) {
	for _, in := range []string{
		``, `null`, `1`, `"x"`, `[]`, `{}`, `{"int":"1","str":"x"}`, `{"unknown":1}`,
		`{"null":0}`, `{"bool":"true"}`, `{"bool":null}`, `{"int":1}`, `{"int":"1.5"}`, `{"int":"99999999999999999999"}`,
		`{"float":1.5}`, `{"float":"x"}`, `{"str":null}`, `{"str":1}`, `{"bytes":"!!"}`, `{"bytes":null}`,
		`{"list":null}`, `{"list":{}}`, `{"list":[1]}`, `{"list":[{"list":[]}]}`, `{"map":[]}`, `{"map":{"a":{"map":{}}}}`,
		`{"str":"x"} trailing`,
	} {
		if _, err := DecodeValue([]byte(in)); kgagent.ErrorCode(err) != kgagent.EINVALID {
			t.Errorf("DecodeValue(%s) = %v, want %s", in, err, kgagent.EINVALID)
		}
	}
}

// FuzzDecodeValue checks that the decoder never panics, that whatever it
// accepts is a canonical value that encodes and decodes to itself, and that
// it only fails with EINVALID or ETOOLARGE.
func FuzzDecodeValue(f *testing.F) {
	for _, v := range []any{nil, true, int64(-3), 2.5, math.NaN(), "s", []byte{1, 2}, []any{int64(1), "x", nil}, map[string]any{"k": []byte("v"), "n": 1.0}} {
		enc, err := EncodeValue(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(enc)
	}
	f.Add([]byte(`{"int":"+7"}`))
	f.Add([]byte(`{"map":{"a":{"str":"\ud800"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := DecodeValue(data)
		if err != nil {
			if c := kgagent.ErrorCode(err); c != kgagent.EINVALID && c != kgagent.ETOOLARGE {
				t.Fatalf("code %q: %v", c, err)
			}
			return
		}
		n, err := NormalizeValue(v)
		if err != nil || !equalValues(n, v) {
			t.Fatalf("decoded %#v is not canonical: %v", v, err)
		}
		enc, err := EncodeValue(v)
		if err != nil {
			if kgagent.ErrorCode(err) == kgagent.ETOOLARGE {
				return
			}
			t.Fatalf("encode %#v: %v", v, err)
		}
		again, err := DecodeValue(enc)
		if err != nil || !equalValues(again, v) {
			t.Fatalf("round trip of %#v: %#v, %v", v, again, err)
		}
	})
}
