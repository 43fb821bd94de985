// Package extractive is the built-in answerer: deterministic and offline, it
// writes an answer from the structured evidence a search found
// (kgagent.Evidence) — never from the text of an observation. The first
// sentence answers: for "which/what <thing>" questions it names the thing
// (the best section's subject); for other questions — how to do something,
// in the user's words or not — it names the function, method, class or
// module that does it, read from the heading of the section it cites (an
// API entry's signature, "shutil.rmtree(path, …)", or a module page's
// "secrets — …"), and for "how do I" questions it keeps the section's
// command or code block verbatim; one to three supporting
// sentences follow; every sentence cites its source as [n] with the
// evidence's numbers. When the evidence does not support an answer (a name
// the question asks about, or a word the collection lacks, appears nowhere
// in it; no section found is close in meaning to the question; or its
// words are missing from the sections found and the semantic model finds
// none close enough either: semantic.go) it says so plainly and lists the nearest sections instead: that the docs
// don't mention a word only when the collection's vocabulary lacks it
// (kgagent.Evidence.Unknown), otherwise what it searched for and did not
// find among the sections found (NotFound).
//
// Its driver lives here too: Model, the built-in LLM the agent package's
// ReAct manager drives, reads the run as structured fields (llm.Episode:
// few-shot stanzas, question, observations with their evidence), follows a
// fitting few-shot or asks for the corpus search, and calls Compose with the
// evidence the searches returned; it returns structured steps (llm.Step).
package extractive

import (
	"context"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// Config tunes Compose. Zero values are the defaults.
type Config struct {
	MaxSentences int // supporting sentences after the first, default 3
	MaxChars     int // length bound of the prose (code blocks and the see-also list not counted), default 700
	// Embed, when set, embeds texts with the semantic model the search
	// ranks by (unit vectors), under the request's context: it tells
	// whether a section names a question's action in other words
	// (action.go). Nil: a word the collection lacks always makes the answer
	// an abstention. When it fails (the request's deadline passed) the
	// answer is written as without it, and ComposeContext says it is
	// degraded.
	Embed func(ctx context.Context, texts []string) ([][]float32, error)
}

func (c Config) withDefaults() Config {
	if c.MaxSentences <= 0 {
		c.MaxSentences = 3
	}
	if c.MaxChars <= 0 {
		c.MaxChars = 700
	}
	return c
}

// Abstention is how an answer that the docs do not support begins.
const Abstention = "The docs don't say"

// NotFound is how an answer begins when the sections the search found do
// not answer the question although the collection may hold its words: it
// says what was searched for and not found, never that the docs lack a
// word (only Abstention, for words the collection's vocabulary lacks).
const NotFound = "I found no section that answers this"

// Abstained reports whether answer is an abstention written by Compose.
func Abstained(answer string) bool {
	return strings.HasPrefix(answer, Abstention) || strings.HasPrefix(answer, NotFound)
}

// passage is an evidence passage with its rank across the evidence.
type passage struct {
	kgagent.EvidencePassage
	rank   int
	fact   bool
	titles map[string]bool // terms of title and headings
	blocks []block
	// terms is the terms of Text, once read (textTerms)
	terms []string
	// described is the cosine of the question with the opening sentence
	// of the API entry the passage declares (describe); 0 when not
	// compared.
	described float64
}

// block is a paragraph or a code block of a passage.
type block struct {
	code bool
	text string
}

type sentence struct {
	p     *passage
	pos   int // position within the passage
	blk   int // index of its block in the passage
	text  string
	terms []string
	score float64
}

// Compose answers question from the evidence of the run's searches (in the
// order they were made). It returns the answer text with [n] citations.
// When the graph answered the question's shape outright (Evidence.List),
// the answer is that list (ListAnswer). It is ComposeContext under no
// deadline.
func Compose(question string, evs []kgagent.Evidence, cfg Config) string {
	return ComposeContext(context.Background(), question, evs, cfg).Text
}

// Composed is an answer ComposeContext wrote.
type Composed struct {
	Text string // the answer, with [n] citations
	// Degraded: Config.Embed failed (the request's deadline passed, the
	// model could not load), so the answer was judged by words alone. It
	// may be given, but not kept as what the question gets (the agent's
	// answer cache): asked again, it may be answered.
	Degraded bool
}

// ComposeContext is Compose for a request: Config.Embed runs under ctx.
func ComposeContext(ctx context.Context, question string, evs []kgagent.Evidence, cfg Config) Composed {
	var out Composed
	if cfg.Embed != nil {
		embed := cfg.Embed
		cfg.Embed = func(ctx context.Context, texts []string) ([][]float32, error) {
			v, err := embed(ctx, texts)
			if err != nil {
				out.Degraded = true
			}
			return v, err
		}
	}
	out.Text = compose(ctx, question, evs, cfg)
	return out
}

func compose(ctx context.Context, question string, evs []kgagent.Evidence, cfg Config) string {
	cfg = cfg.withDefaults()
	if l := graphList(evs); l != nil {
		return ListAnswer(l)
	}
	ps := collect(evs, false)
	if len(ps) == 0 {
		return Abstention + ": nothing in them matched the question."
	}
	q := analyse(question)
	present := newTermSet(evidenceTerms(ps))
	unknown := q.unknown(evs, present)
	asked := q
	lacked := func() string { return abstain(ps, asked, "anything about "+quoteList(unknown)) }
	meant := false     // the question's action is judged by meaning (action.go)
	var noted []string // its words the docs do not use, named after the answer (wording.go)
	// A problem report whose status code a section close in meaning
	// states is about that code (precision.go): the report's other words
	// the collection lacks are its wording, unless written as names.
	coded := len(unknown) > 0 && cfg.Embed != nil && reportsStatedCode(ps, question)
	if len(unknown) > 0 {
		var words []string
		var ok bool
		discount := 0
		if coded {
			words, ok = q.reportWording(ctx, question, unknown, ps, cfg.Embed)
		} else {
			words, discount, ok = q.wordingShare(ctx, question, unknown, ps, present, cfg.Embed)
		}
		if !ok {
			return lacked()
		}
		if !coded {
			q.floor = q.answerMin(discount)
		}
		// Its action, when the collection lacks it, is judged by meaning
		// (action.go); when the sections found do not hold it ("compress"
		// in "compress old shards by hand"), they do not answer.
		if !coded && len(words) == len(unknown) && q.action != "" && q.idiom == nil && !present.has(text.Term(q.action)) {
			return lacked()
		}
		if len(words) < len(unknown) {
			if !q.actionInOtherWords([]string{q.action}, ps) {
				return lacked()
			}
			q, meant = q.withoutAction(), true
		}
		q, noted = q.without(words), unknown
		// Wording is forgiven only beside a word that says what is asked:
		// "How much does Lumen cost?" has none but the name.
		if len(words) > 0 && !q.asksBeyondNames() {
			return lacked()
		}
	}
	// Once words the collection lacks were taken for wording, an
	// abstention still says the docs lack them.
	notFound := func(missing []string) string {
		if len(noted) > 0 {
			return lacked()
		}
		return notFoundAnswer(ps, q, missing)
	}
	if missing := q.missing(present); len(missing) > 0 && !q.meaningDecides(ps) {
		return notFound(missing)
	}
	if q.farInMeaning(ps) {
		return notFound(nil)
	}
	if absent := q.absentPhrases(ps); len(absent) > 0 {
		return notFound(absent)
	}
	sents, df := split(ps)
	if len(sents) == 0 {
		return notFound(nil)
	}
	weights := map[string]float64{}
	for _, t := range q.terms {
		weights[t] = text.IDF(len(sents), df[t])
	}
	for _, s := range sents {
		s.score = scoreSentence(s, weights, q.cue)
	}
	order := append([]*sentence(nil), sents...)
	sort.SliceStable(order, func(i, j int) bool { return order[i].score > order[j].score })
	// The answer comes from a page about the question: one that holds its
	// names and most of its terms. The best sentence of such a page leads.
	// A bare heading ("Reader Objects") leads only when nothing else can
	// (a which/what question is answered by naming, below).
	covers := map[*passage]bool{}
	var best *sentence
	if meant {
		if best = actionLead(ctx, order, ps, q, present, cfg.Embed); best == nil {
			return lacked()
		}
	}
	for _, allowBare := range []bool{false, true} {
		if best != nil {
			break
		}
		for _, s := range order {
			if s.score <= 0 {
				break
			}
			if bare(s) && !allowBare && q.kind == "" {
				continue
			}
			c, ok := covers[s.p]
			if !ok {
				c = q.covered(ps, s.p, present)
				covers[s.p] = c
			}
			if c {
				best = s
				break
			}
		}
		if best != nil {
			break
		}
	}
	if best == nil {
		best = semanticLead(order, ps, q)
	}
	if best == nil && coded {
		best = codeSentence(order, ps, question)
	}
	if best == nil {
		return notFound(nil)
	}
	// A problem report's status code picks the sentence that says when it
	// is answered (precision.go).
	if s := codeSentence(order, ps, question); s != nil && !meant {
		best = s
	}
	if len(noted) > 0 && !meant && !coded && len(q.specific) > 0 && !q.pageHolds(ps, best.p) {
		return lacked()
	}
	// A question about an amount is answered by a sentence that states
	// one of the thing asked (precision.go).
	if thing, limit := amountAsked(question); (thing != "" || limit) && !statesAmount(best, thing, limit) {
		return notFound(nil)
	}
	// Sentences of pages that do not cover the question only support.
	for i := range order {
		if !covers[order[i].p] && order[i].score > best.score {
			order[i].score = best.score * 0.9
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].score > order[j].score })
	var out answer
	if !meant && (q.kind == "" || !entityKinds[q.kind]) {
		describe(ctx, question, ps, sents, cfg.Embed)
	}
	switch {
	case meant:
		// The section that does the action, found by meaning, leads: its
		// heading (what the docs call it: "Migrating from Lumen 1.x"), then
		// its sentences from its opening one (what it does) to its best;
		// the question's other words pick no entry or code of another
		// section.
		lead := best
		for _, s := range sents {
			if s.p == best.p && s.pos < lead.pos && !bare(s) {
				lead = s
			}
		}
		out.parts = append(out.parts, part{text: sectionLabel(best.p) + ":", n: best.p.N})
		out.first(lead)
		for _, s := range sents {
			if s.p == best.p && s.pos > lead.pos && s.pos <= best.pos && !bare(s) {
				out.add(s)
			}
		}
		if q.howTo || q.action != "" {
			if _, code := codeFor(best.p, sents); code != "" {
				out.parts = append(out.parts, part{text: code, code: true})
			}
		}
	case q.kind != "" && entityKinds[q.kind]:
		out.lead(ps, sents, best, q)
	case out.named(ps, sents, best, q.howTo):
		// A question about doing something: the entry that does it leads.
	case q.howTo:
		out.howTo(ps, sents, best)
	default:
		// A yes/no question: a short first sentence of the best one's
		// section ("No.") carries the answer the next one explains.
		if q.yesNo && best.pos == 1 {
			for _, s := range sents {
				if s.p == best.p && s.pos == 0 && len(s.terms) <= 8 {
					out.add(s)
					break
				}
			}
		}
		out.first(best)
	}
	// Supporting sentences: the next best, not said already, not code.
	// An answer whose action was found by meaning takes them from its
	// lead's section only: the question's other words ("Lumen", "2") that
	// score them do not say what another section has to do with the action
	// (actionLead), so they would add the install page's version line or
	// a changelog entry to the migration guide's answer.
	for _, s := range order {
		if out.supporting >= cfg.MaxSentences || s.score < 0.5*best.score {
			break
		}
		if meant && s.p != best.p || out.has(s) || out.size+len(s.text) > cfg.MaxChars || commandLike(s.text) || bare(s) || nearDuplicate(s, out.sents) {
			continue
		}
		out.add(s)
		out.supporting++
	}
	// Entries about as close in meaning as the lead are named after it,
	// unless the answer names the one thing a which/what question asks for.
	if q.kind == "" || !entityKinds[q.kind] {
		out.seeAlso(ps)
	}
	if len(noted) > 0 {
		return out.String() + "\n\n" + wordingNote(noted)
	}
	return out.String()
}

// collect flattens the evidence into passages (facts as one-sentence
// passages after them), dropping repeats of the same section text and,
// unless sources is set, the passages that are sources only
// (EvidencePassage.SourceOnly): Compose answers from the passages it always
// did, while Support keeps them, since an LLM is shown every passage and may
// cite a source-only one correctly.
func collect(evs []kgagent.Evidence, sources bool) []*passage {
	var out []*passage
	seen := map[string]bool{}
	for _, ev := range evs {
		for _, p := range ev.Passages {
			key := p.URL + "\x00" + p.Text
			if seen[key] || strings.TrimSpace(p.Text) == "" || (p.SourceOnly && !sources) {
				continue
			}
			seen[key] = true
			out = append(out, &passage{EvidencePassage: p, rank: len(out)})
		}
	}
	for _, ev := range evs {
		for _, f := range ev.Facts {
			key := f.SourceURL + "\x00" + f.Text
			if seen[key] || f.Text == "" {
				continue
			}
			seen[key] = true
			out = append(out, &passage{EvidencePassage: kgagent.EvidencePassage{N: f.N, URL: f.SourceURL, Title: f.Triple.Subject.Name, Text: f.Text, Score: f.Score}, rank: len(out), fact: true})
		}
	}
	// The graph list's items, each a sentence stating it (so an LLM's
	// sentence about an item is supported by the item's own section).
	for _, ev := range evs {
		if l := ev.List; l != nil {
			for _, it := range l.Items {
				text := ItemSentence(l, it)
				key := it.SourceURL + "\x00" + text
				if seen[key] {
					continue
				}
				seen[key] = true
				out = append(out, &passage{EvidencePassage: kgagent.EvidencePassage{N: it.N, URL: it.SourceURL, Title: it.Name, Text: text, Score: 1}, rank: len(out), fact: true})
			}
		}
	}
	for _, p := range out {
		p.titles = map[string]bool{}
		for _, t := range text.AllTerms(p.Title + " " + strings.Join(p.HeadingPath, " ")) {
			p.titles[t] = true
		}
		p.blocks = blocks(p.Text)
	}
	return out
}

// blocks splits a passage's text into paragraphs and code blocks.
func blocks(text string) []block {
	var out []block
	for _, para := range strings.Split(text, "\n\n") {
		para = strings.Trim(para, "\n")
		if strings.TrimSpace(para) == "" {
			continue
		}
		out = append(out, block{code: codeBlock(para), text: para})
	}
	return out
}

// codeBlock reports whether a paragraph is code: interactive prompts, shell
// prompts, or lines shaped like code rather than prose.
func codeBlock(para string) bool {
	lines := strings.Split(para, "\n")
	code, prose := 0, 0
	for _, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case t == "":
		case strings.HasPrefix(t, ">>>") || strings.HasPrefix(t, "$ ") || strings.HasPrefix(t, "... ") || strings.HasPrefix(t, "#!"):
			code++
		case commandLike(t) || codeLine(t):
			code++
		default:
			prose++
		}
	}
	return code > 0 && code >= prose
}

// codeLine reports whether a line looks like a statement of code: call
// parentheses or an assignment and no sentence end.
func codeLine(t string) bool {
	if strings.HasSuffix(t, ".") && strings.Contains(t, " ") && !strings.HasSuffix(t, "...") {
		return false
	}
	if strings.ContainsAny(t, "{};") || strings.Contains(t, " = ") || strings.HasPrefix(t, "import ") || strings.HasPrefix(t, "from ") {
		return true
	}
	return callRe.MatchString(t) && len(strings.Fields(t)) <= 6
}

var footnoteRe = regexp.MustCompile(`\s*\[\d+\]`)

var callRe = regexp.MustCompile(`^[\w.]+\(.*\)$`)

// commandLike reports whether s is a command line rather than a sentence:
// no closing punctuation, lower-case start, and a --flag or a subcommand.
func commandLike(s string) bool {
	t := strings.TrimSpace(s)
	if t == "" || strings.ContainsRune(".!?:", rune(t[len(t)-1])) {
		return false
	}
	return strings.Contains(t, " --") || strings.Contains(t, " -") && unicode.IsLower(rune(t[0])) && len(strings.Fields(t)) <= 8
}

// split cuts the passages' prose into sentences and counts in how many
// sentences each term appears.
func split(ps []*passage) ([]*sentence, map[string]int) {
	var out []*sentence
	df := map[string]int{}
	seen := seenPool.Get().(map[string]bool) // countDistinct's, one for every sentence
	defer seenPool.Put(seen)
	for _, p := range ps {
		ss := p.sentences()
		sts := make([]sentence, len(ss))
		for pos, s := range ss {
			st := &sts[pos]
			*st = sentence{p: p, pos: pos, blk: s.blk, text: s.text, terms: s.terms}
			countDistinct(df, seen, st.terms)
			out = append(out, st)
		}
	}
	return out, df
}

// seenPool holds the sets split tells a long sentence's terms apart in:
// one for every sentence, reused from answer to answer (31 KB an answer on
// the Python docs when each long sentence made its own).
var seenPool = sync.Pool{New: func() any { return map[string]bool{} }}

// countDistinct adds one to df[t] for each distinct term t of terms. A
// long sentence's terms are told apart in seen, which it empties after
// use.
func countDistinct(df map[string]int, seen map[string]bool, terms []string) {
	if len(terms) > 32 {
		for _, t := range terms {
			if !seen[t] {
				seen[t] = true
				df[t]++
			}
		}
		clear(seen)
		return
	}
	for i, t := range terms {
		if !slices.Contains(terms[:i], t) {
			df[t]++
		}
	}
}

// splitSentences cuts a line at sentence ends: ". ", "! ", "? " before an
// upper-case letter, digit, quote or bracket, not after an abbreviation.
func splitSentences(line string) []string { return answerSentences.Split(line) }

// answerSentences is where the answer writer ends a sentence.
var answerSentences = text.SentenceRule{Starts: "\"'`([", Abbrev: true}

// evidenceTerms is every term of the evidence: text, titles and headings.
func evidenceTerms(ps []*passage) map[string]bool {
	out := map[string]bool{}
	for _, p := range ps {
		for _, t := range p.textTerms() {
			out[t] = true
		}
		for t := range p.titles {
			out[t] = true
		}
		for _, t := range text.AllTerms(p.URL) {
			out[t] = true
		}
	}
	return out
}

// answer is the answer being written: sentences (and code) with their
// citations.
type answer struct {
	parts      []part
	sents      []*sentence
	size       int
	supporting int
}

// part is a sentence (cited n) or a code block (n 0).
type part struct {
	text string
	n    int
	code bool
	keep bool // cited even when the next sentence has the same source
	own  bool // a paragraph of its own (seeAlso's list)
}

// withCitation ends text with the citation [n] before its final
// punctuation (none when n <= 0).
func withCitation(text string, n int) string {
	t := strings.TrimRight(text, " ")
	end := ""
	if k := len(t); k > 0 && strings.ContainsRune(".!?:", rune(t[k-1])) {
		end, t = t[k-1:], t[:k-1]
	}
	if n <= 0 {
		return t + end
	}
	return t + " [" + strconv.Itoa(n) + "]" + end
}

func (a *answer) add(s *sentence) {
	a.parts = append(a.parts, part{text: s.text, n: s.p.N})
	a.sents = append(a.sents, s)
	a.size += len(s.text)
}

// first adds the lead sentence; from a section about one function or
// class (its heading is the signature) it names it first:
// "`uuid.uuid4()`: Generate a random UUID [1]."
func (a *answer) first(s *sentence) {
	if id := leadName(s.p); id != "" && !holdsVerbatim(s.text, strings.TrimSuffix(id, "()")) {
		a.parts = append(a.parts, part{text: "`" + id + "`: " + s.text, n: s.p.N, keep: true})
		a.sents = append(a.sents, s)
		a.size += len(s.text)
		return
	}
	a.add(s)
}

// leadName is the name first gives a sentence of p: the entry p declares
// (entryName), else an identifier its heading starts with ("--http-port",
// "lumen.connect"), else the module its page or section documents (a
// heading "secrets — Generate secure random numbers…"), else "".
func leadName(p *passage) string {
	if p.fact {
		return ""
	}
	if n := entryName(p); n != "" {
		return n
	}
	if h := p.Heading(); h != p.Title && len(h) <= 100 {
		if id := identRe.FindString(h); id != "" && strings.Index(h, id) <= 10 {
			if !strings.HasSuffix(id, ")") && strings.Contains(h, id+"(") {
				id += "()"
			}
			return id
		}
	}
	return moduleName(p)
}

// moduleNameRe is a module's name: an identifier or a dotted name.
var moduleNameRe = regexp.MustCompile(`^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$`)

// moduleName returns the module a section documents: the name of its most
// specific heading shaped "name — description" whose name is an identifier
// ("os.path — Common pathname manipulations"), or "".
func moduleName(p *passage) string {
	for i := len(p.HeadingPath) - 1; i >= 0; i-- {
		if n, _ := dashed(p.HeadingPath[i]); n != "" && moduleNameRe.MatchString(n) {
			return n
		}
	}
	return ""
}

// entryShare is how good, against the best sentence of all, the best
// sentence of an API entry's section must be for the entry to lead the
// answer to a question that is not asking for a named thing.
const entryShare = 0.5

// versionNoteRe matches a note on when something was added, changed or
// deprecated: it says when, not what a thing does.
var versionNoteRe = regexp.MustCompile(`^(?:New in version|Changed in version|Deprecated since version|Deprecated|Removed in version)\b`)

func versionNote(s string) bool { return versionNoteRe.MatchString(strings.TrimSpace(s)) }

// named opens the answer with the API entry that does what the question
// asks: of the sections that declare a function, method, class or
// attribute (entryName) and whose best sentence is at least entryShare as
// good as the best sentence of all (describedShare when its opening
// sentence was compared in meaning with the question: described.go; an
// attribute's or constant's: the best of all), the one the semantic model
// finds closest to the question (closerEntry; by its best sentence without
// semantic vectors), named first
// ("`shutil.rmtree()`: Delete an entire directory tree … [1]."), and for a
// "how do I" question the section's code after it. The name is the cited
// section's own heading, never a word of the question. It reports false,
// adding nothing, when no such section was found.
func (a *answer) named(ps []*passage, sents []*sentence, best *sentence, howTo bool) bool {
	var pick *sentence
	perPassage := bestPerPassage(ps, sents)
	for _, s := range perPassage {
		name, attribute := entry(s.p)
		share := entryShare
		if s.p.described >= describedMin {
			share = describedShare // its description is close in meaning to the question (described.go)
		}
		if name == "" || s.score < share*best.score || s.p.LinkHeavy || bare(s) {
			continue
		}
		if attribute && s.score < best.score {
			continue // an attribute or constant leads only as the best answer of all
		}
		if pick == nil || closerEntry(s, pick, best.score) {
			pick = s
		}
	}
	if pick == nil {
		return false
	}
	if howTo {
		// A better-ranked section that shows how in code ("lumen token
		// create …") answers a "how do I" question before an entry does.
		for _, s := range perPassage {
			if s.p.rank >= pick.p.rank {
				break
			}
			if _, code := codeFor(s.p, sents); code != "" && s.score >= entryShare*best.score {
				return false
			}
		}
	}
	// The section's opening sentence says what the entry does ("Delete an
	// entire directory tree"): it leads unless it shares little with the
	// question, and a version note ("Changed in version 3.10: …") never does.
	for _, s := range sents {
		if s.p == pick.p && s.pos == 0 && s != pick && !bare(s) && !versionNote(s.text) && (s.score >= 0.5*pick.score || versionNote(pick.text)) {
			pick = s
			break
		}
	}
	a.first(pick)
	if howTo {
		if _, code := codeFor(pick.p, sents); code != "" {
			a.parts = append(a.parts, part{text: code, code: true})
		}
	}
	return true
}

// closerEntry reports whether the section of s answers the question better
// than the section of pick, both entries whose best sentences share enough
// words with it: the one whose semantic cosine with the question is higher
// (the search's meaning ranking, kgagent.EvidencePassage.Semantic), and on
// a tie, as without semantic vectors (every cosine 0), the one whose best
// sentence scores higher. Words shared with the question pick the wrong
// entry of users' questions ("get just the file name from a full path":
// os.DirEntry.path's "The entry's full path name" against
// os.path.basename), which the model places by meaning. When both
// entries' descriptions were compared with the question (describe), their
// closeness decides first (best: the best sentence's score).
func closerEntry(s, pick *sentence, best float64) bool {
	if s.p.described != 0 && pick.p.described != 0 {
		if a, b := closeness(s, best), closeness(pick, best); a != b {
			return a > b
		}
	}
	if s.p.Semantic != pick.p.Semantic {
		return s.p.Semantic > pick.p.Semantic
	}
	return s.score > pick.score
}

func (a *answer) has(s *sentence) bool {
	for _, c := range a.sents {
		if c == s {
			return true
		}
	}
	return false
}

// String renders the answer: a sentence followed by another from the same
// source is cited once, after the last of them; code blocks stand apart.
func (a *answer) String() string {
	var b strings.Builder
	for i, p := range a.parts {
		if i > 0 {
			if p.code || a.parts[i-1].code || p.own {
				b.WriteString("\n\n")
			} else {
				b.WriteString(" ")
			}
		}
		if p.code {
			b.WriteString("```\n" + p.text + "\n```")
			continue
		}
		n := p.n
		if i+1 < len(a.parts) && !p.keep && !a.parts[i+1].code && a.parts[i+1].n == n {
			n = 0
		}
		b.WriteString(withCitation(p.text, n))
	}
	return b.String()
}

// lead opens the answer to a which/what question by naming the thing: the
// subject of the best section ("`json` — JSON encoder and decoder").
func (a *answer) lead(ps []*passage, sents []*sentence, best *sentence, q question) {
	// The best section that is about one named thing (its heading or title
	// is "name — description"), among those nearly as good as the best.
	// Index and contents pages name many things, so they never lead. A
	// page about one thing that is a little less good beats a page about
	// many (a chapter's contents) that is better.
	// Among those, a section whose synopsis holds more of the question's
	// words in a row (phraseRun, at least minLeadPhrase) than the first
	// one's leads instead: a known-item question quotes its entry's
	// synopsis ("miscellaneous other utility functions"), which a
	// better-ranked neighbour's ("email.utils — Miscellaneous utilities")
	// does not hold.
	found := false
	runs := map[*passage]int{}
	run := func(p *passage, desc string) int {
		n, ok := runs[p]
		if !ok {
			n = phraseRun(q.seq, desc)
			runs[p] = n
		}
		return n
	}
	for _, share := range []float64{0.6, 0.3} {
		var first, phrased *sentence
		for _, s := range bestPerPassage(ps, sents) {
			if s.score < share*best.score || s.p.LinkHeavy || identKinds[q.kind] && aboutMany(s.p) {
				continue
			}
			if n, desc := subject(s.p, s.text, q.kind); n != "" && (identKinds[q.kind] || hasDashed(s.p) || anchorName(s.p, q.kind) != "") {
				if first == nil {
					first = s
				}
				if desc == "" && declared(s.p) != "" {
					// A type's page ("Class HttpsExchange") states its
					// synopsis as its description's sentence.
					desc = s.text
				}
				if r := run(s.p, desc); r >= minLeadPhrase && (phrased == nil || r > run(phrased.p, "")) {
					phrased = s
				}
			}
		}
		if phrased != nil && phrased != first && run(phrased.p, "") > run(first.p, "") {
			first = phrased
		}
		if first != nil {
			best, found = first, true
		}
		if found {
			break
		}
	}
	p := best.p
	name, desc := subject(p, best.text, q.kind)
	if name == "" {
		a.add(best)
		return
	}
	first := "`" + name + "`"
	if desc != "" {
		first += " — " + desc
	}
	if t := strings.TrimLeft(best.text, "`*\"'"); strings.HasPrefix(t, name) && (len(t) == len(name) || strings.ContainsRune(" :,`*'\"(", rune(t[len(name)]))) {
		a.add(best) // the best sentence names it already
		return
	}
	a.parts = append(a.parts, part{text: first + ".", n: p.N, keep: true})
	a.size += len(first)
	a.add(best)
	a.supporting++
}

// manyPageRe matches the top heading of a page about a package or a
// module as a whole, or about the uses of a package or class: "Package
// javax.accessibility", "Module java.base", "Uses of Package
// java.util.stream", "Uses of Class java.security.Permission" (Javadoc
// heads its pages with the kind of what they describe); a package's or a
// module's name starts in lower case, so the Python C API's "Module
// Objects" is no such page. Its group is the package's or module's name.
var manyPageRe = regexp.MustCompile(`^(?:(?:Package|Module) ([a-z_][\w.]*)|Uses of (?:(?:Enum|Record|Annotation)\s+)?(?:Package|Module|Class|Interface|Enum|Record|Exception) [A-Za-z_][\w.]*(?:<.*>)?)$`)

// aboutMany reports whether p is a section of a page about a package or
// module as a whole, or about the uses of one or of a class (manyPageRe):
// it names many classes, so it does not lead the answer to a question
// asking for one class, method or other thing an identifier names, while a
// page about one such thing can. A package's or module's page is titled
// with its name, as Javadoc titles it ("javax.accessibility (Java SE 17 &
// JDK 17)"): a page headed "Package management" is about something else.
func aboutMany(p *passage) bool {
	top := p.Title
	if len(p.HeadingPath) > 0 && p.HeadingPath[0] != "" {
		top = p.HeadingPath[0]
	}
	m := manyPageRe.FindStringSubmatch(strings.TrimSpace(top))
	return m != nil && (m[1] == "" || startsWithName(p.Title, m[1]))
}

// howTo opens the answer to a "how do I" question with the best sentence
// of the best section that holds code, followed by that code verbatim.
func (a *answer) howTo(ps []*passage, sents []*sentence, best *sentence) {
	// The section with code whose best sentence is at least half as good as
	// the best sentence overall, in rank order; its code block is the one
	// whose introducing sentence (the last before it) answers best, and
	// that sentence leads.
	for _, s := range bestPerPassage(ps, sents) {
		if s.score < 0.5*best.score {
			continue
		}
		intro, code := codeFor(s.p, sents)
		if code == "" {
			continue
		}
		if intro == nil {
			// The code opens its section: the section names what it does.
			a.parts = append(a.parts, part{text: sectionLabel(s.p) + ":", n: s.p.N, keep: true})
			a.parts = append(a.parts, part{text: code, code: true})
			return
		}
		if intro.score < 0.5*s.score {
			intro = s
		}
		a.first(intro)
		a.parts = append(a.parts, part{text: code, code: true})
		return
	}
	a.first(best)
}

// codeFor picks the code block of p whose introducing sentence scores
// best (the first code block when none is introduced), at most 15 lines,
// with that sentence.
func codeFor(p *passage, sents []*sentence) (*sentence, string) {
	var intro *sentence
	code := ""
	for bi, b := range p.blocks {
		if !b.code {
			continue
		}
		var last *sentence
		for _, s := range sents {
			if s.p == p && s.blk < bi && (last == nil || s.pos > last.pos) {
				last = s
			}
		}
		if importsOnly(b.text) {
			continue // "import asyncio" shows nothing of how
		}
		if code == "" || last != nil && (intro == nil || last.score > intro.score) {
			intro, code = last, b.text
		}
	}
	if lines := strings.Split(code, "\n"); len(lines) > 15 {
		code = strings.Join(lines[:15], "\n")
	}
	return intro, strings.TrimRight(code, "\n ")
}

// importsOnly reports whether a code block only imports (and comments):
// it names modules but shows nothing of how to use them.
func importsOnly(code string) bool {
	for _, l := range strings.Split(code, "\n") {
		t := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), ">>>"))
		if t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "import ") || strings.HasPrefix(t, "from ") && strings.Contains(t, " import ") {
			continue
		}
		return false
	}
	return true
}

// sectionLabel names a passage's section: "Backup and restore › Restore"
// (the page's top heading, not its title with the site's name).
func sectionLabel(p *passage) string {
	page := p.Title
	if len(p.HeadingPath) > 0 && p.HeadingPath[0] != "" {
		page = p.HeadingPath[0]
	}
	if h := p.Heading(); h != "" && h != page && h != p.Title {
		return page + " › " + h
	}
	return page
}

// bare reports whether a sentence is only its section's heading or title
// (a heading chunked apart from its content).
func bare(s *sentence) bool {
	t := strings.TrimSpace(s.text)
	if t == strings.TrimSpace(s.p.Title) {
		return true
	}
	for _, h := range s.p.HeadingPath {
		if t == strings.TrimSpace(h) {
			return true
		}
	}
	return false
}

// bestPerPassage returns the best sentence of each passage, in the
// passages' rank order.
func bestPerPassage(ps []*passage, sents []*sentence) []*sentence {
	bestIn := map[*passage]*sentence{}
	for _, s := range sents {
		if b := bestIn[s.p]; b == nil || s.score > b.score {
			bestIn[s.p] = s
		}
	}
	var out []*sentence
	for _, p := range ps {
		if s := bestIn[p]; s != nil {
			out = append(out, s)
		}
	}
	return out
}

// hasDashed reports whether a passage's headings or title name one thing
// with a description ("json — JSON encoder and decoder").
func hasDashed(p *passage) bool {
	hs := p.HeadingPath
	if len(hs) == 0 {
		// A title often ends in " — <site name>", which names no thing;
		// it counts only when there are no headings.
		hs = []string{p.Title}
	}
	for _, h := range hs {
		if n, _ := dashed(h); n != "" && len(strings.Fields(n)) == 1 {
			return true
		}
	}
	return false
}

// abstain is the abstention for words no document of the collection
// contains (what names them): it says the docs do not answer, quotes what
// they cover nearest (nearestCover) and lists the nearest sections.
func abstain(ps []*passage, q question, what string) string {
	var b strings.Builder
	b.WriteString(Abstention)
	if what != "" {
		b.WriteString(" " + what)
	}
	b.WriteString(".")
	nearest(&b, ps, coverQuote(&b, nearestCover(ps, q)))
	return b.String()
}

// maxSearched bounds the words a not-found abstention lists as searched for.
const maxSearched = 8

// notFound is the abstention for a question whose words the collection
// may well hold but no section found answers: it says what was searched
// for and which of it (missing: terms or names of the question) none of
// the sections found mentions.
func notFoundAnswer(ps []*passage, q question, missing []string) string {
	var b strings.Builder
	b.WriteString(NotFound)
	searched := q.shown(append(append([]string(nil), q.specific...), q.terms...))
	if len(searched) > maxSearched {
		searched = searched[:maxSearched]
	}
	if len(searched) > 0 {
		b.WriteString("; I searched for " + quoteJoin(searched, "and"))
	}
	if m := q.shown(missing); len(m) > 0 {
		b.WriteString(", and none of the sections found mentions " + quoteList(m))
	}
	b.WriteString(".")
	nearest(&b, ps, coverQuote(&b, nearestCover(ps, q)))
	return b.String()
}

// nearest writes the first three sections of ps as the nearest ones; when
// one was quoted already (quoted; nil for none), the first two others, so
// that an abstention cites three sections either way.
func nearest(b *strings.Builder, ps []*passage, quoted *passage) {
	var near []string
	seen := map[int]bool{}
	most := 3
	if quoted != nil {
		seen[quoted.N] = true
		most = 2
	}
	for _, p := range ps {
		if p.fact || seen[p.N] || p.N <= 0 {
			continue
		}
		seen[p.N] = true
		t := p.Title
		if h := p.Heading(); h != "" && h != p.Title {
			t += " › " + h
		}
		near = append(near, t+" ["+strconv.Itoa(p.N)+"]")
		if len(near) == most {
			break
		}
	}
	if len(near) > 0 {
		b.WriteString(" The nearest sections are " + strings.Join(near, ", ") + ".")
	}
}

// quoteList quotes ws as “a”, “b” or “c”.
func quoteList(ws []string) string { return quoteJoin(ws, "or") }

// quoteJoin quotes ws and joins the last with conj: “a”, “b” and “c”.
func quoteJoin(ws []string, conj string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = "“" + w + "”"
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " " + conj + " " + q[len(q)-1]
}

// nearDuplicate reports whether most of s's terms are already in a chosen
// sentence (or the other way round), so one fact is not said twice.
func nearDuplicate(s *sentence, chosen []*sentence) bool {
	a := map[string]bool{}
	for _, t := range s.terms {
		a[t] = true
	}
	for _, c := range chosen {
		b := map[string]bool{}
		common := 0
		for _, t := range c.terms {
			if !b[t] {
				b[t] = true
				if a[t] {
					common++
				}
			}
		}
		if small := min(len(a), len(b)); small > 0 && float64(common)/float64(small) > 0.8 {
			return true
		}
	}
	return false
}

// minLeadPhrase is the fewest of the question's words in a row
// (question.seq) that make a section's synopsis outrank a better-ranked
// section's in lead (chosen before measuring; 2 and 4 measured after).
const minLeadPhrase = 3

// phraseRun returns the length of the longest run of seq (a question's
// terms in order) that desc, a section's own synopsis (the description of
// its "name — description" heading, subject), holds as consecutive content
// words (text.QuestionWords: stop words between them do not count). A
// page's text or title may quote another entry's synopsis or name ("Module
// time: Time access and conversions" on the datetime page, an OpenJDK
// package summary's table of classes, a class-use page titled with the
// class a question names), so only the synopsis counts.
func phraseRun(seq []string, desc string) int {
	var ts []string
	for _, w := range text.QuestionWords(desc) {
		ts = append(ts, text.Term(w))
	}
	return longestCommonRun(seq, ts)
}

// longestCommonRun returns the length of the longest run of a that b holds
// in a row.
func longestCommonRun(a, b []string) int {
	best := 0
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			cur[j+1] = 0
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
				if cur[j+1] > best {
					best = cur[j+1]
				}
			}
		}
		prev, cur = cur, prev
	}
	return best
}
