package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kgagent/kgagent/agent/extractive"
	"github.com/kgagent/kgagent/llm"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// instantLLM answers without latency: it asks Func[noop] until the
// transcript holds steps observations, then answers.
type instantLLM struct{ steps int }

func (l instantLLM) Complete(ctx context.Context, req llm.CompletionRequest) (llm.Stream, error) {
	n := 0
	for _, m := range req.Messages {
		if m.Role == "user" && strings.HasPrefix(m.Content, "Func[") {
			n++
		}
	}
	out := "Ask Func[noop]: x"
	if n >= l.steps {
		out = "A: done [1]"
	}
	return &scriptStream{ctx: ctx, parts: []string{out}}, nil
}

// BenchmarkStepOverhead measures the manager's own cost per ReAct step
// (prompt building, parsing, events, func dispatch), with an instant LLM and
// a func that does nothing. Target: <= 1 ms per step.
func BenchmarkStepOverhead(b *testing.B) {
	const steps = 5
	noop := Func{Name: "noop", Handler: func(ctx context.Context, c FuncCall) (FuncResult, error) {
		c.Cite(kgagent.Source{URL: "http://x/" + c.Func, Title: "x"})
		return FuncResult{Message: kgagent.Message{Text: "[1] x (http://x/noop)\nnothing"}}, nil
	}}
	m, err := New(Config{Model: ModelConfig{LLM: instantLLM{steps: steps}}, NewID: func() string { return "bench" }})
	if err != nil {
		b.Fatal(err)
	}
	shots := strings.Repeat("Q: Price for SYMBOL\nAsk Func[noop]: SYMBOL\nFunc[noop] says: $1\nA: $1\n\n", 5)
	a, err := NewCodeShotAgent(AgentConfig{Name: "a", BasePrompt: strings.Repeat("Base prompt sentence. ", 20), FewShots: SplitFewShots(shots), Funcs: []Func{noop}})
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Register(a); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	n := 0
	emit := func(kgagent.Event) { n++ }
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.Ask(ctx, Request{Question: "What is the price?", Agent: "a"}, emit); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(steps+1))/1e3, "µs/step")
}

func benchDocs(n int) []corpus.Hit {
	var out []corpus.Hit
	words := strings.Fields("the module provides functions for encoding and decoding data streams with optional compression buffering and error handling options configured through keyword arguments")
	for i := 0; i < n; i++ {
		var sb strings.Builder
		for s := 0; s < 8; s++ {
			for w := 0; w < 18; w++ {
				sb.WriteString(words[(i*7+s*5+w*3)%len(words)])
				sb.WriteByte(' ')
			}
			sb.WriteString(fmt.Sprintf("value%d. ", i*10+s))
		}
		out = append(out, hit(fmt.Sprintf("http://docs/lib/m%d.html#s", i), fmt.Sprintf("m%d — Module %d", i, i), "Usage", sb.String()))
	}
	return out
}

// BenchmarkExtractiveAnswer measures the extractive model answering from
// five retrieved chunks of about 1 KiB (the step after the search).
func BenchmarkExtractiveAnswer(b *testing.B) {
	hits := benchDocs(5)
	var sb strings.Builder
	for i, h := range hits {
		fmt.Fprintf(&sb, "%s\n%s\n\n", SourceLine(i+1, h.Title, h.HeadingPath, h.URL), h.Text)
	}
	q := "Which module provides compression options for decoding data streams?"
	ep := llm.Episode{Question: q, Actions: 1, Observations: []llm.Observation{{Name: "fixie_query_corpus", Text: strings.TrimSpace(sb.String())}}}
	x := extractive.NewModel(extractive.ModelConfig{})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if st := x.Step(ep); st.Kind != llm.StepAnswer {
			b.Fatal(st)
		}
	}
}

// BenchmarkAskExtractive measures a whole Ask with the extractive model over
// an in-memory searcher (routing, search call, answer, events).
func BenchmarkAskExtractive(b *testing.B) {
	m, err := New(Config{Builtins: BuiltinsConfig{Searcher: &fakeSearch{docs: benchDocs(50)}}, NewID: func() string { return "bench" }})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ans, err := m.Ask(ctx, Request{Question: "Which module provides compression options for decoding data streams?"}, nil)
		if err != nil || len(ans.Sources) == 0 {
			b.Fatal(ans, err)
		}
	}
}
