package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent/cite"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/llm"
)

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
			m := newManager(t, Config{Builtins: BuiltinsConfig{Searcher: &fakeSearch{docs: lumenDocs}}})
			var ev events
			ans, err := m.Ask(context.Background(), Request{Question: tt.q}, ev.emit)
			if err != nil {
				t.Fatal(err)
			}
			checkWords(t, ans.Answer, tt.contains, nil)
			if !strings.HasPrefix(ans.Answer, tt.prefix) {
				t.Errorf("answer %q does not start with %q", ans.Answer, tt.prefix)
			}
			if len(ans.Sources) == 0 || ans.Sources[0].URL != tt.cites {
				t.Errorf("sources = %+v, want first %s (answer %q)", ans.Sources, tt.cites, ans.Answer)
			}
			if len(cite.Numbers(ans.Answer)) == 0 {
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
		m := newManager(t, Config{Builtins: BuiltinsConfig{Searcher: &fakeSearch{docs: docs}}})
		ans, err := m.Ask(context.Background(), Request{Question: tt.q}, nil)
		if err != nil || ans.Answer != tt.want {
			t.Errorf("%q: answer %q, want %q (%v)", tt.q, ans.Answer, tt.want, err)
		}
	}
	// One fact found twice is said once; a command line is not an answer.
	m := newManager(t, Config{Builtins: BuiltinsConfig{Searcher: &fakeSearch{docs: docs}}})
	ans, _ := m.Ask(context.Background(), Request{Question: "What HTTP port does the server use by default?"}, nil)
	if strings.Count(ans.Answer, "listens on port 8086") != 1 || strings.Contains(ans.Answer, "--http-port") {
		t.Errorf("answer = %q", ans.Answer)
	}
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
		case llm.StepAnswer:
			if st.Answer == "" {
				t.Fatal("empty answer accepted")
			}
		case llm.StepFunc, llm.StepAgent:
			if !ValidName(st.Name) {
				t.Fatalf("bad name %q accepted", st.Name)
			}
		default:
			t.Fatalf("no kind: %+v", st)
		}
	})
}
