package extractive

import (
	"regexp"
	"strings"

	"github.com/kgagent/kgagent/internal/text"
)

// An abstention tells the user what the docs do cover nearest to the
// question, quoted and cited, rather than only listing section titles: a
// question in users' words ("How do I upgrade from Lumen 2 to Lumen 3?")
// often asks for more than the docs say, and the part they do say
// ("Migrating from Lumen 1.x: … lumen migrate … [1]") is what the user can
// act on. The quote follows the abstention, so the answer still says
// plainly that the docs do not answer the question as asked.

// maxCoverSentences and maxCoverChars bound the quote of the nearest cover.
const (
	maxCoverSentences = 2
	maxCoverChars     = 360
)

// versionRe matches a version number written after a name: "2", "3.11",
// "1.x".
var versionRe = regexp.MustCompile(`^\d+(?:\.(?:\d+|x))*$`)

// versionedNames returns the names of q written with a version ("Lumen 2",
// "Python 3.11"): a capitalised word, not at the question's start,
// followed by a version number.
func versionedNames(q string) []string {
	fields := strings.Fields(q)
	var out []string
	for i := 1; i+1 < len(fields); i++ {
		name := strings.Trim(fields[i], nameTrim)
		ver := strings.TrimRight(strings.Trim(fields[i+1], "?,!;:\"'()`“”‘’"), ".")
		r := []rune(name)
		if len(r) < 2 || !isUpper(r[0]) || !versionRe.MatchString(ver) || text.IsQuestionStop(strings.ToLower(name)) {
			continue
		}
		out = append(out, name+" "+ver)
	}
	return out
}

func isUpper(r rune) bool { return r >= 'A' && r <= 'Z' }

// mentionsVersion reports whether s names the versioned name nv ("Lumen
// 2") at the same precision: "Lumen 2", "Lumen 2.0" or "Lumen 2.x", not
// "Lumen 2.4" (another release) or "Lumen 20".
func mentionsVersion(s, nv string) bool {
	name, ver, _ := strings.Cut(nv, " ")
	ls, lname := strings.ToLower(s), strings.ToLower(name)
	for from := 0; ; {
		i := strings.Index(ls[from:], lname)
		if i < 0 {
			return false
		}
		i += from
		from = i + len(lname)
		rest := strings.TrimLeft(ls[from:], " ")
		if len(rest) == len(ls[from:]) || !strings.HasPrefix(rest, ver) {
			continue
		}
		tail := rest[len(ver):]
		for _, zero := range []string{".0.0", ".0", ".x"} {
			if strings.HasPrefix(tail, zero) {
				tail = tail[len(zero):]
				break
			}
		}
		if tail == "" || !(tail[0] >= '0' && tail[0] <= '9') && !(tail[0] == '.' && len(tail) > 1 && tail[1] >= '0' && tail[1] <= '9') {
			return true
		}
	}
}

// nearestCover returns the passage that covers most of what the question
// asks among the passages found: the versioned names it mentions at the
// question's version, then the question's terms it holds (each weighted by
// how few passages hold it; terms the collection lacks count for nothing),
// then its rank. It returns nil when no passage holds a versioned name or
// a term other than the question's names: the passages are then only
// about the name asked of, not about what is asked.
func nearestCover(ps []*passage, q question) *passage {
	df := map[string]int{}
	sets := make([]termSet, len(ps)) // nil: not a candidate
	n := 0
	for i, p := range ps {
		if p.fact || p.N <= 0 || p.LinkHeavy {
			continue
		}
		n++
		held := map[string]bool{}
		for _, t := range p.textTerms() {
			held[t] = true
		}
		for t := range p.titles {
			held[t] = true
		}
		sets[i] = newTermSet(held)
		for _, t := range q.terms {
			if sets[i].has(t) {
				df[t]++
			}
		}
	}
	var best *passage
	bestV, bestW := 0, 0.0
	for i, p := range ps {
		if sets[i] == nil {
			continue
		}
		v := 0
		for _, nv := range q.versions {
			if mentionsVersion(p.fullText(), nv) {
				v++
			}
		}
		w := 0.0
		for _, t := range q.terms {
			if q.isName(t) || df[t] == 0 || !sets[i].has(t) {
				continue
			}
			w += text.IDF(n, df[t])
		}
		if v == 0 && w == 0 {
			continue
		}
		if best == nil || v > bestV || v == bestV && w > bestW {
			best, bestV, bestW = p, v, w
		}
	}
	return best
}

// coverQuote writes what the docs say nearest to the question: the
// cover's heading and its first sentences of prose, cited. It returns p
// when it wrote a quote, nil otherwise (p nil, or p has no prose).
func coverQuote(b *strings.Builder, p *passage) *passage {
	if p == nil {
		return nil
	}
	q := quoteOf(p)
	if q == "" {
		return nil
	}
	b.WriteString(" The nearest section they have, " + p.Heading() + ", says: " + q)
	return p
}

// quoteOf is p's first sentences of prose (at most maxCoverSentences and
// about maxCoverChars), cited, ending in a full stop; "" when p has none.
func quoteOf(p *passage) string {
	var quote []string
	size := 0
	for _, bl := range p.blocks {
		if bl.code || len(quote) >= maxCoverSentences {
			continue
		}
		for _, line := range strings.Split(bl.text, "\n") {
			for _, s := range splitSentences(proseLine(line)) {
				if len(quote) >= maxCoverSentences || size+len(s) > maxCoverChars && len(quote) > 0 {
					break
				}
				if s == p.Heading() || s == p.Title {
					continue // the heading, written before the quote
				}
				quote = append(quote, s)
				size += len(s)
			}
		}
	}
	if len(quote) == 0 {
		return ""
	}
	out := withCitation(strings.Join(quote, " "), p.N)
	if !strings.HasSuffix(out, ".") && !strings.HasSuffix(out, "!") && !strings.HasSuffix(out, "?") {
		out += "."
	}
	return out
}
