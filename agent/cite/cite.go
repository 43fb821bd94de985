// Package cite numbers an agent answer's citations: it parses an answer's
// citation groups once (Parse), checks them against the evidence
// (Text.Check), renumbers them by first use for the client (Map, on the
// final text and on the streamed deltas alike) and lists the answer's
// sources (Map.Sources).
package cite

import (
	"slices"
	"strconv"
	"strings"

	"github.com/kgagent/kgagent"
	kgtext "github.com/kgagent/kgagent/internal/text"
)

// MaxAnswerSources bounds the pages an answer's sources name beyond the
// ones it cites: after the cited sections come the best other sections
// retrieval found, one a page, until the sources name this many pages in
// all. Pages, not sections: an answer citing two sections of one page
// still lists the search's other pages (a client's "first five sources"
// names five pages, as the search's first five hits do).
const MaxAnswerSources = 5

// Map renumbers an answer's citations by first use. Numbers are the
// run's citation numbers (1..n, n sources gathered); the first one the
// answer cites becomes [1], the next new one [2], and so on. Numbers that
// name no source are dropped. It is applied to the answer's deltas as they
// stream and to the final text with the same result, so every transport
// shows the same numbers.
type Map struct {
	n      int         // sources the run gathered
	next   map[int]int // run number -> answer number
	ord    []int       // run numbers in first-use order
	stream codeState   // where the streamed answer is: in code or not
}

// codeState follows ``` fences and `inline code` through a text, so that
// brackets in code (arr[0]) are never taken for citations.
type codeState struct {
	fence, inline bool
}

// step advances over text[*i] when it opens, closes or lies in code,
// reporting true; *i may move past a whole fence marker.
func (c *codeState) step(text string, i *int) bool {
	if strings.HasPrefix(text[*i:], "```") {
		c.fence = !c.fence
		c.inline = false
		*i += 2
		return true
	}
	if c.fence {
		return true
	}
	if text[*i] == '`' {
		c.inline = !c.inline
		return true
	}
	return c.inline
}

// NewMap returns the numbering of an answer over n gathered sources.
func NewMap(n int) *Map { return &Map{n: n, next: map[int]int{}} }

// number returns the answer number of run number k, 0 when k names no source.
func (c *Map) number(k int) int {
	if k < 1 || k > c.n {
		return 0
	}
	if v, ok := c.next[k]; ok {
		return v
	}
	c.ord = append(c.ord, k)
	c.next[k] = len(c.ord)
	return len(c.ord)
}

// citationAt parses a citation group "[1]", "[1, 2]" at text[i] and
// returns its numbers and the index after "]"; ok is false when there is
// none (Citations' grammar).
func citationAt(text string, i int) (nums []int, end int, ok bool) {
	if i >= len(text) || text[i] != '[' {
		return nil, 0, false
	}
	j := i + 1
	n, digits := 0, 0
	for ; j < len(text); j++ {
		c := text[j]
		if c >= '0' && c <= '9' && digits < 4 {
			n = n*10 + int(c-'0')
			digits++
			continue
		}
		if (c == ',' || c == ' ') && digits > 0 {
			nums = append(nums, n)
			n, digits = 0, 0
			continue
		}
		if c == ' ' {
			continue
		}
		break
	}
	if j < len(text) && text[j] == ']' && digits > 0 {
		return append(nums, n), j + 1, true
	}
	return nil, 0, false
}

// OpenAt returns the index of a citation group or fence marker that
// text ends inside ("… [1" or "“" still streaming), or -1.
func OpenAt(text string) int {
	if strings.HasSuffix(text, "`") {
		return len(strings.TrimRight(text, "`"))
	}
	if i := strings.LastIndexByte(text, '['); i >= 0 && len(text)-i <= 24 {
		open := true
		for _, c := range text[i+1:] {
			if (c < '0' || c > '9') && c != ',' && c != ' ' {
				open = false
				break
			}
		}
		if open {
			return len(strings.TrimRight(text[:i], " ")) // with the spaces before it
		}
	}
	if strings.HasSuffix(text, " ") {
		// A space may be followed by a citation to drop with it.
		return len(strings.TrimRight(text, " "))
	}
	return -1
}

// Group is one citation group of an answer ("[1]", "[1, 2]"), as
// parse found it.
type Group struct {
	Start, End int   // the group is text[Start:End]
	Nums       []int // its numbers, as written
	// Sentence is where the sentence the group ends starts, Before where
	// the one before it starts (Check: a citation after a full stop cites
	// the sentence before it).
	Sentence, Before int
}

// Text is an answer text with its citation groups, found once by
// Parse; every later step (the support check, the renumbering,
// the list of numbers) reads the groups instead of parsing the text again.
type Text struct {
	text   string
	groups []Group
}

// Parse finds the citation groups of an answer text, outside code
// (citationAt's grammar).
func Parse(text string) Text { return parse(text, &codeState{}) }

// Numbers returns the numbers cited as [n] (or [n, m]) in text, in order;
// brackets inside code (``` fences and `inline code`) are code, not
// citations.
func Numbers(text string) []int { return Parse(text).Numbers() }

// String returns the text that was parsed.
func (ct Text) String() string { return ct.text }

// sentences is where parse ends a sentence (for Check): a line break or
// the loose rule.
var sentences = kgtext.SentenceRule{Newline: true}

// parse finds the citation groups of text (citationAt's grammar), outside
// code: st says whether text starts inside code and is left where text
// ends (a streamed answer's pieces share one).
func parse(text string, st *codeState) Text {
	ct := Text{text: text}
	if strings.IndexByte(text, '[') < 0 && strings.IndexByte(text, '`') < 0 {
		return ct
	}
	start, prev := 0, 0 // where the current and the previous sentence start
	for i := 0; i < len(text); i++ {
		if st.step(text, &i) {
			continue
		}
		nums, end, ok := citationAt(text, i)
		if !ok {
			if sentences.End(text, i) {
				prev, start = start, i+1
			}
			continue
		}
		ct.groups = append(ct.groups, Group{Start: i, End: end, Nums: nums, Sentence: start, Before: prev})
		i = end - 1
		prev, start = start, end
	}
	return ct
}

// Groups returns the citation groups found, in order.
func (ct Text) Groups() []Group { return ct.groups }

// Numbers returns every number cited, in order.
func (ct Text) Numbers() []int {
	var out []int
	for _, g := range ct.groups {
		out = append(out, g.Nums...)
	}
	return out
}

// Render writes the text with each group's numbers replaced by keep's (in
// the answer's "[1, 2]" form); a group left with none is dropped with the
// space before it (a stream holds back trailing spaces, so the space is in
// the same piece).
func (ct Text) Render(keep func(i int, g Group) []int) string {
	if len(ct.groups) == 0 {
		return ct.text
	}
	var b strings.Builder
	prev := 0
	for i, g := range ct.groups {
		b.WriteString(ct.text[prev:g.Start])
		prev = g.End
		nums := keep(i, g)
		if len(nums) == 0 {
			if str := b.String(); strings.HasSuffix(str, " ") {
				b.Reset()
				b.WriteString(str[:len(str)-1])
			}
			continue
		}
		b.WriteByte('[')
		for j, n := range nums {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Itoa(n))
		}
		b.WriteByte(']')
	}
	b.WriteString(ct.text[prev:])
	return b.String()
}

// Strip returns the text without its citation groups: each group, with
// the ASCII white space before it, is replaced by sep (" " to count a
// sentence's words, "" to read the URL or command a citation follows).
func (ct Text) Strip(sep string) string {
	if len(ct.groups) == 0 {
		return ct.text
	}
	var b strings.Builder
	prev := 0
	for _, g := range ct.groups {
		b.WriteString(strings.TrimRight(ct.text[prev:g.Start], " \t\n\f\r"))
		b.WriteString(sep)
		prev = g.End
	}
	b.WriteString(ct.text[prev:])
	return b.String()
}

// Renumber maps run numbers to answer numbers (Map.number), dropping
// those that name no source and repeats.
func (c *Map) Renumber(nums []int) []int {
	var out []int
	for _, k := range nums {
		if v := c.number(k); v > 0 && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// Rewrite renumbers the citations in the whole answer text.
func (c *Map) Rewrite(text string) string {
	return c.RewriteCited(Parse(text))
}

// RewriteCited renumbers the citations of a parsed answer text.
func (c *Map) RewriteCited(ct Text) string {
	return ct.Render(func(_ int, g Group) []int { return c.Renumber(g.Nums) })
}

// RewriteStream renumbers the citations in the next piece of the streamed
// answer (pieces never end inside a citation or a fence marker).
func (c *Map) RewriteStream(piece string) string {
	return c.RewriteCited(parse(piece, &c.stream))
}

// Sources lists an answer's sources: the cited ones in the order of
// their answer numbers, then the run's other sources, best ranked first and
// one per page, until they name MaxAnswerSources pages. An answer that
// cites nothing lists every source gathered.
func (c *Map) Sources(all []kgagent.Source) []kgagent.Source {
	out := []kgagent.Source{}
	if len(c.ord) == 0 {
		return append(out, all...)
	}
	pages := map[string]bool{}
	for _, k := range c.ord {
		out = append(out, all[k-1])
		pages[page(all[k-1].URL)] = true
	}
	for k, s := range all {
		if len(pages) >= MaxAnswerSources {
			break
		}
		if _, cited := c.next[k+1]; cited || pages[page(s.URL)] || s.URL == "" {
			continue
		}
		pages[page(s.URL)] = true
		out = append(out, s)
	}
	return out
}

func page(u string) string {
	if i := strings.IndexByte(u, '#'); i >= 0 {
		return u[:i]
	}
	return u
}

// A Judge says whether evidence supports an answer's sentences
// (extractive.Support).
type Judge interface {
	// Judged reports whether a sentence makes a claim evidence can
	// support (a title or a fragment does not).
	Judged(sentence string) bool
	// Supports reports whether the passage numbered n supports sentence;
	// known is false when no passage is numbered n.
	Supports(sentence string, n int) (ok, known bool)
	// Best returns the number of the passage that supports sentence
	// best, 0 when none does.
	Best(sentence string) int
}

// Check returns, for each group of ct (in the run's numbers, n sources),
// the numbers kept: those in range whose evidence passages support the
// sentence the citation ends (the sentence before when the citation
// follows its full stop). A number that names no evidence passage (a
// func's own source) cannot be judged and is kept. It also returns how
// many of the numbers written were kept.
func (ct Text) Check(sup Judge, n int) ([][]int, int) {
	kept := make([][]int, len(ct.groups))
	count := 0
	for i, g := range ct.groups {
		sentence := ct.judged(sup, g)
		for _, k := range g.Nums {
			if k < 1 || k > n {
				continue
			}
			if ok, known := sup.Supports(sentence, k); ok || !known {
				kept[i] = append(kept[i], k)
				count++
			}
		}
	}
	return kept, count
}

// Move returns kept (Check's numbers for ct's groups, n sources) with
// each group Check left with none of its numbers (out of range, or
// naming a passage that does not support the sentence) given the passage
// that supports the sentence best (Judge.Best), when one does. Only those
// groups are weighed again: the numbers Check kept are not checked twice.
// kept is not changed.
func (ct Text) Move(sup Judge, n int, kept [][]int) [][]int {
	moved := slices.Clone(kept)
	for i, g := range ct.groups {
		if len(moved[i]) > 0 {
			continue
		}
		if k := sup.Best(ct.judged(sup, g)); k >= 1 && k <= n {
			moved[i] = []int{k}
		}
	}
	return moved
}

// judged returns the sentence group g's citation ends, or the text before
// it when that is no sentence sup judges (the citation follows its full
// stop).
func (ct Text) judged(sup Judge, g Group) string {
	if sentence := ct.text[g.Sentence:g.Start]; sup.Judged(sentence) {
		return sentence
	}
	return ct.text[g.Before:g.Start]
}
