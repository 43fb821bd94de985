package agent

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent/extractive"
	kgtext "github.com/kgagent/kgagent/internal/text"
	"github.com/kgagent/kgagent/llm"
)

// MaxAnswerSources bounds the sources an answer lists beyond the ones it
// cites: after the cited sections come the best other sections retrieval
// found, up to this many sources in all.
const MaxAnswerSources = 5

// citeMap renumbers an answer's citations by first use. Numbers are the
// run's citation numbers (1..n, n sources gathered); the first one the
// answer cites becomes [1], the next new one [2], and so on. Numbers that
// name no source are dropped. It is applied to the answer's deltas as they
// stream and to the final text with the same result, so every transport
// shows the same numbers.
type citeMap struct {
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

func newCiteMap(n int) *citeMap { return &citeMap{n: n, next: map[int]int{}} }

// number returns the answer number of run number k, 0 when k names no source.
func (c *citeMap) number(k int) int {
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

// openCitation returns the index of a citation group or fence marker that
// text ends inside ("… [1" or "“" still streaming), or -1.
func openCitation(text string) int {
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

// citeGroup is one citation group of an answer ("[1]", "[1, 2]"), as
// parseCitations found it.
type citeGroup struct {
	start, end int   // the group is text[start:end]
	nums       []int // its numbers, as written
	// sentence is where the sentence the group ends starts, before where
	// the one before it starts (checked: a citation after a full stop
	// cites the sentence before it).
	sentence, before int
}

// citedText is an answer text with its citation groups, found once by
// parseCitations; every later step (the support check, the renumbering,
// the list of numbers) reads the groups instead of parsing the text again.
type citedText struct {
	text   string
	groups []citeGroup
}

// citeSentences is where parseCitations ends a sentence (for the support
// check): a line break or the loose rule.
var citeSentences = kgtext.SentenceRule{Newline: true}

// parseCitations finds the citation groups of text (Citations' grammar,
// citationAt), outside code: st says whether text starts inside code and
// is left where text ends (a streamed answer's pieces share one).
func parseCitations(text string, st *codeState) citedText {
	ct := citedText{text: text}
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
			if citeSentences.End(text, i) {
				prev, start = start, i+1
			}
			continue
		}
		ct.groups = append(ct.groups, citeGroup{start: i, end: end, nums: nums, sentence: start, before: prev})
		i = end - 1
		prev, start = start, end
	}
	return ct
}

// numbers returns every number cited, in order.
func (ct citedText) numbers() []int {
	var out []int
	for _, g := range ct.groups {
		out = append(out, g.nums...)
	}
	return out
}

// render writes the text with each group's numbers replaced by keep's (in
// the answer's "[1, 2]" form); a group left with none is dropped with the
// space before it (a stream holds back trailing spaces, so the space is in
// the same piece).
func (ct citedText) render(keep func(i int, g citeGroup) []int) string {
	if len(ct.groups) == 0 {
		return ct.text
	}
	var b strings.Builder
	prev := 0
	for i, g := range ct.groups {
		b.WriteString(ct.text[prev:g.start])
		prev = g.end
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

// renumber maps run numbers to answer numbers (citeMap.number), dropping
// those that name no source and repeats.
func (c *citeMap) renumber(nums []int) []int {
	var out []int
	for _, k := range nums {
		if v := c.number(k); v > 0 && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// rewrite renumbers the citations in the whole answer text.
func (c *citeMap) rewrite(text string) string {
	return c.rewriteCited(parseCitations(text, &codeState{}))
}

// rewriteCited renumbers the citations of a parsed answer text.
func (c *citeMap) rewriteCited(ct citedText) string {
	return ct.render(func(_ int, g citeGroup) []int { return c.renumber(g.nums) })
}

// rewriteStream renumbers the citations in the next piece of the streamed
// answer (pieces never end inside a citation or a fence marker).
func (c *citeMap) rewriteStream(piece string) string {
	return c.rewriteCited(parseCitations(piece, &c.stream))
}

// answerSources lists an answer's sources: the cited ones in the order of
// their answer numbers, then the run's other sources, best ranked first and
// one per page, up to MaxAnswerSources in all. An answer that cites nothing
// lists every source gathered.
func (c *citeMap) answerSources(all []kgagent.Source) []kgagent.Source {
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
		if len(out) >= MaxAnswerSources {
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

// citer returns the run's answer numbering, made when the answer starts
// (every source has been gathered by then).
func (r *run) citer() *citeMap {
	if r.cites == nil {
		r.cites = newCiteMap(len(r.sources))
	}
	return r.cites
}

// unsupportedNote follows an answer that no source supports, before what
// the docs say.
const unsupportedNote = "None of the sources found supports this answer."

// ground returns the final answer text (in the run's numbers), the answer
// and its sources as the client sees them (citations renumbered by first
// use: citeMap), and who cited it (Answer.Citations). The model's text is cleaned first (cleanAnswer:
// protocol syntax, echoed instructions and a small model's leading junk
// never reach the answer). An answer that cites a source the run gathered
// keeps its citations (the model's); when the run searched and
// AttributeCitations is set, only those the cited passage supports
// (checkCitations), and an answer left with none is treated as one that
// cites nothing. An answer that names a URL or command line no passage
// holds verbatim (Support.Invented) is never the model's or attributed,
// whatever else it gets right; one only partly supported is the model's
// or attributed only when the built-in answerer answers from the same
// evidence too. Then, when the run searched and AttributeCitations is
// set, the sentences the evidence supports are cited (Support.Attribute;
// a sentence with no claim, or naming a command, URL or number the passage
// lacks, is not supported). When none is, the answer is what the built-in
// answerer says from the same evidence: after the model's answer and a
// note that no source supports it, when the docs answer; the abstention
// alone when they don't (an unsupported answer to a question the docs do
// not cover is made up). A run whose model gave no answer (noAnswer), or only
// protocol text, answers with what the docs say alone.
func (m *Manager) ground(r *run, question, text string) (final, answer string, sources []kgagent.Source, by string) {
	model := text
	// The answer's citations are parsed once (cited); kept holds the
	// numbers the support check left in each group when final is cited
	// with them.
	var cited citedText
	var kept [][]int
	defer func() {
		if final != model {
			// Citations were added or dropped: numbered afresh by first
			// use (the deltas streamed the model's own).
			r.cites = nil
		}
		c := r.citer()
		switch {
		case kept != nil:
			answer = cited.render(func(i int, _ citeGroup) []int { return c.renumber(kept[i]) })
		case final == cited.text:
			answer = c.rewriteCited(cited)
		default:
			answer = c.rewrite(final)
		}
		sources = c.answerSources(r.sources)
	}()
	grounding := m.cfg.Loop.AttributeCitations && len(r.evidence) > 0
	if clean := cleanAnswer(text); clean != text {
		text = clean
		if strings.TrimSpace(text) == "" && grounding && r.noAnswer == "" {
			r.noAnswer = "only protocol text"
		}
	}
	if r.noAnswer != "" {
		return "The model gave no answer (" + r.noAnswer + "). " + docsSay(question, r.evidence), "", nil, kgagent.CitationsFallback
	}
	var sup *extractive.Support
	if grounding {
		sup = extractive.NewSupport(r.evidence)
	}
	// What the built-in answerer says from the same evidence, written at
	// most once, and only when a rule below needs it.
	docs := ""
	docsOf := func() string {
		if docs == "" {
			docs = docsSay(question, r.evidence)
		}
		return docs
	}
	cited = parseCitations(text, &codeState{})
	if slices.ContainsFunc(cited.numbers(), func(n int) bool { return n >= 1 && n <= len(r.sources) }) {
		if !grounding {
			return text, "", nil, kgagent.CitationsModel
		}
		groups, count := cited.check(sup, len(r.sources))
		checked := cited.render(func(i int, _ citeGroup) []int { return groups[i] })
		if count > 0 && len(sup.Invented(checked)) == 0 && (!extractive.Abstained(docsOf()) || whollySupported(cited, sup)) {
			kept = groups
			return checked, "", nil, kgagent.CitationsModel
		}
		// Every citation the model wrote was wrong, it names what no
		// source holds, or the docs do not answer the question and only
		// part of the answer is supported: the same rules as an answer
		// without citations.
		text = checked
	}
	if !grounding {
		return text, "", nil, ""
	}
	a := sup.Attribute(text)
	attributable := a.Supported > 0 && len(sup.Invented(text)) == 0
	if attributable && a.Supported == a.Sentences {
		return a.Text, "", nil, kgagent.CitationsAttributed
	}
	docsOf()
	if attributable && !extractive.Abstained(docs) {
		// Partly supported: kept when the docs answer the question too;
		// otherwise the unsupported part is made up around copied text.
		return a.Text, "", nil, kgagent.CitationsAttributed
	}
	if extractive.Abstained(docs) {
		return docs, "", nil, kgagent.CitationsUnsupported
	}
	return strings.TrimRight(text, " \n") + "\n\n" + unsupportedNote + " " + docs, "", nil, kgagent.CitationsUnsupported
}

// whollySupported reports whether a model's cited answer makes a claim and
// every sentence with a claim is supported by a passage of sup, judged
// without its citations (Support.Attribute).
func whollySupported(cited citedText, sup *extractive.Support) bool {
	bare := cited.render(func(int, citeGroup) []int { return nil })
	a := sup.Attribute(bare)
	return a.Sentences > 0 && a.Supported == a.Sentences
}

// echoed are the instructions kgagent writes to the model, which a small
// model repeats in its answer.
var echoed = []string{"Reply with one line", "You must answer now", answerNow}

// protocolMention is the protocol's syntax anywhere in a line.
var protocolMention = regexp.MustCompile(`\b(?:Ask\s+(?:Func|Agent)\s*\[|(?:Func|Agent)\s*\[[^\]]*\]\s*says\b)`)

// junkLead is a small model's broken start of an answer: a lone letter
// ("a", "i"), "answer" cut into pieces ("a nswer:") before the text, or
// the prompt's placeholder itself ("A: answer [1]").
var junkLead = regexp.MustCompile(`^(?i)(?:[a-z]\s*$|a\s*n\s*s?\s*w?\s*e?\s*r?\s*:\s*|a\s+nswer\b\s*:?\s*|(?:the\s+|your\s+)?answer\s*(?:\[\d+\])?\s*\.?\s*$)`)

// cleanAnswer removes from a model's answer what is not answer: lines of
// the ReAct protocol (Ask Func[…], Func[…] says, Q:, a JSON step), the
// "A:" before an answer line, echoed instructions, and leading junk.
// Code blocks are kept as they are.
func cleanAnswer(text string) string {
	var out []string
	fence := false
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if kgtext.IsFence(t) {
			fence = !fence
			out = append(out, line)
			continue
		}
		if fence {
			out = append(out, line)
			continue
		}
		switch l := ClassifyLine(t); {
		case l.Kind == llm.LineAnswer:
			line = l.Text
		case l.Kind != llm.LineThought:
			continue
		case strings.HasPrefix(t, "{") && strings.Contains(t, `"action"`):
			// A JSON step written as text: its answer, else nothing.
			var st struct{ Action, Input string }
			if json.Unmarshal([]byte(t), &st) != nil || st.Action != "answer" {
				continue
			}
			line = st.Input
		case slices.ContainsFunc(echoed, func(e string) bool { return strings.Contains(t, e) }):
			continue
		case protocolMention.MatchString(t):
			// "1. Search for "Ask Func[name]":" — the protocol quoted
			// inside a line is an echo too.
			continue
		}
		for _, p := range []string{"Thought:", "Answer:", "Action:", "Observation:"} {
			if strings.HasPrefix(strings.TrimSpace(line), p) {
				if p == "Answer:" {
					line = strings.TrimSpace(strings.TrimSpace(line)[len(p):])
				} else {
					line = ""
				}
			}
		}
		if len(out) == 0 || strings.TrimSpace(strings.Join(out, "")) == "" {
			// Before any text: drop a small model's junk start.
			line = junkLead.ReplaceAllString(strings.TrimSpace(line), "")
		}
		out = append(out, line)
	}
	res := strings.Trim(strings.Join(out, "\n"), "\n ")
	if res == strings.Trim(text, "\n ") {
		return text
	}
	return res
}

// docsSay is the built-in answerer's answer from evidence: "The docs say:
// …", cited, or its abstention ("The docs don't say …").
func docsSay(question string, evs []kgagent.Evidence) string {
	docs := extractive.Compose(question, evs, extractive.Config{})
	if !extractive.Abstained(docs) {
		docs = "The docs say: " + docs
	}
	return docs
}

// check returns, for each group of ct (in the run's numbers, n sources),
// the numbers kept: those in range whose evidence passages support the
// sentence the citation ends (extractive.Support; the sentence before when
// the citation follows its full stop). A number that names no evidence
// passage (a func's own source) cannot be judged and is kept. It also
// returns how many numbers were kept.
func (ct citedText) check(sup *extractive.Support, n int) ([][]int, int) {
	kept := make([][]int, len(ct.groups))
	count := 0
	for i, g := range ct.groups {
		sentence := ct.text[g.sentence:g.start]
		if !extractive.Judged(sentence) {
			sentence = ct.text[g.before:g.start]
		}
		for _, k := range g.nums {
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
