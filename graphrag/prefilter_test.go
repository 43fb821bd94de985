package graphrag

import "testing"

// FuzzPrefilters checks that the cheap tests run before reIsA and reParen
// never skip a sentence the regexps would match.
func FuzzPrefilters(f *testing.F) {
	for _, s := range []string{
		"A list is a mutable sequence.",
		"Dictionaries are\tan  associative array",
		"The GIL (global interpreter lock) is held.",
		"json.dumps() (a function) returns str",
		"this is not anything", "isa", " is a", "x is an", "(", " (x)", "x\n(ab)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if reIsA.MatchString(s) && !mayIsA(s) {
			t.Errorf("mayIsA(%q) = false, but reIsA matches", s)
		}
		if reParen.MatchString(s) && !hasSpaceParen(s) {
			t.Errorf("hasSpaceParen(%q) = false, but reParen matches", s)
		}
	})
}

func TestPrefilters(t *testing.T) {
	for _, tc := range []struct {
		s           string
		isA, parens bool
	}{
		{"A list is a mutable sequence.", true, false},
		{"Dicts are\tan  associative array", true, false},
		{"This island is amazing", false, false},
		{"The GIL (global interpreter lock) is held.", false, true},
		{"f(x) is called", false, false},
	} {
		if got := mayIsA(tc.s); got != tc.isA {
			t.Errorf("mayIsA(%q) = %v, want %v", tc.s, got, tc.isA)
		}
		if got := hasSpaceParen(tc.s); got != tc.parens {
			t.Errorf("hasSpaceParen(%q) = %v, want %v", tc.s, got, tc.parens)
		}
	}
}
