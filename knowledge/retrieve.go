package knowledge

import (
	"context"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/internal/text"
)

// Searcher searches the corpus: the corpus service implements it.
type Searcher interface {
	Search(ctx context.Context, r corpus.SearchRequest) ([]corpus.Hit, error)
}

// Facts finds graph facts for a question: the graphrag service implements it.
type Facts interface {
	Retrieve(ctx context.Context, question, collection string) ([]graphrag.Fact, error)
}

// Lists answers shaped questions (list, relation, attribute, comparison)
// from the graph outright: the graphrag service implements it. A Facts
// that also implements Lists has its answer put in Evidence.List.
type Lists interface {
	Structured(ctx context.Context, question, collection string) (*kgagent.EvidenceList, error)
}

// RetrieveConfig tunes Retrieve. Zero values are the defaults.
type RetrieveConfig struct {
	// K is how many passages Retrieve returns when the caller asks for
	// none (default 5).
	K int
	// LinkHeavyWeight multiplies the score of passages shaped like an
	// index or a table of contents (default 0.5; 1 turns it off).
	LinkHeavyWeight float64
	// MaxFacts bounds the graph facts in the evidence (default 8).
	MaxFacts int
}

// Retriever answers a question with Evidence from a corpus and, optionally,
// a graph. Service embeds one; agents given only a searcher build one.
type Retriever struct {
	search Searcher
	facts  Facts
	cfg    RetrieveConfig
}

// NewRetriever returns a Retriever over search and facts (which may be nil).
func NewRetriever(search Searcher, facts Facts, cfg RetrieveConfig) *Retriever {
	if cfg.K <= 0 {
		cfg.K = 5
	}
	if cfg.LinkHeavyWeight <= 0 {
		cfg.LinkHeavyWeight = 0.5
	}
	if cfg.MaxFacts <= 0 {
		cfg.MaxFacts = 8
	}
	return &Retriever{search: search, facts: facts, cfg: cfg}
}

// Retrieve searches the collection for question (hybrid search) while the
// graph is asked for facts, ranks down passages shaped like link lists
// among the passages of the search's first k pages and among the others,
// never one of those pages below another page (firstOf), and returns k
// passages (0: the configured K) best first, and more while they name
// fewer than k pages (at most 3k-1; see firstPages: those past 2k are
// SourceOnly), with the facts. The search is asked for max(5k+5, Window)
// hits, so pages whose passages crowd that window (many chunks a page) can
// leave fewer than k pages named; then the search is asked for
// corpus.MaxK hits, and the hits of the pages the first window missed
// follow it. The evidence is not numbered: its caller numbers it once
// (Number; an agent run with its citation numbers).
// A failing graph leaves the facts out; a failing search is an error.
func (r *Retriever) Retrieve(ctx context.Context, question, collection string, k int) (kgagent.Evidence, error) {
	// The passage search and the graph's similarity search embed the same
	// question: once (a request's memo, when the caller has not made one).
	ctx = corpus.WithQueryMemo(ctx)
	ev := kgagent.Evidence{Query: question, Passages: []kgagent.EvidencePassage{}}
	if k <= 0 {
		k = r.cfg.K
	}
	type graphResult struct {
		facts []graphrag.Fact
		list  *kgagent.EvidenceList
		err   error
	}
	var graphDone chan graphResult
	if r.facts != nil {
		graphDone = make(chan graphResult, 1)
		go func() {
			var g graphResult
			if ls, ok := r.facts.(Lists); ok {
				// A failing structured answer leaves it out, like facts.
				g.list, _ = ls.Structured(ctx, question, collection)
			}
			g.facts, g.err = r.facts.Retrieve(ctx, question, collection)
			graphDone <- g
		}()
	}
	// More candidates than asked for (2k+5), so that passages ranked down
	// for their shape make room for the next ones; and more again (5k+5),
	// in search order after those, so that the evidence reaches the k
	// pages the search ranks first although their passages come several
	// to a page (firstPages).
	// The window is at least Window hits: the ranking the search's own
	// first pages are judged on, so the agent's sources start from the
	// same pages (digests are placed within the window searched).
	// When one page's many sections fill that window (an OpenJDK
	// class-use page: 30 hits, 3 pages), the search is asked once more for
	// corpus.MaxK hits, so that the evidence still reaches the k pages the
	// search ranks first (crowded); only the hits of pages the first
	// window does not name are added after it (a hybrid search's ranking
	// of a wider window may differ a little, and the passages the answer
	// is composed from stay those of the first window).
	head := 2*k + 5
	fetch := min(corpus.MaxK, max(5*k+5, Window))
	req := corpus.SearchRequest{Query: question, Collection: collection, K: fetch, Mode: corpus.ModeHybrid}
	hits, err := r.search.Search(ctx, req)
	if err == nil && crowded(hits, fetch, k) {
		req.K = corpus.MaxK
		if wide, werr := r.search.Search(ctx, req); werr == nil {
			hits = otherPages(hits, wide)
		}
	}
	var facts []graphrag.Fact
	if graphDone != nil {
		g := <-graphDone
		if g.err == nil {
			facts = g.facts
		}
		ev.List = g.list
	}
	if err != nil {
		return ev, err
	}
	seen := map[string]bool{}
	nHead := -1 // passages made of the first head hits
	for i, h := range hits {
		if i == head {
			nHead = len(ev.Passages)
		}
		// A section chunked into several pieces may come back as several
		// copies of its bare heading: one is kept.
		if headingOnly(h) {
			if seen[h.URL+"\x00"+h.Text] {
				continue
			}
			seen[h.URL+"\x00"+h.Text] = true
		}
		p := kgagent.EvidencePassage{URL: h.URL, DocURL: h.DocURL, Title: h.Title, HeadingPath: h.HeadingPath, Text: h.Text, Score: h.Score, Semantic: h.Semantic}
		if p.URL == "" {
			p.URL = h.DocURL
		}
		if LinkHeavy(&h) {
			p.LinkHeavy = true
			p.Score *= r.cfg.LinkHeavyWeight
		}
		ev.Passages = append(ev.Passages, p)
	}
	if nHead < 0 {
		nHead = len(ev.Passages)
	}
	// Ranking link lists down reorders the passages of the search's first
	// k pages among themselves, and the others among themselves: a page
	// the search ranks in its first k keeps its place among the sources
	// even when its passages are tables (a Javadoc class page's method
	// summary); before, it fell below a page ranked past k and out of the
	// evidence.
	first := firstOf(hits, k)
	top := ev.Passages[:nHead]
	sort.SliceStable(top, func(i, j int) bool {
		if fi, fj := first[top[i].DocURL], first[top[j].DocURL]; fi != fj {
			return fi
		}
		return top[i].Score > top[j].Score
	})
	ev.Passages = firstPages(ev.Passages, k)
	if v, ok := r.search.(corpus.Vocabulary); ok {
		words := text.QuestionWords(question)
		if known, err := v.Known(ctx, collection, words); err == nil && len(known) == len(words) {
			for i, k := range known {
				if !k {
					ev.Unknown = append(ev.Unknown, words[i])
				}
			}
		}
	}
	if len(facts) > r.cfg.MaxFacts {
		facts = facts[:r.cfg.MaxFacts]
	}
	for _, f := range facts {
		ev.Facts = append(ev.Facts, kgagent.EvidenceFact{Triple: f.Triple, Text: f.Text, SourceURL: f.SourceURL, Score: f.Score})
	}
	return ev, nil
}

// Window is the fewest hits Retrieve asks the search for: the window the
// search's own page ranking is judged on (kgagent eval asks 50) and the
// embedded index's fusion depth, so it costs the index no more candidates
// than a smaller one. The search places digests within the window it
// returns (corpus.DemoteDigests), so a window of 30 ranked some pages
// otherwise than the search did (OpenJDK: ValidatorHandler 5th in 50
// hits, 6th in 30), and it was crowded more often: on the Python docs'
// known-item questions 30 hits named fewer than 5 pages for 106 of 302,
// 50 hits for 42, and each crowded window costs a second search.
const Window = 50

// firstOf returns the pages of the first k pages hits name.
func firstOf(hits []corpus.Hit, k int) map[string]bool {
	first := make(map[string]bool, k)
	for i := range hits {
		if len(first) >= k {
			break
		}
		first[hits[i].DocURL] = true
	}
	return first
}

// crowded reports whether a search asked for fetch hits returned them all
// and they name fewer than k pages: a wider window may name more.
func crowded(hits []corpus.Hit, fetch, k int) bool {
	if len(hits) < fetch || fetch >= corpus.MaxK {
		return false
	}
	return len(firstOf(hits, k)) < k
}

// otherPages returns hits followed by the hits of wide on pages hits do
// not name, in wide's order. It appends to a copy: hits may be a window of
// a slice the search keeps, whose elements past len(hits) are not ours.
func otherPages(hits, wide []corpus.Hit) []corpus.Hit {
	named := map[string]bool{}
	for _, h := range hits {
		named[h.DocURL] = true
	}
	out := slices.Clip(hits)
	for _, h := range wide {
		if !named[h.DocURL] {
			out = append(out, h)
		}
	}
	return out
}

// firstPages keeps the first k passages, and more, up to 2k, while they
// cover fewer than k pages; past 2k it keeps only the best passage of each
// further page until k pages are covered, marked SourceOnly (the built-in
// answerer composes from the first 2k as before). So the evidence, and the
// answer's sources, name every one of the first k pages of the ranking
// that the 5k+5 hits reach, in at most 3k-1 passages.
func firstPages(ps []kgagent.EvidencePassage, k int) []kgagent.EvidencePassage {
	pages := map[string]bool{}
	out := ps[:0]
	for i, p := range ps {
		switch {
		case i < k:
		case len(pages) >= k:
			return out
		case i >= 2*k && pages[p.DocURL]:
			continue
		case i >= 2*k:
			p.SourceOnly = true // a source; the answer is composed as before
		}
		pages[p.DocURL] = true
		out = append(out, p)
	}
	return out
}

// Number numbers ev's passages, facts and list (its subject's section, then
// its items), once, by first appearance of their URL (passages first, then facts,
// then the list), equal URLs sharing a number. With cite set (an agent
// run's citation numbering) the numbers are cite's instead.
func Number(ev *kgagent.Evidence, cite func(kgagent.Source) int) {
	local := map[string]int{}
	num := func(url string, src kgagent.Source) int {
		if cite != nil {
			return cite(src)
		}
		if n, ok := local[url]; ok {
			return n
		}
		local[url] = len(local) + 1
		return len(local)
	}
	for i := range ev.Passages {
		p := &ev.Passages[i]
		p.N = num(p.URL, p.Source())
	}
	for i := range ev.Facts {
		f := &ev.Facts[i]
		f.N = num(f.SourceURL, f.Source())
	}
	if l := ev.List; l != nil {
		if l.SourceURL != "" {
			l.N = num(l.SourceURL, l.Source())
		}
		for i := range l.Items {
			it := &l.Items[i]
			it.N = num(it.SourceURL, it.Source())
		}
	}
}

// headingOnly reports whether a hit's text is no more than its title or
// one of its headings (a section whose content was chunked elsewhere).
func headingOnly(h corpus.Hit) bool {
	t := strings.TrimSpace(h.Text)
	if t == "" {
		return true
	}
	if len(t) > 200 {
		return false
	}
	if t == strings.TrimSpace(h.Title) {
		return true
	}
	for _, hp := range h.HeadingPath {
		if t == strings.TrimSpace(hp) {
			return true
		}
	}
	return false
}

// LinkHeavy reports whether a passage is shaped like an index, a table of
// contents or a list of links rather than prose: most of its words are in
// run-on lists of names (a flattened table of contents or index has many
// words and almost no sentence ends), or most of its lines are table rows
// whose first cell is a single name (a module or symbol index), or it is a
// digest (Hit.DigestEntries: names each followed by the one-line
// description of the page it names; search has read them already). It
// judges by shape only, never by page names: by the passage's text alone,
// so it is read once per chunk (Hit.TextFlag).
func LinkHeavy(h *corpus.Hit) bool { return h.TextFlag(linkHeavyKey{}, linkHeavy) }

// linkHeavyKey is LinkHeavy's key among the text rules of a hit's memo.
type linkHeavyKey struct{}

// linkHeavy is LinkHeavy read from h's text.
func linkHeavy(h *corpus.Hit) bool {
	if h.DigestEntries() != nil {
		return true // names each followed by a one-line description
	}
	words, runOn := 0, 0
	rows, nameRows, nonEmpty := 0, 0, 0
	// Words are counted, not cut out (strings.Fields' ~29 KB an answer on
	// the Python docs, for the chunks the hit cache no longer holds).
	for l := range strings.SplitSeq(h.Text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		nonEmpty++
		w := countFields(l)
		words += w
		if w >= 30 && sentenceEnds(l)*40 < w {
			runOn += w
		}
		// a cell is trimmed (TableCells): one field is the whole cell
		if cells := text.TableCells(l); len(cells) >= 2 {
			rows++
			if countFields(cells[0]) == 1 && nameLike(cells[0]) {
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

// countFields is len(strings.Fields(s)): the runs of s between white
// space (unicode.IsSpace), without cutting them out.
func countFields(s string) int {
	n, in := 0, false
	for _, r := range s {
		w := !unicode.IsSpace(r)
		if w && !in {
			n++
		}
		in = w
	}
	return n
}

// sentenceEnds counts ". ", "! ", "? " (and a final one) in l: the ends of
// sentences, not the dots of dotted names.
func sentenceEnds(l string) int {
	n := 0
	for i := range len(l) {
		if (text.SentenceRule{}).End(l, i) {
			n++
		}
	}
	return n
}

// nameLike reports whether w looks like a name (an identifier, a dotted
// name) rather than an expression.
func nameLike(w string) bool {
	for _, r := range w {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '.' && r != '-' {
			return false
		}
	}
	return true
}
