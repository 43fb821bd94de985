package extractive

import (
	"context"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
	"github.com/kgagent/kgagent/llm"
)

// ModelConfig tunes the built-in extractive model. Zero values work.
type ModelConfig struct {
	Answer   Config  // how answers are written from evidence
	MinMatch float64 // few-shot match score needed to follow a stanza, default 0.75
	Deltas   int     // pieces the output is streamed in, default 4
}

// Model is the built-in llm.LLM: deterministic and offline. It reads the
// run in structured form (llm.CompletionRequest.Episode: few-shot stanzas,
// question, observations), never the prompt's text. When the question closely matches a
// few-shot's query pattern it follows that stanza (same funcs, arguments
// taken from the question); otherwise it asks Func[fixie_query_corpus] with
// the question. Once a search has returned evidence (llm.Observation.Evidence,
// never the observation's text) the answer is written by the built-in
// answerer, agent/extractive.
type Model struct {
	cfg ModelConfig
}

var _ llm.LLM = (*Model)(nil)

// NewModel returns the extractive model.
func NewModel(cfg ModelConfig) *Model {
	if cfg.MinMatch <= 0 {
		cfg.MinMatch = 0.75
	}
	if cfg.Deltas <= 0 {
		cfg.Deltas = 4
	}
	return &Model{cfg: cfg}
}

// Complete implements llm.LLM. The step is returned structured (llm.Delta.Steps,
// on the last piece); the text renders it in the text protocol for the
// answer stream and the logs, and is not parsed back.
func (x *Model) Complete(ctx context.Context, req llm.CompletionRequest) (llm.Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(req.Messages) == 0 { // as package openai (llmtest)
		return nil, kgagent.Errorf(kgagent.EINVALID, "completion request has no messages")
	}
	var ep llm.Episode
	if req.Episode != nil {
		ep = *req.Episode
	}
	step := x.step(ctx, ep)
	out := step.Text()
	return &sliceStream{ctx: ctx, parts: splitDeltas(out, x.cfg.Deltas), step: step, usage: &kgagent.Usage{
		PromptTokens: promptWords(req.Messages), CompletionTokens: len(strings.Fields(out)),
	}}, nil
}

// CorpusFunc is the built-in search func the model asks when no few-shot
// fits the question.
const CorpusFunc = "fixie_query_corpus"

// EmbedRef finds a reference to an embed (#name) in a question: the model
// then asks Func[fixie_query_embed]. The # starts a word: "PKCS#1" and
// "C#" name no embed.
var EmbedRef = regexp.MustCompile(`(?:^|[^\w#])#([\w.\-]+)`)

func promptWords(msgs []llm.ChatMessage) int {
	n := 0
	for _, m := range msgs {
		n += countWords(m.Content)
	}
	return n
}

// countWords is len(strings.Fields(s)) without building the slice; ASCII
// bytes are read without decoding them.
func countWords(s string) int {
	n, in := 0, false
	for i := 0; i < len(s); {
		var space bool
		if c := s[i]; c < utf8.RuneSelf {
			space = c == ' ' || '\t' <= c && c <= '\r' // unicode.IsSpace below U+0080
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			space = unicode.IsSpace(r)
			i += size
		}
		if space {
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
	step  llm.Step
	usage *kgagent.Usage
}

func (s *sliceStream) Recv() (llm.Delta, error) {
	if err := s.ctx.Err(); err != nil {
		return llm.Delta{}, err
	}
	if s.i >= len(s.parts) {
		return llm.Delta{}, io.EOF
	}
	d := llm.Delta{Text: s.parts[s.i]}
	s.i++
	if s.i == len(s.parts) {
		d.Usage, d.Steps = s.usage, []llm.Step{s.step}
	}
	return d, nil
}

func (s *sliceStream) Close() error { return nil }

// answerStep is the answer step for s, trimmed; an empty answer says so.
func answerStep(s string) llm.Step {
	s = strings.TrimSpace(s)
	if s == "" {
		s = "I have no answer to that."
	}
	return llm.Step{Kind: llm.StepAnswer, Answer: s}
}

// Step returns the model's next step for a run: an action or an answer
// (every answer built by answerStep, so trimmed and never empty). It is
// the step Complete takes, under no deadline.
func (x *Model) Step(ep llm.Episode) llm.Step {
	return x.step(context.Background(), ep)
}

// step is Step for a request: the answerer's model calls run under ctx,
// and an answer they could not help write is Degraded.
func (x *Model) step(ctx context.Context, ep llm.Episode) llm.Step {
	if ep.Question == "" {
		return answerStep("I did not receive a question.")
	}
	if n := len(ep.Observations); n > 0 && strings.HasPrefix(ep.Observations[n-1].Text, "Error") {
		return answerStep("I could not answer that: " + errorText(ep.Observations[n-1].Text))
	}
	if m, ok := x.matchStanza(ep.FewShots, ep.Question); ok {
		asks := m.asks()
		if ep.Actions < len(asks) && ep.Actions == len(ep.Observations) {
			a := asks[ep.Actions]
			arg := m.fill(a.Text)
			// A later step may pass on what an earlier func said.
			for i, ex := range m.says() {
				if i < len(ep.Observations) && ex != "" && strings.Contains(arg, ex) {
					arg = strings.ReplaceAll(arg, ex, ep.Observations[i].Text)
				}
			}
			st := llm.Step{Kind: llm.StepFunc, Name: a.Name, Input: strings.TrimSpace(arg)}
			if a.Kind == llm.LineAskAgent {
				st.Kind = llm.StepAgent
			}
			return st
		}
		if len(ep.Observations) > 0 && len(evidence(ep.Observations)) == 0 {
			return answerStep(m.answer(ep.Observations))
		}
	}
	if len(ep.Observations) == 0 {
		if EmbedRef.MatchString(ep.Question) {
			return llm.Step{Kind: llm.StepFunc, Name: "fixie_query_embed", Input: ep.Question}
		}
		return llm.Step{Kind: llm.StepFunc, Name: CorpusFunc, Input: ep.Question}
	}
	if ev := evidence(ep.Observations); len(ev) > 0 {
		c := ComposeContext(ctx, ep.Question, ev, x.cfg.Answer)
		st := answerStep(c.Text)
		st.Degraded = c.Degraded
		return st
	}
	return answerStep(ep.Observations[len(ep.Observations)-1].Text)
}

func errorText(s string) string {
	if i := strings.Index(s, "): "); i >= 0 && strings.HasPrefix(s, "Error (") {
		return s[i+3:]
	}
	return strings.TrimPrefix(strings.TrimPrefix(s, "Error"), ": ")
}

// evidence returns the evidence the observations carry, in order.
func evidence(obs []llm.Observation) []kgagent.Evidence {
	var out []kgagent.Evidence
	for _, o := range obs {
		if o.Evidence != nil {
			out = append(out, *o.Evidence)
		}
	}
	return out
}

// stanzaMatch is a stanza matched to the question with its variables bound.
type stanzaMatch struct {
	st          llm.Stanza
	vars        map[string]string // example text -> text from the question
	score       float64
	passthrough bool // the stanza passes the whole question to its func
}

func (m stanzaMatch) asks() []llm.FewShotLine {
	var out []llm.FewShotLine
	for _, l := range m.st.Lines {
		if l.Kind == llm.LineAskFunc || l.Kind == llm.LineAskAgent {
			out = append(out, l)
		}
	}
	return out
}

// says returns the example replies of the stanza, in order.
func (m stanzaMatch) says() []string {
	var out []string
	for _, l := range m.st.Lines {
		if l.Kind == llm.LineFuncSays || l.Kind == llm.LineAgentSays {
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
func (m stanzaMatch) answer(obs []llm.Observation) string {
	var says []string
	ans := ""
	for _, l := range m.st.Lines {
		switch l.Kind {
		case llm.LineFuncSays, llm.LineAgentSays:
			says = append(says, l.Text)
		case llm.LineAnswer:
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
		return obs[len(obs)-1].Text
	}
	ans = m.fill(ans)
	for i := range says {
		if i < len(obs) {
			ans = strings.ReplaceAll(ans, slot(i), obs[i].Text)
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
	if r := []rune(old); text.IsWordRune(r[0]) {
		pat = `\b` + pat
	}
	if r := []rune(old); text.IsWordRune(r[len(r)-1]) {
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

// matchStanza finds the stanza whose query pattern best fits the question.
// Words of the stanza's query that reappear in its first Ask input are
// variables (SYMBOL in "Price for SYMBOL" / "Ask Func[quote]: SYMBOL"); the
// rest must match the question.
func (x *Model) matchStanza(stanzas []llm.Stanza, question string) (stanzaMatch, bool) {
	best := stanzaMatch{}
	for _, st := range stanzas {
		m, ok := matchOne(st, question)
		if ok && m.score > best.score {
			best = m
		}
	}
	return best, best.score >= x.cfg.MinMatch
}

func matchOne(st llm.Stanza, question string) (stanzaMatch, bool) {
	m := stanzaMatch{st: st, vars: map[string]string{}}
	asks := m.asks()
	q := st.Query()
	if len(asks) == 0 || q == "" {
		return m, false
	}
	arg := asks[0].Text
	if normalize(arg) == normalize(q) {
		// The stanza passes the question through: match on content words.
		s := text.BagCosine(q, question)
		m.vars[arg] = question
		m.score = s
		m.passthrough = true
		return m, true
	}
	qs := text.Spans(q)
	argWords := map[string]bool{}
	for _, sp := range text.Spans(arg) {
		argWords[arg[sp[0]:sp[1]]] = true
	}
	isVar := make([]bool, len(qs))
	nvars := 0
	for i, sp := range qs {
		w := q[sp[0]:sp[1]]
		if argWords[w] && !text.IsQuestionStop(strings.ToLower(w)) {
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
		if _, dup := lit[text.LightStem(w)]; dup {
			continue
		}
		wt := 1.0
		if text.IsQuestionStop(w) {
			wt = 0.5
		}
		lit[text.LightStem(w)] = wt
		total += wt
	}
	if total == 0 {
		return m, false
	}
	matched := 0.0
	var left []string
	seen := map[string]bool{}
	for _, sp := range text.Spans(question) {
		w := question[sp[0]:sp[1]]
		lw := strings.ToLower(w)
		t := text.LightStem(lw)
		if wt, ok := lit[t]; ok {
			if !seen[t] {
				matched += wt
				seen[t] = true
			}
			continue
		}
		if !text.IsQuestionStop(lw) {
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

func normalize(s string) string { return strings.Join(text.AllTerms(s), " ") }

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

// MatchStanza scores how well question fits a few-shot stanza's query
// pattern, as the model does before following the stanza: ok is false when
// it cannot fit at all; passthrough is set for a stanza that passes the
// whole question to its func (matched on content words only). The router
// uses it to send a question to the agent whose few-shot it fits.
func MatchStanza(st llm.Stanza, question string) (score float64, passthrough, ok bool) {
	m, ok := matchOne(st, question)
	return m.score, m.passthrough, ok
}
