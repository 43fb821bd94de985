package agent

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/llm"
)

func registered(names ...string) func(string) bool {
	return func(n string) bool {
		for _, x := range names {
			if x == n {
				return true
			}
		}
		return false
	}
}

func TestParseStanzaRules(t *testing.T) {
	funcs := registered("quote", "genrand")
	tests := []struct {
		name   string
		stanza string
		conv   bool
		rule   string // "" means valid
	}{
		{"plain QA", "Q: hi\nA: hello", false, ""},
		{"func call", "Q: price of GOOG?\nAsk Func[quote]: GOOG\nFunc[quote] says: $1\nA: It is $1.", false, ""},
		{"agent call", "Q: weather?\nAsk Agent[weather]: today\nAgent[weather] says: sunny\nA: sunny", false, ""},
		{"two calls", "Q: x\nAsk Func[quote]: a\nFunc[quote] says: 1\nAsk Func[genrand]: 0, 1\nFunc[genrand] says: 0\nA: y", false, ""},
		{"thoughts allowed", "Q: x\nI should look it up.\nAsk Func[quote]: a\nFunc[quote] says: 1\nNow I know.\nA: y", false, ""},
		{"builtin func", "Q: time?\nAsk Func[fixie_utc_datetime]: now\nFunc[fixie_utc_datetime] says: 12:00\nA: noon", false, ""},
		{"embed query", "Q: summarize #doc\nAsk Func[fixie_query_embed]: summary of #doc\nFunc[fixie_query_embed] says: short\nA: short", false, ""},
		{"unregistered agent is fine", "Q: x\nAsk Agent[other]: a\nAgent[other] says: b\nA: c", false, ""},
		{"indented lines stripped", "   Q: x\n\tA: y   ", false, ""},
		{"conversational two rounds", "Q: a\nA: b\nQ: c\nAsk Func[quote]: d\nFunc[quote] says: e\nA: f", true, ""},
		{"thought after answer", "Q: a\nA: b\nsome trailing note", false, ""},

		{"empty", "", false, RuleEmpty},
		{"starts with thought", "Hello\nQ: x\nA: y", false, RuleStartsWithQ},
		{"starts with A", "A: y", false, RuleStartsWithQ},
		{"Q without text", "Q:\nA: y", false, RuleQueryText},
		{"no answer", "Q: x\nAsk Func[quote]: a\nFunc[quote] says: 1", false, RuleEndsWithA},
		{"only Q", "Q: x", false, RuleEndsWithA},
		{"ask without says", "Q: x\nAsk Func[quote]: a\nA: y", false, RuleAskThenSays},
		{"ask then thought then says", "Q: x\nAsk Func[quote]: a\nhmm\nFunc[quote] says: 1\nA: y", false, RuleAskThenSays},
		{"says name differs", "Q: x\nAsk Func[quote]: a\nFunc[genrand] says: 1\nA: y", false, RuleAskThenSays},
		{"func ask agent says", "Q: x\nAsk Func[quote]: a\nAgent[quote] says: 1\nA: y", false, RuleAskThenSays},
		{"agent ask without says", "Q: x\nAsk Agent[w]: a\nA: y", false, RuleAskThenSays},
		{"ask at end", "Q: x\nA: y\nAsk Func[quote]: a", false, RuleAskThenSays},
		{"says without ask", "Q: x\nFunc[quote] says: 1\nA: y", false, RuleSaysWithoutAsk},
		{"agent says without ask", "Q: x\nAgent[w] says: 1\nA: y", false, RuleSaysWithoutAsk},
		{"bad func name", "Q: x\nAsk Func[my-func]: a\nFunc[my-func] says: 1\nA: y", false, RuleName},
		{"empty func name", "Q: x\nAsk Func[]: a\nFunc[] says: 1\nA: y", false, RuleName},
		{"bad agent name", "Q: x\nAsk Agent[a b]: a\nAgent[a b] says: 1\nA: y", false, RuleName},
		{"bad says name", "Q: x\nFunc[a.b] says: 1\nA: y", false, RuleName},
		{"unregistered func", "Q: x\nAsk Func[nope]: a\nFunc[nope] says: 1\nA: y", false, RuleFuncRegistered},
		{"malformed ask no colon", "Q: x\nAsk Func[quote] GOOG\nA: y", false, RuleAskMalformed},
		{"malformed ask no bracket", "Q: x\nAsk Func quote: GOOG\nA: y", false, RuleAskMalformed},
		{"two rounds not conversational", "Q: a\nA: b\nQ: c\nA: d", false, RuleShape},
		{"two answers", "Q: a\nA: b\nA: c", false, RuleShape},
		{"two answers conversational", "Q: a\nA: b\nA: c", true, RuleShapeConv},
		{"Q after Q", "Q: a\nQ: b\nA: c", true, RuleShapeConv},
		{"answer then call", "Q: a\nA: b\nAsk Func[quote]: c\nFunc[quote] says: d\nA: e", false, RuleShape},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := ParseStanza(3, tt.stanza, tt.conv, funcs)
			if tt.rule == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				if st.Lines[0].Kind != llm.LineQuery {
					t.Fatalf("first line kind %v", st.Lines[0].Kind)
				}
				return
			}
			var ke *kgagent.Error
			if !errors.As(err, &ke) {
				t.Fatalf("want *kgagent.Error with rule %q, got %v", tt.rule, err)
			}
			if ke.Code != kgagent.EINVALID {
				t.Errorf("code = %s", ke.Code)
			}
			if ke.Details["rule"] != tt.rule {
				t.Errorf("rule = %q, want %q", ke.Details["rule"], tt.rule)
			}
			if ke.Details["stanza"] != 3 || !strings.Contains(ke.Message, "stanza 3") {
				t.Errorf("error does not name stanza 3: %s", ke.Message)
			}
			if tt.stanza != "" && !strings.Contains(ke.Message, strings.TrimSpace(strings.Split(tt.stanza, "\n")[0])) {
				t.Errorf("error does not quote the first line: %s", ke.Message)
			}
			if !strings.Contains(ke.Message, tt.rule) {
				t.Errorf("error does not state the rule: %s", ke.Message)
			}
		})
	}
}

func TestSplitFewShots(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"one", "Q: a\nA: b", []string{"Q: a\nA: b"}},
		{"two", "\nQ: a\nA: b\n\nQ: c\nA: d\n", []string{"Q: a\nA: b", "Q: c\nA: d"}},
		{"blank lines with spaces", "  Q: a\n  A: b\n   \n  \n  Q: c\n  A: d", []string{"Q: a\nA: b", "Q: c\nA: d"}},
		{"blank not before Q stays", "Q: a\nthinking\n\nmore thinking\nA: b", []string{"Q: a\nthinking\n\nmore thinking\nA: b"}},
		{"conversational no blank", "Q: a\nA: b\nQ: c\nA: d", []string{"Q: a\nA: b\nQ: c\nA: d"}},
		{"crlf", "Q: a\r\nA: b\r\n\r\nQ: c\r\nA: d", []string{"Q: a\nA: b", "Q: c\nA: d"}},
		{"empty", "\n \n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SplitFewShots(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseFewShotsNamesIndex(t *testing.T) {
	_, err := ParseFewShots([]string{"Q: a\nA: b", "Q: c\nAsk Func[x]: d\nFunc[x] says: e\nA: f"}, false, registered())
	if ke := (*kgagent.Error)(nil); !errors.As(err, &ke) || ke.Details["stanza"] != 2 || ke.Details["rule"] != RuleFuncRegistered {
		t.Fatalf("got %v", err)
	}
	st, err := ParseFewShots([]string{"Q: a\nA: b", "Q: c\nAsk Func[x]: d\nFunc[x] says: e\nA: f"}, false, registered("x"))
	if err != nil || len(st) != 2 || st[1].Lines[1].Name != "x" || st[1].Query() != "c" {
		t.Fatalf("got %+v %v", st, err)
	}
}

func TestClassifyLine(t *testing.T) {
	tests := []struct {
		in   string
		kind llm.LineKind
		name string
		text string
	}{
		{"Q: what?", llm.LineQuery, "", "what?"},
		{"A:yes", llm.LineAnswer, "", "yes"},
		{"Ask Func[quote]: GOOG", llm.LineAskFunc, "quote", "GOOG"},
		{"Ask Agent[w]:", llm.LineAskAgent, "w", ""},
		{"Func[quote] says: $1", llm.LineFuncSays, "quote", "$1"},
		{"Agent[w] says: hi", llm.LineAgentSays, "w", "hi"},
		{"Let me think", llm.LineThought, "", "Let me think"},
	}
	for _, tt := range tests {
		got := ClassifyLine(tt.in)
		if got.Kind != tt.kind || got.Name != tt.name || got.Text != tt.text {
			t.Errorf("ClassifyLine(%q) = %+v", tt.in, got)
		}
	}
}

func FuzzParseFewShots(f *testing.F) {
	f.Add("Q: a\nAsk Func[x]: b\nFunc[x] says: c\nA: d\n\nQ: e\nA: f", false)
	f.Add("Q: a\nA: b\nQ: c\nA: d", true)
	f.Add("Ask Func[]:\n\n\nQ:", false)
	f.Fuzz(func(t *testing.T, s string, conv bool) {
		parts := SplitFewShots(s)
		st, err := ParseFewShots(parts, conv, nil)
		if err != nil {
			var ke *kgagent.Error
			if !errors.As(err, &ke) || ke.Code != kgagent.EINVALID {
				t.Fatalf("error is not EINVALID: %v", err)
			}
			return
		}
		for _, x := range st {
			if x.Lines[0].Kind != llm.LineQuery {
				t.Fatalf("valid stanza does not start with Q: %q", x.Text)
			}
			last := llm.LineThought
			for _, l := range x.Lines {
				if l.Kind != llm.LineThought {
					last = l.Kind
				}
			}
			if last != llm.LineAnswer {
				t.Fatalf("valid stanza does not end with A: %q", x.Text)
			}
		}
	})
}
