package extractive

import (
	"sort"
	"strings"
)

// An answer to a question in users' words often leads with a neighbour of
// the entry that does it: the semantic model's cosines for str.capitalize,
// str.title and string.capwords ("capitalize the first letter of every
// word") are close, and which one a rule picks to lead is noise (closerEntry
// picks the closest, rightly more often than not). So the answer ends by
// naming the other API entries, and the modules, of the sections found that
// are about as close in meaning to the question as the closest section of
// all, each cited to its own section, in a paragraph of its own: "See
// also `str.title()` [3] and `string.capwords()` [4]." or "See also the
// `mmap` module [4]." The user sees the alternatives the docs hold without
// opening every source; the answer's lead is unchanged.

// alsoWithin is how far below the closest section's semantic cosine a
// section's cosine may be for its entry or module to be named after the
// answer. Chosen on half 0 (crc32(question) mod 2) of bench/natural_pydocs
// and howto_pydocs, with alsoMax 3: answers naming the function 0.402 →
// 0.608 at 0.10, 0.639 at 0.15, and at 0.20 also howto 0.812 → 0.938, no
// more up to 0.30. Half 1 confirmed it: natural 0.489 → 0.636, howto 0.812
// → 0.875. pydocs_questions names no fewer (the list ends the answer).
var alsoWithin = 0.20

// alsoMax is how many names an answer ends with, a bound on its length:
// half 0 of bench/natural_pydocs named the function in 0.608 / 0.639 /
// 0.649 of answers with 2 / 3 / 4 (half 1: 0.614 / 0.636 / 0.659).
var alsoMax = 3

// seeAlso ends the answer with the API entries (entryName), or else the
// modules (moduleName), of the sections found, other than those the answer
// names already, whose semantic cosine is within alsoWithin of the closest
// section's, closest first, at most alsoMax. Without semantic vectors (a
// lexical corpus, or while the background pass is embedding: every cosine
// 0) it adds nothing.
func (a *answer) seeAlso(ps []*passage) {
	top := semanticBest(ps)
	if top <= 0 {
		return
	}
	said := a.String()
	var near []*passage
	names := map[*passage]string{}
	seen := map[string]bool{}
	for _, p := range ps {
		if !p.section() || p.Semantic < top-alsoWithin {
			continue
		}
		n, module := entryName(p), false
		if n == "" {
			n, module = moduleName(p), true
		}
		if n == "" || seen[n] || mentions(said, strings.TrimSuffix(n, "()")) {
			continue
		}
		seen[n] = true
		names[p] = "`" + n + "`"
		if module {
			names[p] = "the " + names[p] + " module"
		}
		near = append(near, p)
	}
	if len(near) == 0 {
		return
	}
	sort.SliceStable(near, func(i, j int) bool { return near[i].Semantic > near[j].Semantic })
	near = near[:min(len(near), alsoMax)]
	var b strings.Builder
	b.WriteString("See also ")
	for i, p := range near {
		switch {
		case i == 0:
		case i == len(near)-1:
			b.WriteString(" and ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(withCitation(names[p], p.N))
	}
	b.WriteString(".")
	a.parts = append(a.parts, part{text: b.String(), keep: true, own: true})
}

// mentions reports whether text holds name as a whole name: not followed
// by a letter, digit or underscore ("os.remove" is not mentioned by
// "os.removedirs(path)").
func mentions(text, name string) bool {
	for i := 0; name != ""; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		end := i + j + len(name)
		if end == len(text) || !isWordByte(text[end]) {
			return true
		}
		i += j + 1
	}
	return false
}
