package agent

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent/cite"
	"github.com/kgagent/kgagent/agent/extractive"
	kgtext "github.com/kgagent/kgagent/internal/text"
	"github.com/kgagent/kgagent/llm"
)

// citer returns the run's answer numbering, made when the answer starts
// (every source has been gathered by then).
func (r *run) citer() *cite.Map {
	if r.cites == nil {
		r.cites = cite.NewMap(len(r.sources))
	}
	return r.cites
}

// unsupportedNote follows an answer that no source supports, before what
// the docs say.
const unsupportedNote = "None of the sources found supports this answer."

// ground returns the final answer text (in the run's numbers), the answer
// and its sources as the client sees them (citations renumbered by first
// use: cite.Map), and who cited it (Answer.Citations). The model's text is cleaned first (cleanAnswer:
// protocol syntax, echoed instructions and a small model's leading junk
// never reach the answer), then of a looping or cut-off model's repeats and
// unfinished last sentence (unloop). An answer that cites a source the run
// gathered keeps its citations (the model's); when the run searched and
// AttributeCitations is set, only those the cited passage supports
// (cite.Text.Check), a wrong one beside them moved to the passage that
// supports its sentence when one does, and an answer left with none is
// treated as one that cites nothing. An answer that names a URL or command line no passage
// holds verbatim (Support.Invented) is never the model's or attributed,
// whatever else it gets right; one only partly supported is the model's
// or attributed only when the built-in answerer answers from the same
// evidence too, and so is one from a model that looped (it repeated a
// line: it copies a passage whatever was asked). Then, when the run searched and AttributeCitations is
// set, the sentences the evidence supports are cited (Support.Attribute;
// a sentence with no claim, or naming a command, URL or number the passage
// lacks, is not supported). When none is, the answer is what the built-in
// answerer says from the same evidence: after the model's answer and a
// note that no source supports it, when the docs answer; the abstention
// alone when they don't (an unsupported answer to a question the docs do
// not cover is made up). A run whose model gave no answer (noAnswer), only
// protocol text, or only questions, answers with what the docs say alone.
func (m *Manager) ground(ctx context.Context, r *run, question, text string) (final, answer string, sources []kgagent.Source, by string) {
	model := text
	// The answer's citations are parsed once (cited); kept holds the
	// numbers the support check left in each group when final is cited
	// with them.
	var cited cite.Text
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
			answer = cited.Render(func(i int, _ cite.Group) []int { return c.Renumber(kept[i]) })
		case final == cited.String():
			answer = c.RewriteCited(cited)
		default:
			answer = c.Rewrite(final)
		}
		sources = c.Sources(r.sources)
	}()
	grounding := m.cfg.Loop.AttributeCitations && len(r.evidence) > 0
	if clean := cleanAnswer(text); clean != text {
		text = clean
		if strings.TrimSpace(text) == "" && grounding && r.noAnswer == "" {
			r.noAnswer = "only protocol text"
		}
	}
	text, looped := unloop(text, r.stop)
	if grounding && r.noAnswer == "" && onlyQuestions(text) {
		r.noAnswer = "a question, not an answer"
	}
	if r.noAnswer != "" {
		return "The model gave no answer (" + r.noAnswer + "). " + m.docsSay(ctx, r, question), "", nil, kgagent.CitationsFallback
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
			docs = m.docsSay(ctx, r, question)
		}
		return docs
	}
	cited = cite.Parse(text)
	if slices.ContainsFunc(cited.Numbers(), func(n int) bool { return n >= 1 && n <= len(r.sources) }) {
		if !grounding {
			return text, "", nil, kgagent.CitationsModel
		}
		groups, count := cited.Check(sup, len(r.sources))
		checked := cited.Render(func(i int, _ cite.Group) []int { return groups[i] })
		if count > 0 && len(sup.Invented(checked)) == 0 && (!extractive.Abstained(docsOf()) || !looped && whollySupported(cited, sup)) {
			// A wrong citation beside right ones moves to the passage
			// that supports its sentence, when one does.
			kept = cited.Move(sup, len(r.sources), groups)
			return cited.Render(func(i int, _ cite.Group) []int { return kept[i] }), "", nil, kgagent.CitationsModel
		}
		// Every citation the model wrote was wrong, it names what no
		// source holds, or the docs do not answer the question and only
		// part of the answer is supported (or the model looped): the
		// same rules as an answer without citations.
		text = checked
	}
	if !grounding {
		return text, "", nil, ""
	}
	// Attributed without the model's citations: a number no source has
	// ("[7]" of five) would read as a number the sentence names.
	text = cite.Parse(text).Render(func(int, cite.Group) []int { return nil })
	a := sup.Attribute(text)
	attributable := a.Supported > 0 && len(sup.Invented(text)) == 0
	if attributable && a.Supported == a.Sentences && (!looped || !extractive.Abstained(docsOf())) {
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
func whollySupported(cited cite.Text, sup *extractive.Support) bool {
	bare := cited.Render(func(int, cite.Group) []int { return nil })
	a := sup.Attribute(bare)
	return a.Sentences > 0 && a.Supported == a.Sentences
}

// unloop cleans a model's answer of what a looping or cut-off model writes;
// stop is how its call stopped (run.stop). A line that repeats an earlier
// one (compared without its citations, case and white space; lines of
// repeatMinLen bytes or more, as the stream's cut: short ones, a closing
// fence or "- yes", legitimately repeat) is dropped, the first copy taking
// the later one's citations when it has none. The model looped when it
// repeated such a line or the stream was cut where it started to (stop
// "repeat"). When it looped or its call was cut off (stop "length", the
// token limit, or "timeout", the call's time limit: the output so far is
// used), a last line that only begins an earlier one again is dropped;
// when it was cut off, a last sentence left unfinished
// (no sentence end after its words) is dropped too when a finished one
// comes before it. Code blocks are kept as they are, a closed one that
// ends the answer too (its closing fence ends no sentence).
func unloop(text, stop string) (clean string, looped bool) {
	cutOff := stop == "length" || stop == "timeout"
	looped = stop == "repeat"
	var out, keys []string
	first := map[string]int{} // key -> index in out
	var fence kgtext.Fence
	for _, line := range strings.Split(text, "\n") {
		if fence.Code(strings.TrimSpace(line)) {
			out, keys = append(out, line), append(keys, "")
			continue
		}
		key := lineKey(line)
		if len(key) >= repeatMinLen {
			if at, ok := first[key]; ok {
				looped = true
				if len(cite.Parse(out[at]).Groups()) == 0 && len(cite.Parse(line).Groups()) > 0 {
					out[at] = line
				}
				continue
			}
			first[key] = len(out)
		}
		out, keys = append(out, line), append(keys, key)
	}
	if n := len(out); (looped || cutOff) && n > 1 && keys[n-1] != "" {
		last := strings.TrimRight(keys[n-1], ".")
		for _, k := range keys[:n-1] {
			if len(k) > len(keys[n-1]) && strings.HasPrefix(k, last) {
				out = out[:n-1]
				break
			}
		}
	}
	clean = strings.Join(out, "\n")
	if cutOff && !fence.Open() && !endsInCode(out) {
		clean = dropUnfinished(clean)
	}
	if clean == text {
		return text, looped
	}
	return strings.Trim(clean, " \n"), looped
}

// endsInCode reports whether the last of lines with words is code: a
// closing fence, or a line of a block left open.
func endsInCode(lines []string) bool {
	var fence kgtext.Fence
	code := false
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if c := fence.Code(l); l != "" {
			code = c
		}
	}
	return code
}

// lineKey is a line as unloop compares it: without its citations, white
// space folded, lower case.
func lineKey(line string) string {
	return strings.ToLower(strings.Join(strings.Fields(cite.Parse(line).Strip("")), " "))
}

// dropUnfinished returns text without a last sentence that has words but
// no end (questionSentences), when a sentence before it ends. A text whose
// last mark ends a sentence is finished, closing quotes, brackets or
// emphasis after it too ("Set it with “http.port = 8086.”", "(see the
// reference.)", "**Restart it.**"): those end no sentence by the rule.
func dropUnfinished(text string) string {
	bare := strings.TrimRight(cite.Parse(text).Strip(""), " \n")
	if last := strings.TrimRight(bare, "\"”’')]*_"); last != bare && strings.ContainsAny(last[max(len(last)-1, 0):], ".!?") {
		return text
	}
	end := -1
	for i := range len(text) {
		if questionSentences.End(text, i) && strings.TrimSpace(text[:i]) != "" {
			end = i
		}
	}
	if end < 0 || strings.TrimSpace(cite.Parse(text[end+1:]).Strip("")) == "" {
		return text
	}
	return strings.TrimRight(text[:end+1], " \n")
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
	var fence kgtext.Fence
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if fence.Code(t) {
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

// questionSentences splits a model's answer into sentences (a line break
// ends one too).
var questionSentences = kgtext.SentenceRule{Newline: true}

// onlyQuestions reports whether every sentence of a model's answer, its
// citations left out, is a question ("What is Lumen written in [1]?"): a
// small model that asks back gave no answer, however verbatim the
// question it copied from a heading is.
func onlyQuestions(answer string) bool {
	sentences := questionSentences.Split(cite.Parse(answer).Strip(""))
	for _, s := range sentences {
		if !strings.HasSuffix(s, "?") {
			return false
		}
	}
	return len(sentences) > 0
}

// docsSay is the built-in answerer's answer from the run's evidence
// (LoopConfig.DocsAnswer): "The docs say: …", cited, or its abstention
// ("The docs don't say …"). When its semantic model failed, the run's
// answer is not cached: asked again, it may be judged by meaning.
func (m *Manager) docsSay(ctx context.Context, r *run, question string) string {
	c := extractive.ComposeContext(ctx, question, r.evidence, m.cfg.Loop.DocsAnswer)
	if c.Degraded {
		r.cacheable = false
	}
	docs := c.Text
	if !extractive.Abstained(docs) {
		docs = "The docs say: " + docs
	}
	return docs
}
