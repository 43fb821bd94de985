package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/llm"
)

type comp struct {
	name     string
	after    []string
	disabled bool
}

func (c comp) ComponentName() string { return c.name }
func (c comp) RunAfter() []string    { return c.after }
func (c comp) Enabled() bool         { return !c.disabled }

func TestOrderComponents(t *testing.T) {
	tests := []struct {
		name string
		in   []Component
		want string
		err  bool
	}{
		{"keeps order", []Component{comp{name: "a"}, comp{name: "b"}}, "a b", false},
		{"dependency first", []Component{comp{name: "a", after: []string{"b"}}, comp{name: "b"}, comp{name: "d", after: []string{"a"}}}, "b a d", false},
		{"chain", []Component{comp{name: "c", after: []string{"b"}}, comp{name: "b", after: []string{"a"}}, comp{name: "a"}}, "a b c", false},
		{"disabled skipped", []Component{comp{name: "a"}, comp{name: "x", disabled: true}, comp{name: "b", after: []string{"x"}}}, "a b", false},
		{"unknown dependency ignored", []Component{comp{name: "a", after: []string{"ghost"}}}, "a", false},
		{"cycle", []Component{comp{name: "x", after: []string{"y"}}, comp{name: "y", after: []string{"x"}}}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OrderComponents(tt.in)
			if tt.err {
				if kgagent.ErrorCode(err) != kgagent.EINVALID || !strings.Contains(err.Error(), "x -> y -> x") {
					t.Fatalf("err = %v", err)
				}
				return
			}
			var names []string
			for _, c := range got {
				names = append(names, c.ComponentName())
			}
			if strings.Join(names, " ") != tt.want {
				t.Errorf("order = %v, want %s", names, tt.want)
			}
		})
	}
}

// hooks implements every protocol and records the calls.
type hooks struct {
	name  string
	after []string
	log   *[]string
	mu    *sync.Mutex
	fail  string // the hook that fails
}

func (h *hooks) ComponentName() string { return h.name }
func (h *hooks) RunAfter() []string    { return h.after }
func (h *hooks) rec(s string) error {
	h.mu.Lock()
	*h.log = append(*h.log, h.name+"."+s)
	h.mu.Unlock()
	if h.fail == s {
		return errors.New(h.name + " " + s + " broke")
	}
	return nil
}
func (h *hooks) Directives(ctx context.Context, r RunInfo) (Directives, error) {
	return Directives{Constraints: []string{h.name + " constraint"}, Resources: []string{h.name + " resource"}, BestPractices: []string{h.name + " practice"}}, h.rec("directives")
}
func (h *hooks) Commands() []Func {
	return []Func{{Name: h.name + "_cmd", Description: "echoes", Parameters: &Schema{Type: "object", Required: []string{"text"}, Properties: map[string]*Schema{"text": {Type: "string"}}},
		Handler: func(ctx context.Context, c FuncCall) (FuncResult, error) {
			return FuncResult{Message: kgagent.Message{Text: "echo " + c.Args["text"].(string)}}, nil
		}}}
}
func (h *hooks) Messages(ctx context.Context, r RunInfo) ([]llm.ChatMessage, error) {
	return []llm.ChatMessage{{Role: "system", Content: h.name + " message"}}, h.rec("messages")
}
func (h *hooks) AfterParse(ctx context.Context, r RunInfo, s *llm.Step) error {
	if s.Kind == llm.StepAnswer {
		s.Answer += " (" + h.name + ")"
	}
	return h.rec("after_parse")
}
func (h *hooks) ExecutionFailure(ctx context.Context, r RunInfo, s llm.Step, err error) error {
	return h.rec("execution_failure:" + kgagent.ErrorCode(err))
}
func (h *hooks) AfterExecute(ctx context.Context, r RunInfo, s llm.Step, res *FuncResult) error {
	res.Message.Text += " [seen by " + h.name + "]"
	return h.rec("after_execute")
}

func TestComponentsInARun(t *testing.T) {
	var log []string
	var mu sync.Mutex
	second := &hooks{name: "second", after: []string{"first"}, log: &log, mu: &mu, fail: "directives"}
	first := &hooks{name: "first", log: &log, mu: &mu}
	llm := script(`Ask Func[first_cmd]: {"text": "hi"}`, `Ask Func[first_cmd]: {"txt": "hi"}`, "A: done")
	m := newManager(t, Config{Model: ModelConfig{LLM: llm}, Components: []Component{second}}, AgentConfig{Name: "a", Components: []Component{first}})
	var ev events
	ans, err := m.Ask(context.Background(), Request{Question: "q", Agent: "a"}, ev.emit)
	if err != nil {
		t.Fatal(err)
	}
	// AfterParse hooks ran in dependency order: first, then second.
	if ans.Answer != "done (first) (second)" {
		t.Errorf("answer = %q", ans.Answer)
	}
	sys := llm.Calls()[0].Messages[0].Content
	for _, want := range []string{"Constraints:\n- first constraint", "Resources:\n", "first resource", "Best practices:\n- first practice",
		"Func[first_cmd]: echoes Input: a JSON object matching", "Func[second_cmd]"} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, sys)
		}
	}
	if strings.Contains(sys, "second constraint") {
		t.Error("a failed directive provider's directives were used")
	}
	msgs := llm.Calls()[0].Messages
	if msgs[1].Content != "first message" || msgs[2].Content != "second message" {
		t.Errorf("component messages = %+v", msgs[1:3])
	}
	// The valid call ran with AfterExecute; the invalid one failed validation.
	obs := llm.Calls()[1].Messages
	if got := obs[len(obs)-1].Content; got != "Func[first_cmd] says: echo hi [seen by first] [seen by second]" {
		t.Errorf("observation = %q", got)
	}
	obs = llm.Calls()[2].Messages
	if got := obs[len(obs)-1].Content; !strings.Contains(got, `missing required property "text"`) {
		t.Errorf("invalid args observation = %q", got)
	}
	mu.Lock()
	joined := strings.Join(log, " ")
	mu.Unlock()
	for _, want := range []string{"first.directives second.directives", "first.execution_failure:INVALID_ARGUMENT second.execution_failure:INVALID_ARGUMENT", "first.after_execute second.after_execute"} {
		if !strings.Contains(joined, want) {
			t.Errorf("hook log lacks %q: %s", want, joined)
		}
	}
	// The failing component is an error event, not fatal.
	var compErr *kgagent.Event
	for _, e := range ev.all() {
		if e.Kind == kgagent.EventError && !e.Final {
			e := e
			compErr = &e
		}
	}
	if compErr == nil || !strings.Contains(compErr.Text, "component second failed") {
		t.Errorf("component failure event = %+v", compErr)
	}
}

func TestComponentCycleRejected(t *testing.T) {
	a, err := NewCodeShotAgent(AgentConfig{Name: "a", Components: []Component{comp{name: "x", after: []string{"y"}}, comp{name: "y", after: []string{"x"}}}})
	if err != nil {
		t.Fatal(err)
	}
	m := newManager(t, Config{Model: ModelConfig{LLM: script()}})
	if err := m.Register(a); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("register = %v", err)
	}
}

func TestAgentValidation(t *testing.T) {
	h := TextFunc(func(context.Context, string) (string, error) { return "", nil })
	tests := []struct {
		name string
		cfg  AgentConfig
		code string
	}{
		{"bad name", AgentConfig{Name: "a-b"}, kgagent.EINVALID},
		{"bad func name", AgentConfig{Name: "a", Funcs: []Func{{Name: "x y", Handler: h}}}, kgagent.EINVALID},
		{"no handler", AgentConfig{Name: "a", Funcs: []Func{{Name: "x"}}}, kgagent.EINVALID},
		{"duplicate func", AgentConfig{Name: "a", Funcs: []Func{{Name: "x", Handler: h}, {Name: "x", Handler: h}}}, kgagent.ECONFLICT},
		{"unregistered func in few-shot", AgentConfig{Name: "a", FewShots: []string{"Q: a\nAsk Func[x]: b\nFunc[x] says: c\nA: d"}}, kgagent.EINVALID},
		{"component command counts as registered", AgentConfig{Name: "a", FewShots: []string{"Q: a\nAsk Func[c_cmd]: b\nFunc[c_cmd] says: c\nA: d"},
			Components: []Component{&hooks{name: "c"}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewCodeShotAgent(tt.cfg)
			if kgagent.ErrorCode(err) != tt.code {
				t.Errorf("err = %v, want %q", err, tt.code)
			}
		})
	}
	a, _ := NewCodeShotAgent(AgentConfig{Name: "a"})
	if err := a.RegisterFunc(Func{Name: "late", Handler: h}); err != nil {
		t.Fatal(err)
	}
	if err := a.RegisterFunc(Func{Name: "late", Handler: h}); kgagent.ErrorCode(err) != kgagent.ECONFLICT {
		t.Errorf("second RegisterFunc = %v", err)
	}
}

func TestRouter(t *testing.T) {
	var calls []string
	var mu sync.Mutex
	weather := AgentConfig{Name: "weather", FewShots: SplitFewShots(`
Q: What is the weather forecast for tomorrow in CITY?
Ask Func[forecast]: CITY
Func[forecast] says: rain
A: Rain is expected in CITY tomorrow.`),
		Funcs: []Func{{Name: "forecast", Handler: TextFunc(func(context.Context, string) (string, error) { return "sun", nil })}}}
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"lexical", Config{}},
		{"embedder", Config{Route: RouteConfig{Embedder: corpus.NewLexical(corpus.LexicalConfig{}), Threshold: 0.45}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newManager(t, tc.cfg, stockAgent(&calls, &mu), weather)
			tests := []struct {
				q, want string
			}{
				{"What is the current price for GOOG?", "stocks"},
				{"Price for MSFT", "stocks"},
				{"What is the weather forecast for tomorrow in Paris?", "weather"},
				{"How do I rotate the log files?", "default"},
			}
			for _, tt := range tests {
				// The route event comes first whatever the agent then answers.
				var ev events
				_, err := m.Ask(context.Background(), Request{Question: tt.q}, ev.emit)
				all := ev.all()
				if len(all) == 0 || all[0].Kind != kgagent.EventRoute || all[0].Agent != tt.want {
					t.Errorf("Ask(%q) routed: %+v (err %v); want agent %s", tt.q, all, err, tt.want)
				}
			}
			var ev events
			if _, err := m.Ask(context.Background(), Request{Question: "Price for MSFT"}, ev.emit); err != nil {
				t.Fatal(err)
			}
			if e := ev.all()[0]; e.Kind != kgagent.EventRoute || e.Agent != "stocks" || !strings.Contains(e.Text, "routed to agent stocks") {
				t.Errorf("route event = %+v", e)
			}
		})
	}
}

// memSessions is an in-memory SessionStore for the manager's tests.
type memSessions struct {
	mu   sync.Mutex
	msgs map[string][]SessionMessage
}

func (s *memSessions) CreateSession(ctx context.Context, x Session) (Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs[x.ID] = nil
	return x, nil
}
func (s *memSessions) GetSession(ctx context.Context, id string) (Session, error) {
	return Session{ID: id}, nil
}
func (s *memSessions) ListSessions(ctx context.Context, u string) ([]Session, error) { return nil, nil }
func (s *memSessions) DeleteSession(ctx context.Context, id string) error            { return nil }
func (s *memSessions) AppendMessage(ctx context.Context, m SessionMessage) (SessionMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.msgs[m.SessionID]; !ok {
		return m, kgagent.Errorf(kgagent.ENOTFOUND, "no session")
	}
	s.msgs[m.SessionID] = append(s.msgs[m.SessionID], m)
	return m, nil
}
func (s *memSessions) Messages(ctx context.Context, id string) ([]SessionMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ms, ok := s.msgs[id]
	if !ok {
		return nil, kgagent.Errorf(kgagent.ENOTFOUND, "no session %s", id)
	}
	return append([]SessionMessage{}, ms...), nil
}

func TestConversationalSessions(t *testing.T) {
	store := &memSessions{msgs: map[string][]SessionMessage{"s1": nil}}
	llm := script("A: first answer", "A: second answer")
	m := newManager(t, Config{Model: ModelConfig{LLM: llm}, Sessions: SessionsConfig{Store: store, Record: true}},
		AgentConfig{Name: "chat", Conversational: true, FewShots: []string{"Q: hi\nA: hello\nQ: how are you\nA: fine"}})
	for _, q := range []string{"first question", "second question"} {
		if _, err := m.Ask(context.Background(), Request{Question: q, Agent: "chat", SessionID: "s1"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	msgs := llm.Calls()[1].Messages
	var got []string
	for _, mm := range msgs[1:] {
		got = append(got, mm.Role+":"+mm.Content)
	}
	if strings.Join(got, "|") != "user:Q: first question|assistant:A: first answer|user:Q: second question" {
		t.Errorf("second prompt = %q", got)
	}
	stored, _ := store.Messages(context.Background(), "s1")
	if len(stored) != 4 || stored[1].Role != "agent" || stored[1].Text != "first answer" || len(stored[1].Events) == 0 {
		t.Errorf("stored = %+v", stored)
	}
	// When the caller already appended the question (as the gateway does),
	// it is not repeated in the history.
	store2 := &memSessions{msgs: map[string][]SessionMessage{"s2": {
		{Role: "user", Text: "earlier"}, {Role: "agent", Text: "earlier answer"}, {Role: "user", Text: "now?"}}}}
	llm2 := script("A: ok")
	m2 := newManager(t, Config{Model: ModelConfig{LLM: llm2}, Sessions: SessionsConfig{Store: store2}}, AgentConfig{Name: "chat", Conversational: true})
	if _, err := m2.Ask(context.Background(), Request{Question: "now?", Agent: "chat", SessionID: "s2"}, nil); err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, mm := range llm2.Calls()[0].Messages[1:] {
		got = append(got, mm.Content)
	}
	if strings.Join(got, "|") != "Q: earlier|A: earlier answer|Q: now?" {
		t.Errorf("prompt = %q", got)
	}
	if n := len(store2.msgs["s2"]); n != 3 {
		t.Errorf("RecordSessions off, yet the store has %d messages", n)
	}
	if _, err := m.Ask(context.Background(), Request{Question: "q", Agent: "chat", SessionID: "nope"}, nil); kgagent.ErrorCode(err) != kgagent.ENOTFOUND {
		t.Errorf("unknown session: %v", err)
	}
}

func TestLLMErrors(t *testing.T) {
	failing := llmFunc(func(ctx context.Context, req llm.CompletionRequest) (llm.Stream, error) {
		return nil, errors.New("connection refused")
	})
	typed := llmFunc(func(ctx context.Context, req llm.CompletionRequest) (llm.Stream, error) {
		return nil, kgagent.Errorf(kgagent.ERATELIMIT, "quota exceeded")
	})
	slow := llmFunc(func(ctx context.Context, req llm.CompletionRequest) (llm.Stream, error) {
		return &scriptStream{ctx: ctx, parts: []string{"<block>"}}, nil
	})
	tests := []struct {
		name string
		cfg  Config
		code string
	}{
		{"untyped", Config{Model: ModelConfig{LLM: failing}}, kgagent.EUNAVAILABLE},
		{"typed", Config{Model: ModelConfig{LLM: typed}}, kgagent.ERATELIMIT},
		{"llm timeout", Config{Model: ModelConfig{LLM: slow, CallTimeout: 20 * time.Millisecond}}, kgagent.ETIMEOUT},
	}
	for _, tt := range tests {
		m := newManager(t, tt.cfg)
		if _, err := m.Ask(context.Background(), Request{Question: "q", Agent: "default"}, nil); kgagent.ErrorCode(err) != tt.code {
			t.Errorf("%s: err = %v, want %s", tt.name, err, tt.code)
		}
	}
}

type llmFunc func(ctx context.Context, req llm.CompletionRequest) (llm.Stream, error)

func (f llmFunc) Complete(ctx context.Context, req llm.CompletionRequest) (llm.Stream, error) {
	return f(ctx, req)
}
