package graphrag

import (
	"strings"
	"testing"
)

// FuzzPrefilters checks that the cheap tests run before reIsA and reParen
// never skip a sentence the regexps would match.
func FuzzPrefilters(f *testing.F) {
	for _, s := range []string{
		"A list is a mutable sequence.",
		"Dictionaries are\tan  associative array",
		"The GIL (global interpreter lock) is held.",
		"json.dumps() (a function) returns str",
		"this is not anything", "isa", " is a", "x is an", "(", " (x)", "x\n(ab)",
		"x (ab)", "x (a)", "- (ab)", ") (ab)", ". (ab)", "x \t(\xff\xfe)", "x (日本)", "x (" + strings.Repeat("é", 60) + ")",
		"x (" + strings.Repeat("é", 61) + ")", "x (a(b)c)", "a (b) c (de)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if reIsA.MatchString(s) && !mayIsA(s) {
			t.Errorf("mayIsA(%q) = false, but reIsA matches", s)
		}
		if reModHead.MatchString(s) && !mayModHead(s) {
			t.Errorf("mayModHead(%q) = false, but reModHead matches", s)
		}
		if reSigHead.MatchString(s) && !maySigHead(s) {
			t.Errorf("maySigHead(%q) = false, but reSigHead matches", s)
		}
		if reDef.MatchString(s) && !mayDef(s) {
			t.Errorf("mayDef(%q) = false, but reDef matches", s)
		}
		if reParen.MatchString(s) && !mayParen(s) {
			t.Errorf("mayParen(%q) = false, but reParen matches", s)
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
		{"Call it (see below).", false, true},
		{"a list (x)", false, false},
		{"a list. (see x)", false, false},
	} {
		if got := mayIsA(tc.s); got != tc.isA {
			t.Errorf("mayIsA(%q) = %v, want %v", tc.s, got, tc.isA)
		}
		if got := mayParen(tc.s); got != tc.parens {
			t.Errorf("mayParen(%q) = %v, want %v", tc.s, got, tc.parens)
		}
	}
}
