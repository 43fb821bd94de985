package agentfile

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
)

func TestLoadSampleAgents(t *testing.T) {
	// The sample agents expose funcs kgagent provides (`builtin`); without
	// them the files do not load.
	if _, err := LoadDir(context.Background(), "../../testdata/agents", Options{}); kgagent.ErrorCode(err) != kgagent.EINVALID || !strings.Contains(err.Error(), "is marked builtin") {
		t.Fatalf("sample agents loaded without their builtin funcs: %v", err)
	}
	goFunc := func(name string) agent.Func {
		return agent.Func{Name: name, Handler: func(ctx context.Context, c agent.FuncCall) (agent.FuncResult, error) { return agent.FuncResult{}, nil }}
	}
	as, err := LoadDir(context.Background(), "../../testdata/agents", Options{Funcs: map[string]agent.Func{"search_docs": goFunc("search_docs"), "utc_time": goFunc("utc_time")}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range as {
		names = append(names, a.Name())
	}
	if strings.Join(names, ",") != "clock,lumen" {
		t.Fatalf("agents = %v", names)
	}
	lumen := as[1].Config()
	if lumen.Collection != "default" || len(lumen.FewShots) != 2 || len(lumen.Corpora) != 1 || lumen.LLM.MaxTokens != 500 ||
		!strings.HasPrefix(lumen.BasePrompt, "I am the Lumen documentation assistant. I answer questions about installing,\nconfiguring") {
		t.Errorf("lumen = %+v", lumen)
	}
	if n := len(as[0].Stanzas()); n != 2 {
		t.Errorf("clock has %d stanzas", n)
	}
	if f := strings.Join(as[0].FuncNames(), ","); f != "utc_time" {
		t.Errorf("clock funcs %q, want utc_time", f)
	}
	if f := strings.Join(as[1].FuncNames(), ","); f != "search_docs" {
		t.Errorf("lumen funcs %q, want search_docs", f)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		line int
		rule string
	}{
		{"not yaml", "name: [x\n", 1, "not valid YAML"},
		{"not a mapping", "- a\n- b\n", 1, "must be a mapping"},
		{"empty", "", 1, "the file is empty"},
		{"unknown key", "name: a\nprompt: x\n", 2, `unknown key "prompt"`},
		{"duplicate key", "name: a\nname: b\n", 2, `key "name" appears twice`},
		{"no name", "description: x\n", 1, "name is required"},
		{"bad name", "description: x\nname: my agent\n", 2, `must match ^\w+$`},
		{"name not a string", "name: [a]\n", 1, "want a string"},
		{"conversational not bool", "name: a\nconversational: sometimes\n", 2, "true or false"},
		{"few_shots wrong type", "name: a\nfew_shots: {q: 1}\n", 2, "few_shots must be"},
		{"few_shots item is a mapping", "name: a\nfew_shots:\n  - Q: a\n  - [x]\n", 3, "quote each stanza"},
		{"few_shots item wrong type", "name: a\nfew_shots:\n  - 'Q: a'\n  - [x]\n", 4, "few_shots must be"},
		{"stanza without A", "name: a\nfew_shots: |\n  Q: one\n  A: two\n\n  Q: three\n  more thinking\n", 6, "the last patterned line of a stanza must start with A:"},
		{"unregistered func at its line", "name: a\nfew_shots: |\n  Q: one\n  Ask Func[quote]: x\n  Func[quote] says: y\n  A: z\n", 4, "every Func name must be a registered func"},
		{"ask without says in list", "name: a\nfew_shots:\n  - \"Q: one\\nA: two\"\n  - |\n    Q: three\n    Ask Agent[b]: c\n    A: d\n", 6, "must be followed directly"},
		{"bad func name", "name: a\nfuncs:\n  bad-name: http://x\n", 3, `func name "bad-name"`},
		{"reserved func", "name: a\nfuncs:\n  fixie_x: http://x\n", 3, "reserved"},
		{"func not a URL", "name: a\nfuncs:\n  quote: ftp://x\n", 3, "not an http(s) URL"},
		{"func env unset", "name: a\nfuncs:\n  quote: ${KGAGENT_SURELY_UNSET_VAR}\n", 3, "KGAGENT_SURELY_UNSET_VAR is not set"},
		{"builtin func missing", "name: a\nfuncs:\n  quote: builtin\n", 3, "no Go func"},
		{"corpora not list", "name: a\ncorpora: x\n", 2, "corpora must be a list"},
		{"corpus bad key", "name: a\ncorpora:\n  - {url: x}\n", 3, `unknown corpus key "url"`},
		{"corpus bad url", "name: a\ncorpora:\n  - {urls: [docs.example.com]}\n", 3, "must start with http"},
		{"llm bad key", "name: a\nllm:\n  tokens: 3\n", 3, `unknown llm key "tokens"`},
		{"llm bad temperature", "name: a\nllm:\n  temperature: hot\n", 3, "a number from 0 to 2"},
		{"llm negative tokens", "name: a\nllm:\n  max_tokens: -1\n", 3, "non-negative"},
		{"remote with few_shots", "name: a\nurl: http://x\nfew_shots: 'Q: a\nA: b'\n", 3, "cannot be given for a remote agent"},
		{"remote bad url", "name: a\nurl: x\n", 2, "url must be an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "agent.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadFile(context.Background(), path, Options{})
			var ke *kgagent.Error
			if !errors.As(err, &ke) || ke.Code != kgagent.EINVALID {
				t.Fatalf("want EINVALID, got %v", err)
			}
			if ke.Details["file"] != path || ke.Details["line"] != tt.line {
				t.Errorf("at %v:%v, want line %d (%s)", ke.Details["file"], ke.Details["line"], tt.line, ke.Message)
			}
			if !strings.Contains(ke.Message, tt.rule) || !strings.HasPrefix(ke.Message, path+":") {
				t.Errorf("message %q does not name the file and rule %q", ke.Message, tt.rule)
			}
		})
	}
}

func TestLoadDirDuplicateNames(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.yaml", "b.yml"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("name: same\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("ignored"), 0o600)
	_, err := LoadDir(context.Background(), dir, Options{})
	if kgagent.ErrorCode(err) != kgagent.EINVALID || !strings.Contains(kgagent.ErrorMessage(err), "already used") {
		t.Fatalf("err = %v", err)
	}
}

// quoteServer serves one func, quote, over the Fixie agent protocol.
type quoteServer struct {
	mu     sync.Mutex
	asked  []string
	tokens []string
}

func (q *quoteServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/":
		json.NewEncoder(w).Encode(agent.Handshake{BasePrompt: "quotes", FewShots: []string{"Q: Price for SYMBOL\nAsk Func[quote]: SYMBOL\nFunc[quote] says: $1\nA: $1"}, Type: "code_shot"})
	case r.Method == http.MethodPost && r.URL.Path == "/quote":
		var body struct {
			Message kgagent.Message `json:"message"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		q.mu.Lock()
		q.asked = append(q.asked, body.Message.Text)
		q.tokens = append(q.tokens, r.Header.Get("Authorization"))
		q.mu.Unlock()
		price := map[string]string{"GOOG": "$105.22", "AAPL": "$190.01"}[body.Message.Text]
		if price == "" {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]any{"message": map[string]any{"text": "unknown symbol", "embeds": map[string]any{}},
				"error": map[string]any{"code": "NOT_FOUND", "message": "unknown symbol " + body.Message.Text}})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"message": map[string]any{"text": price, "embeds": map[string]any{}}, "error": nil})
	default:
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(map[string]any{"message": map[string]any{"text": "I'm sorry, Func[x] is not defined.", "embeds": map[string]any{}},
			"error": map[string]any{"code": kgagent.EFuncNotDefined, "message": "I'm sorry, Func[x] is not defined."}})
	}
}

// TestEndToEndYAMLAgentWithRemoteFunc: a YAML-defined code-shot agent whose
// func is served by httptest over the agent protocol answers with the
// built-in extractive model, chosen by the router.
func TestEndToEndYAMLAgentWithRemoteFunc(t *testing.T) {
	qs := &quoteServer{}
	srv := httptest.NewServer(qs)
	defer srv.Close()
	t.Setenv("KGAGENT_TEST_QUOTES_URL", srv.URL)

	m, err := agent.New(agent.Config{})
	if err != nil {
		t.Fatal(err)
	}
	names, err := Register(context.Background(), m, "testdata", Options{HTTPClient: srv.Client()})
	if err != nil || strings.Join(names, ",") != "stocks" {
		t.Fatalf("register: %v %v", names, err)
	}
	tests := []struct {
		question string
		want     string
		symbol   string
	}{
		{"What is the current price for GOOG?", "The current price for GOOG is $105.22.", "GOOG"},
		{"AAPL share price", "The share price for AAPL is $190.01.", "AAPL"},
		{"What's the stock price for AAPL?", "The share price for AAPL is $190.01", "AAPL"},
	}
	for _, tt := range tests {
		t.Run(tt.question, func(t *testing.T) {
			var evs []kgagent.Event
			ans, err := m.Ask(context.Background(), agent.Request{Question: tt.question, Caller: agent.Caller{UserID: "u1", Token: "tok-1"}},
				func(e kgagent.Event) { evs = append(evs, e) })
			if err != nil {
				t.Fatal(err)
			}
			if ans.Agent != "stocks" || ans.Answer != tt.want {
				t.Fatalf("answer = %q by %s, want %q", ans.Answer, ans.Agent, tt.want)
			}
			if evs[0].Kind != kgagent.EventRoute || evs[0].Agent != "stocks" {
				t.Errorf("first event = %+v", evs[0])
			}
			qs.mu.Lock()
			last, tok := qs.asked[len(qs.asked)-1], qs.tokens[len(qs.tokens)-1]
			qs.mu.Unlock()
			if last != tt.symbol || tok != "Bearer tok-1" {
				t.Errorf("remote func got %q with %q", last, tok)
			}
		})
	}
	// A failing remote func is an observation, and the model says so.
	ans, err := m.Ask(context.Background(), agent.Request{Question: "Price for ZZZZ", Agent: "stocks"}, nil)
	if err != nil || !strings.Contains(ans.Answer, "unknown symbol ZZZZ") {
		t.Errorf("answer = %q, %v", ans.Answer, err)
	}
	// A docs question goes to the default agent.
	var evs []kgagent.Event
	if _, err := m.Ask(context.Background(), agent.Request{Question: "How do I configure retention?"}, func(e kgagent.Event) { evs = append(evs, e) }); err != nil {
		t.Fatal(err)
	}
	if evs[0].Kind != kgagent.EventRoute || evs[0].Agent != "default" {
		t.Errorf("route = %+v", evs[0])
	}
}

func TestRemoteAgentFile(t *testing.T) {
	qs := &quoteServer{}
	srv := httptest.NewServer(qs)
	defer srv.Close()
	f, err := Parse("remote.yaml", []byte("name: quotes\nurl: "+srv.URL+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := f.Agent(context.Background(), "remote.yaml", Options{HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if a.Config().Remote != srv.URL || len(a.FuncNames()) != 1 || a.FuncNames()[0] != "quote" {
		t.Errorf("remote agent = %+v funcs %v", a.Config(), a.FuncNames())
	}
	bad, _ := Parse("remote.yaml", []byte("name: quotes\nurl: http://127.0.0.1:1\n"))
	if _, err := bad.Agent(context.Background(), "remote.yaml", Options{}); kgagent.ErrorCode(err) != kgagent.EINVALID || !strings.Contains(err.Error(), "remote.yaml:2") {
		t.Errorf("unreachable remote agent: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, p := range []string{"../../testdata/agents/lumen.yaml", "../../testdata/agents/clock.yaml", "testdata/stocks.yaml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("name: a\nfew_shots: [1, 2]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("f.yaml", data)
		if err != nil {
			var ke *kgagent.Error
			if !errors.As(err, &ke) || ke.Code != kgagent.EINVALID {
				t.Fatalf("not EINVALID: %v", err)
			}
			if _, ok := ke.Details["line"].(int); !ok {
				t.Fatalf("no line: %v", ke.Details)
			}
			return
		}
		if !agent.ValidName(file.Name) {
			t.Fatalf("accepted bad name %q", file.Name)
		}
	})
}
