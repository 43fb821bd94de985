package graphrag

import (
	"regexp"
	"strings"
	"testing"
)

// The regular expressions the extractor's hand-written matchers replace
// (matchers.go): the matchers must agree with them on every input.
var (
	reSnake     = regexp.MustCompile(`^[a-z][a-z0-9]*_[a-z0-9_]+$`)
	reCamel     = regexp.MustCompile(`^[A-Z][a-z0-9]+[A-Z]\w*$`)
	reCapPhrase = regexp.MustCompile(`\b[A-Z][a-z]+(?: [A-Z][a-z]+){1,3}\b`)
	reAcronym   = regexp.MustCompile(`\b[A-Z][A-Z0-9]{1,7}\b`)
	reIdent     = regexp.MustCompile(`^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$`)
	reExcName   = regexp.MustCompile(`\b([A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Iteration|ExceptionGroup)\b|\bException\b`)
	reCapIdent  = regexp.MustCompile(`\b(?:[A-Za-z_]\w*\.)*[A-Z]\w+\b`)
)

// all collects what a matcher finds.
func all(find func(string, func(string) bool), s string) []string {
	var out []string
	find(s, func(m string) bool { out = append(out, m); return true })
	return out
}

// checkMatchers compares every matcher with its regular expression on s.
func checkMatchers(t *testing.T, s string) {
	t.Helper()
	for _, tc := range []struct {
		name string
		got  bool
		re   *regexp.Regexp
	}{
		{"isSnake", isSnake(s), reSnake},
		{"isCamel", isCamel(s), reCamel},
		{"isIdent", isIdent(s), reIdent},
	} {
		if want := tc.re.MatchString(s); tc.got != want {
			t.Errorf("%s(%q) = %v, want %v", tc.name, s, tc.got, want)
		}
	}
	for _, tc := range []struct {
		name string
		find func(string, func(string) bool)
		re   *regexp.Regexp
	}{
		{"capPhrases", capPhrases, reCapPhrase},
		{"acronyms", acronyms, reAcronym},
		{"excNames", excNames, reExcName},
		{"capIdents", capIdents, reCapIdent},
	} {
		got, want := all(tc.find, s), tc.re.FindAllString(s, -1)
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
			t.Errorf("%s(%q) = %q, want %q", tc.name, s, got, want)
		}
	}
}

// checkParens compares parens with reParen.FindAllStringSubmatch on s.
func checkParens(t *testing.T, s string) {
	t.Helper()
	for _, n := range []int{8, 1, -1} {
		var got []string
		parens(s, n, func(x, y string) { got = append(got, x, y) })
		var want []string
		for _, m := range reParen.FindAllStringSubmatch(s, n) {
			want = append(want, m[1], m[2])
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
			t.Errorf("parens(%q, %d) = %q, want %q", s, n, got, want)
		}
	}
}

var parenSeeds = []string{
	"The Global Interpreter Lock (GIL) is held.", "json.dumps() (a function) returns str",
	"xFoo Bar (x)", "Foo bar (baz)", "Foo.bar (x)", "A B C D E F G (hi)", "A B C D E F (hi)",
	"f(ab) (cd)", "foo (a) bar (bc) baz (de) x (f(g)) y (hi)", "a.b.c() (xy) and a..b (xy)",
	"Foo-Bar  Baz\t(a, b)", "x (" + strings.Repeat("é", 60) + ")", "x (" + strings.Repeat("é", 61) + ")",
	"x (\xff\xfe) y (\xc3)", "_x (ab) 9y (ab) y9 (ab)", "Foo (x) (ab)", "Foo\n(ab)", "Foo () (ab)",
	"a (bc) b (cd) c (de) d (ef) e (fg) f (gh) g (hi) h (ij) i (jk) j (kl)",
}

func TestParens(t *testing.T) {
	for _, s := range append(parenSeeds, matcherSeeds...) {
		checkParens(t, s)
	}
}

func FuzzParens(f *testing.F) {
	for _, s := range parenSeeds {
		f.Add(s)
	}
	f.Fuzz(checkParens)
}

var matcherSeeds = []string{
	"", "a", "A", "get_item", "_x", "a_", "a__", "a1_b", "a_B", "ab_c_", "MyClass", "Ab", "AbC", "A1B", "ABc", "AbCd_9",
	"Mc", "McDonald Farm", "os.path.join", "os..path", ".os", "os.", "_a.b_c", "a.1b", "x9.y",
	"The Global Interpreter Lock (GIL) is held. See Python Software Foundation and JSON.",
	"Foo Bar_x Baz Qux", "Foo Bar Baz Qux Quux Corge", "xFoo Bar", "Foo  Bar", "Foo Bar1", "Foo B", "Foo Ba",
	"HTTP HTTPS ABCDEFGH ABCDEFGHI A1 1A AB_ ÄBC BCÄ X9Y", "Über Alles Für Sie", "End With Caps",
	"Foo\tBar", "Foo Bar\n", "IDs are NOT OK", "Python 3.11 Documentation Index Page Next",
	// exception names and capitalised dotted identifiers
	"Raises ValueError, json.JSONDecodeError or os.path.FooError.args; Exception, Exceptions, MyException.",
	"Error Exit Warning Iteration XError XExit StopIteration KeyboardInterrupt SystemExit BaseExceptionGroup",
	"ExceptionGroup FooExceptionGroup Exception.FooError a.B.cError a..FooError 1foo.BarError x.1.FooError",
	"_priv.Mod.ThingError shutil.Error os.error A.b Ab.Cd.e A.BError_ ÉFooError éFooError FooErrorÉ \xffFooError",
	"Foo.Bar. .Foo Foo.. foo.Bar.baz.Qux9 _a._B A B.C AB.c.D9 Exception.Exception Exception.",
}

func TestMatchers(t *testing.T) {
	for _, s := range matcherSeeds {
		checkMatchers(t, s)
	}
	// A matcher stops when told to.
	if got := all(func(s string, f func(string) bool) {
		capPhrases(s, func(m string) bool { f(m); return false })
	}, "Foo Bar and Baz Qux"); len(got) != 1 || got[0] != "Foo Bar" {
		t.Errorf("capPhrases did not stop after the first match: %q", got)
	}
}

func FuzzMatchers(f *testing.F) {
	for _, s := range matcherSeeds {
		f.Add(s)
	}
	f.Fuzz(checkMatchers)
}
