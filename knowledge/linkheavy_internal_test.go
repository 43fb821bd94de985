package knowledge

import (
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/internal/text"
)

// linkHeavyRef is linkHeavy as it was when it cut every line's words out
// (strings.Fields): linkHeavy must judge every text as it does.
func linkHeavyRef(h *corpus.Hit) bool {
	if h.DigestEntries() != nil {
		return true
	}
	lines := strings.Split(h.Text, "\n")
	words, runOn := 0, 0
	rows, nameRows, nonEmpty := 0, 0, 0
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		nonEmpty++
		w := strings.Fields(l)
		words += len(w)
		if len(w) >= 30 && sentenceEnds(l)*40 < len(w) {
			runOn += len(w)
		}
		if cells := text.TableCells(l); len(cells) >= 2 {
			rows++
			if first := strings.Fields(cells[0]); len(first) == 1 && nameLike(first[0]) {
				nameRows++
			}
		}
	}
	if words < 30 {
		return false
	}
	if 2*runOn >= words {
		return true
	}
	return rows >= 8 && 10*rows >= 7*nonEmpty && 10*nameRows >= 8*rows
}

var linkHeavySeeds = []string{"", "a b c", "x | y\nz | w", strings.Repeat("os.path | Common pathname manipulations.\n", 10),
	strings.Repeat("json\u00a0| JSON\u2003encoder\n", 9) + "prose line.", strings.Repeat("word ", 31), strings.Repeat("word. ", 40),
	"| a | b |\n| c d | e |\n\xff | \x85x\n" + strings.Repeat("w ", 40), strings.Repeat("name_1 | thing\n", 12) + strings.Repeat("a b c ", 20)}

func FuzzLinkHeavy(f *testing.F) {
	for _, s := range linkHeavySeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := linkHeavy(&corpus.Hit{Chunk: kgagent.Chunk{Text: s}}), linkHeavyRef(&corpus.Hit{Chunk: kgagent.Chunk{Text: s}}); got != want {
			t.Fatalf("linkHeavy(%q) = %v, the reference %v", s, got, want)
		}
		if got, want := countFields(s), len(strings.Fields(s)); got != want {
			t.Fatalf("countFields(%q) = %d, strings.Fields %d", s, got, want)
		}
	})
}

// TestLinkHeavyAllocations: judging a passage's shape allocates only for
// its table rows' cells (before, a slice of its lines and one of every
// line's words: 13 allocations for this passage of 12 lines).
func TestLinkHeavyAllocations(t *testing.T) {
	h := &corpus.Hit{Chunk: kgagent.Chunk{Text: strings.Repeat("Some prose that says what the module does, and more words after it. ", 3) + "\n" +
		strings.Repeat("A line of a list of things to read next\n", 11)}}
	if n := testing.AllocsPerRun(50, func() { linkHeavy(h) }); n > 0 {
		t.Errorf("linkHeavy: %.0f allocations, want 0", n)
	}
}
