package extractive

import (
	"strings"
	"testing"
)

// FuzzCountWords: countWords counts what strings.Fields cuts, ASCII and
// not, valid UTF-8 or not.
func FuzzCountWords(f *testing.F) {
	for _, s := range []string{"", " a  b\tc\n", "\v\f\r x", "non\u00a0breaking\u2003em\u0085nel", "caf\xc3 \xff\xfe é", "one"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := countWords(s), len(strings.Fields(s)); got != want {
			t.Fatalf("countWords(%q) = %d, want %d", s, got, want)
		}
	})
}
