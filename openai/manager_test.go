package openai_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/internal/poll"
	"github.com/kgagent/kgagent/llm"
	"github.com/kgagent/kgagent/openai"
	"github.com/kgagent/kgagent/openai/openaitest"
)

// These tests run the real agent.Manager with the real client against the
// scripted server over loopback HTTP and SSE.

const weatherShots = `Q: What is the weather in Paris?
Ask Func[weather]: Paris
Func[weather] says: sunny, 21C
A: It is sunny in Paris, 21C.`

// recorder collects a run's events; safe for concurrent use.
type recorder struct {
	mu sync.Mutex
	ev []kgagent.Event
	ch chan kgagent.Event
}

func newRecorder() *recorder { return &recorder{ch: make(chan kgagent.Event, 1024)} }

func (r *recorder) emit(ev kgagent.Event) {
	r.mu.Lock()
	r.ev = append(r.ev, ev)
	r.mu.Unlock()
	r.ch <- ev
}

func (r *recorder) events() []kgagent.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]kgagent.Event(nil), r.ev...)
}

func (r *recorder) kinds() []kgagent.EventKind {
	var out []kgagent.EventKind
	for _, e := range r.events() {
		if !e.Delta {
			out = append(out, e.Kind)
		}
	}
	return out
}

// weatherManager returns a Manager driving the scripted server with one
// agent, "weather", whose func records the inputs it gets.
func weatherManager(t *testing.T, srv *openaitest.Server, mod func(*agent.Config)) (*agent.Manager, *[]string) {
	t.Helper()
	client := newClient(t, fast(srv))
	cfg := agent.Config{Model: agent.ModelConfig{LLM: client, Name: "scripted"}, Loop: agent.LoopConfig{FuncTimeout: 5 * time.Second}}
	if mod != nil {
		mod(&cfg)
	}
	m, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var inputs []string
	a, err := agent.NewCodeShotAgent(agent.AgentConfig{
		Name:       "weather",
		BasePrompt: "You tell the weather.",
		FewShots:   []string{weatherShots},
		Funcs: []agent.Func{{Name: "weather", Description: "current weather of a city", Handler: agent.TextFunc(func(ctx context.Context, city string) (string, error) {
			mu.Lock()
			inputs = append(inputs, city)
			mu.Unlock()
			return "sunny in " + city + ", 21C", nil
		})}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Register(a); err != nil {
		t.Fatal(err)
	}
	return m, &inputs
}

func TestManagerToolLoop(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Reply("I need the weather first.\nAsk Func[weather]: Berlin\nFunc[weather] says: invented by the model").WithUsage(100, 12),
		openaitest.Reply("A: It is sunny in Berlin, 21C.").WithUsage(130, 9),
	)
	m, inputs := weatherManager(t, srv, nil)
	rec := newRecorder()
	ans, err := m.Ask(context.Background(), agent.Request{Agent: "weather", Question: "What is the weather in Berlin?"}, rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Answer != "It is sunny in Berlin, 21C." {
		t.Errorf("answer = %q", ans.Answer)
	}
	if ans.Usage != (kgagent.Usage{PromptTokens: 230, CompletionTokens: 21}) {
		t.Errorf("usage = %+v, want the sum of both calls", ans.Usage)
	}
	if got := strings.Join(*inputs, "|"); got != "Berlin" {
		t.Errorf("func inputs = %q", got)
	}
	want := []kgagent.EventKind{kgagent.EventRoute, kgagent.EventThought, kgagent.EventAction, kgagent.EventObservation, kgagent.EventAnswer}
	if got := rec.kinds(); !equalKinds(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	var deltas strings.Builder
	for _, e := range rec.events() {
		switch {
		case e.Delta:
			deltas.WriteString(e.Text)
		case e.Kind == kgagent.EventThought && e.Text != "I need the weather first.":
			t.Errorf("thought %q", e.Text)
		case e.Kind == kgagent.EventAction && (e.Func != "weather" || e.Text != "Ask Func[weather]: Berlin"):
			t.Errorf("action %+v", e)
		case e.Kind == kgagent.EventObservation && e.Text != "sunny in Berlin, 21C":
			t.Errorf("observation %q (the model's invented reply must not be used)", e.Text)
		case e.Kind == kgagent.EventAnswer && (!e.Final || e.Usage == nil || e.Usage.CompletionTokens != 21):
			t.Errorf("final answer event %+v", e)
		}
	}
	if strings.TrimSpace(deltas.String()) != ans.Answer {
		t.Errorf("streamed answer tokens %q, want %q", deltas.String(), ans.Answer)
	}

	reqs := srv.ChatRequests()
	if len(reqs) != 2 {
		t.Fatalf("%d LLM calls, want 2", len(reqs))
	}
	for _, r := range reqs {
		if strings.Join(r.Body.Stop, "|") != strings.Join(agent.StopSequences, "|") || !r.Body.Stream {
			t.Errorf("stop %q stream %v", r.Body.Stop, r.Body.Stream)
		}
	}
	sys := reqs[0].Body.Messages[0]
	if sys.Role != "system" || !strings.Contains(sys.Content, "You tell the weather.") || !strings.Contains(sys.Content, "Ask Func[weather]: Paris") {
		t.Errorf("system prompt lacks base prompt or few-shots:\n%s", sys.Content)
	}
	if last := reqs[0].Body.Messages[len(reqs[0].Body.Messages)-1]; last.Content != "Q: What is the weather in Berlin?" {
		t.Errorf("first call ends with %+v", last)
	}
	second := reqs[1].Body.Messages
	n := len(second)
	if second[n-2].Role != "assistant" || !strings.Contains(second[n-2].Content, "Ask Func[weather]: Berlin") ||
		second[n-1].Role != "user" || second[n-1].Content != "Func[weather] says: sunny in Berlin, 21C" {
		t.Errorf("second call does not feed the observation back: %+v", second[n-2:])
	}
}

func equalKinds(a, b []kgagent.EventKind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestManagerFailures(t *testing.T) {
	tests := []struct {
		name      string
		steps     []openaitest.Step
		fallback  *openaitest.Step
		mod       func(*agent.Config)
		wantCode  string
		wantAns   string
		wantCalls int
		check     func(t *testing.T, srv *openaitest.Server, rec *recorder)
	}{
		{
			name:      "malformed output fed back",
			steps:     []openaitest.Step{openaitest.Reply("Func[weather] says: I made this up"), openaitest.Reply("A: Sorry, fixed.")},
			wantAns:   "Sorry, fixed.",
			wantCalls: 2,
			check: func(t *testing.T, srv *openaitest.Server, rec *recorder) {
				msgs := srv.ChatRequests()[1].Body.Messages
				if last := msgs[len(msgs)-1]; last.Role != "user" || !strings.HasPrefix(last.Content, "Error: ") {
					t.Errorf("malformed output not fed back as an error: %+v", last)
				}
				errs := 0
				for _, e := range rec.events() {
					if e.Kind == kgagent.EventError && !e.Final {
						errs++
					}
				}
				if errs != 1 {
					t.Errorf("%d error events, want 1 for the malformed output", errs)
				}
			},
		},
		{
			name:      "malformed past the limit",
			fallback:  ptr(openaitest.Reply("Q: a question of my own")),
			mod:       func(c *agent.Config) { c.Loop.MaxMalformed = 1 },
			wantCode:  kgagent.EUNAVAILABLE,
			wantCalls: 2,
		},
		{
			name:      "iteration limit",
			fallback:  ptr(openaitest.Reply("Ask Func[weather]: Paris")),
			mod:       func(c *agent.Config) { c.Loop.MaxIterations = 3 },
			wantCode:  kgagent.EUNAVAILABLE,
			wantCalls: 3,
			check: func(t *testing.T, srv *openaitest.Server, rec *recorder) {
				ev := rec.events()
				last := ev[len(ev)-1]
				if last.Kind != kgagent.EventError || !last.Final || !strings.Contains(last.Text, "iteration limit") {
					t.Errorf("last event %+v, want a final iteration-limit error", last)
				}
			},
		},
		{
			name:      "429 then success",
			steps:     []openaitest.Step{openaitest.RateLimited(10 * time.Millisecond), openaitest.Reply("A: Sunny.")},
			wantAns:   "Sunny.",
			wantCalls: 2,
		},
		{
			name:      "500 then success",
			steps:     []openaitest.Step{openaitest.ServerError(), openaitest.Reply("A: Sunny.")},
			wantAns:   "Sunny.",
			wantCalls: 2,
		},
		{
			name:      "quota exhausted",
			steps:     []openaitest.Step{openaitest.QuotaExceeded(), openaitest.Reply("A: never")},
			wantCode:  kgagent.ERATELIMIT,
			wantCalls: 1,
			check: func(t *testing.T, srv *openaitest.Server, rec *recorder) {
				ev := rec.events()
				last := ev[len(ev)-1]
				if last.Kind != kgagent.EventError || !last.Final || last.Error == nil || last.Error.Code != kgagent.ERATELIMIT {
					t.Errorf("last event %+v, want a final RATE_LIMITED error", last)
				}
			},
		},
		{
			name:      "bad key",
			steps:     []openaitest.Step{openaitest.Unauthorized()},
			wantCode:  kgagent.EUNAUTH,
			wantCalls: 1,
		},
		{
			name: "server keeps failing",
			steps: []openaitest.Step{openaitest.ServerError(), openaitest.ServerError(), openaitest.ServerError(),
				openaitest.ServerError()},
			wantCode:  kgagent.EUNAVAILABLE,
			wantCalls: 4, // the first try and DefaultMaxRetries retries
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.New(t, tt.steps...)
			if tt.fallback != nil {
				srv.SetDefault(*tt.fallback)
			}
			m, _ := weatherManager(t, srv, tt.mod)
			rec := newRecorder()
			ans, err := m.Ask(context.Background(), agent.Request{Agent: "weather", Question: "Weather in Rome?"}, rec.emit)
			if got := kgagent.ErrorCode(err); got != tt.wantCode {
				t.Fatalf("code %q (%v), want %q", got, err, tt.wantCode)
			}
			if err == nil && ans.Answer != tt.wantAns {
				t.Errorf("answer %q, want %q", ans.Answer, tt.wantAns)
			}
			if n := len(srv.ChatRequests()); n != tt.wantCalls {
				t.Errorf("%d LLM calls, want %d", n, tt.wantCalls)
			}
			if tt.check != nil {
				tt.check(t, srv, rec)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestManagerCancelMidStream(t *testing.T) {
	srv := openaitest.New(t, openaitest.Hang("A: It", " is", " sunny", " and"))
	m, _ := weatherManager(t, srv, nil)
	rec := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		ans kgagent.Answer
		err error
	}
	done := make(chan result, 1)
	go func() {
		ans, err := m.Ask(ctx, agent.Request{Agent: "weather", Question: "Weather?"}, rec.emit)
		done <- result{ans, err}
	}()
	// Wait for the first streamed answer token, then hang up.
	deadline := time.After(10 * time.Second)
	for waiting := true; waiting; {
		select {
		case e := <-rec.ch:
			waiting = !e.Delta
		case <-deadline:
			t.Fatal("no answer token streamed")
		}
	}
	start := time.Now()
	cancel()
	select {
	case r := <-done:
		if kgagent.ErrorCode(r.err) != kgagent.ECANCELED {
			t.Fatalf("err = %v, want %s", r.err, kgagent.ECANCELED)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Ask did not return after cancel")
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("cancel took %v", el)
	}
	// The server sees the connection close: its handler returns.
	poll.True(t, 5*time.Second, "the server stops streaming after cancel", func() bool { return srv.Active() == 0 })
	if n := len(srv.ChatRequests()); n != 1 {
		t.Errorf("%d LLM calls after cancel, want 1", n)
	}
}

func TestManagerLLMTimeout(t *testing.T) {
	// A call cut by its timeout is judged on what it wrote: a complete
	// action is taken; an unfinished step is fed back as a correction, and
	// calls that keep timing out end the run with TIMEOUT.
	srv := openaitest.New(t, openaitest.Hang("Thinking"), openaitest.Hang("Ask Func[weather]: Paris\n", "more"), openaitest.Hang("A: sunny"),
		openaitest.Hang("Thinking"), openaitest.Hang("Still"), openaitest.Hang("Thinking"))
	m, _ := weatherManager(t, srv, func(c *agent.Config) { c.Model.CallTimeout = 100 * time.Millisecond })
	ans, err := m.Ask(context.Background(), agent.Request{Agent: "weather", Question: "Weather?"}, nil)
	if err != nil || ans.Answer != "sunny" || ans.Iterations != 3 {
		t.Fatalf("answer %+v, %v", ans, err)
	}
	_, err = m.Ask(context.Background(), agent.Request{Agent: "weather", Question: "Weather tomorrow?"}, nil)
	if c := kgagent.ErrorCode(err); c != kgagent.ETIMEOUT {
		t.Fatalf("err = %v, want %s", err, kgagent.ETIMEOUT)
	}
}

var _ llm.LLM = (*openai.Client)(nil)
