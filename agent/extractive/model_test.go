package extractive_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/agent/extractive"
	"github.com/kgagent/kgagent/llm"
)

// episodeFor is the run the manager hands the model: the agent's validated
// few-shots, the question, and steps alternating action and reply (the
// replies written "Func[x] says: text" here for the table's sake).
func episodeFor(t *testing.T, shots string, question string, steps ...string) llm.Episode {
	t.Helper()
	a, err := agent.NewCodeShotAgent(agent.AgentConfig{Name: "t", FewShots: agent.SplitFewShots(shots), Funcs: []agent.Func{
		{Name: "quote", Handler: agent.TextFunc(func(context.Context, string) (string, error) { return "", nil })},
		{Name: "genrand", Handler: agent.TextFunc(func(context.Context, string) (string, error) { return "", nil })},
		{Name: "geocode", Handler: agent.TextFunc(func(context.Context, string) (string, error) { return "", nil })},
		{Name: "forecast", Handler: agent.TextFunc(func(context.Context, string) (string, error) { return "", nil })},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []llm.ChatMessage
	for i, s := range steps {
		if i%2 == 0 {
			msgs = append(msgs, llm.ChatMessage{Role: "assistant", Content: s})
			continue
		}
		l := agent.ClassifyLine(s)
		msgs = append(msgs, llm.ChatMessage{Role: "user", Content: s, Observation: &llm.Observation{Agent: l.Kind == llm.LineAgentSays, Name: l.Name, Text: l.Text}})
	}
	return *llm.NewEpisode(a.Stanzas(), question, msgs)
}

const chainShots = `
Q: What is the weather in Berlin?
Ask Func[geocode]: Berlin
Func[geocode] says: 52.52,13.40
Ask Func[forecast]: 52.52,13.40 today
Func[forecast] says: sunny
A: In Berlin expect sunny.
`

const randShots = `
Q: Generate a random number between 0 and 19.
Ask Func[genrand]: 0, 19
Func[genrand] says: 17
A: The random number is 17.
`

func TestExtractiveFollowsFewShots(t *testing.T) {
	x := extractive.NewModel(extractive.ModelConfig{})
	tests := []struct {
		name  string
		shots string
		q     string
		steps []string
		want  string
	}{
		{"exact pattern", stockShots, "What is the current price for GOOG?", nil, "Ask Func[quote]: GOOG"},
		{"exact pattern, other stanza", stockShots, "TSLA share price", nil, "Ask Func[quote]: TSLA"},
		{"case and punctuation", stockShots, "price for NVDA!", nil, "Ask Func[quote]: NVDA"},
		{"fuzzy with extra words", stockShots, "Could you tell me the stock price for AAPL please?", nil, "Ask Func[quote]: AAPL"},
		{"two variables", randShots, "Generate a random number between 5 and 10", nil, "Ask Func[genrand]: 5, 10"},
		{"unrelated goes to corpus", stockShots, "How do I configure retention?", nil, "Ask Func[fixie_query_corpus]: How do I configure retention?"},
		{"lower-case word does not fill an all-caps slot", stockShots, "What is the price for membership?", nil, "Ask Func[fixie_query_corpus]: What is the price for membership?"},
		{"answer from template", stockShots, "What is the current price for GOOG?",
			[]string{"Ask Func[quote]: GOOG", "Func[quote] says: $105.22"}, "A: The current price for GOOG is $105.22."},
		{"answer from template, two vars", randShots, "Generate a random number between 5 and 10",
			[]string{"Ask Func[genrand]: 5, 10", "Func[genrand] says: 7"}, "A: The random number is 7."},
		{"second step uses the first reply", chainShots, "What is the weather in Paris?",
			[]string{"Ask Func[geocode]: Paris", "Func[geocode] says: 48.85,2.35"}, "Ask Func[forecast]: 48.85,2.35 today"},
		{"chain answer", chainShots, "What is the weather in Paris?",
			[]string{"Ask Func[geocode]: Paris", "Func[geocode] says: 48.85,2.35", "Ask Func[forecast]: 48.85,2.35 today", "Func[forecast] says: rain"}, "A: In Paris expect rain."},
		{"error observation", stockShots, "Price for ZZZZ",
			[]string{"Ask Func[quote]: ZZZZ", "Func[quote] says: Error (NOT_FOUND): unknown symbol"}, "A: I could not answer that: unknown symbol"},
		{"plain observation without template", stockShots, "How do I configure retention?",
			[]string{"Ask Func[fixie_query_corpus]: How do I configure retention?", "Func[fixie_query_corpus] says: No documents matched the query."}, "A: No documents matched the query."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := x.Step(episodeFor(t, tt.shots, tt.q, tt.steps...)).Text()
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestExtractiveReturnsSteps: the built-in model hands the manager its step
// structured (on the last delta), with the text protocol's rendering of it
// as the streamed text; nothing is parsed back.
func TestExtractiveReturnsSteps(t *testing.T) {
	x := extractive.NewModel(extractive.ModelConfig{Deltas: 3})
	ep := episodeFor(t, stockShots, "What is the current price for GOOG?", "Ask Func[quote]: GOOG", "Func[quote] says: $105.22 today, up from $101.50 yesterday")
	s, err := x.Complete(context.Background(), llm.CompletionRequest{Messages: []llm.ChatMessage{{Role: "user", Content: "Q: What is the current price for GOOG?"}}, Episode: &ep})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	var steps []llm.Step
	n := 0
	for {
		d, err := s.Recv()
		if err != nil {
			break
		}
		n++
		text.WriteString(d.Text)
		if len(d.Steps) > 0 && steps != nil {
			t.Fatal("steps on two deltas")
		}
		steps = d.Steps
	}
	want := llm.Step{Kind: llm.StepAnswer, Answer: "The current price for GOOG is $105.22 today, up from $101.50 yesterday."}
	if len(steps) != 1 || steps[0] != want {
		t.Errorf("steps = %+v, want [%+v]", steps, want)
	}
	if text.String() != "A: "+want.Answer || n < 2 {
		t.Errorf("streamed %q in %d deltas", text.String(), n)
	}
	// Without an episode there is no question to answer.
	if got := x.Step(llm.Episode{}); got != (llm.Step{Kind: llm.StepAnswer, Answer: "I did not receive a question."}) {
		t.Errorf("no episode: %+v", got)
	}
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

func FuzzExtractive(f *testing.F) {
	f.Add("What is the port?", "[1] Config › HTTP (http://x#a)\nThe port is 8086. Set http.port.\n\nFacts:\n- port is 8086 [1]")
	f.Add("Which module?", "[2] re — Regular expressions (http://y)\n")
	f.Add("", "[x] broken (")
	x := extractive.NewModel(extractive.ModelConfig{})
	f.Fuzz(func(t *testing.T, q, obs string) {
		ep := llm.Episode{Question: strings.TrimSpace(q), Actions: 1, Observations: []llm.Observation{{Name: "fixie_query_corpus", Text: strings.TrimSpace(obs)}}}
		if stanzas := agent.SplitFewShots(obs); len(stanzas) > 0 {
			if st, err := agent.ParseStanza(1, stanzas[0], false, nil); err == nil {
				ep.FewShots = []llm.Stanza{st}
			}
		}
		st := x.Step(ep)
		switch st.Kind {
		case llm.StepAnswer:
			if st.Answer == "" || st.Answer != strings.TrimSpace(st.Answer) {
				t.Fatalf("answer %q", st.Answer)
			}
		case llm.StepFunc, llm.StepAgent:
			if !agent.ValidName(st.Name) {
				t.Fatalf("step %+v names no valid func", st)
			}
		default:
			t.Fatalf("step %+v has no kind", st)
		}
		// The text rendered for the stream and the logs reads back as the step.
		if got, err := agent.ParseOutput(st.Text()); err == nil && got.Kind != st.Kind {
			t.Fatalf("rendered %q reads back as %+v, want %+v", st.Text(), got, st)
		}
	})
}
