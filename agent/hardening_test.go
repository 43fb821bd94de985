package agent

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/llm"
)

func TestParseOutputHardening(t *testing.T) {
	tests := []struct {
		name, out   string
		kind        llm.StepKind
		input, ans  string
		malformedOK bool
	}{
		{name: "A: inside a code fence is not the answer", out: "Here is an example:\n```\nA: fake\n```\nAsk Func[quote]: GOOG", kind: llm.StepFunc, input: "GOOG"},
		{name: "only fenced answer", out: "```\nA: fake\n```", malformedOK: true},
		{name: "quoted A: is not the answer", out: "> A: quoted\nA: real [1]", kind: llm.StepAnswer, ans: "real [1]"},
		{name: "input ends at its line", out: "Ask Func[quote]: GOOG\nthen I will answer\nAsk Func[quote]: MSFT", kind: llm.StepFunc, input: "GOOG"},
		{name: "JSON input runs until it is complete", out: "Ask Func[cmd]: {\n  \"a\": 1,\n  \"b\": [2]\n}\nrunaway text", kind: llm.StepFunc, input: "{\n  \"a\": 1,\n  \"b\": [2]\n}"},
		{name: "looping answer is cut at the first repeated long line", out: "A: The port is 8080 [1].\nThe port is set in the config.\nThe port is set in the config.\nThe port is set in the config.", kind: llm.StepAnswer, ans: "The port is 8080 [1].\nThe port is set in the config."},
		{name: "short repeated lines stay", out: "A: yes\n- a\n- a", kind: llm.StepAnswer, ans: "yes\n- a\n- a"},
	}
	for _, tt := range tests {
		st, err := ParseOutput(tt.out)
		if tt.malformedOK {
			if err == nil {
				t.Errorf("%s: parsed %+v, want an error", tt.name, st)
			}
			continue
		}
		if err != nil || st.Kind != tt.kind || st.Input != tt.input || st.Answer != tt.ans {
			t.Errorf("%s: got %+v, %v", tt.name, st, err)
		}
	}
}

func TestScanOutputStreaming(t *testing.T) {
	// An incomplete action line is not judged; a complete one ends the output.
	if sc := scanOutput("Ask Func[quote]: GO", false); sc.end >= 0 || sc.action {
		t.Errorf("partial action: %+v", sc)
	}
	s := "thinking\nAsk Func[quote]: GOOG\nAsk Func[quote]: MSFT\n"
	if sc := scanOutput(s, false); sc.end != strings.Index(s, "\nAsk Func[quote]: MSFT") || sc.reason != "action" {
		t.Errorf("complete action: %+v", sc)
	}
	if sc := scanOutput("```\nA: no\n```\nA: yes", false); sc.answerAt != len("```\nA: no\n```\nA: ") {
		t.Errorf("answer offset %d", sc.answerAt)
	}
}

func FuzzScanOutput(f *testing.F) {
	f.Add("Ask Func[x]: {\n\"a\": 1}\nmore")
	f.Add("```\nA: x\n```\nA: the answer line here\nthe answer line here")
	f.Fuzz(func(t *testing.T, s string) {
		for _, final := range []bool{false, true} {
			sc := scanOutput(s, final)
			if sc.end > len(s) || sc.answerAt > len(s) || (sc.end >= 0) != (sc.reason != "") {
				t.Fatalf("scanOutput(%q, %v) = %+v", s, final, sc)
			}
		}
	})
}

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu    sync.Mutex
	calls []LLMCallStats
	runs  []RunStats
}

func (r *recorder) LLMCall(s LLMCallStats) { r.mu.Lock(); r.calls = append(r.calls, s); r.mu.Unlock() }
func (r *recorder) RunEnded(s RunStats)    { r.mu.Lock(); r.runs = append(r.runs, s); r.mu.Unlock() }

func TestRunawayOutputIsCutAfterTheAction(t *testing.T) {
	var calls []string
	var mu sync.Mutex
	runaway := strings.Repeat("and then some more words ", 200)
	llm := &scripted{outputs: [][]string{
		{"I need the quote.\nAsk Func[quote]: GO", "OG\nAsk Func[quote]: MSFT\n", runaway},
		{"A: The price is $105.22.\nThe price is quoted by the func.\n", "The price is quoted by the func.\n", runaway},
	}}
	obs := &recorder{}
	m := newManager(t, Config{Model: ModelConfig{LLM: llm}, Observer: obs}, stockAgent(&calls, &mu))
	var ev events
	ans, err := m.Ask(context.Background(), Request{Question: "GOOG?", Agent: "stocks"}, ev.emit)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0] != "GOOG" {
		t.Errorf("func inputs %q", calls)
	}
	// The func listed no sources, so [1] names none and is dropped.
	if want := "The price is $105.22.\nThe price is quoted by the func."; ans.Answer != want {
		t.Errorf("answer %q", ans.Answer)
	}
	var deltas strings.Builder
	for _, e := range ev.all() {
		if e.Kind == kgagent.EventAnswer && e.Delta {
			deltas.WriteString(e.Text)
		}
	}
	if strings.Contains(deltas.String(), "more words") || strings.Count(deltas.String(), "quoted by") != 1 {
		t.Errorf("answer deltas %q", deltas.String())
	}
	if len(obs.calls) != 2 || obs.calls[0].Stop != "action" || obs.calls[1].Stop != "repeat" {
		t.Fatalf("calls %+v", obs.calls)
	}
	// Both were cut before the server's usage came: their tokens are
	// estimated from what was sent and received (4 bytes a token), the
	// cut-away text included.
	prompt := 0
	for _, msg := range llm.calls[0].Messages {
		prompt += len(msg.Content)
	}
	if c := obs.calls[0]; !c.Estimated || c.PromptTokens != (prompt+3)/4 || c.CompletionTokens != (len("I need the quote.\nAsk Func[quote]: GOOG\nAsk Func[quote]: MSFT\n")+3)/4 {
		t.Errorf("first call's tokens %+v, prompt %d bytes", c, prompt)
	}
	if c := obs.calls[1]; !c.Estimated || c.CompletionTokens < 10 {
		t.Errorf("second call's tokens %+v", c)
	}
	if len(obs.runs) != 1 || obs.runs[0].Iterations != 2 || obs.runs[0].Code != "" {
		t.Errorf("runs %+v", obs.runs)
	}
}

func TestMalformedOutputShownAndFedBackShort(t *testing.T) {
	long := "I am not following the format " + strings.Repeat("blah ", 400)
	llm := script(long, "A: fine")
	obs := &recorder{}
	m := newManager(t, Config{Model: ModelConfig{LLM: llm}, Observer: obs})
	var ev events
	if _, err := m.Ask(context.Background(), Request{Question: "q", Agent: "default"}, ev.emit); err != nil {
		t.Fatal(err)
	}
	var errText string
	for _, e := range ev.all() {
		if e.Kind == kgagent.EventError {
			errText = e.Text
		}
	}
	if !strings.Contains(errText, "I am not following the format") || len(errText) > malformedShown+200 {
		t.Errorf("error event %q", errText)
	}
	msgs := llm.Calls()[1].Messages
	fed := msgs[len(msgs)-2]
	if fed.Role != "assistant" || len(fed.Content) > malformedFedBack+len("…") || !strings.HasPrefix(fed.Content, "I am not following") {
		t.Errorf("fed back %q", fed.Content)
	}
	if !obs.calls[0].Malformed || obs.calls[1].Malformed {
		t.Errorf("calls %+v", obs.calls)
	}
}

func TestFailedRunObserved(t *testing.T) {
	obs := &recorder{}
	m := newManager(t, Config{Model: ModelConfig{LLM: script("nonsense", "more nonsense", "still nonsense")}, Observer: obs})
	if _, err := m.Ask(context.Background(), Request{Question: "q", Agent: "default"}, nil); err == nil {
		t.Fatal("no error")
	}
	if len(obs.runs) != 1 || obs.runs[0].Code != kgagent.EUNAVAILABLE || obs.runs[0].Iterations != 3 {
		t.Errorf("runs %+v", obs.runs)
	}
}

func TestAnswerNowOnTheLastIteration(t *testing.T) {
	var calls []string
	var mu sync.Mutex
	llm := script("Ask Func[quote]: A", "Ask Func[quote]: B", "A: done")
	m := newManager(t, Config{Model: ModelConfig{LLM: llm}, Loop: LoopConfig{MaxIterations: 3}}, stockAgent(&calls, &mu))
	if _, err := m.Ask(context.Background(), Request{Question: "q", Agent: "stocks"}, nil); err != nil {
		t.Fatal(err)
	}
	c := llm.Calls()
	if fed := c[1].Messages[len(c[1].Messages)-1].Content; strings.Contains(fed, answerNow) {
		t.Errorf("answer-now note too early: %q", fed)
	}
	if fed := c[2].Messages[len(c[2].Messages)-1].Content; !strings.Contains(fed, answerNow) {
		t.Errorf("no answer-now note before the last call: %q", fed)
	}
}

func TestCallTimeoutShare(t *testing.T) {
	m := newManager(t, Config{Model: ModelConfig{CallTimeout: time.Minute}})
	if d := m.callTimeout(context.Background(), 10); d != time.Minute {
		t.Errorf("no deadline: %v", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The first calls get a third of the time left, not a tenth: a slow
	// local model's first answer (after the search) fits.
	if d := m.callTimeout(ctx, 10); d > 3400*time.Millisecond || d < 3*time.Second {
		t.Errorf("10 iterations in 10s: %v for the first call, want a third", d)
	}
	if d := m.callTimeout(ctx, 2); d > 5*time.Second || d < 4500*time.Millisecond {
		t.Errorf("2 iterations left in 10s: %v, want half", d)
	}
	if d := m.callTimeout(ctx, 1); d > 10*time.Second || d < 9*time.Second {
		t.Errorf("the last iteration in 10s: %v, want all", d)
	}
	long, cancel2 := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel2()
	if d := m.callTimeout(long, 9); d < 38500*time.Millisecond || d > 39100*time.Millisecond {
		t.Errorf("the first LLM call of a 2-minute question with 10 iterations gets %v, want 39s (a third of 2 min less a 3 s reserve)", d)
	}
	if d := m.callTimeout(long, 1); d > time.Until(mustDeadline(long))-2900*time.Millisecond {
		t.Errorf("the last call may take %v of %v: no reserve to answer after it", d, time.Until(mustDeadline(long)))
	}
	if !m.nearDeadline(ctx, 2) == (time.Until(mustDeadline(ctx)) < 2*m.callTimeout(ctx, 2)) {
		t.Error("nearDeadline disagrees with callTimeout")
	}
}

func mustDeadline(ctx context.Context) time.Time { d, _ := ctx.Deadline(); return d }

func TestBoundObservation(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 5; i++ {
		b.WriteString("[" + string(rune('0'+i)) + "] Title " + string(rune('0'+i)) + " (http://x/" + string(rune('0'+i)) + ")\n")
		b.WriteString(strings.Repeat("word ", 300) + "\n\n")
	}
	b.WriteString("Facts:\n- a fact [1]\n")
	in := b.String()
	out := boundObservation(in, 200)
	if len(out) > 200*4+50 {
		t.Errorf("bounded to %d bytes", len(out))
	}
	for i := 1; i <= 5; i++ {
		if !strings.Contains(out, "["+string(rune('0'+i))+"] Title") {
			t.Errorf("source %d header lost:\n%s", i, out)
		}
	}
	if boundObservation(in, 0) != in || boundObservation("short", 200) != "short" {
		t.Error("unbounded or short observations must stay whole")
	}
	blocks := strings.Split(out, "\n\n")
	if len(blocks[0]) < len(blocks[3]) {
		t.Errorf("the best passage got less room than a later one:\n%s", out)
	}
}

func TestLoopWithinALineIsCut(t *testing.T) {
	out := "A: The point is a value that is a value that is a value that is a value that is a value that is"
	st, err := ParseOutput(out)
	if err != nil || st.Answer != "The point is a value that is" {
		t.Errorf("answer %q, %v", st.Answer, err)
	}
	if loopStart("no loop here at all, just words") != -1 || loopStart("ha ha ha") != -1 {
		t.Error("loopStart cut a line that does not loop")
	}
}

// TestLastCallCutBeforeTheDeadline: a model that never finishes its last
// call does not make the question time out: the call's own timeout ends it
// before the question's deadline, and the run answers with what the docs
// say (fallback), within the deadline.
func TestLastCallCutBeforeTheDeadline(t *testing.T) {
	llm := script("<block>")
	m := newManager(t, Config{Model: ModelConfig{LLM: llm}, Loop: LoopConfig{SearchFirst: true, AttributeCitations: true, MaxIterations: 2}, Builtins: BuiltinsConfig{Searcher: &fakeSearch{docs: lumenDocs}}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	ans, err := m.Ask(ctx, Request{ID: "r1", Question: "What is the default HTTP port?"}, nil)
	if err != nil || ans.Citations != kgagent.CitationsFallback || !strings.Contains(ans.Answer, "8086") {
		t.Fatalf("a blocked last call: %+v, %v; want the docs' answer as a fallback", ans, err)
	}
	if ctx.Err() != nil {
		t.Error("answered only after the question's deadline")
	}
}
