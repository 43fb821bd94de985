package agent

import (
	"context"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/kgagent/kgagent"
)

// ExtractiveConfig tunes the built-in extractive model. Zero values work.
type ExtractiveConfig struct {
	MaxSentences int     // sentences in an answer, default 3
	MaxChars     int     // answer length bound, default 700
	MinMatch     float64 // few-shot match score needed to follow a stanza, default 0.75
	Deltas       int     // pieces the output is streamed in, default 4
}

// Extractive is the built-in LLM: deterministic and offline. It reads the
// ReAct transcript the manager builds. When the question closely matches a
// few-shot's query pattern it follows that stanza (same funcs, arguments
// taken from the question); otherwise it asks Func[fixie_query_corpus] with
// the question. With numbered sources observed it answers with the sentences
// that best answer the question (IDF-weighted term overlap, proximity and
// title match), names the entity for which/what questions, and cites every
// source it used as [n].
type Extractive struct {
	cfg ExtractiveConfig
}

var _ LLM = (*Extractive)(nil)

// NewExtractive returns the extractive model.
func NewExtractive(cfg ExtractiveConfig) *Extractive {
	if cfg.MaxSentences <= 0 {
		cfg.MaxSentences = 3
	}
	if cfg.MaxChars <= 0 {
		cfg.MaxChars = 700
	}
	if cfg.MinMatch <= 0 {
		cfg.MinMatch = 0.75
	}
	if cfg.Deltas <= 0 {
		cfg.Deltas = 4
	}
	return &Extractive{cfg: cfg}
}

// Complete implements LLM.
func (x *Extractive) Complete(ctx context.Context, req CompletionRequest) (Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := x.Respond(req.Messages)
	return &sliceStream{ctx: ctx, parts: splitDeltas(out, x.cfg.Deltas), usage: &kgagent.Usage{
		PromptTokens: promptWords(req.Messages), CompletionTokens: len(strings.Fields(out)),
	}}, nil
}

func promptWords(msgs []ChatMessage) int {
	n := 0
	for _, m := range msgs {
		n += countWords(m.Content)
	}
	return n
}

// countWords is len(strings.Fields(s)) without building the slice.
func countWords(s string) int {
	n, in := 0, false
	for _, r := range s {
		if unicode.IsSpace(r) {
			in = false
		} else if !in {
			in = true
			n++
		}
	}
	return n
}

// splitDeltas cuts s into about n pieces at spaces.
func splitDeltas(s string, n int) []string {
	if n <= 1 || len(s) < 2*n {
		return []string{s}
	}
	var out []string
	size := len(s) / n
	for len(s) > 0 {
		if len(s) <= size || len(out) == n-1 {
			out = append(out, s)
			break
		}
		cut := strings.IndexByte(s[size:], ' ')
		if cut < 0 {
			out = append(out, s)
			break
		}
		cut += size + 1
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}

type sliceStream struct {
	ctx   context.Context
	parts []string
	i     int
	usage *kgagent.Usage
}

func (s *sliceStream) Recv() (Delta, error) {
	if err := s.ctx.Err(); err != nil {
		return Delta{}, err
	}
	if s.i >= len(s.parts) {
		return Delta{}, io.EOF
	}
	d := Delta{Text: s.parts[s.i]}
	s.i++
	if s.i == len(s.parts) {
		d.Usage = s.usage
	}
	return d, nil
}

func (s *sliceStream) Close() error { return nil }

// observation is one `Func[x] says:` or `Agent[x] says:` reply.
type observation struct {
	kind LineKind
	name string
	text string
}

// transcript is what the extractive model reads from the prompt.
type transcript struct {
	stanzas  []Stanza
	question string
	actions  int
	obs      []observation
}

func readTranscript(msgs []ChatMessage) transcript {
	var t transcript
	if len(msgs) > 0 && msgs[0].Role == "system" {
		sys := msgs[0].Content
		if i := strings.Index(sys, "\n"+ExamplesHeader+"\n"); i >= 0 {
			for j, s := range SplitFewShots(sys[i+len(ExamplesHeader)+2:]) {
				st := Stanza{Index: j + 1, Text: s}
				for _, l := range strings.Split(s, "\n") {
					st.Lines = append(st.Lines, ClassifyLine(l))
				}
				t.stanzas = append(t.stanzas, st)
			}
		}
	}
	qi := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" && strings.HasPrefix(msgs[i].Content, "Q:") {
			qi = i
			break
		}
	}
	if qi < 0 {
		return t
	}
	t.question = strings.TrimSpace(msgs[qi].Content[2:])
	for _, m := range msgs[qi+1:] {
		switch m.Role {
		case "assistant":
			t.actions++
		case "user":
			l := ClassifyLine(strings.SplitN(m.Content, "\n", 2)[0])
			if l.Kind == LineFuncSays || l.Kind == LineAgentSays {
				body := strings.TrimPrefix(m.Content, l.Raw)
				t.obs = append(t.obs, observation{kind: l.Kind, name: l.Name, text: strings.TrimSpace(l.Text + body)})
			}
		}
	}
	return t
}

// Respond returns the model's next output for a transcript.
func (x *Extractive) Respond(msgs []ChatMessage) string {
	out := x.respond(msgs)
	if strings.TrimSpace(strings.TrimPrefix(out, "A:")) == "" {
		return "A: I have no answer to that."
	}
	return out
}

func (x *Extractive) respond(msgs []ChatMessage) string {
	t := readTranscript(msgs)
	if t.question == "" {
		return "A: I did not receive a question."
	}
	if n := len(t.obs); n > 0 && strings.HasPrefix(t.obs[n-1].text, "Error") {
		return "A: I could not answer that: " + errorText(t.obs[n-1].text)
	}
	if m, ok := x.matchStanza(t.stanzas, t.question); ok {
		asks := m.asks()
		if t.actions < len(asks) && t.actions == len(t.obs) {
			a := asks[t.actions]
			arg := m.fill(a.Text)
			// A later step may pass on what an earlier func said.
			for i, ex := range m.says() {
				if i < len(t.obs) && ex != "" && strings.Contains(arg, ex) {
					arg = strings.ReplaceAll(arg, ex, t.obs[i].text)
				}
			}
			return "Ask " + kindWord(a.Kind) + "[" + a.Name + "]: " + arg
		}
		if len(t.obs) > 0 && !hasSources(t.obs) {
			return "A: " + m.answer(t.obs)
		}
	}
	if len(t.obs) == 0 {
		if embedRefRe.MatchString(t.question) {
			return "Ask Func[fixie_query_embed]: " + t.question
		}
		return "Ask Func[fixie_query_corpus]: " + t.question
	}
	if hasSources(t.obs) {
		return "A: " + x.extract(t.question, t.obs)
	}
	return "A: " + t.obs[len(t.obs)-1].text
}

func errorText(s string) string {
	if i := strings.Index(s, "): "); i >= 0 && strings.HasPrefix(s, "Error (") {
		return s[i+3:]
	}
	return strings.TrimPrefix(strings.TrimPrefix(s, "Error"), ": ")
}

func kindWord(k LineKind) string {
	if k == LineAskAgent {
		return "Agent"
	}
	return "Func"
}

func hasSources(obs []observation) bool {
	for _, o := range obs {
		for _, l := range strings.Split(o.text, "\n") {
			if _, _, _, ok := sourceLine(strings.TrimSpace(l)); ok || strings.HasPrefix(l, "Facts:") {
				return true
			}
		}
	}
	return false
}

// stanzaMatch is a stanza matched to the question with its variables bound.
type stanzaMatch struct {
	st          Stanza
	vars        map[string]string // example text -> text from the question
	score       float64
	passthrough bool // the stanza passes the whole question to its func
}

func (m stanzaMatch) asks() []FewShotLine {
	var out []FewShotLine
	for _, l := range m.st.Lines {
		if l.Kind == LineAskFunc || l.Kind == LineAskAgent {
			out = append(out, l)
		}
	}
	return out
}

// says returns the example replies of the stanza, in order.
func (m stanzaMatch) says() []string {
	var out []string
	for _, l := range m.st.Lines {
		if l.Kind == LineFuncSays || l.Kind == LineAgentSays {
			out = append(out, l.Text)
		}
	}
	return out
}

// fill substitutes the bound variables into a text of the stanza.
func (m stanzaMatch) fill(s string) string {
	keys := make([]string, 0, len(m.vars))
	for k := range m.vars {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		s = replaceWord(s, k, m.vars[k])
	}
	return s
}

// answer fills the stanza's A: line with the observed replies in place of
// the example replies; when the example reply does not appear in it, the
// last observed reply is the answer.
func (m stanzaMatch) answer(obs []observation) string {
	var says []string
	ans := ""
	for _, l := range m.st.Lines {
		switch l.Kind {
		case LineFuncSays, LineAgentSays:
			says = append(says, l.Text)
		case LineAnswer:
			ans = l.Text
		}
	}
	used := false
	for i := len(says) - 1; i >= 0; i-- {
		if i < len(obs) && says[i] != "" && strings.Contains(ans, says[i]) {
			ans = strings.ReplaceAll(ans, says[i], slot(i))
			used = true
		}
	}
	if !used {
		return obs[len(obs)-1].text
	}
	ans = m.fill(ans)
	for i := range says {
		if i < len(obs) {
			ans = strings.ReplaceAll(ans, slot(i), obs[i].text)
		}
	}
	return ans
}

// slot marks where an observed reply goes while variables are filled in;
// it holds no word characters, so no variable can match inside it.
func slot(i int) string { return "\x00" + string(rune(0xE000+i)) + "\x00" }

func replaceWord(s, old, repl string) string {
	if old == "" {
		return s
	}
	pat := regexp.QuoteMeta(old)
	if r := []rune(old); isWordRune(r[0]) {
		pat = `\b` + pat
	}
	if r := []rune(old); isWordRune(r[len(r)-1]) {
		pat += `\b`
	}
	r, err := cachedRegexp(pat)
	if err != nil {
		return s
	}
	return r.ReplaceAllLiteralString(s, repl)
}

// regexps caches the patterns built from few-shot queries: the router and
// the model match every question against every stanza.
var regexps sync.Map // string -> *regexp.Regexp

func cachedRegexp(pat string) (*regexp.Regexp, error) {
	if r, ok := regexps.Load(pat); ok {
		return r.(*regexp.Regexp), nil
	}
	r, err := regexp.Compile(pat)
	if err != nil {
		return nil, err
	}
	regexps.Store(pat, r)
	return r, nil
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

// matchStanza finds the stanza whose query pattern best fits the question.
// Words of the stanza's query that reappear in its first Ask input are
// variables (SYMBOL in "Price for SYMBOL" / "Ask Func[quote]: SYMBOL"); the
// rest must match the question.
func (x *Extractive) matchStanza(stanzas []Stanza, question string) (stanzaMatch, bool) {
	best := stanzaMatch{}
	for _, st := range stanzas {
		m, ok := matchOne(st, question)
		if ok && m.score > best.score {
			best = m
		}
	}
	return best, best.score >= x.cfg.MinMatch
}

func matchOne(st Stanza, question string) (stanzaMatch, bool) {
	m := stanzaMatch{st: st, vars: map[string]string{}}
	asks := m.asks()
	q := st.Query()
	if len(asks) == 0 || q == "" {
		return m, false
	}
	arg := asks[0].Text
	if normalize(arg) == normalize(q) {
		// The stanza passes the question through: match on content words.
		s := bagCosine(q, question)
		m.vars[arg] = question
		m.score = s
		m.passthrough = true
		return m, true
	}
	qs := wordSpans(q)
	argWords := map[string]bool{}
	for _, sp := range wordSpans(arg) {
		argWords[arg[sp[0]:sp[1]]] = true
	}
	isVar := make([]bool, len(qs))
	nvars := 0
	for i, sp := range qs {
		w := q[sp[0]:sp[1]]
		if argWords[w] && !stopwords[strings.ToLower(w)] {
			isVar[i] = true
			nvars++
		}
	}
	// Exact pattern: literal words, variables as captures.
	var re strings.Builder
	re.WriteString(`(?i)^\W*`)
	varNames := []string{}
	for i, sp := range qs {
		if i > 0 {
			re.WriteString(`[\s\p{P}\p{S}]*`)
		}
		if isVar[i] {
			re.WriteString(`(.+?)`)
			varNames = append(varNames, q[sp[0]:sp[1]])
		} else {
			re.WriteString(regexp.QuoteMeta(q[sp[0]:sp[1]]))
		}
	}
	re.WriteString(`\W*$`)
	if r, err := cachedRegexp(re.String()); err == nil {
		if sm := r.FindStringSubmatch(strings.TrimSpace(question)); sm != nil {
			for i, v := range varNames {
				m.vars[v] = strings.TrimSpace(sm[i+1])
			}
			m.score = 1
			return m, true
		}
	}
	if nvars > 1 {
		return m, false
	}
	// Fuzzy: weighted recall of the stanza's literal words; the question's
	// left-over content words fill the one variable.
	lit := map[string]float64{}
	total := 0.0
	var varWord string
	for i, sp := range qs {
		w := strings.ToLower(q[sp[0]:sp[1]])
		if isVar[i] {
			varWord = q[sp[0]:sp[1]]
			continue
		}
		if _, dup := lit[stem(w)]; dup {
			continue
		}
		wt := 1.0
		if stopwords[w] {
			wt = 0.5
		}
		lit[stem(w)] = wt
		total += wt
	}
	if total == 0 {
		return m, false
	}
	matched := 0.0
	var left []string
	seen := map[string]bool{}
	for _, sp := range wordSpans(question) {
		w := question[sp[0]:sp[1]]
		lw := strings.ToLower(w)
		t := stem(lw)
		if wt, ok := lit[t]; ok {
			if !seen[t] {
				matched += wt
				seen[t] = true
			}
			continue
		}
		if !stopwords[lw] {
			left = append(left, w)
		}
	}
	m.score = matched / total
	if nvars == 1 {
		left = sameShape(left, varWord)
		if len(left) == 0 || len(left) > 3 {
			return m, false
		}
		m.vars[varWord] = strings.Join(left, " ")
	} else {
		// No variable: extra content words make the match weaker.
		m.score *= float64(len(lit)) / float64(len(lit)+len(left))
	}
	return m, true
}

func normalize(s string) string { return strings.Join(terms(s), " ") }

// shape classifies a word: all caps, number, capitalised or lower case.
func shape(w string) int {
	hasUpper, hasLower, hasDigit := false, false, false
	for _, r := range w {
		switch {
		case unicode.IsUpper(r):
			hasUpper = true
		case unicode.IsLower(r):
			hasLower = true
		case unicode.IsDigit(r):
			hasDigit = true
		}
	}
	switch {
	case hasDigit && !hasUpper && !hasLower:
		return 1
	case hasUpper && !hasLower:
		return 2
	case hasUpper:
		return 3
	}
	return 4
}

// sameShape keeps the words shaped like the example variable, when any are.
func sameShape(words []string, example string) []string {
	sh := shape(example)
	var out []string
	for _, w := range words {
		if shape(w) == sh {
			out = append(out, w)
		}
	}
	if len(out) == 0 && sh != 1 && sh != 2 {
		// Only numbers and all-caps examples (SYMBOL, 19) insist on the shape.
		return words
	}
	return out
}

// passage is one numbered source parsed from an observation.
type passage struct {
	n        int
	title    string // "Title › Heading"
	url      string
	text     []string
	fact     bool
	rank     int
	titleSet map[string]bool
}

func parsePassages(obs []observation) []*passage {
	var out []*passage
	var cur *passage
	rank := 0
	for _, o := range obs {
		inFacts := false
		for _, raw := range strings.Split(o.text, "\n") {
			l := strings.TrimSpace(raw)
			if n, title, url, ok := sourceLine(l); ok {
				cur = &passage{n: n, title: title, url: url, rank: rank}
				rank++
				out = append(out, cur)
				inFacts = false
				continue
			}
			if l == "Facts:" {
				inFacts, cur = true, nil
				continue
			}
			if inFacts && strings.HasPrefix(l, "- ") {
				if text, n, ok := factLine(l); ok {
					out = append(out, &passage{n: n, text: []string{text}, fact: true, rank: rank})
					rank++
				}
				continue
			}
			if cur != nil && l != "" {
				cur.text = append(cur.text, l)
			}
		}
	}
	return out
}

// factLine parses an observation's fact line "- text [n]" into text and n
// (the regexp `^- (.+) \[(\d+)\]$`, without its backtracking on long
// facts); ok is false for other lines.
func factLine(l string) (text string, n int, ok bool) {
	if !strings.HasPrefix(l, "- ") || !strings.HasSuffix(l, "]") {
		return "", 0, false
	}
	i := strings.LastIndex(l, " [")
	if i < 2 {
		return "", 0, false
	}
	n, ok = digits(l[i+2 : len(l)-1])
	if !ok || i == 2 || strings.IndexByte(l[2:i], '\n') >= 0 { // . matches no newline
		return "", 0, false
	}
	return l[2:i], n, true
}

// sourceLine parses a numbered source line "[n] title (url)" (the regexp
// `^\[(\d+)\] (.+) \((\S+)\)$` by hand: observations have many lines and
// most are not source lines); ok is false for other lines.
func sourceLine(l string) (n int, title, url string, ok bool) {
	if !strings.HasPrefix(l, "[") || !strings.HasSuffix(l, ")") {
		return 0, "", "", false
	}
	end := strings.Index(l, "] ")
	if end < 0 {
		return 0, "", "", false
	}
	if n, ok = digits(l[1:end]); !ok {
		return 0, "", "", false
	}
	rest := l[end+2:]
	i := strings.LastIndex(rest, " (")
	if i < 1 {
		return 0, "", "", false
	}
	url = rest[i+2 : len(rest)-1]
	if url == "" || strings.ContainsAny(url, " \t\n\f\r") { // \S in a Go regexp
		return 0, "", "", false
	}
	if strings.IndexByte(rest[:i], '\n') >= 0 { // . matches no newline
		return 0, "", "", false
	}
	return n, rest[:i], url, true
}

// digits parses a non-empty run of ASCII digits.
func digits(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// commandLike reports whether s is a command line rather than a sentence:
// no closing punctuation and a --flag.
func commandLike(s string) bool {
	t := strings.TrimSpace(s)
	return t != "" && !strings.ContainsRune(".!?:)", rune(t[len(t)-1])) && strings.Contains(t, " --")
}

type sentence struct {
	code  bool
	p     *passage
	pos   int
	text  string
	terms []string
	score float64
}

// splitSentences cuts a line at sentence ends: ". ", "! ", "? " before an
// upper-case letter, digit, quote or bracket.
func splitSentences(line string) []string {
	var out []string
	start := 0
	for i := 0; i < len(line)-2; i++ {
		c := line[i]
		if (c == '.' || c == '!' || c == '?') && line[i+1] == ' ' {
			j := i + 2
			for j < len(line) && line[j] == ' ' {
				j++
			}
			if j < len(line) {
				r := rune(line[j])
				if unicode.IsUpper(r) || unicode.IsDigit(r) || strings.ContainsRune("\"'`([", r) {
					// Skip common abbreviations.
					w := line[start : i+1]
					if k := strings.LastIndexByte(w, ' '); k >= 0 {
						w = w[k+1:]
					}
					if w == "e.g." || w == "i.e." || w == "etc." || w == "vs." || len(w) == 2 && unicode.IsUpper(rune(w[0])) {
						continue
					}
					out = append(out, strings.TrimSpace(line[start:i+1]))
					start = j
				}
			}
		}
	}
	if s := strings.TrimSpace(line[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

var auxAfterWh = map[string]bool{"is": true, "are": true, "was": true, "were": true, "does": true, "do": true, "did": true,
	"can": true, "could": true, "should": true, "will": true, "would": true, "s": true, "happens": true, "happen": true, "if": true}

// entityType returns the noun of a which/what question asking for one
// thing ("module" in "Which module parses JSON?"), or "".
func entityType(q string) string {
	f := strings.Fields(strings.ToLower(q))
	if len(f) < 2 || (f[0] != "which" && f[0] != "what" && f[0] != "what's") {
		return ""
	}
	w := strings.Trim(f[1], "?,.!'\"")
	if f[0] == "what's" || auxAfterWh[w] || w == "" {
		return ""
	}
	return w
}

// extract answers the question from the numbered sources in obs.
func (x *Extractive) extract(question string, obs []observation) string {
	ps := parsePassages(obs)
	qterms := contentTerms(question)
	if len(qterms) == 0 {
		qterms = terms(question)
	}
	var sents []*sentence
	df := map[string]int{}
	for _, p := range ps {
		p.titleSet = map[string]bool{}
		for _, t := range terms(p.title) {
			p.titleSet[t] = true
		}
		pos := 0
		for _, l := range p.text {
			for _, s := range splitSentences(l) {
				st := &sentence{p: p, pos: pos, text: s, terms: terms(s), code: commandLike(s)}
				pos++
				seen := map[string]bool{}
				for _, t := range st.terms {
					if !seen[t] {
						seen[t] = true
						df[t]++
					}
				}
				sents = append(sents, st)
			}
		}
	}
	if len(sents) == 0 {
		return "I could not find that in the documents."
	}
	n := len(sents)
	qset := map[string]float64{}
	for _, t := range qterms {
		qset[t] = idf(n, df[t])
	}
	cue := questionCue(question)
	for _, s := range sents {
		s.score = scoreSentence(s, qset, cue)
	}
	order := make([]*sentence, len(sents))
	copy(order, sents)
	sort.SliceStable(order, func(i, j int) bool { return order[i].score > order[j].score })
	best := order[0]
	if best.score <= 0 {
		return "I could not find that in the documents."
	}
	chosen := []*sentence{best}
	size := len(best.text)
	for _, s := range order[1:] {
		if len(chosen) >= x.cfg.MaxSentences || s.score < 0.7*best.score {
			break
		}
		if s.code || size+len(s.text) > x.cfg.MaxChars || nearDuplicate(s, chosen) {
			continue
		}
		chosen = append(chosen, s)
		size += len(s.text)
	}
	// A short lead sentence of the best one's section ("No.", "One million
	// by default.") carries the answer the next sentence explains.
	if best.pos == 1 {
		for _, s := range sents {
			if s.p == best.p && s.pos == 0 && len(s.terms) <= 8 && !slices.Contains(chosen, s) {
				chosen = append(chosen, s)
				break
			}
		}
	}
	sort.SliceStable(chosen, func(i, j int) bool {
		if chosen[i].p.rank != chosen[j].p.rank {
			return chosen[i].p.rank < chosen[j].p.rank
		}
		return chosen[i].pos < chosen[j].pos
	})
	var b strings.Builder
	if et := entityType(question); et != "" {
		if ent := entityName(best.p, best.text, et); ent != "" && !startsWithEntity(chosen, ent) {
			b.WriteString(ent + ": ")
		}
	}
	for i, s := range chosen {
		t := strings.TrimRight(s.text, " ")
		last := i == len(chosen)-1 || chosen[i+1].p.n != s.p.n
		if last {
			end := ""
			if k := len(t); k > 0 && strings.ContainsRune(".!?", rune(t[k-1])) {
				end, t = t[k-1:], t[:k-1]
			}
			t += " [" + strconv.Itoa(s.p.n) + "]" + end
		}
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(t)
	}
	return b.String()
}

// startsWithEntity reports whether the answer already opens with the entity
// as a whole word (so "lumen.connect ..." does not count for "lumen").
func startsWithEntity(ss []*sentence, ent string) bool {
	if len(ss) == 0 {
		return false
	}
	t := strings.ToLower(strings.TrimLeft(ss[0].text, "`*\"'"))
	e := strings.ToLower(ent)
	if !strings.HasPrefix(t, e) {
		return false
	}
	rest := t[len(e):]
	return rest == "" || strings.ContainsRune(" :,`*'\"(", rune(rest[0]))
}

// Question cues: what kind of text answers the question.
const (
	cueNone   = iota
	cueNumber // how many / how long / default / port / size ...: a number
	cuePlace  // where: a path or URL
)

var numberWords = map[string]bool{"many": true, "much": true, "long": true, "default": true, "port": true, "size": true,
	"limit": true, "maximum": true, "minimum": true, "max": true, "min": true, "timeout": true, "version": true,
	"release": true, "when": true, "number": true, "often": true, "big": true, "large": true, "old": true, "expire": true}

func questionCue(q string) int {
	f := strings.Fields(strings.ToLower(q))
	if len(f) > 0 && f[0] == "where" {
		return cuePlace
	}
	for _, w := range f {
		if numberWords[strings.Trim(w, "?,.!")] {
			return cueNumber
		}
	}
	return cueNone
}

func hasDigit(s string) bool { return strings.ContainsAny(s, "0123456789") }

func scoreSentence(s *sentence, qset map[string]float64, cue int) float64 {
	if len(s.terms) == 0 {
		return 0
	}
	score := 0.0
	matched := map[string]bool{}
	first, last := -1, -1
	for i, t := range s.terms {
		if w, ok := qset[t]; ok {
			if !matched[t] {
				score += w
				matched[t] = true
			}
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	titleHits := 0.0
	for t, w := range qset {
		if s.p.titleSet[t] && !matched[t] {
			titleHits += w
		}
	}
	if len(matched) == 0 && titleHits == 0 {
		return 0
	}
	if len(matched) >= 2 {
		span := float64(last - first + 1)
		score *= 1 + 0.5*float64(len(matched))/span
	}
	score += 0.5 * titleHits
	if words := len(s.terms); words > 40 {
		score /= 1 + float64(words-40)/40
	} else if words < 4 && titleHits == 0 {
		score *= 0.6
	}
	if s.p.fact {
		score *= 0.9
	}
	switch {
	case cue == cueNumber && hasDigit(s.text):
		score *= 1.25
	case cue == cuePlace && (strings.Contains(s.text, "/") || strings.Contains(s.text, "\\")):
		score *= 1.25
	}
	if s.code {
		score *= 0.6 // a command line, not a sentence
	}
	if s.pos == 0 && titleHits > 0 {
		// The section's title matches the question (FAQ style): its first
		// sentence usually answers it.
		score *= 1.2
	}
	return score / (1 + 0.05*float64(s.p.rank)) / (1 + 0.02*float64(s.pos))
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

// entityKinds are the nouns of which/what questions answered by naming a
// page or section (other nouns, like "language", are not prefixed).
var entityKinds = map[string]bool{"module": true, "package": true, "library": true, "page": true, "section": true, "guide": true,
	"tool": true, "file": true, "api": true, "type": true, "object": true, "protocol": true, "plugin": true, "extension": true,
	"component": true, "service": true, "client": true, "driver": true, "format": true, "decorator": true, "keyword": true,
	"statement": true, "builtin": true, "constant": true, "property": true, "interface": true, "struct": true, "operator": true}

// identRe matches code identifiers: dotted names (json.dumps), calls
// (open()), snake_case names and --flags.
var identRe = regexp.MustCompile(`(?:--[a-z][\w-]+|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?|[A-Za-z_]\w*\(\)|[a-z]+_[a-z_]+)`)

var identKinds = map[string]bool{"function": true, "method": true, "class": true, "attribute": true, "exception": true, "option": true,
	"parameter": true, "setting": true, "flag": true, "command": true, "variable": true, "field": true, "endpoint": true, "argument": true}

// entityName names what a source is about: the heading for identifier-like
// questions (functions, options...), else the page title up to its dash.
func entityName(p *passage, best string, kind string) string {
	title, heading := p.title, ""
	if i := strings.Index(p.title, " › "); i >= 0 {
		title, heading = p.title[:i], p.title[i+len(" › "):]
	}
	if p.fact {
		return ""
	}
	kind = strings.TrimSuffix(kind, "s")
	if !identKinds[kind] && !entityKinds[kind] {
		return ""
	}
	if identKinds[kind] {
		// A heading that is an identifier names it; else the first
		// identifier-looking token of the best sentence does.
		if h := strings.TrimSpace(heading); h != "" && identRe.MatchString(h) {
			return identRe.FindString(h)
		}
		if id := identRe.FindString(best); id != "" {
			return id
		}
		if heading != "" {
			return strings.TrimSpace(heading)
		}
	}
	for _, sep := range []string{" — ", " – ", " - ", ": ", " | "} {
		if i := strings.Index(title, sep); i > 0 {
			title = title[:i]
			break
		}
	}
	title = strings.TrimSpace(title)
	if title == "" || len(title) > 80 {
		return ""
	}
	return title
}
