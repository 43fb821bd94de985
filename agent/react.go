package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kgagent/kgagent/agent/cite"
	"github.com/kgagent/kgagent/agent/extractive"
	"github.com/kgagent/kgagent/agent/journal"
	"github.com/kgagent/kgagent/llm"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// ExamplesHeader introduces the few-shot stanzas in the system prompt; the
// extractive model finds them after it.
const ExamplesHeader = "Examples:"

// formatInstructions tell the model the ReAct format of the few-shots.
const formatInstructions = `Follow the format of the examples. To use a func, write "Ask Func[name]: input" on its own line and stop; its reply comes back as "Func[name] says: ...". To ask another agent, write "Ask Agent[name]: question". When you know the answer, write "A: " and the answer, citing sources by their numbers like [1].`

// Texts fed back to the model.
const (
	// answerNow is added to the last observation when the iteration limit
	// or the deadline is near.
	answerNow = "You must answer now: write A: and the answer, citing sources by their numbers like [1]."
	// repeatedAction replaces the observation of an action the model
	// already took with the same input.
	repeatedAction = "(You already asked this with the same input; the reply is above and was not fetched again.) " + answerNow
	// malformedShown is how much of a malformed output goes into its error
	// event, the log and the correction fed back.
	malformedShown   = 300
	malformedFedBack = 160
)

// structuredInstructions follow formatInstructions when steps may come as
// tool calls or JSON.
const structuredInstructions = `If you can call tools or must reply in JSON, do that instead of writing these lines: call a func as a tool (or set "action" to its name and "input" to its input; another agent is the tool or action ask_agent_<name>, its input the question), and give the answer as plain text (or "action": "answer" with the answer as "input").`

// tools lists the funcs of e (its own, remote and component commands) with
// their JSON schemas, then the other agents it may ask (as the prompt lists
// them), for structured steps.
func (m *Manager) tools(e *entry) []llm.Tool {
	var out []llm.Tool
	for _, n := range m.availableFuncs(e) {
		f, _ := m.lookupFunc(e, n)
		t := llm.Tool{Name: n, Description: f.Description}
		if f.Parameters != nil {
			t.Parameters = f.Parameters
		}
		out = append(out, t)
	}
	n := 0
	for _, a := range m.Agents() {
		if a.Name == e.a.Name() || n >= maxListedAgents {
			continue
		}
		desc := a.Description
		if desc == "" && len(a.Queries) > 0 {
			desc = "e.g. " + a.Queries[0]
		}
		out = append(out, llm.Tool{Name: a.Name, Agent: true, Description: strings.TrimSpace("Asks Agent[" + a.Name + "] a question: " + desc)})
		n++
	}
	return out
}

// corpusFunc is the built-in corpus search.
const corpusFunc = extractive.CorpusFunc

// searchFirstThought is the thought of the search run before the first LLM
// call (Config.Loop.SearchFirst).
const searchFirstThought = "First, search the docs for the question."

// searchFirst reports whether a run of e starts with the corpus search
// (Config.Loop.SearchFirst): a corpus is configured, the run has room for an LLM
// call after it, and e is a docs agent (its few-shots ask
// Func[fixie_query_corpus], or it lists corpora).
func (m *Manager) searchFirst(e *entry) bool {
	if !m.cfg.Loop.SearchFirst || m.cfg.Loop.MaxIterations < 2 || m.builtins.retriever() == nil {
		return false
	}
	if _, ok := m.lookupFunc(e, corpusFunc); !ok {
		return false
	}
	if len(e.a.Config().Corpora) > 0 {
		return true
	}
	for _, st := range e.a.Stanzas() {
		for _, l := range st.Lines {
			if l.Kind == llm.LineAskFunc && l.Name == corpusFunc {
				return true
			}
		}
	}
	return false
}

// runAgent drives one agent's ReAct loop and returns its answer text.
func (m *Manager) runAgent(ctx context.Context, r *run, e *entry, question string, history []llm.ChatMessage, depth int, chain []string) (string, error) {
	name := e.a.Name()
	info := RunInfo{RequestID: r.req.ID, Agent: name, Question: question, Caller: r.req.Caller}
	msgs := m.prompt(ctx, r, e, info, history, question)
	qi := len(msgs) - 1 // the question's message
	cfg := e.a.Config()
	creq := llm.CompletionRequest{Model: m.cfg.Model.Name, Temperature: m.cfg.Model.Temperature, MaxTokens: m.cfg.Model.MaxTokens, Stop: StopSequences}
	if cfg.LLM.Model != "" {
		creq.Model = cfg.LLM.Model
	}
	if cfg.LLM.Temperature != 0 {
		creq.Temperature = cfg.LLM.Temperature
	}
	if cfg.LLM.MaxTokens != 0 {
		creq.MaxTokens = cfg.LLM.MaxTokens
	}
	if p := m.cfg.Model.Protocol; p != "" && p != llm.ProtocolText {
		creq.Protocol, creq.Tools = p, m.tools(e)
	}
	malformed, timeouts := 0, 0
	done := map[string]int{} // action -> the iteration that ran it
	first := 1
	if m.searchFirst(e) {
		// The run's first iteration is the search a docs agent would ask
		// for, with the same events; the model starts from its result.
		r.iters++
		info.Iteration = 1
		step := llm.Step{Kind: llm.StepFunc, Name: corpusFunc, Input: question, Thought: searchFirstThought}
		more, _, _, err := m.act(ctx, r, e, info, step, depth, chain, done)
		if err != nil {
			return "", err
		}
		msgs = append(msgs, more...)
		first = 2
	}
	for iter := first; iter <= m.cfg.Loop.MaxIterations; iter++ {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		r.iters++
		info.Iteration = iter
		creq.Messages = msgs
		creq.Episode = episode(e.a.Stanzas(), question, msgs[qi+1:])
		creq.AnswerOnly = iter == m.cfg.Loop.MaxIterations || m.nearDeadline(ctx, m.cfg.Loop.MaxIterations-iter+1) ||
			strings.HasSuffix(msgs[len(msgs)-1].Content, answerNow)
		creq.ActionOnly = m.cfg.Model.ActFirst && iter == 1 && !creq.AnswerOnly && len(creq.Tools) > 0
		out, structured, stop, err := m.complete(ctx, r, creq, name, depth == 0, m.cfg.Loop.MaxIterations-iter+1)
		if err != nil {
			return "", err
		}
		if depth == 0 {
			r.stop = stop
		}
		steps := structured
		var perr error
		if len(steps) == 0 {
			var step llm.Step
			step, perr = ParseOutput(out)
			steps = []llm.Step{step}
		}
		if stop == "timeout" && perr != nil {
			timeouts++
		}
		if perr != nil && (m.cfg.Model.PlainTextAnswers || creq.AnswerOnly && !strings.HasPrefix(strings.TrimSpace(out), "{")) && plainText(out) {
			// Chat models often answer without "A:"; taken as the answer
			// when allowed, and always when only an answer was asked for.
			ans := strings.TrimSpace(out)
			if depth == 0 {
				r.emit(kgagent.Event{Kind: kgagent.EventAnswer, Agent: name, Delta: true, Text: r.citer().Rewrite(ans)})
			}
			return ans, nil
		}
		if perr != nil {
			malformed++
			ke := asError(ctx, perr)
			shown := text.Truncate(strings.TrimSpace(out), malformedShown)
			r.emit(kgagent.Event{Kind: kgagent.EventError, Agent: name, Text: fmt.Sprintf("malformed model output: %s; the output was %q", ke.Message, shown), Error: ke})
			m.cfg.Logger.Warn("malformed model output", "request_id", r.req.ID, "agent", name, "iteration", iter, "error", ke.Message, "stop", stop, "output", shown)
			if malformed > m.cfg.Loop.MaxMalformed {
				if timeouts == malformed {
					return m.noAnswer(ctx, r, name, depth, kgagent.Errorf(kgagent.ETIMEOUT, "the LLM call timed out %d times without a usable step", timeouts))
				}
				return m.noAnswer(ctx, r, name, depth, kgagent.Errorf(kgagent.EUNAVAILABLE, "the model's output was malformed %d times: %s", malformed, ke.Message))
			}
			fed := text.Truncate(strings.TrimSpace(out), malformedFedBack)
			if fed == "" {
				fed = "(nothing)"
			}
			correction := "Error: " + ke.Message + ". Reply with one line: Ask Func[name]: input, Ask Agent[name]: question, or A: answer."
			if stop == "timeout" {
				correction = "Error: no complete step before the time limit. Reply at once with one line: Ask Func[name]: input, or A: answer."
			}
			msgs = append(msgs, llm.ChatMessage{Role: "assistant", Content: fed}, llm.ChatMessage{Role: "user", Content: correction})
			continue
		}
		if iter == m.cfg.Loop.MaxIterations && !slices.ContainsFunc(steps, func(s llm.Step) bool { return s.Kind == llm.StepAnswer }) {
			// The last call asked for an answer and got an action: its
			// result could reach no one, so it is not run.
			m.cfg.Logger.Warn("the model acted on its last iteration instead of answering", "request_id", r.req.ID, "agent", name, "output", text.Truncate(strings.TrimSpace(out), malformedShown))
			break
		}
		for _, step := range steps {
			more, answer, ok, err := m.act(ctx, r, e, info, step, depth, chain, done)
			if err != nil {
				return "", err
			}
			if ok {
				return answer, nil
			}
			msgs = append(msgs, more...)
		}
	}
	return m.noAnswer(ctx, r, name, depth, &kgagent.Error{Code: kgagent.EUNAVAILABLE, Message: fmt.Sprintf("agent %s reached its iteration limit (%d) without an answer", name, m.cfg.Loop.MaxIterations),
		Details: map[string]any{"iterations": m.cfg.Loop.MaxIterations}})
}

// noAnswer ends a run whose model gave no answer (iteration limit,
// malformed or timed-out steps). With AttributeCitations, a top-level run
// that searched and still has time answers from what it found instead of
// failing: the error is shown as an event and the answer is the built-in
// answerer's (ground, CitationsFallback). Otherwise err is returned.
func (m *Manager) noAnswer(ctx context.Context, r *run, agentName string, depth int, err *kgagent.Error) (string, error) {
	if depth > 0 || !m.cfg.Loop.AttributeCitations || len(r.evidence) == 0 || ctx.Err() != nil {
		return "", err
	}
	r.emit(kgagent.Event{Kind: kgagent.EventError, Agent: agentName, Text: err.Message + "; answering from the sources found", Error: err})
	r.noAnswer = err.Message
	return "", nil
}

// act takes one parsed step: an answer is returned as such; an action is run
// (or, when done already holds it, not run again) with its events, and the
// chat messages that feed it back are returned.
func (m *Manager) act(ctx context.Context, r *run, e *entry, info RunInfo, step llm.Step, depth int, chain []string, done map[string]int) (msgs []llm.ChatMessage, answer string, isAnswer bool, err error) {
	name, iter := info.Agent, info.Iteration
	for _, c := range e.comps {
		if h, ok := c.(AfterParse); ok {
			if err := h.AfterParse(ctx, info, &step); err != nil {
				m.componentFailed(r, name, c, err)
			}
		}
	}
	if step.Thought != "" {
		r.emit(kgagent.Event{Kind: kgagent.EventThought, Agent: name, Text: step.Thought})
	}
	var said, obsPrefix string
	var res FuncResult
	var cerr error
	action := step.Line()
	key := fmt.Sprintf("%d\x00%s\x00%s", step.Kind, step.Name, strings.Join(strings.Fields(step.Input), " "))
	_, repeated := done[key]
	switch {
	case step.Kind == llm.StepAnswer:
		if step.Degraded {
			r.cacheable = false
		}
		return nil, step.Answer, true, nil
	case repeated:
		r.emit(kgagent.Event{Kind: kgagent.EventAction, Agent: name, Func: step.Name, Text: action})
		obsPrefix = fmt.Sprintf("Func[%s] says: ", step.Name)
		if step.Kind == llm.StepAgent {
			obsPrefix = fmt.Sprintf("Agent[%s] says: ", step.Name)
		}
		said = repeatedAction
		r.emit(kgagent.Event{Kind: kgagent.EventObservation, Agent: name, Func: step.Name, Text: fmt.Sprintf("not run again: the same action as in iteration %d", done[key])})
		return []llm.ChatMessage{{Role: "assistant", Content: action}, {Role: "user", Content: obsPrefix + said,
			Observation: &llm.Observation{Agent: step.Kind == llm.StepAgent, Name: step.Name, Text: said}}}, "", false, nil
	case step.Kind == llm.StepFunc:
		r.emit(kgagent.Event{Kind: kgagent.EventAction, Agent: name, Func: step.Name, Text: action})
		obsPrefix = fmt.Sprintf("Func[%s] says: ", step.Name)
		f, ok := m.lookupFunc(e, step.Name)
		if !ok {
			cerr = NotDefined(step.Name, m.availableFuncs(e))
			break
		}
		coll := cmp.Or(r.req.Collection, e.a.Config().Collection, m.cfg.Builtins.Collection)
		call := m.funcCall(e, step.Name, kgagent.Message{Text: step.Input, Embeds: maps.Clone(r.embeds)}, r.req.Caller, r.req.ID, coll, r.req.TimeZone)
		call.cite = r.cite
		if !f.Cacheable {
			r.cacheable = false
		}
		res, cerr = invoke(ctx, f, call, m.cfg.Loop.FuncTimeout)
	case step.Kind == llm.StepAgent:
		r.emit(kgagent.Event{Kind: kgagent.EventAction, Agent: name, Func: step.Name, Text: action})
		res, cerr = m.delegate(ctx, r, step, depth, chain)
		obsPrefix = fmt.Sprintf("Agent[%s] says: ", step.Name)
	}
	done[key] = iter
	if err := ctx.Err(); err != nil {
		return nil, "", false, err
	}
	obs := kgagent.Event{Kind: kgagent.EventObservation, Agent: name, Func: step.Name}
	if cerr != nil {
		ke := asError(ctx, cerr)
		said = "Error (" + ke.Code + "): " + ke.Message
		obs.Error = ke
		for _, c := range e.comps {
			if h, ok := c.(ExecutionFailure); ok {
				if err := h.ExecutionFailure(ctx, info, step, cerr); err != nil {
					m.componentFailed(r, name, c, err)
				}
			}
		}
	} else {
		for _, c := range e.comps {
			if h, ok := c.(AfterExecute); ok {
				if err := h.AfterExecute(ctx, info, step, &res); err != nil {
					m.componentFailed(r, name, c, err)
				}
			}
		}
		// Every source gets the run's number: a search's were numbered
		// already (Builtins.search; citing again keeps the number), a
		// custom func's and any an AfterExecute component added are
		// numbered here.
		for _, s := range res.Sources {
			r.cite(s)
		}
		for k, v := range res.Message.Embeds {
			r.embeds[k] = v
		}
		said = res.Message.Text
		obs.Sources = res.Sources
		if res.Evidence != nil {
			r.evidence = append(r.evidence, *res.Evidence)
		}
	}
	if len(said) > maxObservationChars {
		said = text.Clip(said, maxObservationChars) + " …"
	}
	obs.Text = said
	r.emit(obs)
	fed := boundObservation(said, m.cfg.Model.ObservationTokens)
	if iter+1 == m.cfg.Loop.MaxIterations || m.nearDeadline(ctx, m.cfg.Loop.MaxIterations-iter) {
		fed += "\n\n" + answerNow
	}
	if step.Thought != "" {
		action = step.Thought + "\n" + action
	}
	var ev *kgagent.Evidence
	if cerr == nil {
		ev = res.Evidence
	}
	return []llm.ChatMessage{{Role: "assistant", Content: action}, {Role: "user", Content: obsPrefix + fed,
		Observation: &llm.Observation{Agent: step.Kind == llm.StepAgent, Name: step.Name, Text: strings.TrimSpace(fed), Evidence: ev}}}, "", false, nil
}

// nearDeadline reports whether ctx's deadline leaves less than two calls'
// time, a call's time being its share of what is left (see callTimeout).
func (m *Manager) nearDeadline(ctx context.Context, itersLeft int) bool {
	dl, ok := ctx.Deadline()
	if !ok || itersLeft <= 1 {
		return false
	}
	left := time.Until(dl)
	share := m.callTimeout(ctx, itersLeft)
	return share > 0 && left < 2*share
}

// deadlineReserve is the most of a question's time no LLM call may take:
// what the run needs to answer after its last call was cut.
const deadlineReserve = 3 * time.Second

// callShares is how many calls the time left is shared among at most: a
// docs run searches first, so its first one or two calls usually answer,
// and a run that goes on gets less per call.
const callShares = 3

// callTimeout is the time one LLM call gets: Model.CallTimeout, and at most an
// equal share of what is left of ctx's deadline among the iterations left,
// counting no more than callShares of them (so with a 2-minute deadline and
// 10 iterations the first call may take 40 s, not 13 s: a small local
// model's first answer fits); 0 means no limit beyond ctx.
func (m *Manager) callTimeout(ctx context.Context, itersLeft int) time.Duration {
	t := m.cfg.Model.CallTimeout
	if dl, ok := ctx.Deadline(); ok && itersLeft > 0 {
		// A reserve before the question's deadline: the last call's own
		// timeout ends it first, so the run still answers (with what the
		// model wrote, or what the docs say) instead of timing out.
		left := time.Until(dl)
		left -= min(deadlineReserve, left/20)
		share := left / time.Duration(min(itersLeft, callShares))
		if t <= 0 || share < t {
			t = max(share, time.Millisecond)
		}
	}
	return t
}

// plainText reports whether out is prose with no ReAct line at all.
func plainText(out string) bool {
	if strings.TrimSpace(out) == "" {
		return false
	}
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if ClassifyLine(l).Kind != llm.LineThought || strings.HasPrefix(l, "Ask Func") || strings.HasPrefix(l, "Ask Agent") {
			return false
		}
	}
	return true
}

func (m *Manager) componentFailed(r *run, agent string, c Component, err error) {
	ke := asError(context.Background(), err)
	r.emit(kgagent.Event{Kind: kgagent.EventError, Agent: agent, Text: fmt.Sprintf("component %s failed: %s", c.ComponentName(), ke.Message), Error: ke})
}

func (m *Manager) lookupFunc(e *entry, name string) (Func, bool) {
	if f, ok := e.a.Func(name); ok {
		return f, true
	}
	f, ok := e.commands[name]
	return f, ok
}

func (m *Manager) availableFuncs(e *entry) []string {
	names := e.a.FuncNames()
	for n := range e.commands {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// delegate runs `Ask Agent[name]: input` with a local agent, within the
// depth limit and without cycles.
func (m *Manager) delegate(ctx context.Context, r *run, step llm.Step, depth int, chain []string) (FuncResult, error) {
	if slices.Contains(chain, step.Name) {
		return FuncResult{}, kgagent.Errorf(kgagent.EINVALID, "delegation cycle: %s -> %s", strings.Join(chain, " -> "), step.Name)
	}
	if depth+1 > m.cfg.Loop.MaxDepth {
		return FuncResult{}, kgagent.Errorf(kgagent.EINVALID, "delegation depth limit (%d) reached", m.cfg.Loop.MaxDepth)
	}
	sub, err := m.entry(step.Name)
	if err != nil {
		return FuncResult{}, kgagent.Errorf(kgagent.ENOTFOUND, "I'm sorry, Agent[%s] is not registered.", step.Name)
	}
	text, err := m.runAgent(ctx, r, sub, step.Input, nil, depth+1, append(slices.Clone(chain), step.Name))
	if err != nil {
		return FuncResult{}, err
	}
	return FuncResult{Message: kgagent.Message{Text: text}}, nil
}

// complete runs one LLM call and returns its output and how it stopped
// (see LLMCallStats.Stop). The output is cut at the first stop sequence
// (providers that ignore stop sequences are handled here), after the first
// complete action line, and where an answer starts repeating itself; when
// stream is set, the text after an `A:` line is emitted as answer deltas. A
// call that runs past its own timeout (not the question's) returns what it
// wrote so far with stop "timeout".
func (m *Manager) complete(ctx context.Context, r *run, creq llm.CompletionRequest, agentName string, stream bool, itersLeft int) (out string, steps []llm.Step, stop string, err error) {
	start := time.Now()
	var usage kgagent.Usage
	parent := ctx
	if t := m.callTimeout(ctx, itersLeft); t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	received := 0 // bytes of text the server sent
	defer func() {
		r.usage.PromptTokens += usage.PromptTokens
		r.usage.CompletionTokens += usage.CompletionTokens
		st := LLMCallStats{Agent: agentName, Model: creq.Model, Duration: time.Since(start), PromptTokens: usage.PromptTokens, CompletionTokens: usage.CompletionTokens, Stop: stop}
		if err != nil {
			st.Stop = "error"
		} else if len(steps) == 0 {
			if _, perr := ParseOutput(out); perr != nil {
				st.Malformed = true
			}
		}
		if err == nil && usage.CompletionTokens == 0 && max(received, len(out)) > 0 {
			// Cut before the server's usage came: estimated, 4 bytes a token.
			st.Estimated = true
			st.CompletionTokens = (max(received, len(out)) + 3) / 4
			if st.PromptTokens == 0 {
				n := 0
				for _, msg := range creq.Messages {
					n += len(msg.Content)
				}
				st.PromptTokens = (n + 3) / 4
			}
		}
		m.cfg.Logger.Debug("llm call", "request_id", r.req.ID, "agent", agentName, "model", creq.Model,
			"prompt_tokens", st.PromptTokens, "completion_tokens", st.CompletionTokens, "tokens_estimated", st.Estimated,
			"duration", st.Duration.Round(time.Millisecond), "stop", st.Stop, "malformed", st.Malformed, "error", err)
		if m.cfg.Observer != nil {
			m.cfg.Observer.LLMCall(st)
		}
	}()
	// timedOut tells whether the call's own timeout, not the question's
	// context, ended it.
	timedOut := func(err error) bool {
		return parent.Err() == nil && ctx.Err() != nil && (errors.Is(err, context.DeadlineExceeded) || kgagent.ErrorCode(err) == kgagent.ETIMEOUT)
	}
	n := r.llmCalls // the journal's numbering
	r.llmCalls++
	var s llm.Stream
	if r.req.Journal != nil {
		s, err = journal.Open(ctx, r.req.Journal, n, m.cfg.Model.LLM, creq)
	} else {
		s, err = m.cfg.Model.LLM.Complete(ctx, creq)
	}
	if err != nil {
		if timedOut(err) {
			return "", nil, "timeout", nil
		}
		if parent.Err() == nil {
			// The whole error, with the server's own message, for the
			// operator; callers get only its code and safe message.
			m.cfg.Logger.Warn("llm call failed", "request_id", r.req.ID, "agent", agentName, "model", creq.Model, "protocol", creq.Protocol, "error", err)
		}
		return "", nil, "", llmError(parent, err)
	}
	defer s.Close()
	var buf strings.Builder
	emitted := -1
	finishReason := "stop"
	hold := 0
	for _, st := range creq.Stop {
		hold = max(hold, len(st)-1)
	}
	flush := func(final bool) {
		if !stream {
			return
		}
		text := buf.String()
		sc := scanOutput(text, final)
		if sc.answerAt < 0 {
			return
		}
		if emitted < 0 {
			emitted = sc.answerAt
		}
		safe := len(text)
		if !final {
			safe -= hold
		}
		for safe > emitted && safe < len(text) && !utf8.RuneStart(text[safe]) {
			safe--
		}
		if !final && safe > emitted {
			// A citation still streaming ("[1") waits for its "]", so it
			// is renumbered whole (agent/cite).
			if oc := cite.OpenAt(text[:safe]); oc >= emitted {
				safe = oc
			}
		}
		if safe > emitted {
			r.emit(kgagent.Event{Kind: kgagent.EventAnswer, Agent: agentName, Delta: true, Text: r.citer().RewriteStream(text[emitted:safe])})
			emitted = safe
		}
	}
	cut := func(i int) {
		t := buf.String()[:i]
		buf.Reset()
		buf.WriteString(t)
	}
	finish := func(reason string) (string, []llm.Step, string, error) {
		if sc := scanOutput(buf.String(), true); sc.end >= 0 {
			cut(sc.end)
			reason = sc.reason
		}
		flush(true)
		return buf.String(), steps, reason, nil
	}
	for {
		d, err := s.Recv()
		if d.Usage != nil {
			usage = *d.Usage
		}
		if len(d.Steps) > 0 {
			steps = d.Steps
		}
		if d.Text != "" {
			received += len(d.Text)
			buf.WriteString(d.Text)
			if i := indexStop(buf.String(), creq.Stop); i >= 0 {
				cut(i)
				return finish("stop")
			}
			if sc := scanOutput(buf.String(), false); sc.end >= 0 {
				cut(sc.end)
				flush(true)
				return buf.String(), steps, sc.reason, nil
			}
			flush(false)
		}
		if d.FinishReason != "" {
			finishReason = d.FinishReason
		}
		if errors.Is(err, io.EOF) {
			return finish(finishReason)
		}
		if err != nil {
			if timedOut(err) {
				return finish("timeout")
			}
			return "", nil, "", llmError(parent, err)
		}
		if ctx.Err() != nil {
			if timedOut(ctx.Err()) {
				return finish("timeout")
			}
			return "", nil, "", parent.Err()
		}
	}
}

func indexStop(s string, stops []string) int {
	best := -1
	for _, st := range stops {
		if i := strings.Index(s, st); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	return best
}

func llmError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ke *kgagent.Error
	if errors.As(err, &ke) {
		return err
	}
	return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "the language model failed")
}

// prompt builds the chat messages of a run: the system prompt (base prompt,
// component directives, funcs, format and few-shots), component messages,
// session history and the question.
func (m *Manager) prompt(ctx context.Context, r *run, e *entry, info RunInfo, history []llm.ChatMessage, question string) []llm.ChatMessage {
	cfg := e.a.Config()
	var b strings.Builder
	if cfg.BasePrompt != "" {
		b.WriteString(cfg.BasePrompt)
		b.WriteString("\n\n")
	}
	var d Directives
	var extra []llm.ChatMessage
	for _, c := range e.comps {
		if dp, ok := c.(DirectiveProvider); ok {
			x, err := dp.Directives(ctx, info)
			if err != nil {
				m.componentFailed(r, cfg.Name, c, err)
				continue
			}
			d.Constraints = append(d.Constraints, x.Constraints...)
			d.Resources = append(d.Resources, x.Resources...)
			d.BestPractices = append(d.BestPractices, x.BestPractices...)
		}
	}
	for _, sec := range []struct {
		title string
		items []string
	}{{"Constraints", d.Constraints}, {"Resources", d.Resources}, {"Best practices", d.BestPractices}} {
		if len(sec.items) == 0 {
			continue
		}
		b.WriteString(sec.title + ":\n")
		for _, it := range sec.items {
			b.WriteString("- " + it + "\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("Funcs:\n")
	for _, n := range m.availableFuncs(e) {
		f, _ := m.lookupFunc(e, n)
		b.WriteString("- Func[" + n + "]")
		if f.Description != "" {
			b.WriteString(": " + f.Description)
		}
		if f.Parameters != nil {
			if js, err := json.Marshal(f.Parameters); err == nil {
				b.WriteString(" Input: a JSON object matching " + string(js))
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n" + formatInstructions + "\n")
	if p := m.cfg.Model.Protocol; p != "" && p != llm.ProtocolText {
		b.WriteString(structuredInstructions + "\n")
	}
	if st := e.a.Stanzas(); len(st) > 0 {
		b.WriteString("\n" + ExamplesHeader + "\n")
		for _, s := range st {
			b.WriteString("\n" + s.Text + "\n")
		}
	}
	msgs := []llm.ChatMessage{{Role: "system", Content: b.String()}}
	for _, c := range e.comps {
		if mp, ok := c.(MessageProvider); ok {
			x, err := mp.Messages(ctx, info)
			if err != nil {
				m.componentFailed(r, cfg.Name, c, err)
				continue
			}
			extra = append(extra, x...)
		}
	}
	msgs = append(msgs, extra...)
	msgs = append(msgs, history...)
	msgs = append(msgs, llm.ChatMessage{Role: "user", Content: "Q: " + question})
	return msgs
}
