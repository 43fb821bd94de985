package graphrag

import (
	"strings"
	"testing"
	"unicode"

	"github.com/kgagent/kgagent/internal/text"
)

// normalizeNameRef is NormalizeName as first written (a rune loop, then
// split, singular and join): the reference the ASCII fast path must agree
// with.
func normalizeNameRef(name string) string {
	name = strings.TrimSpace(name)
	if name == "" {
		return ""
	}
	var b strings.Builder
	space := false
	for _, r := range name {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '.' || r == '+' || r == '#':
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(unicode.ToLower(r))
		default:
			space = true
		}
	}
	s := strings.Trim(b.String(), ". ")
	if s == "" {
		return ""
	}
	words := strings.Split(s, " ")
	last := words[len(words)-1]
	if isPlainWord(last) && !strings.ContainsAny(name, "()`_") {
		words[len(words)-1] = text.Singular(last)
	}
	return strings.Join(words, " ")
}

var normalizeSeeds = []string{
	"", " ", "json.dumps()", "Dictionaries", "list comprehensions", "Global  Interpreter\tLock",
	"os.path", "a b", " a b ", "a  b", "a - b", "--x--", "Über Größe", "café au laits", "x\u00a0y",
	"C++ classes", "C# types", "__init__", "`code`", "a.b.", "..", ". a .", "GIL", "A", "aliases",
	"built-in functions", "i.e.", "e.g", "Statuses", "\xffbad bytes", "ab\x00cd", "x y z words",
}

func checkNormalize(t *testing.T, s string) {
	t.Helper()
	if got, want := NormalizeName(s), normalizeNameRef(s); got != want {
		t.Errorf("NormalizeName(%q) = %q, want %q", s, got, want)
	}
	if got, want := collapseSpace(s), strings.Join(strings.Fields(s), " "); got != want {
		t.Errorf("collapseSpace(%q) = %q, want %q", s, got, want)
	}
}

func TestNormalizeNameFastPath(t *testing.T) {
	for _, s := range normalizeSeeds {
		checkNormalize(t, s)
	}
	// Already folded names come back without a copy.
	if allocs := testing.AllocsPerRun(10, func() { _ = NormalizeName("json.dumps") }); allocs != 0 {
		t.Errorf("NormalizeName of a folded name allocated %v times", allocs)
	}
}

func FuzzNormalizeNameFast(f *testing.F) {
	for _, s := range normalizeSeeds {
		f.Add(s)
	}
	f.Fuzz(checkNormalize)
}
