package corpus

import (
	"context"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kgagent/kgagent/internal/text"
)

// A digest is a passage that only repeats other pages' one-line
// descriptions: a class index, a package summary, a "uses of" page, a
// module index — a list or table of names, each followed by the first
// sentence of the page the name links to. Such a passage holds the exact
// words a known-item question asks with, so it often outranks the page it
// describes. Search ranks a digest below every page it repeats (when that
// page is among the candidates) and, whether or not it is, below the
// ordinary passages that score like it (DigestWeight).
//
// The rule judges a passage by its own text and the other candidates'
// texts only — never by page names — so it holds for any index (embedded or
// Qdrant) and for data dirs written before it existed.

// DigestWeight multiplies the score of a digest passage before the
// candidates are ordered again.
const DigestWeight = 0.5

// maxCaption is the most words before a digest's first entry that are not
// counted against it (a caption, a header row: "Classes in x used by y",
// "Class", "Description").
const maxCaption = 25

// digestMinEntries is the fewest name-and-description entries a digest has.
const digestMinEntries = 3

// DigestEntry is one entry of a digest: a name and its one-line description.
type DigestEntry struct {
	Name, Description string
}

// DigestEntries returns the entries of a passage shaped like a digest —
// most of its words in entries of a short name line ("BufferOverflowException",
// "AbstractSet<E>", "json") followed by a one-line description, or in table
// rows "name | description", or in lines "name — description" — and nil for
// any other passage.
func DigestEntries(text string) []DigestEntry { return digestEntries(text, digestMinEntries) }

// DigestEntries is DigestEntries(h.Text), read at most once per hit (once
// per chunk when the hit has a memo of its text, Hit.Memo): search reads
// every hit's entries for its digest rule and keeps them in the hit, so a
// consumer of its hits (the knowledge layer's link-heavy rule) reads them
// from there. The slice may be shared with other hits of the chunk, in
// other goroutines: it is not to be changed.
func (h *Hit) DigestEntries() []DigestEntry {
	if es := h.digest(); len(es) >= digestMinEntries {
		return es // digestEntries(text, digestMinEntries) is exactly this
	}
	return nil
}

// digest is digestEntries(h.Text, 1), read once per hit and kept in it
// (once per chunk when the hit has a memo).
func (h *Hit) digest() []DigestEntry {
	if !h.digestRead {
		if m := h.memo(); m != nil {
			h.digestOf = m.digestOf()
		} else {
			h.digestOf = digestEntries(h.Text, 1)
		}
		h.digestRead = true
	}
	return h.digestOf
}

// sentenceKeys is the keys sentenceKeys(h.Text) adds, in order: read once
// per chunk when the hit has a memo.
func (h *Hit) sentenceKeys() []uint64 {
	if m := h.memo(); m != nil {
		return m.sentenceKeys()
	}
	return appendSentenceKeys(nil, h.Text)
}

// descriptionKeys is descriptionKeys(h.digest()): read once per chunk
// when the hit has a memo.
func (h *Hit) descriptionKeys() []uint64 {
	es := h.digest()
	if m := h.memo(); m != nil {
		return m.descriptionKeys(es)
	}
	return descriptionKeys(es)
}

// digestEntries is DigestEntries with the fewest entries a digest has set
// to least.
func digestEntries(text string, least int) []DigestEntry {
	words, entryWords, preamble := 0, 0, 0
	var descs []DigestEntry
	prev, prevWords := "", 0
	for rest := text; rest != ""; {
		l, tail, _ := strings.Cut(rest, "\n")
		rest = tail
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		n := countWords(l, -1)
		words += n
		if e, ok := inlineEntry(l); ok {
			if descs == nil {
				preamble = words - n
			}
			descs = append(descs, e)
			entryWords += n
		} else if prev != "" && isDescription(l) && isNameLine(prev) {
			if descs == nil {
				preamble = words - n - prevWords
			}
			descs = append(descs, DigestEntry{prev, l})
			entryWords += n + prevWords
		} else if es, covered := runOnEntries(l); es != nil {
			if descs == nil {
				preamble = words - covered
			}
			descs = append(descs, es...)
			entryWords += covered
		}
		prev, prevWords = l, n
	}
	if preamble <= maxCaption {
		words -= preamble // a table's caption and header row
	}
	if len(descs) < least || 10*entryWords < 7*words {
		return nil
	}
	if len(descs) < digestMinEntries {
		// So few entries are a digest only under bare names
		// ("TimerMBean"), not under a declaration ("public interface X").
		for _, e := range descs {
			if countWords(e.Name, 2) > 1 {
				return nil
			}
		}
	}
	return descs
}

// countWords counts the space-separated words of l, stopping at limit (-1:
// no limit).
func countWords(l string, limit int) int {
	n, in := 0, false
	for i := 0; i < len(l); i++ {
		sp := l[i] == ' ' || l[i] == '\t'
		if !sp && !in {
			n++
			if n == limit {
				return n
			}
		}
		in = !sp
	}
	return n
}

// runOnEntries reads a line into which a table was flattened ("… Class
// Description SAXParser Defines the API that wraps an XMLReader
// implementation class. SAXParserFactory Defines a factory API …"): its
// sentences that start with a compound name (two capitals or a digit:
// "SAXParser", "TimerMBean") followed by a capitalised description. At
// least digestMinEntries such sentences covering most of the line, else
// nil; covered is the words of the line from its first entry on.
func runOnEntries(l string) (es []DigestEntry, covered int) {
	if countWords(l, 20) < 20 {
		return nil, 0
	}
	total, before := 0, 0
	for rest := l; rest != ""; {
		var sent string
		sent, rest = digestSentences.Next(rest)
		rest = strings.TrimSpace(rest)
		n := countWords(sent, -1)
		total += n
		name, desc, ok := strings.Cut(sent, " ")
		if ok && compoundName(name) && isDescription(desc) && startsUpper(desc) {
			es = append(es, DigestEntry{name, desc})
			covered += n
		} else if es == nil {
			before += n
		}
	}
	if before <= maxCaption {
		total -= before // a caption and a header row
	}
	if len(es) < digestMinEntries || 10*covered < 7*total {
		return nil, 0
	}
	return es, covered
}

// compoundName reports whether w is an identifier with a capital and another
// capital or a digit after it ("SAXParser", "TimerMBean", "Base64").
func compoundName(w string) bool {
	if !startsUpper(w) {
		return false
	}
	inner := false
	for i, r := range w {
		switch {
		case unicode.IsLetter(r) || r == '_':
			if i > 0 && unicode.IsUpper(r) {
				inner = true
			}
		case unicode.IsDigit(r):
			inner = true
		case r == '.':
		default:
			return false
		}
	}
	return inner
}

// inlineEntry splits a table row "name | description" or a list line
// "name — description" into its description.
func inlineEntry(l string) (DigestEntry, bool) {
	l = strings.TrimPrefix(strings.TrimPrefix(l, "- "), "* ")
	if cells := text.TableCells(l); len(cells) >= 2 {
		if isNameLine(cells[0]) && isDescription(cells[len(cells)-1]) {
			return DigestEntry{cells[0], cells[len(cells)-1]}, true
		}
		return DigestEntry{}, false
	}
	for _, sep := range []string{" — ", " – ", " - "} {
		if name, desc, ok := strings.Cut(l, sep); ok && isNameLine(name) && isDescription(desc) {
			return DigestEntry{name, desc}, true
		}
	}
	return DigestEntry{}, false
}

// isNameLine reports whether l is a name rather than prose: at most four
// words, each an identifier-like token (dotted names, generics, a
// parenthesised signature without spaces), and no sentence end.
func isNameLine(l string) bool {
	if l == "" || countWords(l, 5) > 4 || strings.HasSuffix(l, ".") {
		return false
	}
	for _, r := range l {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != ' ' && !strings.ContainsRune("_.<>,()[]?@$&-", r) {
			return false
		}
	}
	return true
}

// isDescription reports whether l reads like a one-line description: four
// words or more, starting with a letter.
func isDescription(l string) bool {
	if countWords(l, 4) < 4 {
		return false
	}
	for _, r := range l {
		return unicode.IsLetter(r)
	}
	return false
}

// sentenceKeys calls add with the key of each sentence of text: a hash of
// its letters and digits in lower case (spaces, punctuation and case do not
// count), so a description matches the sentence it repeats however either
// was spaced.
func sentenceKeys(text string, add func(uint64)) {
	const offset, prime = 14695981039346656037, 1099511628211
	for rest := text; rest != ""; {
		var sent string
		sent, rest = digestSentences.Next(rest)
		h, n := uint64(offset), 0
		for i := 0; i < len(sent); i++ {
			switch c := sent[i]; {
			case c >= 'A' && c <= 'Z':
				h, n = (h^uint64(c+'a'-'A'))*prime, n+1
			case c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 0x80:
				h, n = (h^uint64(c))*prime, n+1
			}
		}
		if n >= 12 { // shorter "sentences" (a name, "Since: 1.4") say nothing
			add(h)
		}
	}
}

// digestSentences is where the digest rule ends a sentence: a line break,
// or a . ! ? ; followed by a space or the end.
var digestSentences = text.SentenceRule{Newline: true, Semicolon: true}

// firstSentence is l (one line) up to its first sentence end.
func firstSentence(l string) string {
	sent, _ := digestSentences.Next(l)
	return sent
}

// DemoteDigests reorders hits (best first) so that no digest outranks a page
// it repeats: a passage whose entries (one or more, DigestEntries' shape)
// include a description that is a sentence of another candidate page's
// passage goes just below that page's best passage (the lowest such page's,
// when it repeats several). A digest of digestMinEntries entries or more
// also has its score multiplied by DigestWeight first (one or two entries
// look like an API entry's signature and summary, so they are not weighted
// for their shape). Scores stay non-increasing; the order of other hits is
// unchanged.
func DemoteDigests(hits []Hit) []Hit {
	descs := make([][]DigestEntry, len(hits))
	found := false
	for i := range hits {
		if descs[i] = hits[i].digest(); descs[i] != nil {
			found = true
		}
	}
	if !found {
		return hits
	}
	// The keys of each digest's descriptions (their first sentences),
	// hashed once, then which pages state them.
	keys := make([][]uint64, len(hits))
	want := map[uint64]bool{}
	for i, ds := range descs {
		if ds == nil {
			continue
		}
		keys[i] = hits[i].descriptionKeys()
		for _, k := range keys[i] {
			want[k] = true
		}
	}
	// Which page states each sentence, best-ranked passage first.
	first := map[string]int{} // page -> position of its best non-digest hit
	states := map[uint64][]string{}
	for i, h := range hits {
		if descs[i] != nil {
			continue
		}
		if _, ok := first[h.DocURL]; !ok {
			first[h.DocURL] = i
		}
		for _, k := range hits[i].sentenceKeys() {
			if want[k] && !slices.Contains(states[k], h.DocURL) {
				states[k] = append(states[k], h.DocURL)
			}
		}
	}
	type keyed struct {
		h   Hit
		key float64 // position it is ordered by
		dig bool
	}
	ks := make([]keyed, len(hits))
	for i, h := range hits {
		ks[i] = keyed{h: h, key: float64(i)}
		if descs[i] == nil {
			continue
		}
		ks[i].dig = true
		if len(descs[i]) >= digestMinEntries {
			ks[i].h.Score *= DigestWeight
		}
		after := -1
		for _, k := range keys[i] {
			for _, page := range states[k] {
				if page != h.DocURL && first[page] > after {
					after = first[page]
				}
			}
		}
		// Below the described pages, and below the ordinary hits that now
		// score above it.
		for j := i + 1; j < len(hits); j++ {
			if descs[j] == nil && hits[j].Score > ks[i].h.Score && j > after {
				after = j
			}
		}
		if after > i {
			ks[i].key = float64(after) + 0.5
		}
	}
	sort.SliceStable(ks, func(a, b int) bool { return ks[a].key < ks[b].key })
	out := make([]Hit, len(ks))
	for i, k := range ks {
		out[i] = k.h
		if i > 0 && out[i].Score > out[i-1].Score {
			out[i].Score = out[i-1].Score
		}
	}
	return out
}

// followDigests looks up the pages the best digests name. When one of the
// first few hits is a digest with an entry whose description holds most of
// the query's words, the entry's name is searched for (keyword mode) and the
// best passage of a page titled with that name, if one is found, is put just
// above the digest: the page a digest line describes is the answer, not the
// digest. At most two digests are followed per search.
func (s *Service) followDigests(ctx context.Context, q Query, hits []Hit) []Hit {
	const look, most = 10, 2
	qterms := map[string]bool{}
	for _, t := range text.Terms(q.Text) {
		qterms[t] = true
	}
	followed := 0
	for i := 0; i < len(hits) && i < look && followed < most; i++ {
		es := hits[i].digest()
		if es == nil {
			continue
		}
		followed++
		var name, desc string
		best := 0.0
		for _, e := range es {
			fs := firstSentence(e.Description)
			ts := text.Terms(fs)
			if len(ts) < 3 {
				continue
			}
			in := 0
			for _, t := range ts {
				if qterms[t] {
					in++
				}
			}
			if c := float64(in) / float64(len(ts)); c > best {
				name, desc, best = e.Name, fs, c
			}
		}
		if best < 0.75 {
			continue
		}
		name, _, _ = strings.Cut(name, "<")
		found, err := s.cfg.Index.Search(ctx, Query{Collection: q.Collection, Text: name, K: 5, Mode: ModeKeyword, URLPrefix: q.URLPrefix})
		if err != nil {
			continue // the digest stays where it is
		}
		for _, f := range found {
			if f.DocURL == hits[i].DocURL || !titleNames(f.Title, name) || f.digest() != nil {
				continue
			}
			// The page's own passage that states the description,
			// when it has one, rather than the one naming it most.
			if strings.HasPrefix(f.DocURL, q.URLPrefix) {
				if own, err := s.cfg.Index.Search(ctx, Query{Collection: q.Collection, Text: desc, K: 1, Mode: ModeKeyword, URLPrefix: f.DocURL}); err == nil && len(own) == 1 && own[0].DocURL == f.DocURL {
					f = own[0]
				}
			}
			f.Score = hits[i].Score
			hits = slices.Insert(hits, i, f)
			i++
			break
		}
	}
	return hits
}

// titleNames reports whether a page title begins with name (case aside),
// followed by its end or by a character no name holds ("AbstractSet (Java
// SE 17)", "json — JSON encoder and decoder").
func titleNames(title, name string) bool {
	name = strings.TrimSpace(name)
	if name == "" || len(title) < len(name) || !strings.EqualFold(title[:len(name)], name) {
		return false
	}
	if len(title) == len(name) {
		return true
	}
	c := title[len(name)]
	return !(c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
}

// startsUpper reports whether s starts with an upper-case letter, reading
// only its first rune.
func startsUpper(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsUpper(r)
}
