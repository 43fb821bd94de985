package extractive

import (
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// MinSupport is the share of a sentence's content (its terms weighted by
// how rare they are in the evidence) that a passage must hold for
// Support.Attribute to cite it for that sentence.
const MinSupport = 0.6

// Attribution is an answer with the citations Support.Attribute gave it.
type Attribution struct {
	Text      string // the answer with " [n]" after each supported sentence
	Sentences int    // sentences judged (those with content words, outside code)
	Supported int    // sentences that were given a citation
}

// Attribute cites, in an answer written without citations, the evidence
// passages of s that support its sentences: a sentence is cited with the
// passage holding the largest share of its content terms (each weighted by
// its inverse frequency across the evidence's sentences), when that share
// is at least MinSupport, at least two of its terms (or its only one) are
// there, every number in it is there too (a wrong port or version is
// not "supported" by a passage that names another), and every command,
// URL, flag, number and code span it names is in the passage verbatim.
// Sentences that make no claim (a title, protocol syntax) are not judged. A sentence no passage
// supports stays as it is; code blocks are never cited. The numbers are
// the evidence's N (the run's citation numbers); a run of sentences cited
// with the same number in one line is cited once, after the last.
func (sup *Support) Attribute(answer string) Attribution {
	out := Attribution{Text: answer}
	if len(sup.ps) == 0 || strings.TrimSpace(answer) == "" {
		return out
	}
	type mark struct{ at, n int }
	var marks []mark
	var fence text.Fence
	off := 0
	for _, line := range strings.SplitAfter(answer, "\n") {
		start := off
		off += len(line)
		t := strings.TrimSpace(line)
		if fence.Code(t) || t == "" {
			continue
		}
		cursor := 0
		var lineMarks []mark
		for _, s := range splitSentences(line) {
			i := strings.Index(line[cursor:], s)
			if i < 0 {
				continue
			}
			end := cursor + i + len(s)
			cursor = end
			if !Judged(s) {
				continue
			}
			out.Sentences++
			n := sup.Best(s)
			if n <= 0 {
				continue
			}
			out.Supported++
			lineMarks = append(lineMarks, mark{at: start + citeAt(line[:end]), n: n})
		}
		for i, m := range lineMarks {
			if i+1 < len(lineMarks) && lineMarks[i+1].n == m.n {
				continue
			}
			marks = append(marks, m)
		}
	}
	if len(marks) == 0 {
		return out
	}
	sort.SliceStable(marks, func(i, j int) bool { return marks[i].at < marks[j].at })
	var b strings.Builder
	prev := 0
	for _, m := range marks {
		b.WriteString(answer[prev:m.at])
		b.WriteString(" [" + strconv.Itoa(m.n) + "]")
		prev = m.at
	}
	b.WriteString(answer[prev:])
	out.Text = b.String()
	return out
}

// Support judges whether evidence passages support sentences, by
// Attribute's rule. Make one with NewSupport; one Support serves every
// check of an answer.
type Support struct {
	ps     []*passage
	pterms []map[string]bool
	ptext  []string // each passage's text, white space squashed
	pname  []string // the entry or module each passage's section declares (leadName), "" when none
	n      int
	df     map[string]int
}

// NewSupport indexes the passages (and facts) of evs.
func NewSupport(evs []kgagent.Evidence) *Support {
	ps := collect(evs, true)
	sents, df := split(ps)
	s := &Support{ps: ps, n: len(sents), df: df}
	s.pterms = make([]map[string]bool, len(ps))
	s.ptext = make([]string, len(ps))
	s.pname = make([]string, len(ps))
	for i, p := range ps {
		s.ptext[i] = squash(p.Text)
		s.pname[i] = leadName(p)
		s.pterms[i] = map[string]bool{}
		for _, t := range p.textTerms() {
			s.pterms[i][t] = true
		}
		for t := range p.titles {
			s.pterms[i][t] = true
		}
	}
	return s
}

// Judged reports whether a sentence has a claim to judge: a content word of
// three letters or more ("1." of a list has none), three words or more
// besides articles ("Lumen documentation" is a title, not a claim), and no
// protocol syntax or echoed prompt ("A: answer", "Ask Func[…]").
func Judged(sentence string) bool {
	return meaningful(text.Keys(sentence)) && claims(sentence)
}

// Judged is the package's Judged, for cite.Judge.
func (s *Support) Judged(sentence string) bool { return Judged(sentence) }

// Best returns the number of the passage that supports sentence best, 0
// when none does.
func (s *Support) Best(sentence string) int {
	if !Judged(sentence) {
		return 0
	}
	terms, items := text.Keys(sentence), exactItems(sentence)
	best, bestShare := -1, 0.0
	for pi := range s.ps {
		if share, ok := s.share(terms, items, pi); ok && (best < 0 || share > bestShare) {
			best, bestShare = pi, share
		}
	}
	if best < 0 {
		return 0
	}
	return s.ps[best].N
}

// Supports reports whether a passage numbered n supports sentence; known
// is false when no passage is numbered n (nothing to judge by).
func (s *Support) Supports(sentence string, n int) (ok, known bool) {
	terms, items := text.Keys(sentence), exactItems(sentence)
	judged := Judged(sentence)
	for pi, p := range s.ps {
		if p.N != n {
			continue
		}
		known = true
		if _, sup := s.share(terms, items, pi); sup && judged {
			return true, true
		}
	}
	return false, known
}

// share is the weighted share of terms passage pi holds, and whether that
// is support: at least MinSupport, two terms or all of them, every number,
// and every one of the sentence's exact items (commands, URLs, flags,
// numbers, code) verbatim. The name of the entry or module the passage's
// section declares (its heading "shutil.rmtree(path, …)" declares
// `shutil.rmtree()`) counts as held: it is how Compose names the thing its
// first sentence is about.
func (s *Support) share(terms, items []string, pi int) (float64, bool) {
	share, matched, numbersOK := support(terms, s.pterms[pi], s.n, s.df)
	if !numbersOK || matched < min(2, len(terms)) || share < MinSupport {
		return share, false
	}
	for _, it := range items {
		if !holdsVerbatim(s.ptext[pi], it) && (s.pname[pi] == "" || it != s.pname[pi]) {
			return share, false
		}
	}
	return share, true
}

// meaningful reports whether a sentence's content terms can be judged: at
// least one of three letters or more ("1." of a list is not a sentence).
func meaningful(terms []string) bool {
	for _, t := range terms {
		if len(t) >= 3 {
			return true
		}
	}
	return false
}

// support is the weighted share of terms a passage holds, how many it
// holds, and whether it holds every term with a digit.
func support(terms []string, in map[string]bool, n int, df map[string]int) (share float64, matched int, numbersOK bool) {
	total, got := 0.0, 0.0
	numbersOK = true
	for _, t := range terms {
		w := text.IDF(n, df[t])
		total += w
		if in[t] {
			got += w
			matched++
		} else if strings.IndexFunc(t, unicode.IsDigit) >= 0 {
			numbersOK = false
		}
	}
	if total == 0 {
		return 0, 0, numbersOK
	}
	return got / total, matched, numbersOK
}

// citeAt is where a sentence ending at len(s) takes its citation: before
// its closing punctuation and trailing spaces (cite's convention).
func citeAt(s string) int {
	i := len(strings.TrimRight(s, " \t\r\n"))
	if i > 0 && strings.ContainsRune(".!?:", rune(s[i-1])) {
		i--
	}
	return i
}
