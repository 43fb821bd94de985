package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kgagent/kgagent/agent/cite"
	"github.com/kgagent/kgagent/agent/extractive"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/llm"

	"github.com/kgagent/kgagent"
	kgtext "github.com/kgagent/kgagent/internal/text"
)

// AgentInfo describes a registered agent.
type AgentInfo struct {
	Name           string   `json:"name"`
	Description    string   `json:"description,omitempty"`
	Queries        []string `json:"queries"` // the few-shots' sample queries
	Funcs          []string `json:"funcs"`
	Corpora        []Corpus `json:"corpora,omitempty"`
	Conversational bool     `json:"conversational"`
	Remote         string   `json:"remote,omitempty"`
}

type entry struct {
	a        *CodeShotAgent
	comps    []Component
	commands map[string]Func
	queries  []string
	vecs     [][]float32
	builtin  bool // the built-in default agent, which Register may replace
}

// Manager runs registered CodeShotAgents with the ReAct loop. It is safe
// for concurrent use: many Ask calls may run at once.
type Manager struct {
	cfg      Config
	builtins *Builtins

	mu     sync.RWMutex
	agents map[string]*entry

	cache     *answerCache  // nil: off
	agentsGen atomic.Uint64 // counts registrations, part of the cache key
}

// New returns a Manager with the built-in default docs agent registered.
func New(cfg Config) (*Manager, error) {
	cfg = cfg.withDefaults()
	m := &Manager{cfg: cfg, agents: map[string]*entry{}, cache: newAnswerCache(cfg.Cache.Size, cfg.Cache.MaxBytes, cfg.Cache.TTL)}
	m.builtins = &Builtins{cfg: &m.cfg, m: m}
	if _, err := OrderComponents(append([]Component{m.builtins}, cfg.Components...)); err != nil {
		return nil, err
	}
	def, err := DefaultAgent()
	if err != nil {
		return nil, err
	}
	e, err := m.newEntry(def)
	if err != nil {
		return nil, err
	}
	e.builtin = true
	m.agents[def.Name()] = e
	return m, nil
}

func (m *Manager) newEntry(a *CodeShotAgent) (*entry, error) {
	all := append([]Component{m.builtins}, m.cfg.Components...)
	all = append(all, a.cfg.Components...)
	comps, err := OrderComponents(all)
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EINVALID, err, "agent %s: %s", a.Name(), kgagent.ErrorMessage(err))
	}
	e := &entry{a: a, comps: comps, commands: map[string]Func{}}
	for _, c := range comps {
		if cp, ok := c.(CommandProvider); ok {
			for _, f := range cp.Commands() {
				if _, dup := e.commands[f.Name]; !dup {
					e.commands[f.Name] = f
				}
			}
		}
	}
	for _, s := range a.stanzas {
		for _, l := range s.Lines {
			if l.Kind == llm.LineQuery {
				e.queries = append(e.queries, l.Text)
			}
		}
	}
	if m.cfg.Route.Embedder != nil && len(e.queries) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		vecs, err := m.cfg.Route.Embedder.Embed(ctx, e.queries)
		if err != nil {
			return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "agent %s: embedding its few-shot queries failed", a.Name())
		}
		e.vecs = vecs
	}
	return e, nil
}

// Register adds an agent. A second agent of the same name is ECONFLICT,
// except that the built-in default agent may be replaced once.
func (m *Manager) Register(a *CodeShotAgent) error {
	if a == nil {
		return kgagent.Errorf(kgagent.EINVALID, "nil agent")
	}
	e, err := m.newEntry(a)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.agents[a.Name()]; ok && !old.builtin {
		return kgagent.Errorf(kgagent.ECONFLICT, "agent %s is already registered", a.Name())
	}
	m.agents[a.Name()] = e
	m.agentsGen.Add(1)
	return nil
}

func (m *Manager) entry(name string) (*entry, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	e, ok := m.agents[name]
	if !ok {
		return nil, kgagent.Errorf(kgagent.ENOTFOUND, "agent %q is not registered", name)
	}
	return e, nil
}

// Agent describes agent name (ENOTFOUND when it is not registered).
func (m *Manager) Agent(name string) (AgentInfo, error) {
	for _, a := range m.Agents() {
		if a.Name == name {
			return a, nil
		}
	}
	return AgentInfo{}, kgagent.Errorf(kgagent.ENOTFOUND, "agent %q is not registered", name)
}

// Agents lists the registered agents, sorted by name.
func (m *Manager) Agents() []AgentInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]AgentInfo, 0, len(m.agents))
	for _, e := range m.agents {
		c := e.a.Config()
		out = append(out, AgentInfo{
			Name: c.Name, Description: c.Description, Queries: append([]string{}, e.queries...),
			Funcs: e.a.FuncNames(), Corpora: c.Corpora, Conversational: c.Conversational, Remote: c.Remote,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Handshake returns the agent-protocol handshake of agent name (ENOTFOUND
// when it is not registered).
func (m *Manager) Handshake(name string) (Handshake, error) {
	e, err := m.entry(name)
	if err != nil {
		return Handshake{}, err
	}
	return e.a.Handshake(), nil
}

// FuncCollection returns the collection the funcs of agent name read when
// called over the agent protocol (CallFunc): the agent's own, else the
// default one, as in a run without a collection. The gateway checks it
// against the caller's collections. Errors: ENOTFOUND.
func (m *Manager) FuncCollection(name string) (string, error) {
	e, err := m.entry(name)
	if err != nil {
		return "", err
	}
	return m.collectionOf(e), nil
}

func (m *Manager) collectionOf(e *entry) string {
	if c := e.a.Config().Collection; c != "" {
		return c
	}
	return m.cfg.Builtins.Collection
}

// Builtin returns the fixie_ built-in func of that name (fixie_query_corpus,
// fixie_query_graph, fixie_query_embed, fixie_base_prompt,
// fixie_local_datetime, fixie_utc_datetime), for agents that expose one
// under a name of their own.
func (m *Manager) Builtin(name string) (Func, bool) {
	for _, f := range m.builtins.Commands() {
		if f.Name == name {
			return f, true
		}
	}
	return Func{}, false
}

// CallFunc runs func funcName of agent agentName for the agent-protocol
// endpoint POST /agents/{name}/{func}. Errors: ENOTFOUND for an unknown
// agent, EFuncNotDefined (with details func_name and available_funcs) for an
// unknown func, EAgentUnhandled for a panic or an untyped error, the func's
// own *kgagent.Error otherwise.
func (m *Manager) CallFunc(ctx context.Context, agentName, funcName string, msg kgagent.Message, caller Caller) (kgagent.Message, error) {
	e, err := m.entry(agentName)
	if err != nil {
		return kgagent.Message{}, err
	}
	f, ok := e.a.Func(funcName)
	if !ok {
		return kgagent.Message{}, NotDefined(funcName, e.a.FuncNames())
	}
	call := m.funcCall(e, funcName, msg, caller, "", m.collectionOf(e), "")
	res, err := invoke(ctx, f, call, m.cfg.Loop.FuncTimeout)
	if res.Message.Embeds == nil {
		res.Message.Embeds = map[string]kgagent.Embed{}
	}
	return res.Message, err
}

func (m *Manager) funcCall(e *entry, name string, msg kgagent.Message, caller Caller, reqID, collection, tz string) FuncCall {
	c := FuncCall{
		RequestID:   reqID,
		Agent:       e.a.Name(),
		Func:        name,
		Query:       msg,
		Caller:      caller,
		UserStorage: m.cfg.UserStorage,
		Collection:  collection,
		TimeZone:    tz,
		Corpora:     e.a.Config().Corpora,
	}
	if m.cfg.OAuth != nil {
		c.OAuth = m.cfg.OAuth(e.a.Name(), caller)
	}
	return c
}

// run is the state of one Ask: the event sequence, the cited sources and
// the embeds seen so far.
type run struct {
	m       *Manager
	req     Request
	emitFn  Emit
	seq     int64
	sources []kgagent.Source
	byURL   map[string]int
	embeds  map[string]kgagent.Embed
	usage   kgagent.Usage
	iters   int
	// llmCalls counts the model calls made (the Journal's numbering).
	llmCalls int
	record   bool // append the run to the request's session
	// cacheable: the answer may go into the answer cache; it stays true
	// while every func the run called is Cacheable.
	cacheable bool
	events    []kgagent.Event // kept for the session or the answer cache
	cites     *cite.Map       // the answer's citation numbering (agent/cite)
	// evidence is what the run's searches found, numbered with the run's
	// citation numbers, for citation attribution (agent/cite).
	evidence []kgagent.Evidence
	// noAnswer is why the model gave no answer, when the run answers from
	// its evidence instead (Manager.noAnswer).
	noAnswer string
	// stop is how the top-level agent's last model call stopped
	// (LLMCallStats.Stop): "length" when the server's token limit cut it,
	// "timeout" when its time limit did, so its answer may end
	// mid-sentence (ground).
	stop string
}

func (r *run) emit(ev kgagent.Event) {
	r.seq++
	ev.RequestID = r.req.ID
	ev.Seq = r.seq
	ev.Time = r.m.cfg.Now()
	if r.record || r.cacheable {
		r.events = append(r.events, ev)
	}
	if r.emitFn != nil {
		r.emitFn(ev)
	}
}

func (r *run) cite(s kgagent.Source) int {
	key := s.URL
	if key == "" {
		key = s.Title + "\x00" + s.Snippet
	}
	if n, ok := r.byURL[key]; ok {
		if s.Score > r.sources[n-1].Score {
			r.sources[n-1].Score = s.Score
		}
		return n
	}
	r.sources = append(r.sources, s)
	r.byURL[key] = len(r.sources)
	return len(r.sources)
}

// Ask answers req with the agent it names, or the one the router picks,
// streaming events to emit (which may be nil). The last event is the final
// answer (Final, with Sources) or an error (Final, with Error); the returned
// Answer carries the same sources. Errors: EINVALID for an empty question,
// ENOTFOUND for an unknown agent or session, ECANCELED/ETIMEOUT when ctx
// ends, EUNAVAILABLE when the LLM fails or the iteration limit is reached.
func (m *Manager) Ask(ctx context.Context, req Request, emit Emit) (ans kgagent.Answer, err error) {
	if req.ID == "" {
		req.ID = m.cfg.NewID()
	}
	r := &run{m: m, req: req, emitFn: emit, byURL: map[string]int{}, embeds: map[string]kgagent.Embed{}}
	for k, v := range req.Embeds {
		r.embeds[k] = v
	}
	r.record = m.cfg.Sessions.Record && m.cfg.Sessions.Store != nil && req.SessionID != ""
	key, cacheable := m.cacheKeyFor(req)
	if cacheable {
		if c, ok := m.cache.get(key, m.cfg.Now()); ok {
			return r.replay(c), nil
		}
		r.cacheable = true
	}
	// One request embeds each distinct query text once per embedder, however
	// many of its searches (corpus, graph, later iterations) ask for it.
	ctx = corpus.WithQueryMemo(ctx)
	start := time.Now()
	ans = kgagent.Answer{RequestID: r.req.ID, Sources: []kgagent.Source{}}
	defer func() {
		// Every run that ran ends here: measured, cached when it answered,
		// its error the last event when it did not. A run that panicked is
		// reported as INTERNAL and never cached; the panic goes on to the
		// caller (the gateway's call path recovers it).
		p := recover()
		ans.Iterations, ans.Usage = r.iters, r.usage
		if m.cfg.Observer != nil {
			code := ""
			if err != nil {
				code = asError(ctx, err).Code
			}
			if p != nil {
				code = kgagent.EINTERNAL
			}
			m.cfg.Observer.RunEnded(RunStats{Agent: ans.Agent, Iterations: r.iters, Code: code, Duration: time.Since(start)})
		}
		if p != nil {
			panic(p)
		}
		if err == nil && r.cacheable {
			// The final answer event is the last kept; the stored answer
			// shares nothing mutable with the one returned.
			c := &cached{key: key, at: m.cfg.Now(), ans: ans, events: r.events}
			c.ans.Sources = slices.Clone(ans.Sources)
			m.cache.put(c)
		}
		if err != nil {
			ke := asError(ctx, err)
			r.emit(kgagent.Event{Kind: kgagent.EventError, Agent: ans.Agent, Text: ke.Message, Final: true, Error: ke})
			err = ke
		}
	}()
	q := strings.TrimSpace(r.req.Question)
	if q == "" {
		return ans, kgagent.Errorf(kgagent.EINVALID, "the question is empty")
	}
	name, how := r.req.Agent, fmt.Sprintf("agent %s, as requested", r.req.Agent)
	if name == "" {
		// The router (seed 002's Router): the agent whose few-shot queries
		// are nearest to the question in embedding space
		// (Config.Route.Embedder; without one, by content-word overlap) or
		// whose few-shot pattern the question fits, when the similarity
		// reaches Config.Route.Threshold; else the default agent.
		m.mu.RLock()
		names := make([]string, 0, len(m.agents))
		entries := make([]*entry, 0, len(m.agents))
		for n, e := range m.agents {
			if n == m.cfg.Route.DefaultAgent || len(e.queries) == 0 {
				continue
			}
			names = append(names, n)
			entries = append(entries, e)
		}
		m.mu.RUnlock()
		var qv []float32
		if m.cfg.Route.Embedder != nil && len(entries) > 0 {
			vs, err := m.cfg.Route.Embedder.Embed(ctx, []string{q})
			if err != nil {
				if ctx.Err() != nil {
					return ans, ctx.Err()
				}
				return ans, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "embedding the question for routing failed")
			}
			if len(vs) == 1 {
				qv = vs[0]
			}
		}
		best, score := "", 0.0
		order := make([]int, len(names))
		for i := range order {
			order[i] = i
		}
		sort.Slice(order, func(i, j int) bool { return names[order[i]] < names[order[j]] })
		for _, i := range order {
			e := entries[i]
			for j, fq := range e.queries {
				var s float64
				if qv != nil && j < len(e.vecs) {
					s = kgtext.Cosine(qv, e.vecs[j])
				} else {
					s = kgtext.BagCosine(q, fq)
				}
				if s > score {
					best, score = names[i], s
				}
			}
			// A question that fits a few-shot's query pattern (SYMBOL and
			// other placeholders generalised) belongs to that agent.
			for _, st := range e.a.Stanzas() {
				if s, passthrough, ok := extractive.MatchStanza(st, q); ok && !passthrough && s > score {
					best, score = names[i], s
				}
			}
		}
		name = best
		if best == "" || score < m.cfg.Route.Threshold {
			name = m.cfg.Route.DefaultAgent
		}
		how = fmt.Sprintf("routed to agent %s (similarity %.2f)", name, score)
	}
	e, err := m.entry(name)
	if err != nil {
		return ans, err
	}
	r.emit(kgagent.Event{Kind: kgagent.EventRoute, Agent: name, Text: how})
	ans.Agent = e.a.Name()
	history, err := m.history(ctx, e, r.req.SessionID, q)
	if err != nil {
		return ans, err
	}
	if r.record {
		if _, err := m.cfg.Sessions.Store.AppendMessage(ctx, SessionMessage{ID: m.cfg.NewID(), SessionID: r.req.SessionID, Role: "user", Text: q, CreatedAt: m.cfg.Now()}); err != nil {
			return ans, err
		}
	}
	text, err := m.runAgent(ctx, r, e, q, history, 0, []string{e.a.Name()})
	if err != nil {
		return ans, err
	}
	text, ans.Answer, ans.Sources, ans.Citations = m.ground(ctx, r, q, text)
	usage := r.usage
	r.emit(kgagent.Event{Kind: kgagent.EventAnswer, Agent: ans.Agent, Text: text, Final: true, Sources: ans.Sources, Usage: &usage, Citations: ans.Citations})
	if r.record {
		_, err := m.cfg.Sessions.Store.AppendMessage(context.WithoutCancel(ctx), SessionMessage{
			ID: m.cfg.NewID(), SessionID: r.req.SessionID, Role: "agent", Agent: ans.Agent, Text: text,
			Sources: ans.Sources, Events: r.events, CreatedAt: m.cfg.Now(),
		})
		if err != nil {
			return ans, err
		}
	}
	return ans, nil
}

func asError(ctx context.Context, err error) *kgagent.Error {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		err = ctx.Err()
	}
	var ke *kgagent.Error
	if errors.As(err, &ke) {
		return ke
	}
	return &kgagent.Error{Code: kgagent.ErrorCode(err), Message: kgagent.ErrorMessage(err), Err: err}
}

// history returns the session's earlier questions and answers as chat
// messages. The current question is left out when the caller (the gateway)
// already appended it to the session.
func (m *Manager) history(ctx context.Context, e *entry, sessionID, question string) ([]llm.ChatMessage, error) {
	if sessionID == "" || m.cfg.Sessions.Store == nil || !e.a.Config().Conversational {
		return nil, nil
	}
	msgs, err := m.cfg.Sessions.Store.Messages(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	if n := len(msgs); n > 0 && msgs[n-1].Role == "user" && strings.TrimSpace(msgs[n-1].Text) == question {
		msgs = msgs[:n-1]
	}
	if max := 2 * m.cfg.Sessions.HistoryTurns; len(msgs) > max {
		msgs = msgs[len(msgs)-max:]
	}
	out := make([]llm.ChatMessage, 0, len(msgs))
	for _, sm := range msgs {
		if sm.Role == "user" {
			out = append(out, llm.ChatMessage{Role: "user", Content: "Q: " + sm.Text})
		} else {
			out = append(out, llm.ChatMessage{Role: "assistant", Content: "A: " + sm.Text})
		}
	}
	return out, nil
}
