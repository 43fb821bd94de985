package graphrag

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kgagent/kgagent"
)

func TestNormalizeName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"JSON", "json"},
		{"  Global   Interpreter-Lock ", "global interpreter lock"},
		{"Dictionaries", "dictionary"},
		{"classes", "class"},
		{"class", "class"},
		{"Process", "process"},
		{"status", "status"},
		{"json.dumps()", "json.dumps"},
		{"json.dumps", "json.dumps"},
		{"json.dump", "json.dump"},
		{"`os.path.join`", "os.path.join"},
		{"\"quoted\"", "quoted"},
		{"list comprehensions", "list comprehension"},
		{"__init__", "__init__"},
		{"C++", "c++"},
		{"Straße", "straße"},
		{"...", ""},
		{"", ""},
		{"keys", "keys"},
		{"boxes", "box"},
		{"Series", "series"},
		{"time series", "time series"},
		{"aliases", "alias"},
		{"libraries", "library"},
		{"queries", "query"},
	}
	for _, tc := range tests {
		if got := NormalizeName(tc.in); got != tc.want {
			t.Errorf("NormalizeName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestNormalizePredicate(t *testing.T) {
	for in, want := range map[string]string{"Is Part Of": "is_part_of", "is_a": "is_a", " defines ": "defines", "links-to": "links_to"} {
		if got := NormalizePredicate(in); got != want {
			t.Errorf("NormalizePredicate(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAliases(t *testing.T) {
	a := Aliases{}
	gil := NewEntity("Global Interpreter Lock", TypeTerm)
	a.Add("GIL", gil.ID)
	if got := a.Resolve(NewEntity("gil", TypeTerm)); got.ID != gil.ID || got.Name != "gil" {
		t.Errorf("Resolve(gil) = %+v, want id %q", got, gil.ID)
	}
	if got := a.Resolve(NewEntity("lock", TypeTerm)); got.ID != "lock" {
		t.Errorf("Resolve(lock) = %+v", got)
	}
}

func TestValidateTriple(t *testing.T) {
	good := kgagent.Triple{Collection: "c", DocURL: "u", Subject: NewEntity("a", ""), Predicate: "is_a", Object: NewEntity("b", "")}
	long := strings.Repeat("x", MaxNameBytes+1)
	tests := []struct {
		name string
		mod  func(t *kgagent.Triple)
		ok   bool
	}{
		{"good", func(*kgagent.Triple) {}, true},
		{"literal", func(t *kgagent.Triple) { t.Object = kgagent.Entity{}; t.Literal = "x" }, true},
		{"name at limit", func(t *kgagent.Triple) { t.Subject.Name = long[:MaxNameBytes] }, true},
		{"long subject", func(t *kgagent.Triple) { t.Subject.Name = long }, false},
		{"long object", func(t *kgagent.Triple) { t.Object.Name = long }, false},
		{"both objects", func(t *kgagent.Triple) { t.Literal = "x" }, false},
		{"no object", func(t *kgagent.Triple) { t.Object = kgagent.Entity{} }, false},
		{"no predicate", func(t *kgagent.Triple) { t.Predicate = "" }, false},
		{"wrong collection", func(t *kgagent.Triple) { t.Collection = "d" }, false},
		{"wrong doc", func(t *kgagent.Triple) { t.DocURL = "v" }, false},
		{"bad utf8", func(t *kgagent.Triple) { t.Subject.Name = "\xff" }, false},
		{"long literal", func(t *kgagent.Triple) {
			t.Object = kgagent.Entity{}
			t.Literal = strings.Repeat("x", MaxLiteralBytes+1)
		}, false},
	}
	for _, tc := range tests {
		tr := good
		tc.mod(&tr)
		err := ValidateTriple("c", "u", tr)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && kgagent.ErrorCode(err) != kgagent.EINVALID {
			t.Errorf("%s: code %q", tc.name, kgagent.ErrorCode(err))
		}
		// a batch (which checks the collection once) says the same, at
		// the triple's index
		berr := ValidateTriples("c", "u", []kgagent.Triple{good, good, tr})
		if (berr == nil) != (err == nil) || err != nil && (berr.Error() != err.Error() || berr.(*kgagent.Error).Details["index"] != 2) {
			t.Errorf("%s: batch err = %v, want %v at index 2", tc.name, berr, err)
		}
	}
	for _, c := range []string{"", "bad name!", "c__", "c__x__y"} {
		if ValidateTriple(c, "u", good) == nil || ValidateTriples(c, "u", []kgagent.Triple{good}) == nil || ValidateTriples(c, "u", nil) == nil {
			t.Errorf("collection %q accepted", c)
		}
	}
}

func FuzzNormalizeName(f *testing.F) {
	for _, s := range []string{"JSON", "Dictionaries", "json.dumps()", "a . b", "classes", "  x--y ", "日本語の名前", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := NormalizeName(s)
		if !utf8.ValidString(n) {
			t.Fatalf("invalid UTF-8 from %q", s)
		}
		// Code names ("dumps()") are not made singular; plain words are, once.
		if !strings.ContainsAny(s, "()`_") && NormalizeName(n) != n {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, n, NormalizeName(n))
		}
		if strings.HasPrefix(n, " ") || strings.HasSuffix(n, " ") || strings.Contains(n, "  ") {
			t.Fatalf("untidy spaces in %q", n)
		}
	})
}

func TestNormalizeNameCode(t *testing.T) {
	for in, want := range map[string]string{"dumps()": "dumps", "`items`": "items", "get_items": "get_items", "items": "item"} {
		if got := NormalizeName(in); got != want {
			t.Errorf("NormalizeName(%q) = %q, want %q", in, got, want)
		}
	}
}
