package kgagent

import (
	"strings"
	"testing"
)

func TestValidateCollection(t *testing.T) {
	good := []string{"default", "py", "python-3.12_docs", "A", strings.Repeat("c", MaxCollectionLen), "a_b"}
	bad := []string{"", " ", "a b", "default__entities", "x__", "__x", "_x", ".x", "-x", "a\x00", "é", "a/b",
		strings.Repeat("c", MaxCollectionLen+1), strings.Repeat("c", 300)}
	for _, n := range good {
		if err := ValidateCollection(n); err != nil {
			t.Errorf("ValidateCollection(%q) = %v", n, err)
		}
		if err := ValidateStoredCollection(n); err != nil {
			t.Errorf("ValidateStoredCollection(%q) = %v", n, err)
		}
	}
	for _, n := range bad {
		if err := ValidateCollection(n); ErrorCode(err) != EINVALID {
			t.Errorf("ValidateCollection(%q) = %v, want INVALID_ARGUMENT", n, err)
		}
	}
	in := "default" + InternalSep + "entities"
	if ValidateStoredCollection(in) != nil || ValidateCollection(in) == nil {
		t.Errorf("internal name %q not handled", in)
	}
	if ValidateStoredCollection("a__b__c") == nil || ValidateStoredCollection("a__") == nil {
		t.Error("malformed internal names accepted")
	}
}

func FuzzValidateCollection(f *testing.F) {
	for _, s := range []string{"default", "a__b", "", "x y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidateCollection(s) == nil && (strings.Contains(s, InternalSep) || len(s) > MaxCollectionLen || s == "") {
			t.Fatalf("accepted %q", s)
		}
	})
}
