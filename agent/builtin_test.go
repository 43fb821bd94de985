package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent/extractive"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/embeds"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/internal/text"
)

// fakeSearch serves canned hits from a tiny in-memory corpus, ranked by
// shared terms, and records the requests.
type fakeSearch struct {
	mu    sync.Mutex
	reqs  []corpus.SearchRequest
	docs  []corpus.Hit
	err   error
	terms [][]string // per doc, computed once
}

func (f *fakeSearch) Search(ctx context.Context, r corpus.SearchRequest) ([]corpus.Hit, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, r)
	if f.terms == nil {
		for _, d := range f.docs {
			f.terms = append(f.terms, text.AllTerms(corpus.IndexText(d.Chunk)))
		}
	}
	dterms := f.terms
	f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	var out []corpus.Hit
	q := map[string]bool{}
	for _, t := range text.Keys(r.Query) {
		q[t] = true
	}
	for i, d := range f.docs {
		s := 0.0
		for _, t := range dterms[i] {
			if q[t] {
				s++
			}
		}
		if s > 0 {
			d.Score = s
			out = append(out, d)
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Score > out[j-1].Score; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	if len(out) > r.K {
		out = out[:r.K]
	}
	return out, nil
}

func hit(url, title, heading, text string) corpus.Hit {
	return corpus.Hit{Chunk: kgagent.Chunk{URL: url, Title: title, HeadingPath: []string{title, heading}, Text: text}}
}

var lumenDocs = []corpus.Hit{
	hit("http://lumen/configuration/retention.html#default-retention", "Retention", "Default retention",
		"Lumen deletes old data according to the retention policy. The default retention is 30d, so data older than thirty days is deleted. Change it with retention.default."),
	hit("http://lumen/configuration/index.html#http", "Configuration reference", "HTTP",
		"The HTTP API listens on port 8086 by default. Set http.port to change the HTTP port. The gRPC port is 8087."),
	hit("http://lumen/faq.html#written-in", "FAQ", "What is Lumen written in?",
		"Lumen is written in Rust. It is licensed under Apache-2.0."),
	hit("http://lumen/api/python/client.html#lumen.connect", "lumen — Python client", "lumen.connect",
		"lumen.connect(url, token=None, timeout=10.0, db=\"default\") opens a connection. The default timeout is 10 seconds."),
	hit("http://lumen/install/linux.html", "Install on Linux", "Data directory",
		"On Linux the data directory is /var/lib/lumen. The package creates a lumen user."),
}

type fakeGraph struct{ facts []graphrag.Fact }

func (g fakeGraph) Retrieve(ctx context.Context, q, coll string) ([]graphrag.Fact, error) {
	return g.facts, nil
}

func TestQueryCorpus(t *testing.T) {
	fs := &fakeSearch{docs: lumenDocs}
	g := fakeGraph{facts: []graphrag.Fact{{Text: "Lumen written in Rust", SourceURL: "http://lumen/faq.html#written-in", Score: 0.9,
		Triple: kgagent.Triple{Subject: kgagent.Entity{Name: "Lumen"}}}}}
	m := newManager(t, Config{Builtins: BuiltinsConfig{Searcher: fs, Graph: g, SearchK: 3}})
	var ev events
	ans, err := m.Ask(context.Background(), Request{Question: "What language is Lumen written in?", Collection: "lumen"}, ev.emit)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs.reqs) != 1 || fs.reqs[0].Collection != "lumen" || fs.reqs[0].K < 3 || fs.reqs[0].Mode != corpus.ModeHybrid {
		t.Errorf("search requests = %+v", fs.reqs)
	}
	var obs kgagent.Event
	for _, e := range ev.all() {
		if e.Kind == kgagent.EventObservation {
			obs = e
		}
	}
	if !strings.HasPrefix(obs.Text, "[1] FAQ › What is Lumen written in? (http://lumen/faq.html#written-in)\nLumen is written in Rust.") ||
		!strings.Contains(obs.Text, "Facts:\n- Lumen written in Rust [1]") {
		t.Errorf("observation = %q", obs.Text)
	}
	if !strings.Contains(ans.Answer, "Rust") || !strings.Contains(ans.Answer, "[1]") {
		t.Errorf("answer = %q", ans.Answer)
	}
	if len(ans.Sources) == 0 || ans.Sources[0].URL != "http://lumen/faq.html#written-in" {
		t.Errorf("sources = %+v", ans.Sources)
	}
}

func TestQueryCorpusErrors(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		answer string
	}{
		{"no corpus", Config{}, "no document corpus is configured"},
		{"search down", Config{Builtins: BuiltinsConfig{Searcher: &fakeSearch{err: kgagent.Errorf(kgagent.EUNAVAILABLE, "index offline")}}}, "index offline"},
		{"nothing found", Config{Builtins: BuiltinsConfig{Searcher: &fakeSearch{}}}, "The docs don't say: nothing in them matched the question."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newManager(t, tt.cfg)
			ans, err := m.Ask(context.Background(), Request{Question: "What is the retention?"}, nil)
			if err != nil || !strings.Contains(ans.Answer, tt.answer) {
				t.Errorf("answer = %q, %v", ans.Answer, err)
			}
		})
	}
}

func builtinCall(t *testing.T, m *Manager, name string, call FuncCall) (FuncResult, error) {
	t.Helper()
	e, _ := m.entry(DefaultAgentName)
	f, ok := e.commands[name]
	if !ok {
		t.Fatalf("no builtin %s", name)
	}
	call.Agent = DefaultAgentName
	return invoke(context.Background(), f, call, time.Second)
}

func TestDatetimeBuiltins(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no tzdata")
	}
	m := newManager(t, Config{Location: berlin, Now: func() time.Time { return time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC) }})
	tests := []struct {
		fn, tz, want string
	}{
		{"fixie_utc_datetime", "", "Sunday, 22 November 2026, 11:00:00 UTC (+00:00)"},
		{"fixie_local_datetime", "America/New_York", "Sunday, 22 November 2026, 06:00:00 EST (-05:00) America/New_York"},
		{"fixie_local_datetime", "", "Sunday, 22 November 2026, 12:00:00 CET (+01:00) Europe/Berlin"},
		{"fixie_local_datetime", "Not/AZone", "Sunday, 22 November 2026, 12:00:00 CET (+01:00) Europe/Berlin"},
	}
	for _, tt := range tests {
		res, err := builtinCall(t, m, tt.fn, FuncCall{TimeZone: tt.tz})
		if err != nil || res.Message.Text != tt.want {
			t.Errorf("%s(%q) = %q, %v; want %q", tt.fn, tt.tz, res.Message.Text, err, tt.want)
		}
	}
	res, err := builtinCall(t, m, "fixie_base_prompt", FuncCall{})
	if err != nil || !strings.HasPrefix(res.Message.Text, "I am a documentation assistant.") {
		t.Errorf("base prompt = %q %v", res.Message.Text, err)
	}
}

func TestQueryEmbed(t *testing.T) {
	doc := "Shipping\n\nOrders ship within two days.\n\nReturns\n\nReturns are accepted for 30 days after delivery."
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, doc)
	}))
	defer web.Close()
	// the test's server is on loopback, which the default embed reader refuses
	m := newManager(t, Config{Builtins: BuiltinsConfig{EmbedFetch: (&embeds.Reader{HTTPClient: web.Client()}).Read}})
	tests := []struct {
		name   string
		text   string
		embeds map[string]kgagent.Embed
		want   string
		code   string
	}{
		{"data uri", "How long are returns accepted in #policy?", map[string]kgagent.Embed{"policy": {ContentType: "text/plain", URI: kgagent.DataURI([]byte(doc))}},
			"Returns are accepted for 30 days after delivery.", ""},
		{"http uri, sole embed", "when do orders ship?", map[string]kgagent.Embed{"1": {ContentType: "text/plain", URI: web.URL}},
			"Orders ship within two days.", ""},
		{"no key", "what about #nope?", map[string]kgagent.Embed{"a": {URI: "data:base64,"}, "b": {URI: "data:base64,"}}, "", kgagent.EINVALID},
		{"binary", "#img size?", map[string]kgagent.Embed{"img": {ContentType: "image/png", URI: "data:base64,AAAA"}}, "", kgagent.EUNSUPPORTED},
		{"bad data uri", "#x?", map[string]kgagent.Embed{"x": {ContentType: "text/plain", URI: "data:base64,@@@"}}, "", kgagent.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := builtinCall(t, m, "fixie_query_embed", FuncCall{Query: kgagent.Message{Text: tt.text, Embeds: tt.embeds}})
			if tt.code != "" {
				if kgagent.ErrorCode(err) != tt.code {
					t.Fatalf("err = %v, want %s", err, tt.code)
				}
				return
			}
			if err != nil || !strings.HasPrefix(res.Message.Text, "[1] #") || !strings.Contains(res.Message.Text, tt.want) {
				t.Errorf("got %q, %v; want a numbered source holding %q", res.Message.Text, err, tt.want)
			}
		})
	}
	// Through a whole run: the request's embeds reach the func.
	llm := script("Ask Func[fixie_query_embed]: How long are returns accepted in #policy?", "A: 30 days [1]")
	m2 := newManager(t, Config{Model: ModelConfig{LLM: llm}})
	ans, err := m2.Ask(context.Background(), Request{Question: "returns?", Agent: "default",
		Embeds: map[string]kgagent.Embed{"policy": {ContentType: "text/plain", URI: kgagent.DataURI([]byte(doc))}}}, nil)
	if err != nil || len(ans.Sources) != 1 || ans.Sources[0].Title != "#policy" {
		t.Errorf("answer = %+v, %v", ans, err)
	}
	// The extractive model asks fixie_query_embed when the question names
	// an embed, and answers from it.
	m4 := newManager(t, Config{})
	ans, err = m4.Ask(context.Background(), Request{Question: "How long are returns accepted according to #policy?", Agent: "default",
		Embeds: map[string]kgagent.Embed{"policy": {ContentType: "text/plain", URI: kgagent.DataURI([]byte(doc))}}}, nil)
	if err != nil || !strings.HasPrefix(ans.Answer, "Returns are accepted for 30 days after delivery [1]") {
		t.Errorf("extractive embed answer = %q, %v", ans.Answer, err)
	}
	// A configured EmbedSearch is used instead of the paragraph scorer.
	called := false
	m3 := newManager(t, Config{Builtins: BuiltinsConfig{EmbedSearch: func(ctx context.Context, title, text, query string, k int) ([]corpus.Hit, error) {
		called = true
		return []corpus.Hit{{Chunk: kgagent.Chunk{Text: "from embed search"}, Score: 1}}, nil
	}}})
	res, err := builtinCall(t, m3, "fixie_query_embed", FuncCall{Query: kgagent.Message{Text: "#a?", Embeds: map[string]kgagent.Embed{"a": {URI: kgagent.DataURI([]byte("x"))}}}})
	if err != nil || !called || !strings.Contains(res.Message.Text, "from embed search") {
		t.Errorf("EmbedSearch not used: %q %v", res.Message.Text, err)
	}
}

// TestEmbedRefNeedsAnEmbed: a # inside a word ("PKCS#1", "C#") names no
// embed, and a question naming one with no embed attached is searched in
// the corpus instead of failing with "name an embed as #key".
func TestEmbedRefNeedsAnEmbed(t *testing.T) {
	for q, want := range map[string]bool{"PKCS#1 keys": false, "C# and Lumen": false, "summarize #doc": true, "#img size?": true, "see (#a)": true} {
		if got := extractive.EmbedRef.MatchString(q); got != want {
			t.Errorf("EmbedRef.MatchString(%q) = %v, want %v", q, got, want)
		}
	}
	m := newManager(t, Config{Builtins: BuiltinsConfig{Searcher: &fakeSearch{docs: lumenDocs}}})
	res, err := builtinCall(t, m, "fixie_query_embed", FuncCall{Query: kgagent.Message{Text: "What is the default HTTP port of #1?"}})
	if err != nil || !strings.Contains(res.Message.Text, "8086") {
		t.Errorf("fixie_query_embed without embeds = %q, %v; want the corpus's answer", res.Message.Text, err)
	}
	ans, err := m.Ask(context.Background(), Request{ID: "r1", Question: "Can Lumen read PKCS#1 keys on its default HTTP port?"}, nil)
	if err != nil || strings.Contains(ans.Answer, "name an embed") {
		t.Errorf("answer = %q, %v", ans.Answer, err)
	}
}

func TestFuncParametersValidated(t *testing.T) {
	var got map[string]any
	mul := Func{Name: "multiply", Description: "Multiplies two numbers.", Parameters: &Schema{Type: "object", Required: []string{"a", "b"},
		Properties: map[string]*Schema{"a": {Type: "integer"}, "b": {Type: "integer"}, "mode": {Type: "string", Enum: []any{"fast", "exact"}}}},
		Handler: func(ctx context.Context, c FuncCall) (FuncResult, error) {
			got = c.Args
			return FuncResult{Message: kgagent.Message{Text: fmt.Sprint(c.Args["a"].(float64) * c.Args["b"].(float64))}}, nil
		}}
	tests := []struct {
		input string
		code  string
		want  string
	}{
		{`{"a": 6, "b": 7}`, "", "42"},
		{`{"a": 6, "b": 7, "mode": "exact"}`, "", "42"},
		{`{"a": 6}`, kgagent.EINVALID, `missing required property "b"`},
		{`{"a": 6, "b": 1.5}`, kgagent.EINVALID, "$.b: want an integer"},
		{`{"a": 6, "b": 7, "mode": "slow"}`, kgagent.EINVALID, "want one of fast, exact"},
		{`6 times 7`, kgagent.EINVALID, "takes a JSON object"},
	}
	for _, tt := range tests {
		got = nil
		res, err := invoke(context.Background(), mul, FuncCall{Query: kgagent.Message{Text: tt.input}}, time.Second)
		if kgagent.ErrorCode(err) != tt.code {
			t.Errorf("%s: err = %v", tt.input, err)
			continue
		}
		if tt.code != "" {
			if !strings.Contains(kgagent.ErrorMessage(err), tt.want) || got != nil {
				t.Errorf("%s: err %q, handler called: %v", tt.input, kgagent.ErrorMessage(err), got != nil)
			}
			continue
		}
		if res.Message.Text != tt.want {
			t.Errorf("%s = %q", tt.input, res.Message.Text)
		}
	}
}

func TestBoundStorage(t *testing.T) {
	st := &memStorage{m: map[string]any{}}
	call := FuncCall{Agent: "a", Caller: Caller{UserID: "u"}, UserStorage: st}
	ctx := context.Background()
	if err := call.Storage().Set(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	if v, err := call.Storage().Get(ctx, "k"); err != nil || v != "v" || st.last != "a/u/k" {
		t.Errorf("get = %v %v (%s)", v, err, st.last)
	}
	anon := FuncCall{Agent: "a", Caller: Caller{Anonymous: true}, UserStorage: st}
	if _, err := anon.Storage().Get(ctx, "k"); kgagent.ErrorCode(err) != kgagent.EUserStorageNeedsUser {
		t.Errorf("anonymous: %v", err)
	}
	none := FuncCall{Agent: "a", Caller: Caller{UserID: "u"}}
	if err := none.Storage().Set(ctx, "k", 1); kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
		t.Errorf("unconfigured: %v", err)
	}
}

type memStorage struct {
	m    map[string]any
	last string
}

func (s *memStorage) Get(ctx context.Context, a, u, k string) (any, error) {
	s.last = a + "/" + u + "/" + k
	v, ok := s.m[s.last]
	if !ok {
		return nil, kgagent.Errorf(kgagent.EUserStorageNotFound, "no key")
	}
	return v, nil
}
func (s *memStorage) Set(ctx context.Context, a, u, k string, v any) error {
	s.m[a+"/"+u+"/"+k] = v
	return nil
}
func (s *memStorage) Delete(ctx context.Context, a, u, k string) error { return errors.New("unused") }
func (s *memStorage) Keys(ctx context.Context, a, u string) ([]string, error) {
	return nil, errors.New("unused")
}
