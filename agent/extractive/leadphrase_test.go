package extractive

import (
	"strings"
	"testing"

	kgagent "github.com/kgagent/kgagent"
)

// TestLeadPrefersTheSynopsisThatHoldsTheQuestionsPhrase: a which-module
// question quoting a synopsis is answered by the page whose own synopsis
// holds it, not by a better-ranked neighbour that only shares its words.
func TestLeadPrefersTheSynopsisThatHoldsTheQuestionsPhrase(t *testing.T) {
	evs := []kgagent.Evidence{{Passages: []kgagent.EvidencePassage{
		{N: 1, URL: "https://d/library/email.utils.html#module-email.utils", Title: "email.utils — Miscellaneous utilities", HeadingPath: []string{"email.utils — Miscellaneous utilities"},
			Text: "There are a couple of useful utility functions provided in the email.utils module of Python. These functions are miscellaneous."},
		{N: 2, URL: "https://d/distutils/apiref.html#module-distutils.util", Title: "distutils.util — Miscellaneous other utility functions", HeadingPath: []string{"distutils.util — Miscellaneous other utility functions"},
			Text: "This module contains other assorted bits and pieces that don't fit into any other Python utility module."},
	}}}
	got := Compose("Which Python module should I use for this: miscellaneous other utility functions?", evs, Config{})
	if !strings.HasPrefix(got, "`distutils.util`") {
		t.Fatalf("answer leads with another module: %q", got)
	}
}

func TestLongestCommonRun(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"util import system", "modul provid util import system packag", 3},
		{"util import system", "import util system", 1},
		{"", "a b", 0},
	} {
		if got := longestCommonRun(strings.Fields(c.a), strings.Fields(c.b)); got != c.want {
			t.Errorf("longestCommonRun(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
