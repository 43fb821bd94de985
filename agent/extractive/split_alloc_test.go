package extractive

import (
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
)

// TestSplitAllocations: splitting the evidence allocates for its
// sentences and their terms, not for every sentence's bookkeeping (a set
// of seen terms each, a copy of each line for a footnote mark it does not
// have): 722 allocations for these 60 sentences before, 502 after.
func TestSplitAllocations(t *testing.T) {
	var ev kgagent.Evidence
	for i := range 20 {
		ev.Passages = append(ev.Passages, kgagent.EvidencePassage{N: i + 1, URL: "http://d/" + strings.Repeat("x", i), Title: "T",
			Text: "The cache takes a quarter of memory by default, and more when asked.\n\nSet cache.size to change it; the server reads it at start. Larger caches help queries over recent data."})
	}
	ps := collect([]kgagent.Evidence{ev}, false)
	n := testing.AllocsPerRun(20, func() {
		for _, p := range ps {
			p.terms = nil
		}
		split(ps)
		evidenceTerms(ps)
	})
	if n > 600 {
		t.Errorf("%.0f allocations to split 20 passages of 3 sentences, want at most 600", n)
	}
}
