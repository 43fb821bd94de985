package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent/cite"
	"github.com/kgagent/kgagent/agent/extractive"
	"github.com/kgagent/kgagent/corpus"
)

// TestSearchFirstAndAttribution: with SearchFirst a docs agent's run starts
// with the corpus search of the question (the same events as a model's
// search, iteration 1), the model answers from it, and an answer written
// without citations is cited where the sources support it, or marked as
// unsupported with what the docs say.
func TestSearchFirstAndAttribution(t *testing.T) {
	tests := []struct {
		name, question, output string
		citations              string
		want                   []string // in the final answer
		notWant                []string
		docs                   []corpus.Hit // lumenDocs when nil
		calls                  int          // model calls, 1 when 0
	}{
		{name: "model cites", question: "What is the default HTTP port?", output: "A: The HTTP API listens on port 8086 [1]. Lumen is written in Rust [3].",
			citations: kgagent.CitationsModel, want: []string{"8086 [1].", "Rust."}, notWant: []string{"[2]", "[3]"}},
		{name: "model cites the wrong source", question: "What is the default HTTP port?", output: "A: The HTTP API listens on port 8086 [2].",
			citations: kgagent.CitationsAttributed, want: []string{"8086 [1]."}, notWant: []string{"[2]"}},
		{name: "attributed", question: "What is the default HTTP port?", output: "A: The HTTP API listens on port 8086 by default.",
			citations: kgagent.CitationsAttributed, want: []string{"The HTTP API listens on port 8086 by default [1]."}},
		{name: "wrong number is unsupported", question: "What is the default HTTP port?", output: "A: The HTTP API listens on port 80 by default.",
			citations: kgagent.CitationsUnsupported, want: []string{"port 80 by default.\n\n" + unsupportedNote + " The docs say: ", "8086", "[1]"}},
		{name: "not in the docs", question: "How do I put Lumen behind nginx?", output: "A: Use an nginx proxy_pass block.",
			// The docs do not cover it: the abstention alone, not the
			// model's invented answer. This searcher has no vocabulary,
			// so it says what it searched for, never that the docs lack
			// a word.
			citations: kgagent.CitationsUnsupported, want: []string{extractive.NotFound, "nginx"}, notWant: []string{"The docs say: ", "proxy_pass", unsupportedNote, extractive.Abstention}},
		// A small model's junk and echoes never reach the answer, and
		// what it names must be in the passage verbatim (issue 26).
		{name: "junk letter before the answer", question: "What is the default HTTP port?", output: "A: a\nThe HTTP API listens on port 8086 by default.",
			citations: kgagent.CitationsAttributed, want: []string{"The HTTP API listens on port 8086 by default [1]."}, notWant: []string{"a\n"}},
		{name: "broken answer label", question: "What is the default HTTP port?", output: "A: a nswer: The HTTP API listens on port 8086 by default.",
			citations: kgagent.CitationsAttributed, want: []string{"The HTTP API listens on port 8086 by default [1]."}, notWant: []string{"nswer"}},
		{name: "echoed instructions", question: "What is the default HTTP port?",
			output:    "A: The HTTP API listens on port 8086 by default.\nReply with one line: Ask Func[name]: input, Ask Agent[name]: question, or A: answer.",
			citations: kgagent.CitationsAttributed, want: []string{"The HTTP API listens on port 8086 by default [1]."}, notWant: []string{"Reply with one line", "Ask Func", "A: answer"}},
		{name: "the protocol quoted in a list", question: "What is the default HTTP port?",
			output:    "A: 1. Search for \"Ask Func[name]\":\n2. The HTTP API listens on port 8086 by default.",
			citations: kgagent.CitationsAttributed, want: []string{"2. The HTTP API listens on port 8086 by default [1]."}, notWant: []string{"Ask Func", "Search for"}},
		{name: "the placeholder alone", question: "What is the default HTTP port?", output: "A: answer [1]",
			citations: kgagent.CitationsFallback, want: []string{"The model gave no answer (only protocol text).", "8086"}, notWant: []string{"answer [1]"}},
		// SmolLM2 (json protocol, CI): a heading copied as a question,
		// cited, to a question the docs do not cover, was "attributed".
		{name: "a question is no answer", question: "How do I deploy Lumen with a Helm chart on Kubernetes?", output: "A: What is Lumen written in [3]?",
			citations: kgagent.CitationsFallback, want: []string{"The model gave no answer (a question, not an answer).", extractive.NotFound, "Helm"}, notWant: []string{"written in [3]"}},
		{name: "questions around an answer are kept", question: "What is the default HTTP port?", output: "A: Which port? The HTTP API listens on port 8086 by default.",
			citations: kgagent.CitationsAttributed, want: []string{"The HTTP API listens on port 8086 by default [1]."}},
		{name: "a title is no claim", question: "What is the default HTTP port?", output: "A: Lumen documentation [1].",
			citations: kgagent.CitationsUnsupported, want: []string{unsupportedNote, "8086"}, notWant: []string{"documentation [1]"}},
		{name: "a command not in the docs", question: "What is the default HTTP port?", output: "A: Run `lumen --http.port 8086` to change the HTTP port.",
			citations: kgagent.CitationsUnsupported, want: []string{"Run `lumen --http.port 8086` to change the HTTP port.\n\n" + unsupportedNote}},
		{name: "made-up URL for a question the docs do not cover", question: "How do I deploy Lumen with a Helm chart on Kubernetes?",
			output:    "A: Install the chart with helm install lumen lumen/lumen, see https://kubernetes.io/docs/helm/lumen for the values.",
			citations: kgagent.CitationsUnsupported, want: []string{extractive.NotFound, "Helm"}, notWant: []string{"kubernetes.io", "helm install", unsupportedNote, extractive.Abstention}},
		// SmolLM2 (tools protocol) in a make test run: one supported
		// sentence left an invented URL in an uncited line "attributed".
		{name: "made-up URL beside a supported sentence", question: "How do I deploy Lumen with a Helm chart on Kubernetes?",
			output:    "A: 2023-08-24 15:57:29 - https://www.kubernetes.io/en_us/docs/lumen-client\nThe HTTP API listens on port 8086 by default.",
			citations: kgagent.CitationsUnsupported, want: []string{extractive.NotFound, "Helm"}, notWant: []string{"kubernetes.io", "8086 by default [1]"}},
		{name: "partly supported answer to a question the docs do not cover", question: "How do I deploy Lumen with a Helm chart on Kubernetes?",
			output:    "A: Lumen deletes old data according to the retention policy. Deploy the chart and set replicas to three for Kubernetes clusters.",
			citations: kgagent.CitationsUnsupported, want: []string{extractive.NotFound, "Helm"}, notWant: []string{"replicas", "retention policy ["}},
		// SmolLM2 (text protocol): a cited answer whose claim beside the
		// supported one is made up, to a question the docs do not cover,
		// was kept as the model's.
		{name: "model cites a partly supported answer to a question the docs do not cover", question: "How do I deploy Lumen with a Helm chart on Kubernetes?",
			output:    "A: Lumen is written in Rust [2]. Deploy the chart and set replicas to three for Kubernetes clusters.",
			citations: kgagent.CitationsUnsupported, want: []string{extractive.NotFound, "Helm"}, notWant: []string{"replicas", "Rust [2]."}},
		{name: "model cites a claim-less line to a question the docs do not cover", question: "How do I deploy Lumen with a Helm chart on Kubernetes?",
			output:    "A: the lumen.connect function (http:// [1]",
			citations: kgagent.CitationsUnsupported, want: []string{extractive.NotFound, "Helm"}, notWant: []string{"lumen.connect function"}},
		// Gemma-3 (text protocol, CI): a line copied from a passage, looped
		// to the token limit and cut there, to a question the docs do not
		// cover, was kept as the model's with its citations.
		{name: "a looping model copies a passage", question: "How do I deploy Lumen with a Helm chart on Kubernetes?", output: gemmaLoop, docs: withQueryResult,
			citations: kgagent.CitationsUnsupported, want: []string{extractive.NotFound, "Helm"}, notWant: []string{"Client.query()", unsupportedNote}, calls: 2},
		{name: "a looping model copies a passage after A:", question: "How do I deploy Lumen with a Helm chart on Kubernetes?", output: "A: " + gemmaLoop, docs: withQueryResult,
			citations: kgagent.CitationsUnsupported, want: []string{extractive.NotFound, "Helm"}, notWant: []string{"Client.query()", unsupportedNote}},
		{name: "a looping model answers", question: "What is the default HTTP port?", output: "A: " + strings.Repeat("The HTTP API listens on port 8086 by default.\n", 3),
			citations: kgagent.CitationsAttributed, want: []string{"The HTTP API listens on port 8086 by default [1]."}, notWant: []string{"\n"}},
		{name: "model cites a right and a wrong source", question: "What is the default HTTP port?", output: "A: The HTTP API listens on port 8086 [1]. Set http.port to change the HTTP port [3].",
			citations: kgagent.CitationsModel, want: []string{"The HTTP API listens on port 8086 [1]. Set http.port to change the HTTP port [1]."}, notWant: []string{"[2]", "[3]"}},
		{name: "model cites a source out of range", question: "What is the default HTTP port?", output: "A: The HTTP API listens on port 8086 [7].",
			citations: kgagent.CitationsAttributed, want: []string{"The HTTP API listens on port 8086 [1]."}, notWant: []string{"[7]", "[2]"}},
		{name: "model cites, and names a command no source holds", question: "What is the default HTTP port?", output: "A: The HTTP API listens on port 8086 [1]. Install it with pip install lumen.",
			citations: kgagent.CitationsUnsupported, want: []string{"pip install lumen.\n\n" + unsupportedNote, "8086"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			llm := script(tt.output, tt.output)
			docs := lumenDocs
			if tt.docs != nil {
				docs = tt.docs
			}
			m := newManager(t, Config{Model: ModelConfig{LLM: llm}, Loop: LoopConfig{SearchFirst: true, AttributeCitations: true, MaxIterations: 3}, Builtins: BuiltinsConfig{Searcher: &fakeSearch{docs: docs}}})
			var evs events
			ans, err := m.Ask(context.Background(), Request{ID: "r1", Question: tt.question}, evs.emit)
			if err != nil {
				t.Fatal(err)
			}
			if got := evs.kinds(); got != "route thought action observation deltas answer!" && tt.calls < 2 {
				t.Errorf("events %s", got)
			}
			all := evs.all()
			checkSeq(t, all, "r1")
			if all[1].Text != searchFirstThought || all[2].Func != corpusFunc || all[2].Text != "Ask Func[fixie_query_corpus]: "+tt.question || len(all[3].Sources) == 0 {
				t.Errorf("search events %+v", all[1:4])
			}
			calls := llm.Calls()
			if want := max(tt.calls, 1); len(calls) != want || ans.Iterations != want+1 {
				t.Fatalf("%d LLM calls, %d iterations", len(calls), ans.Iterations)
			}
			last := calls[0].Messages[len(calls[0].Messages)-1]
			if !strings.HasPrefix(last.Content, "Func[fixie_query_corpus] says: [") {
				t.Errorf("the model's first prompt ends with %q", last.Content)
			}
			t.Logf("answer %q, sources %d", ans.Answer, len(ans.Sources))
			final := all[len(all)-1]
			if ans.Citations != tt.citations || final.Citations != tt.citations {
				t.Errorf("citations %q / event %q, want %q; answer %q", ans.Citations, final.Citations, tt.citations, ans.Answer)
			}
			checkWords(t, ans.Answer, tt.want, tt.notWant)
			// Every citation names a source of the answer, and an attributed
			// one a source whose text holds the sentence's numbers.
			for _, n := range cite.Numbers(ans.Answer) {
				if n < 1 || n > len(ans.Sources) {
					t.Errorf("[%d] with %d sources: %q", n, len(ans.Sources), ans.Answer)
				}
			}
			if tt.citations != kgagent.CitationsModel && len(cite.Numbers(ans.Answer)) > 0 && !strings.Contains(ans.Sources[0].Snippet, "8086") &&
				!strings.Contains(ans.Answer, extractive.NotFound) && !strings.Contains(ans.Answer, extractive.Abstention) {
				t.Errorf("[1] is %+v", ans.Sources[0])
			}
		})
	}
}

// gemmaLoop is Gemma-3-270M's answer to the Helm question in a CI run
// (text protocol, 96 tokens): one line of the query results page, looped
// until the token limit cut it.
const gemmaLoop = "\n- lumen: The result of Client.query().\n- lumen: The result of Client.query(). [1]\n- lumen: The result of Client.query().\n- lumen: The result of Client.query(). [1]\n- lumen: The result of Client.query().\n- lumen: The result of Client.query(). [1]\n- lumen: The result of Client."

// withQueryResult is lumenDocs and the demo's query results section, found
// first for the Helm question (its words: "lumen").
var withQueryResult = append([]corpus.Hit{hit("http://lumen/api/python/query.html#lumen.QueryResult", "Query results", "class lumen.QueryResult",
	"The result of Client.query(). columns: A list of column names. rows: A list of rows, each a list of values.")}, lumenDocs...)

// TestSearchFirstOnlyForDocsAgents: an agent whose few-shots never search
// the corpus, or a run without room for a model call after the search, does
// not start with a search.
func TestSearchFirstOnlyForDocsAgents(t *testing.T) {
	llm := script("A: It is noon.")
	m := newManager(t, Config{Model: ModelConfig{LLM: llm}, Loop: LoopConfig{SearchFirst: true, AttributeCitations: true}, Builtins: BuiltinsConfig{Searcher: &fakeSearch{docs: lumenDocs}}},
		AgentConfig{Name: "clock", FewShots: []string{"Q: What time is it?\nAsk Func[fixie_utc_datetime]: now\nFunc[fixie_utc_datetime] says: 12:00 UTC\nA: It is 12:00 UTC."}})
	var evs events
	ans, err := m.Ask(context.Background(), Request{Question: "What time is it?", Agent: "clock"}, evs.emit)
	if err != nil {
		t.Fatal(err)
	}
	if got := evs.kinds(); got != "route deltas answer!" || ans.Citations != "" || ans.Answer != "It is noon." {
		t.Errorf("events %s, answer %+v", got, ans)
	}
	one := newManager(t, Config{Model: ModelConfig{LLM: script("A: 8086")}, Loop: LoopConfig{SearchFirst: true, MaxIterations: 1}, Builtins: BuiltinsConfig{Searcher: &fakeSearch{docs: lumenDocs}}})
	if ans, err := one.Ask(context.Background(), Request{Question: "What is the default HTTP port?"}, nil); err != nil || ans.Iterations != 1 || ans.Citations != "" {
		t.Errorf("one iteration: %+v %v", ans, err)
	}
}

// TestNoAnswerFallsBackToTheDocs: a model that never answers (the
// iteration limit, malformed steps) ends, when the run searched, with what
// the docs say, marked as such, after an error event naming why; without
// attribution, or without evidence, the run fails as before.
func TestNoAnswerFallsBackToTheDocs(t *testing.T) {
	for _, tt := range []struct {
		name  string
		llm   *scripted
		iters int
		why   string
	}{
		{"iteration limit", &scripted{outputs: [][]string{{"Ask Func[fixie_query_corpus]: HTTP port"}, {"Ask Func[fixie_query_corpus]: gRPC port"}}, repeat: true}, 3, "iteration limit (3)"},
		{"malformed", &scripted{outputs: [][]string{{"```\nA: no\n```"}}, repeat: true}, 5, "malformed 3 times"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := newManager(t, Config{Model: ModelConfig{LLM: tt.llm}, Loop: LoopConfig{SearchFirst: true, AttributeCitations: true, MaxIterations: tt.iters}, Builtins: BuiltinsConfig{Searcher: &fakeSearch{docs: lumenDocs}}})
			var evs events
			ans, err := m.Ask(context.Background(), Request{Question: "What is the default HTTP port?"}, evs.emit)
			if err != nil {
				t.Fatal(err)
			}
			if ans.Citations != kgagent.CitationsFallback || !strings.HasPrefix(ans.Answer, "The model gave no answer (") || !strings.Contains(ans.Answer, tt.why) ||
				!strings.Contains(ans.Answer, "The docs say: The HTTP API listens on port 8086 by default.") || cite.Numbers(ans.Answer)[0] != 1 || ans.Iterations < 3 {
				t.Errorf("answer %+v", ans)
			}
			all := evs.all()
			if ev := all[len(all)-2]; ev.Kind != kgagent.EventError || !strings.Contains(ev.Text, "answering from the sources found") {
				t.Errorf("events %s, before the answer %+v", evs.kinds(), ev)
			}
			// Without attribution the run fails as it always did.
			tt.llm.calls = nil
			off := newManager(t, Config{Model: ModelConfig{LLM: tt.llm}, Loop: LoopConfig{SearchFirst: true, MaxIterations: tt.iters}, Builtins: BuiltinsConfig{Searcher: &fakeSearch{docs: lumenDocs}}})
			if _, err := off.Ask(context.Background(), Request{Question: "What is the default HTTP port?"}, nil); kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
				t.Errorf("without attribution: %v", err)
			}
		})
	}
}

// TestUnloop: a looping model's repeated lines are kept once (with the
// citations of a later copy when the first has none), a last line that
// begins one again is dropped, and a sentence the token limit cut is
// dropped when one before it ends; short lines and code repeat freely.
func TestUnloop(t *testing.T) {
	tests := []struct {
		in, stop, want string
		looped         bool
	}{
		{in: gemmaLoop, want: "- lumen: The result of Client.query(). [1]", looped: true},
		{in: gemmaLoop, stop: "length", want: "- lumen: The result of Client.query(). [1]", looped: true},
		{in: "Port 8086 [1].\nThe HTTP API listens on port 8086.", stop: "repeat", want: "Port 8086 [1].\nThe HTTP API listens on port 8086.", looped: true},
		{in: "The HTTP API listens on port 8086 [1]. Set http.port to change", stop: "length", want: "The HTTP API listens on port 8086 [1]."},
		{in: "The HTTP API listens on port 8086 [1]. Set http.port to change", want: "The HTTP API listens on port 8086 [1]. Set http.port to change"},
		{in: "Set http.port to change", stop: "length", want: "Set http.port to change"},
		// A sentence ended inside closing quotes, brackets or emphasis is
		// finished.
		{in: "The HTTP API listens on port 8086 [1]. Set it with \"http.port = 8086.\"", stop: "length", want: "The HTTP API listens on port 8086 [1]. Set it with \"http.port = 8086.\""},
		{in: "It listens on port 8086 [1]. (See the configuration reference.)", stop: "length", want: "It listens on port 8086 [1]. (See the configuration reference.)"},
		{in: "It listens on port 8086 [1].\n**Restart it after a change.** [2]", stop: "length", want: "It listens on port 8086 [1].\n**Restart it after a change.** [2]"},
		{in: "It listens on port 8086 [1]. (See the configuration", stop: "length", want: "It listens on port 8086 [1]."},
		// The call's timeout cuts an answer as the token limit does: the
		// output so far is used (stop "timeout").
		{in: "The HTTP API listens on port 8086 [1]. Set http.port to change", stop: "timeout", want: "The HTTP API listens on port 8086 [1]."},
		{in: "It listens on 8086. [1]", stop: "length", want: "It listens on 8086. [1]"},
		{in: "- yes\n- yes\n- yes", want: "- yes\n- yes\n- yes"},
		{in: "Run:\n```\nlumen server --port 8086\nlumen server --port 8086\n```\nDone.", want: "Run:\n```\nlumen server --port 8086\nlumen server --port 8086\n```\nDone."},
		{in: "Run:\n```\nlumen server --port 8086\nlumen ser", stop: "length", want: "Run:\n```\nlumen server --port 8086\nlumen ser"},
		// A code block the model closed before the limit is finished: its
		// closing fence is no unfinished sentence to drop.
		{in: "Start it.\n```\nlumen server --port 8086\n```", stop: "length", want: "Start it.\n```\nlumen server --port 8086\n```"},
		{in: "Start it.\n```\nlumen server --port 8086\n```\nThen open the", stop: "length", want: "Start it.\n```\nlumen server --port 8086\n```"},
		{in: "Start the server on its port.\n```\nlumen server --port 8086\n```\nStart the server on its port.", stop: "length", want: "Start the server on its port.\n```\nlumen server --port 8086\n```", looped: true},
		{in: "The HTTP API listens on port 8086.\nthe HTTP  API listens on port 8086 [1].\nIt is set by http.port.", want: "the HTTP  API listens on port 8086 [1].\nIt is set by http.port.", looped: true},
	}
	for _, tt := range tests {
		got, looped := unloop(tt.in, tt.stop)
		if got != tt.want || looped != tt.looped {
			t.Errorf("unloop(%q, %q) = %q, %v; want %q, %v", tt.in, tt.stop, got, looped, tt.want, tt.looped)
		}
	}
}
