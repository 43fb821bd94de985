package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/graphrag"
)

// fakeAsker answers "Answer to: <question>" in two answer tokens, after a
// thought, an action and an observation, citing one section. Questions
// starting with "block" wait until release is closed or ctx ends; "panic"
// panics; "boom" fails with an internal error.
type fakeAsker struct {
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	reqs    []agent.Request
}

func newFakeAsker() *fakeAsker { return &fakeAsker{release: make(chan struct{})} }

func (f *fakeAsker) unblock() { f.once.Do(func() { close(f.release) }) }

func (f *fakeAsker) Ask(ctx context.Context, req agent.Request, emit agent.Emit) (kgagent.Answer, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	if req.Agent == "nope" {
		return kgagent.Answer{}, kgagent.Errorf(kgagent.ENOTFOUND, "no agent %q", req.Agent)
	}
	switch {
	case strings.HasPrefix(req.Question, "panic"):
		panic("fake panic")
	case strings.HasPrefix(req.Question, "boom"):
		return kgagent.Answer{}, errors.New("secret internal detail")
	}
	emit(kgagent.Event{Kind: kgagent.EventThought, Text: "I need to query a knowledge base"})
	emit(kgagent.Event{Kind: kgagent.EventAction, Func: "fixie_query_corpus", Text: "Ask Func[fixie_query_corpus]: " + req.Question})
	obs := kgagent.Event{Kind: kgagent.EventObservation, Text: "Some docs text."}
	if strings.HasPrefix(req.Question, "code") {
		obs.Sources = []kgagent.Source{{URL: "https://docs.example.org/backup.html#restore", Title: "Backups", HeadingPath: []string{"Backups", "Restoring"}}}
	}
	emit(obs)
	if strings.HasPrefix(req.Question, "block") {
		select {
		case <-f.release:
		case <-ctx.Done():
			return kgagent.Answer{}, ctx.Err()
		}
	}
	answer := "Answer to: " + req.Question
	sources := []kgagent.Source{{URL: "https://docs.example.org/guide.html#install-section", Title: "Install", Score: 0.9}}
	if strings.HasPrefix(req.Question, "code") {
		// An answer with code, inline code and a citation, as the built-in
		// answerer writes them.
		answer = "Restore with `lumen backup restore` [1].\n\n```\nlumen backup restore --input <b>x</b>\n```"
		sources = []kgagent.Source{{URL: "https://docs.example.org/backup.html#restore", Title: "Backups", HeadingPath: []string{"Backups", "Restoring"}}}
	}
	if strings.HasPrefix(req.Question, "list") {
		// A list answer as the built-in answerer writes it from the graph.
		answer = "`shutil` provides 2 functions for copying files [1]:\n- `shutil.copy` - Copies the file src. [2]\n- `shutil.copyfile` - Copy the contents. [3]"
		sources = []kgagent.Source{{URL: "https://docs.example.org/shutil.html#module-shutil", Title: "shutil"},
			{URL: "https://docs.example.org/shutil.html#shutil.copy", Title: "shutil.copy"},
			{URL: "https://docs.example.org/shutil.html#shutil.copyfile", Title: "shutil.copyfile"}}
	}
	emit(kgagent.Event{Kind: kgagent.EventAnswer, Delta: true, Text: answer[:len(answer)/2]})
	emit(kgagent.Event{Kind: kgagent.EventAnswer, Delta: true, Text: answer[len(answer)/2:]})
	emit(kgagent.Event{Kind: kgagent.EventAnswer, Final: true, Text: answer})
	agentName := req.Agent
	if agentName == "" {
		agentName = "docs"
	}
	usage := kgagent.Usage{PromptTokens: 10, CompletionTokens: 5}
	if strings.HasPrefix(req.Question, "cached") {
		usage = kgagent.Usage{} // as an answer from the agent's cache: no tokens spent
	}
	return kgagent.Answer{
		RequestID: req.ID, Agent: agentName, Answer: answer, Iterations: 2, Usage: usage,
		Sources: sources,
	}, nil
}

type fakeSearch struct {
	mu      sync.Mutex
	cols    []corpus.CollectionInfo
	deleted []string
}

func (f *fakeSearch) Search(ctx context.Context, req corpus.SearchRequest) ([]corpus.Hit, error) {
	return []corpus.Hit{{Chunk: kgagent.Chunk{ID: "c1", Collection: req.Collection, URL: "https://docs.example.org/a#b", Text: "hit for " + req.Query}, Score: 1}}, nil
}

func (f *fakeSearch) Collections(ctx context.Context) ([]corpus.CollectionInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]corpus.CollectionInfo(nil), f.cols...), nil
}

func (f *fakeSearch) DeleteCollection(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, c := range f.cols {
		if c.Name == name {
			f.cols = append(f.cols[:i], f.cols[i+1:]...)
			f.deleted = append(f.deleted, name)
			return nil
		}
	}
	return kgagent.Errorf(kgagent.ENOTFOUND, "no collection %q", name)
}

type fakeGraph struct{}

func (fakeGraph) Find(ctx context.Context, p graphrag.Pattern) ([]kgagent.Triple, error) {
	return []kgagent.Triple{{Collection: p.Collection, Subject: kgagent.Entity{ID: "python", Name: "Python"}, Predicate: "has", Object: kgagent.Entity{ID: "gil", Name: "GIL"}, SourceURL: "https://docs.example.org/gil#x"}}, nil
}

func (fakeGraph) Answer(ctx context.Context, question, collection string) (graphrag.GraphAnswer, error) {
	return graphrag.GraphAnswer{Answer: "graph answer to " + question, Facts: []graphrag.Fact{{Text: "Python has GIL"}}}, nil
}

type fakeJobs struct {
	mu   sync.Mutex
	jobs map[string]crawler.JobStatus
	n    int
}

func (f *fakeJobs) Submit(ctx context.Context, spec crawler.Spec) (crawler.JobStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	j := crawler.JobStatus{ID: fmt.Sprintf("job%d", f.n), Spec: spec, State: crawler.JobQueued, CreatedAt: time.Now()}
	if f.jobs == nil {
		f.jobs = map[string]crawler.JobStatus{}
	}
	f.jobs[j.ID] = j
	return j, nil
}

func (f *fakeJobs) Get(ctx context.Context, id string) (crawler.JobStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j, ok := f.jobs[id]
	if !ok {
		return j, kgagent.Errorf(kgagent.ENOTFOUND, "no job %q", id)
	}
	return j, nil
}

func (f *fakeJobs) List(ctx context.Context) ([]crawler.JobStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []crawler.JobStatus
	for _, j := range f.jobs {
		out = append(out, j)
	}
	return out, nil
}

// memSessions is an in-memory agent.SessionStore.
type memSessions struct {
	mu       sync.Mutex
	sessions map[string]agent.Session
	order    []string
	msgs     map[string][]agent.SessionMessage
}

func newMemSessions() *memSessions {
	return &memSessions{sessions: map[string]agent.Session{}, msgs: map[string][]agent.SessionMessage{}}
}

func (m *memSessions) CreateSession(ctx context.Context, s agent.Session) (agent.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sessions[s.ID] = s
	m.order = append(m.order, s.ID)
	return s, nil
}

func (m *memSessions) GetSession(ctx context.Context, id string) (agent.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return s, kgagent.Errorf(kgagent.ENOTFOUND, "no session %q", id)
	}
	return s, nil
}

func (m *memSessions) ListSessions(ctx context.Context, userID string) ([]agent.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []agent.Session
	for _, id := range m.order {
		if s, ok := m.sessions[id]; ok && s.UserID == userID {
			out = append(out, s)
		}
	}
	return out, nil
}

func (m *memSessions) DeleteSession(ctx context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sessions[id]; !ok {
		return kgagent.Errorf(kgagent.ENOTFOUND, "no session %q", id)
	}
	delete(m.sessions, id)
	delete(m.msgs, id)
	return nil
}

func (m *memSessions) AppendMessage(ctx context.Context, msg agent.SessionMessage) (agent.SessionMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sessions[msg.SessionID]; !ok {
		return msg, kgagent.Errorf(kgagent.ENOTFOUND, "no session %q", msg.SessionID)
	}
	m.msgs[msg.SessionID] = append(m.msgs[msg.SessionID], msg)
	return msg, nil
}

func (m *memSessions) Messages(ctx context.Context, id string) ([]agent.SessionMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]agent.SessionMessage(nil), m.msgs[id]...), nil
}

// fakeAgents serves the Fixie protocol for agent "docs" with funcs echo
// (echoes text and embeds), fail (unhandled error) and panic.
type fakeAgents struct{}

func (fakeAgents) Handshake(name string) (agent.Handshake, error) {
	if name != "docs" {
		return agent.Handshake{}, kgagent.Errorf(kgagent.ENOTFOUND, "no agent %q", name)
	}
	return agent.Handshake{BasePrompt: "I answer docs questions.", FewShots: []string{"Q: What?\nAsk Func[echo]: x\nFunc[echo] says: x\nA: x"},
		Corpora: []agent.Corpus{{URLs: []string{"https://docs.example.org/*"}}}, Type: "code_shot"}, nil
}

func (fakeAgents) FuncCollection(name string) (string, error) {
	if name != "docs" {
		return "", kgagent.Errorf(kgagent.ENOTFOUND, "no agent %q", name)
	}
	return "docs", nil
}

func (fakeAgents) CallFunc(ctx context.Context, agentName, funcName string, msg kgagent.Message, caller agent.Caller) (kgagent.Message, error) {
	if agentName != "docs" {
		return kgagent.Message{}, kgagent.Errorf(kgagent.ENOTFOUND, "no agent %q", agentName)
	}
	switch funcName {
	case "echo":
		text := msg.Text
		if caller.UserID != "" {
			text += " user=" + caller.UserID
		}
		if caller.AgentID != "" {
			text += " aid=" + caller.AgentID
		}
		if caller.Token != "" {
			text += " token=forwarded"
		}
		return kgagent.Message{Text: text, Embeds: msg.Embeds}, nil
	case "fail":
		return kgagent.Message{}, errors.New("db down: secret")
	case "panic":
		panic("func panicked")
	}
	e := kgagent.Errorf(kgagent.EFuncNotDefined, "I'm sorry, Func[%s] is not defined.", funcName)
	e.Details = map[string]any{"func_name": funcName, "available_funcs": []string{"echo", "fail", "panic"}}
	return kgagent.Message{}, e
}

type fakeRegistry struct {
	mu     sync.Mutex
	agents []AgentInfo
}

func (r *fakeRegistry) ListAgents(ctx context.Context) ([]AgentInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]AgentInfo(nil), r.agents...), nil
}

func (r *fakeRegistry) RegisterAgent(ctx context.Context, name, url string) (AgentInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.agents {
		if a.Name == name {
			return AgentInfo{}, kgagent.Errorf(kgagent.ECONFLICT, "agent %q exists", name)
		}
	}
	a := AgentInfo{Name: name, URL: url}
	r.agents = append(r.agents, a)
	return a, nil
}

type fixture struct {
	srv    *Server
	ts     *httptest.Server
	asker  *fakeAsker
	search *fakeSearch
	jobs   *fakeJobs
	sess   *memSessions
	reg    *fakeRegistry
}

// newFixture starts a gateway with fakes on a real loopback socket.
func newFixture(t testing.TB, cfg Config) *fixture {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	f := &fixture{asker: newFakeAsker(), search: &fakeSearch{cols: []corpus.CollectionInfo{{Name: "python", Documents: 3, Chunks: 30}, {Name: "go", Documents: 1, Chunks: 5}}},
		jobs: &fakeJobs{}, sess: newMemSessions(), reg: &fakeRegistry{agents: []AgentInfo{{Name: "docs", Description: "Docs agent"}}}}
	srv, err := New(cfg, Backends{Asker: f.asker, Agents: fakeAgents{}, Search: f.search, Graph: fakeGraph{}, Jobs: f.jobs, Sessions: f.sess, Registry: f.reg,
		Ready: []Check{{Name: "store", Check: func(ctx context.Context) error { return nil }}}})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	f.ts = httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		f.asker.unblock()
		f.ts.Close()
		srv.Close()
	})
	return f
}

// textOf is the text p points to, or "" for nil (Response.Answer and
// Observation).
func textOf(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
