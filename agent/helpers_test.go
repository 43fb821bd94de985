package agent

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/llm"
)

// scripted is an in-package fake LLM that replays outputs, each as a list of
// deltas, and records the prompts it was given. An output "<block>" blocks
// until the context ends.
type scripted struct {
	mu      sync.Mutex
	outputs [][]string
	repeat  bool // replay the last output forever
	calls   []llm.CompletionRequest
}

func script(outputs ...string) *scripted {
	s := &scripted{}
	for _, o := range outputs {
		s.outputs = append(s.outputs, []string{o})
	}
	return s
}

func (s *scripted) Complete(ctx context.Context, req llm.CompletionRequest) (llm.Stream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, req)
	i := len(s.calls) - 1
	if i >= len(s.outputs) {
		if !s.repeat || len(s.outputs) == 0 {
			return nil, kgagent.Errorf(kgagent.EUNAVAILABLE, "script exhausted")
		}
		i = len(s.outputs) - 1
	}
	return &scriptStream{ctx: ctx, parts: s.outputs[i]}, nil
}

func (s *scripted) Calls() []llm.CompletionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]llm.CompletionRequest{}, s.calls...)
}

type scriptStream struct {
	ctx   context.Context
	parts []string
	i     int
}

func (s *scriptStream) Recv() (llm.Delta, error) {
	if s.i < len(s.parts) && s.parts[s.i] == "<block>" {
		<-s.ctx.Done()
		return llm.Delta{}, s.ctx.Err()
	}
	if s.i >= len(s.parts) {
		return llm.Delta{Usage: &kgagent.Usage{PromptTokens: 10, CompletionTokens: 2}}, io.EOF
	}
	s.i++
	return llm.Delta{Text: s.parts[s.i-1]}, nil
}

func (s *scriptStream) Close() error { return nil }

// events collects the events of a run, safe for concurrent use.
type events struct {
	mu sync.Mutex
	ev []kgagent.Event
}

func (e *events) emit(ev kgagent.Event) {
	e.mu.Lock()
	e.ev = append(e.ev, ev)
	e.mu.Unlock()
}

func (e *events) all() []kgagent.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]kgagent.Event{}, e.ev...)
}

func (e *events) kinds() string {
	var b []string
	for _, ev := range e.all() {
		k := string(ev.Kind)
		if ev.Delta {
			if len(b) > 0 && b[len(b)-1] == "deltas" {
				continue
			}
			k = "deltas"
		}
		if ev.Final {
			k += "!"
		}
		b = append(b, k)
	}
	return strings.Join(b, " ")
}

func checkSeq(t *testing.T, evs []kgagent.Event, reqID string) {
	t.Helper()
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Errorf("event %d has seq %d", i, ev.Seq)
		}
		if ev.RequestID != reqID {
			t.Errorf("event %d has request id %q, want %q", i, ev.RequestID, reqID)
		}
		if ev.Time.IsZero() {
			t.Errorf("event %d has no time", i)
		}
		if ev.Final != (i == len(evs)-1) {
			t.Errorf("event %d final=%v", i, ev.Final)
		}
	}
}

func quoteFunc(calls *[]string, mu *sync.Mutex) Func {
	return Func{Name: "quote", Description: "stock quote", Handler: TextFunc(func(ctx context.Context, s string) (string, error) {
		mu.Lock()
		*calls = append(*calls, s)
		mu.Unlock()
		return "$105.22", nil
	})}
}

const stockShots = `
Q: What is the current price for SYMBOL?
Ask Func[quote]: SYMBOL
Func[quote] says: $123.45
A: The current price for SYMBOL is $123.45.

Q: SYMBOL share price
Ask Func[quote]: SYMBOL
Func[quote] says: $34.52
A: The share price for SYMBOL is $34.52.

Q: Price for SYMBOL
Ask Func[quote]: SYMBOL
Func[quote] says: $99.11
A: The share price for SYMBOL is $99.11
`

func newManager(t *testing.T, cfg Config, agents ...AgentConfig) *Manager {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC) }
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, ac := range agents {
		a, err := NewCodeShotAgent(ac)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Register(a); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// checkWords reports each of want that answer lacks and each of notWant
// that it has.
func checkWords(t *testing.T, answer string, want, notWant []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(answer, w) {
			t.Errorf("answer %q lacks %q", answer, w)
		}
	}
	for _, w := range notWant {
		if strings.Contains(answer, w) {
			t.Errorf("answer %q has %q", answer, w)
		}
	}
}
