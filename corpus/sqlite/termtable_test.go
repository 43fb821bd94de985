package sqlite

import (
	"fmt"
	"reflect"
	"testing"
)

// TestTermTableHoldsNoPointers: a field index's terms are kept with no
// pointer a term for the collector to scan (the map of strings to lists
// they replace was ~9 MB of the OpenJDK API docs' search copies, every
// key a string pointer): the table's arrays hold no pointer type, and the
// index keys its terms by number, not by a map of strings.
func TestTermTableHoldsNoPointers(t *testing.T) {
	tt := reflect.TypeFor[termTable]()
	for i := range tt.NumField() {
		f := tt.Field(i)
		if f.Type.Kind() != reflect.Slice || hasPointers(f.Type.Elem()) {
			t.Errorf("termTable.%s is %s: want a slice of pointer-free elements", f.Name, f.Type)
		}
	}
	ft := reflect.TypeFor[fieldIndex]()
	for i := range ft.NumField() {
		f := ft.Field(i)
		if f.Type.Kind() == reflect.Map && f.Type.Key().Kind() == reflect.String {
			t.Errorf("fieldIndex.%s is %s: terms are to be numbered in a termTable", f.Name, f.Type)
		}
	}
	if k := reflect.TypeFor[wideKey]().Field(0).Type.Kind(); k != reflect.Int32 {
		t.Errorf("wideKey's term is a %s, want a term number", k)
	}
}

func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.String, reflect.Slice, reflect.Map, reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return true
	case reflect.Array:
		return hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// TestTermTable: terms come back by number and are found by string
// through the table's growth, the empty term and terms sharing prefixes
// included; a term it lacks is not found.
func TestTermTable(t *testing.T) {
	var tt termTable
	if _, ok := tt.find("x"); ok {
		t.Fatal("found a term in an empty table")
	}
	terms := []string{"", "a", "ab", "abc"}
	for i := range 5000 {
		terms = append(terms, fmt.Sprintf("term%d", i))
	}
	for i, s := range terms {
		if got := tt.add(s); got != int32(i) {
			t.Fatalf("add(%q) = %d, want %d", s, got, i)
		}
	}
	tt.shrink()
	check := func(stage string) {
		t.Helper()
		if tt.len() != len(terms) {
			t.Fatalf("%s: %d terms, want %d", stage, tt.len(), len(terms))
		}
		for i, s := range terms {
			if got := tt.term(int32(i)); got != s {
				t.Fatalf("%s: term(%d) = %q, want %q", stage, i, got, s)
			}
			if got, ok := tt.find(s); !ok || got != int32(i) {
				t.Fatalf("%s: find(%q) = %d %v, want %d", stage, s, got, ok, i)
			}
		}
		for _, s := range []string{"term5000", "abcd", "b", "term-1"} {
			if got, ok := tt.find(s); ok {
				t.Errorf("%s: find(%q) = %d, want none", stage, s, got)
			}
		}
	}
	check("added")
	var r termTable
	r.reserve(len(terms))
	for _, s := range terms {
		r.add(s)
	}
	tt = r
	check("reserved")
}
