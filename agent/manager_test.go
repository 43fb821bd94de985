package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/poll"
)

func stockAgent(calls *[]string, mu *sync.Mutex) AgentConfig {
	return AgentConfig{Name: "stocks", BasePrompt: "I answer questions about stock prices.", FewShots: SplitFewShots(stockShots),
		Funcs: []Func{quoteFunc(calls, mu)}}
}

func TestAskToolLoop(t *testing.T) {
	var calls []string
	var mu sync.Mutex
	llm := &scripted{outputs: [][]string{
		{"I need the quote.\nAsk Func[quote]: GOOG"},
		{"A: The pri", "ce of GOOG", " is $105.22."},
	}}
	m := newManager(t, Config{Model: ModelConfig{LLM: llm}, NewID: func() string { return "req-1" }}, stockAgent(&calls, &mu))
	var ev events
	ans, err := m.Ask(context.Background(), Request{Question: "What is the price of GOOG?", Agent: "stocks"}, ev.emit)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Answer != "The price of GOOG is $105.22." || ans.Agent != "stocks" || ans.RequestID != "req-1" || ans.Iterations != 2 {
		t.Fatalf("answer = %+v", ans)
	}
	if ans.Usage.PromptTokens != 20 {
		t.Errorf("usage = %+v", ans.Usage)
	}
	if len(calls) != 1 || calls[0] != "GOOG" {
		t.Fatalf("func calls = %q", calls)
	}
	if got, want := ev.kinds(), "route thought action observation deltas answer!"; got != want {
		t.Fatalf("events = %s, want %s", got, want)
	}
	evs := ev.all()
	checkSeq(t, evs, "req-1")
	var deltas string
	for _, e := range evs {
		if e.Delta {
			deltas += e.Text
		}
	}
	if deltas != ans.Answer {
		t.Errorf("deltas %q != answer %q", deltas, ans.Answer)
	}
	if evs[1].Text != "I need the quote." || evs[2].Func != "quote" || evs[3].Text != "$105.22" {
		t.Errorf("thought/action/observation = %+v", evs[1:4])
	}
	// The second prompt carries the observation, the first the few-shots.
	cs := llm.Calls()
	if len(cs) != 2 {
		t.Fatalf("%d LLM calls", len(cs))
	}
	sys := cs[0].Messages[0].Content
	for _, want := range []string{"I answer questions about stock prices.", ExamplesHeader, "Q: Price for SYMBOL", "Func[quote]", "Func[fixie_query_corpus]",
		"Resources:\n- Agent[default]: Answers questions about the indexed documentation"} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q", want)
		}
	}
	last := cs[1].Messages[len(cs[1].Messages)-1]
	if last.Role != "user" || last.Content != "Func[quote] says: $105.22" {
		t.Errorf("last message = %+v", last)
	}
	if strings.Join(cs[0].Stop, "|") != "\nFunc[|\nAgent[|\nQ:" {
		t.Errorf("stop = %q", cs[0].Stop)
	}
}

func TestAskCutsAtStopSequences(t *testing.T) {
	var calls []string
	var mu sync.Mutex
	// This model ignores stop sequences and invents the reply and answer.
	llm := script("Ask Func[quote]: MSFT\nFunc[quote] says: $1\nA: $1", "A: It is $105.22.\nQ: next question\nA: no")
	m := newManager(t, Config{Model: ModelConfig{LLM: llm}}, stockAgent(&calls, &mu))
	var ev events
	ans, err := m.Ask(context.Background(), Request{Question: "MSFT?", Agent: "stocks"}, ev.emit)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0] != "MSFT" || ans.Answer != "It is $105.22." {
		t.Fatalf("calls %q answer %q", calls, ans.Answer)
	}
	for _, e := range ev.all() {
		if e.Delta && strings.Contains(e.Text, "Q:") {
			t.Errorf("delta leaked past the stop sequence: %q", e.Text)
		}
	}
}

func TestAskStreamsSplitStopSequence(t *testing.T) {
	llm := &scripted{outputs: [][]string{{"A: done", "\nQ", ": more"}}}
	m := newManager(t, Config{Model: ModelConfig{LLM: llm}})
	var ev events
	ans, err := m.Ask(context.Background(), Request{Question: "x?", Agent: "default"}, ev.emit)
	if err != nil || ans.Answer != "done" {
		t.Fatalf("%q %v", ans.Answer, err)
	}
	var d string
	for _, e := range ev.all() {
		if e.Delta {
			d += e.Text
		}
	}
	if d != "done" {
		t.Errorf("deltas = %q", d)
	}
}

func TestAskSourcesAreThoseCited(t *testing.T) {
	src := func(n int) kgagent.Source {
		return kgagent.Source{URL: fmt.Sprintf("https://docs/p%d#s", n), Title: fmt.Sprintf("P%d", n), Score: float64(n)}
	}
	f := Func{Name: "lookup", Handler: func(ctx context.Context, c FuncCall) (FuncResult, error) {
		var b strings.Builder
		var res FuncResult
		for i := 1; i <= 3; i++ {
			s := src(i)
			fmt.Fprintf(&b, "[%d] %s\n", c.Cite(s), s.Title)
			res.Sources = append(res.Sources, s)
		}
		res.Message.Text = b.String()
		return res, nil
	}}
	// Sources are the cited ones, numbered by first use (the answer's
	// numbers are rewritten to match), then the others retrieval found.
	tests := []struct {
		answer, text string
		want         []string
	}{
		{"A: See [3] and [1].", "See [1] and [2].", []string{"P3", "P1", "P2"}},
		{"A: See [2, 3].", "See [1, 2].", []string{"P2", "P3", "P1"}},
		{"A: No citation.", "No citation.", []string{"P1", "P2", "P3"}},
		{"A: Out of range [9].", "Out of range.", []string{"P1", "P2", "P3"}},
	}
	for _, tt := range tests {
		t.Run(tt.answer, func(t *testing.T) {
			llm := script("Ask Func[lookup]: x", tt.answer)
			m := newManager(t, Config{Model: ModelConfig{LLM: llm}}, AgentConfig{Name: "a", Funcs: []Func{f}})
			var ev events
			ans, err := m.Ask(context.Background(), Request{Question: "q", Agent: "a"}, ev.emit)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range ans.Sources {
				got = append(got, s.Title)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("sources = %v, want %v", got, tt.want)
			}
			if ans.Answer != tt.text {
				t.Errorf("answer = %q, want %q", ans.Answer, tt.text)
			}
			var deltas strings.Builder
			for _, e := range ev.all() {
				if e.Kind == kgagent.EventAnswer && e.Delta {
					deltas.WriteString(e.Text)
				}
			}
			if strings.TrimSpace(deltas.String()) != ans.Answer {
				t.Errorf("deltas %q differ from the answer %q", deltas.String(), ans.Answer)
			}
			evs := ev.all()
			final := evs[len(evs)-1]
			if len(final.Sources) != len(ans.Sources) || (len(final.Sources) > 0 && final.Sources[0].URL != ans.Sources[0].URL) {
				t.Errorf("final event sources %v != answer sources %v", final.Sources, ans.Sources)
			}
		})
	}
}

func TestAskMalformedOutput(t *testing.T) {
	tests := []struct {
		name    string
		outputs []string
		max     int
		wantErr bool
		kinds   string
	}{
		{"recovers", []string{"I think the answer is four", "A: four"}, 0, false, "route error deltas answer!"},
		{"invented observation", []string{"Func[x] says: 4", "A: four"}, 0, false, "route error deltas answer!"},
		{"malformed ask", []string{"Ask Func[bad name]: x", "A: four"}, 0, false, "route error deltas answer!"},
		{"gives up", []string{"no", "still no", "never"}, 0, true, "route error error error error!"},
		{"bounded by config", []string{"no", "no"}, 1, true, "route error error error!"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			llm := script(tt.outputs...)
			m := newManager(t, Config{Model: ModelConfig{LLM: llm}, Loop: LoopConfig{MaxMalformed: tt.max}})
			var ev events
			_, err := m.Ask(context.Background(), Request{Question: "2+2?", Agent: "default"}, ev.emit)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err != nil && kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
				t.Errorf("code = %s", kgagent.ErrorCode(err))
			}
			if got := ev.kinds(); got != tt.kinds {
				t.Errorf("events = %s, want %s", got, tt.kinds)
			}
			cs := llm.Calls()
			if len(cs) > 1 {
				last := cs[1].Messages[len(cs[1].Messages)-1]
				if !strings.HasPrefix(last.Content, "Error: ") {
					t.Errorf("malformed output not fed back: %q", last.Content)
				}
			}
		})
	}
}

func TestPlainTextAnswers(t *testing.T) {
	tests := []struct {
		out, want string
		malformed bool
	}{
		{"The answer is four.", "The answer is four.", false},
		{"Func[x] says: 4", "", true},
		{"Ask Func[bad name]: x", "", true},
	}
	for _, tt := range tests {
		llm := script(tt.out, "A: fixed")
		m := newManager(t, Config{Model: ModelConfig{LLM: llm, PlainTextAnswers: true}})
		var ev events
		ans, err := m.Ask(context.Background(), Request{Question: "2+2?", Agent: "default"}, ev.emit)
		if err != nil {
			t.Fatal(err)
		}
		if tt.malformed {
			if ans.Answer != "fixed" {
				t.Errorf("%q: answer %q", tt.out, ans.Answer)
			}
			continue
		}
		if ans.Answer != tt.want || ev.kinds() != "route deltas answer!" {
			t.Errorf("%q: answer %q events %s", tt.out, ans.Answer, ev.kinds())
		}
	}
}

func TestAskIterationLimit(t *testing.T) {
	var calls []string
	var mu sync.Mutex
	llm := &scripted{outputs: [][]string{{"Ask Func[quote]: X"}}, repeat: true}
	m := newManager(t, Config{Model: ModelConfig{LLM: llm}, Loop: LoopConfig{MaxIterations: 3}}, stockAgent(&calls, &mu))
	var ev events
	ans, err := m.Ask(context.Background(), Request{Question: "loop", Agent: "stocks"}, ev.emit)
	var ke *kgagent.Error
	if !errors.As(err, &ke) || ke.Code != kgagent.EUNAVAILABLE || !strings.Contains(ke.Message, "iteration limit (3)") {
		t.Fatalf("err = %v", err)
	}
	// The same action with the same input is run once; the model is told so
	// and asked to answer, and on the last call to answer now.
	if len(llm.Calls()) != 3 || len(calls) != 1 || ans.Iterations != 3 {
		t.Errorf("llm calls %d, func calls %d, iterations %d", len(llm.Calls()), len(calls), ans.Iterations)
	}
	last := llm.Calls()[2].Messages
	if fed := last[len(last)-1].Content; !strings.Contains(fed, "not fetched again") || !strings.Contains(fed, answerNow) {
		t.Errorf("repeated action fed back as %q", fed)
	}

	evs := ev.all()
	checkSeq(t, evs, evs[0].RequestID)
	if last := evs[len(evs)-1]; last.Kind != kgagent.EventError || last.Error == nil || last.Error.Code != kgagent.EUNAVAILABLE {
		t.Errorf("last event = %+v", last)
	}
}

func TestAskCancellation(t *testing.T) {
	t.Run("during LLM stream", func(t *testing.T) {
		llm := &scripted{outputs: [][]string{{"A: partial", "<block>"}}}
		m := newManager(t, Config{Model: ModelConfig{LLM: llm}})
		ctx, cancel := context.WithCancel(context.Background())
		var ev events
		done := make(chan error, 1)
		go func() {
			_, err := m.Ask(ctx, Request{Question: "q", Agent: "default"}, ev.emit)
			done <- err
		}()
		waitFor(t, func() bool { return len(ev.all()) >= 1 })
		cancel()
		select {
		case err := <-done:
			if kgagent.ErrorCode(err) != kgagent.ECANCELED {
				t.Fatalf("err = %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Ask did not stop after cancel")
		}
		evs := ev.all()
		if last := evs[len(evs)-1]; !last.Final || last.Error == nil || last.Error.Code != kgagent.ECANCELED {
			t.Errorf("last event = %+v", last)
		}
	})
	t.Run("during func", func(t *testing.T) {
		started := make(chan struct{})
		slow := Func{Name: "slow", Handler: func(ctx context.Context, c FuncCall) (FuncResult, error) {
			close(started)
			<-ctx.Done()
			return FuncResult{}, ctx.Err()
		}}
		llm := script("Ask Func[slow]: x", "A: never")
		m := newManager(t, Config{Model: ModelConfig{LLM: llm}}, AgentConfig{Name: "a", Funcs: []Func{slow}})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ctx2, cancel2 := context.WithCancel(ctx)
		go func() { <-started; cancel2() }()
		_, err := m.Ask(ctx2, Request{Question: "q", Agent: "a"}, nil)
		if kgagent.ErrorCode(err) != kgagent.ECANCELED || len(llm.Calls()) != 1 {
			t.Fatalf("err = %v, llm calls %d", err, len(llm.Calls()))
		}
	})
	t.Run("func timeout is an observation", func(t *testing.T) {
		slow := Func{Name: "slow", Handler: func(ctx context.Context, c FuncCall) (FuncResult, error) {
			<-ctx.Done()
			return FuncResult{}, ctx.Err()
		}}
		llm := script("Ask Func[slow]: x", "A: it timed out")
		m := newManager(t, Config{Model: ModelConfig{LLM: llm}, Loop: LoopConfig{FuncTimeout: 20 * time.Millisecond}}, AgentConfig{Name: "a", Funcs: []Func{slow}})
		var ev events
		ans, err := m.Ask(context.Background(), Request{Question: "q", Agent: "a"}, ev.emit)
		if err != nil || ans.Answer != "it timed out" {
			t.Fatalf("%v %v", ans, err)
		}
		var obs kgagent.Event
		for _, e := range ev.all() {
			if e.Kind == kgagent.EventObservation {
				obs = e
			}
		}
		if obs.Error == nil || obs.Error.Code != kgagent.ETIMEOUT {
			t.Errorf("observation = %+v", obs)
		}
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	poll.True(t, 5*time.Second, "the condition holds", cond)
}

func TestAskFuncErrors(t *testing.T) {
	boom := Func{Name: "boom", Handler: func(ctx context.Context, c FuncCall) (FuncResult, error) { panic("kaboom") }}
	typed := Func{Name: "typed", Handler: func(ctx context.Context, c FuncCall) (FuncResult, error) {
		return FuncResult{}, &kgagent.Error{Code: kgagent.ERATELIMIT, Message: "slow down", Details: map[string]any{"retry": 2}}
	}}
	tests := []struct {
		ask      string
		code     string
		contains string
	}{
		{"Ask Func[nope]: x", kgagent.EFuncNotDefined, "Func[nope] says: Error (ERR_FUNC_NOT_DEFINED): I'm sorry, Func[nope] is not defined."},
		{"Ask Func[boom]: x", kgagent.EAgentUnhandled, "Func[boom] says: Error (ERR_AGENT_UNHANDLED_EXCEPTION)"},
		{"Ask Func[typed]: x", kgagent.ERATELIMIT, "Func[typed] says: Error (RATE_LIMITED): slow down"},
		{"Ask Agent[ghost]: x", kgagent.ENOTFOUND, "Agent[ghost] says: Error (NOT_FOUND): I'm sorry, Agent[ghost] is not registered."},
	}
	for _, tt := range tests {
		t.Run(tt.ask, func(t *testing.T) {
			llm := script(tt.ask, "A: sorry")
			m := newManager(t, Config{Model: ModelConfig{LLM: llm}}, AgentConfig{Name: "a", Funcs: []Func{boom, typed}})
			var ev events
			if _, err := m.Ask(context.Background(), Request{Question: "q", Agent: "a"}, ev.emit); err != nil {
				t.Fatal(err)
			}
			evs := ev.all()
			obs := evs[2]
			if obs.Kind != kgagent.EventObservation || obs.Error == nil || obs.Error.Code != tt.code {
				t.Fatalf("observation = %+v", obs)
			}
			msgs := llm.Calls()[1].Messages
			if got := msgs[len(msgs)-1].Content; !strings.HasPrefix(got, tt.contains) {
				t.Errorf("fed back %q, want prefix %q", got, tt.contains)
			}
		})
	}
}

func TestAskValidation(t *testing.T) {
	m := newManager(t, Config{Model: ModelConfig{LLM: script()}})
	tests := []struct {
		req  Request
		code string
	}{
		{Request{Question: "  "}, kgagent.EINVALID},
		{Request{Question: "q", Agent: "missing"}, kgagent.ENOTFOUND},
	}
	for _, tt := range tests {
		var ev events
		_, err := m.Ask(context.Background(), tt.req, ev.emit)
		if kgagent.ErrorCode(err) != tt.code {
			t.Errorf("%+v: err = %v", tt.req, err)
		}
		evs := ev.all()
		if len(evs) == 0 || !evs[len(evs)-1].Final || evs[len(evs)-1].Kind != kgagent.EventError {
			t.Errorf("no final error event: %+v", evs)
		}
	}
}

func TestDelegation(t *testing.T) {
	t.Run("local agent answers", func(t *testing.T) {
		llm := script("Ask Agent[b]: what is up?", "A: b says up", "A: up is up")
		m := newManager(t, Config{Model: ModelConfig{LLM: llm}}, AgentConfig{Name: "a"}, AgentConfig{Name: "b"})
		var ev events
		ans, err := m.Ask(context.Background(), Request{Question: "q", Agent: "a"}, ev.emit)
		if err != nil || ans.Answer != "up is up" {
			t.Fatalf("%+v %v", ans, err)
		}
		msgs := llm.Calls()[1].Messages
		if got := msgs[len(msgs)-1].Content; got != "Q: what is up?" {
			t.Errorf("sub-agent question = %q", got)
		}
		msgs = llm.Calls()[2].Messages
		if got := msgs[len(msgs)-1].Content; got != "Agent[b] says: b says up" {
			t.Errorf("observation = %q", got)
		}
		if got := ev.kinds(); got != "route action observation deltas answer!" {
			t.Errorf("events = %s", got)
		}
	})
	t.Run("cycle", func(t *testing.T) {
		llm := script("Ask Agent[b]: x", "Ask Agent[a]: y", "A: b gives up", "A: done")
		m := newManager(t, Config{Model: ModelConfig{LLM: llm}}, AgentConfig{Name: "a"}, AgentConfig{Name: "b"})
		var ev events
		if _, err := m.Ask(context.Background(), Request{Question: "q", Agent: "a"}, ev.emit); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range ev.all() {
			if e.Error != nil && strings.Contains(e.Error.Message, "delegation cycle: a -> b -> a") {
				found = true
			}
		}
		if !found {
			t.Errorf("no cycle error in %+v", ev.all())
		}
	})
	t.Run("depth", func(t *testing.T) {
		llm := script("Ask Agent[b]: x", "Ask Agent[c]: y", "A: c unreachable", "A: done")
		m := newManager(t, Config{Model: ModelConfig{LLM: llm}, Loop: LoopConfig{MaxDepth: 1}}, AgentConfig{Name: "a"}, AgentConfig{Name: "b"}, AgentConfig{Name: "c"})
		var ev events
		if _, err := m.Ask(context.Background(), Request{Question: "q", Agent: "a"}, ev.emit); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range ev.all() {
			if e.Error != nil && strings.Contains(e.Error.Message, "depth limit (1)") {
				found = true
			}
		}
		if !found {
			t.Errorf("no depth error")
		}
	})
}

func TestCallFunc(t *testing.T) {
	var calls []string
	var mu sync.Mutex
	boom := Func{Name: "boom", Handler: func(ctx context.Context, c FuncCall) (FuncResult, error) { panic("kaboom") }}
	plain := Func{Name: "plain", Handler: func(ctx context.Context, c FuncCall) (FuncResult, error) {
		return FuncResult{}, errors.New("disk on fire")
	}}
	cfg := stockAgent(&calls, &mu)
	cfg.Funcs = append(cfg.Funcs, boom, plain)
	m := newManager(t, Config{Model: ModelConfig{LLM: script()}}, cfg)
	msg, err := m.CallFunc(context.Background(), "stocks", "quote", kgagent.Message{Text: "AAPL"}, Caller{UserID: "u"})
	if err != nil || msg.Text != "$105.22" || msg.Embeds == nil {
		t.Fatalf("%+v %v", msg, err)
	}
	tests := []struct {
		agent, fn string
		code      string
	}{
		{"stocks", "nope", kgagent.EFuncNotDefined},
		{"stocks", "boom", kgagent.EAgentUnhandled},
		{"stocks", "plain", kgagent.EAgentUnhandled},
		{"nobody", "quote", kgagent.ENOTFOUND},
	}
	for _, tt := range tests {
		_, err := m.CallFunc(context.Background(), tt.agent, tt.fn, kgagent.Message{Text: "x"}, Caller{})
		if kgagent.ErrorCode(err) != tt.code {
			t.Errorf("%s/%s: err = %v, want %s", tt.agent, tt.fn, err, tt.code)
		}
	}
	_, err = m.CallFunc(context.Background(), "stocks", "nope", kgagent.Message{}, Caller{})
	d := kgagent.ErrorDetails(err)
	if kgagent.ErrorMessage(err) != "I'm sorry, Func[nope] is not defined." || d["func_name"] != "nope" ||
		fmt.Sprint(d["available_funcs"]) != "[boom plain quote]" {
		t.Errorf("not-defined error = %v %v", err, d)
	}
}

func TestHandshakeAndAgents(t *testing.T) {
	var calls []string
	var mu sync.Mutex
	cfg := stockAgent(&calls, &mu)
	cfg.Corpora = []Corpus{{URLs: []string{"https://docs.example.com/*"}}}
	m := newManager(t, Config{Model: ModelConfig{LLM: script()}}, cfg)
	h, err := m.Handshake("stocks")
	if err != nil {
		t.Fatal(err)
	}
	if h.Type != "code_shot" || len(h.FewShots) != 3 || !strings.HasPrefix(h.FewShots[2], "Q: Price for SYMBOL\nAsk Func[quote]: SYMBOL") ||
		h.BasePrompt != "I answer questions about stock prices." || len(h.Corpora) != 1 {
		t.Errorf("handshake = %+v", h)
	}
	if _, err := m.Handshake("nobody"); kgagent.ErrorCode(err) != kgagent.ENOTFOUND {
		t.Errorf("err = %v", err)
	}
	infos := m.Agents()
	if len(infos) != 2 || infos[0].Name != "default" || infos[1].Name != "stocks" || len(infos[1].Queries) != 3 || infos[1].Funcs[0] != "quote" {
		t.Errorf("agents = %+v", infos)
	}
	a, _ := NewCodeShotAgent(cfg)
	if err := m.Register(a); kgagent.ErrorCode(err) != kgagent.ECONFLICT {
		t.Errorf("second register: %v", err)
	}
	def, _ := NewCodeShotAgent(AgentConfig{Name: "default", BasePrompt: "mine"})
	if err := m.Register(def); err != nil {
		t.Errorf("replacing the built-in default: %v", err)
	}
	if h, _ := m.Handshake("default"); h.BasePrompt != "mine" {
		t.Errorf("default not replaced")
	}
}

func TestConcurrentAsks(t *testing.T) {
	var calls []string
	var mu sync.Mutex
	m := newManager(t, Config{}, stockAgent(&calls, &mu))
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sym := fmt.Sprintf("SYM%d", i)
			var ev events
			ans, err := m.Ask(context.Background(), Request{Question: "Price for " + sym}, ev.emit)
			if err != nil {
				errs <- err
				return
			}
			if ans.Answer != "The share price for "+sym+" is $105.22" {
				errs <- fmt.Errorf("answer %q", ans.Answer)
			}
			evs := ev.all()
			for j, e := range evs {
				if e.Seq != int64(j+1) {
					errs <- fmt.Errorf("seq %d at %d", e.Seq, j)
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(calls) != 32 {
		t.Errorf("%d func calls", len(calls))
	}
}
