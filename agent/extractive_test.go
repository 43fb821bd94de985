package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// episodeFor is the run the manager hands the model: the agent's validated
// few-shots, the question, and steps alternating action and reply (the
// replies written "Func[x] says: text" here for the table's sake).
func episodeFor(t *testing.T, shots string, question string, steps ...string) Episode {
	t.Helper()
	a, err := NewCodeShotAgent(AgentConfig{Name: "t", FewShots: SplitFewShots(shots), Funcs: []Func{
		{Name: "quote", Handler: TextFunc(func(context.Context, string) (string, error) { return "", nil })},
		{Name: "genrand", Handler: TextFunc(func(context.Context, string) (string, error) { return "", nil })},
		{Name: "geocode", Handler: TextFunc(func(context.Context, string) (string, error) { return "", nil })},
		{Name: "forecast", Handler: TextFunc(func(context.Context, string) (string, error) { return "", nil })},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []ChatMessage
	for i, s := range steps {
		if i%2 == 0 {
			msgs = append(msgs, ChatMessage{Role: "assistant", Content: s})
			continue
		}
		l := ClassifyLine(s)
		msgs = append(msgs, ChatMessage{Role: "user", Content: s, Observation: &Observation{Agent: l.Kind == LineAgentSays, Name: l.Name, Text: l.Text}})
	}
	return *episode(a.Stanzas(), question, msgs)
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
	x := NewExtractive(ExtractiveConfig{})
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
			got := renderStep(x.Step(episodeFor(t, tt.shots, tt.q, tt.steps...)))
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
	x := NewExtractive(ExtractiveConfig{Deltas: 3})
	ep := episodeFor(t, stockShots, "What is the current price for GOOG?", "Ask Func[quote]: GOOG", "Func[quote] says: $105.22 today, up from $101.50 yesterday")
	s, err := x.Complete(context.Background(), CompletionRequest{Messages: []ChatMessage{{Role: "user", Content: "Q: What is the current price for GOOG?"}}, Episode: &ep})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	var steps []Step
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
	want := Step{Kind: StepAnswer, Answer: "The current price for GOOG is $105.22 today, up from $101.50 yesterday."}
	if len(steps) != 1 || steps[0] != want {
		t.Errorf("steps = %+v, want [%+v]", steps, want)
	}
	if text.String() != "A: "+want.Answer || n < 2 {
		t.Errorf("streamed %q in %d deltas", text.String(), n)
	}
	// Without an episode there is no question to answer.
	if got := x.Step(Episode{}); got != (Step{Kind: StepAnswer, Answer: "I did not receive a question."}) {
		t.Errorf("no episode: %+v", got)
	}
}

func TestExtractiveAnswersFromSources(t *testing.T) {
	tests := []struct {
		q        string
		contains []string
		prefix   string
		cites    string
	}{
		{"What is the default HTTP port?", []string{"8086"}, "", "http://lumen/configuration/index.html#http"},
		{"How long is the default retention?", []string{"30d"}, "", "http://lumen/configuration/retention.html#default-retention"},
		{"Which function opens a connection?", []string{"opens a connection"}, "lumen.connect", "http://lumen/api/python/client.html#lumen.connect"},
		{"Which module is the Python client?", nil, "`lumen` — Python client [1].", "http://lumen/api/python/client.html#lumen.connect"},
		{"Where is the data directory on Linux?", []string{"/var/lib/lumen"}, "", "http://lumen/install/linux.html"},
		{"What language is Lumen written in?", []string{"Rust"}, "Lumen is written in Rust", "http://lumen/faq.html#written-in"},
	}
	for _, tt := range tests {
		t.Run(tt.q, func(t *testing.T) {
			m := newManager(t, Config{Searcher: &fakeSearch{docs: lumenDocs}})
			var ev events
			ans, err := m.Ask(context.Background(), Request{Question: tt.q}, ev.emit)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range tt.contains {
				if !strings.Contains(ans.Answer, c) {
					t.Errorf("answer %q lacks %q", ans.Answer, c)
				}
			}
			if !strings.HasPrefix(ans.Answer, tt.prefix) {
				t.Errorf("answer %q does not start with %q", ans.Answer, tt.prefix)
			}
			if len(ans.Sources) == 0 || ans.Sources[0].URL != tt.cites {
				t.Errorf("sources = %+v, want first %s (answer %q)", ans.Sources, tt.cites, ans.Answer)
			}
			if len(Citations(ans.Answer)) == 0 {
				t.Errorf("answer %q cites nothing", ans.Answer)
			}
			if got := ev.kinds(); got != "route action observation deltas answer!" {
				t.Errorf("events = %s", got)
			}
		})
	}
}

func TestExtractiveFAQStyle(t *testing.T) {
	docs := append([]corpus.Hit{}, lumenDocs...)
	docs = append(docs,
		hit("http://lumen/faq.html#windows", "Frequently asked questions", "Does Lumen run on Windows?", "No. Use the Docker image on Windows."),
		hit("http://lumen/faq.html#max-series", "Frequently asked questions", "How many series can a database hold?",
			"One million by default (limits.max_series = 1000000). Raising it costs about 1 KiB of memory per series."),
		hit("http://lumen/faq.html#default-port", "Frequently asked questions", "Which port does Lumen use?",
			"The HTTP API listens on port 8086 by default, and the gRPC API on port 8087."),
		hit("http://lumen/api/http/index.html", "HTTP API", "HTTP API", "The HTTP API listens on port 8086 by default."),
		hit("http://lumen/cli/lumen-server.html", "lumen server", "Options", "lumen server --http-port 9000"),
	)
	tests := []struct {
		q, want string
	}{
		{"Does Lumen run on Windows?", "No. Use the Docker image on Windows [1]."},
		{"How many series can a database hold at most?", "One million by default (limits.max_series = 1000000). Raising it costs about 1 KiB of memory per series [1]."},
	}
	for _, tt := range tests {
		m := newManager(t, Config{Searcher: &fakeSearch{docs: docs}})
		ans, err := m.Ask(context.Background(), Request{Question: tt.q}, nil)
		if err != nil || ans.Answer != tt.want {
			t.Errorf("%q: answer %q, want %q (%v)", tt.q, ans.Answer, tt.want, err)
		}
	}
	// One fact found twice is said once; a command line is not an answer.
	m := newManager(t, Config{Searcher: &fakeSearch{docs: docs}})
	ans, _ := m.Ask(context.Background(), Request{Question: "What HTTP port does the server use by default?"}, nil)
	if strings.Count(ans.Answer, "listens on port 8086") != 1 || strings.Contains(ans.Answer, "--http-port") {
		t.Errorf("answer = %q", ans.Answer)
	}
}

func TestCitations(t *testing.T) {
	tests := []struct {
		in   string
		want []int
	}{
		{"a [1] b [2]", []int{1, 2}},
		{"a [1, 3]", []int{1, 3}},
		{"x[12].", []int{12}},
		{"[a] [] [1", nil},
		{"arr[0] and [99999]", []int{0}},
	}
	for _, tt := range tests {
		got := Citations(tt.in)
		if len(got) != len(tt.want) {
			t.Errorf("Citations(%q) = %v, want %v", tt.in, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("Citations(%q) = %v, want %v", tt.in, got, tt.want)
			}
		}
	}
}

func FuzzExtractive(f *testing.F) {
	f.Add("What is the port?", "[1] Config › HTTP (http://x#a)\nThe port is 8086. Set http.port.\n\nFacts:\n- port is 8086 [1]")
	f.Add("Which module?", "[2] re — Regular expressions (http://y)\n")
	f.Add("", "[x] broken (")
	x := NewExtractive(ExtractiveConfig{})
	f.Fuzz(func(t *testing.T, q, obs string) {
		ep := Episode{Question: strings.TrimSpace(q), Actions: 1, Observations: []Observation{{Name: "fixie_query_corpus", Text: strings.TrimSpace(obs)}}}
		if stanzas := SplitFewShots(obs); len(stanzas) > 0 {
			if st, err := ParseStanza(1, stanzas[0], false, nil); err == nil {
				ep.FewShots = []Stanza{st}
			}
		}
		st := x.Step(ep)
		switch st.Kind {
		case StepAnswer:
			if st.Answer == "" || st.Answer != strings.TrimSpace(st.Answer) {
				t.Fatalf("answer %q", st.Answer)
			}
		case StepFunc, StepAgent:
			if !ValidName(st.Name) {
				t.Fatalf("step %+v names no valid func", st)
			}
		default:
			t.Fatalf("step %+v has no kind", st)
		}
		// The text rendered for the stream and the logs reads back as the step.
		if got, err := ParseOutput(renderStep(st)); err == nil && got.Kind != st.Kind {
			t.Fatalf("rendered %q reads back as %+v, want %+v", renderStep(st), got, st)
		}
	})
}

func FuzzParseOutput(f *testing.F) {
	f.Add("thinking\nAsk Func[x]: y")
	f.Add("A: done [1]")
	f.Add("Func[x] says: z")
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseOutput(s)
		if err != nil {
			if kgagent.ErrorCode(err) != kgagent.EINVALID {
				t.Fatalf("error code %s", kgagent.ErrorCode(err))
			}
			return
		}
		switch st.Kind {
		case StepAnswer:
			if st.Answer == "" {
				t.Fatal("empty answer accepted")
			}
		case StepFunc, StepAgent:
			if !ValidName(st.Name) {
				t.Fatalf("bad name %q accepted", st.Name)
			}
		default:
			t.Fatalf("no kind: %+v", st)
		}
	})
}

func FuzzCitations(f *testing.F) {
	f.Add("see [1] and [2, 3]")
	f.Add("[[1]] [ 2 ] [99999]")
	f.Fuzz(func(t *testing.T, s string) {
		for _, n := range Citations(s) {
			if n < 0 || n > 9999 {
				t.Fatalf("citation %d out of range in %q", n, s)
			}
		}
	})
}
