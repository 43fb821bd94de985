package kgagent

import (
	"strings"
	"testing"

	"github.com/kgagent/kgagent/internal/text"
)

// snippetWhole is Snippet as it was: the whole of s collapsed, then cut.
func snippetWhole(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndexByte(s[:n], ' ')
	if cut < n/2 {
		cut = n
	}
	return text.Clip(s, cut) + "…"
}

var snippetTexts = []string{
	"", "   ", "one", "  a  b\n\tc  ", strings.Repeat("word ", 100), strings.Repeat("x", 300),
	strings.Repeat("é", 150) + " tail", "short words then " + strings.Repeat("longlonglong", 30),
	strings.Repeat("a b\n\n", 60), strings.Repeat("ünïcödé wörds ", 30), "exactly\u00a0nbsp\u2003em space " + strings.Repeat("z ", 120),
}

// TestSnippetReadsOnlyTheCut: Snippet gives what collapsing the whole text
// and cutting it gave, for every bound; a long text's snippet allocates
// about the snippet, not the text (before, 1.5 copies of it).
func TestSnippetReadsOnlyTheCut(t *testing.T) {
	for _, s := range snippetTexts {
		for _, n := range []int{0, 1, 2, 5, 10, 50, 199, 200, 201, 500} {
			if got, want := Snippet(s, n), snippetWhole(s, n); got != want {
				t.Errorf("Snippet(%q, %d) = %q, want %q", s, n, got, want)
			}
		}
	}
	long := strings.Repeat("some words of a long section\n", 1000) // 29 KB
	if a := testing.AllocsPerRun(10, func() { Snippet(long, 200) }); a > 3 {
		t.Errorf("Snippet of a 29 KB text: %.0f allocations, want at most 3", a)
	}
	r := testing.Benchmark(func(b *testing.B) {
		for range b.N {
			Snippet(long, 200)
		}
	})
	if per := r.AllocedBytesPerOp(); per > 1024 {
		t.Errorf("Snippet of a 29 KB text allocates %d bytes, want at most 1 KiB", per)
	}
}

// FuzzSnippet: Snippet is the whole text collapsed and cut.
func FuzzSnippet(f *testing.F) {
	for _, s := range snippetTexts {
		f.Add(s, 200)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || n > 1000 {
			return
		}
		if got, want := Snippet(s, n), snippetWhole(s, n); got != want {
			t.Fatalf("Snippet(%q, %d) = %q, want %q", s, n, got, want)
		}
	})
}
