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

// TestSplitLongSentences: the terms of sentences longer than 32 terms are
// told apart in one set for every sentence, emptied after each (before,
// each made its own: 190 allocations for these 20 sentences before; 134
// with one set a split; 130 with the set reused from split to split), and
// each term's count is the number of sentences that hold it.
func TestSplitLongSentences(t *testing.T) {
	var ev kgagent.Evidence
	long := strings.Repeat("the cache size and the cache limit ", 8) + "end."
	for i := range 20 {
		ev.Passages = append(ev.Passages, kgagent.EvidencePassage{N: i + 1, URL: "http://d/" + strings.Repeat("x", i), Title: "T",
			Text: "Word" + strings.Repeat("y", i) + " and " + long})
	}
	ps := collect([]kgagent.Evidence{ev}, false)
	sents, df := split(ps)
	if len(sents) != 20 || len(sents[0].terms) <= 32 {
		t.Fatalf("%d sentences, the first of %d terms", len(sents), len(sents[0].terms))
	}
	if df["cache"] != 20 || df["the"] != 20 || df["word"] != 1 || df["wordyy"] != 1 {
		t.Errorf("df cache %d the %d word %d wordyy %d, want 20 20 1 1", df["cache"], df["the"], df["word"], df["wordyy"])
	}
	n := testing.AllocsPerRun(20, func() { split(ps) })
	if n > 140 && !raceOn {
		t.Errorf("%.0f allocations to split 20 passages of one long sentence, want at most 140", n)
	}
}
