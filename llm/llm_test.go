package llm

import (
	"testing"

	"github.com/kgagent/kgagent"
)

func TestNewEpisode(t *testing.T) {
	ev := &kgagent.Evidence{Query: "port"}
	after := []ChatMessage{
		{Role: "assistant", Content: "Ask Func[search]: port"},
		{Role: "user", Content: "Func[search] says: [1] Config", Observation: &Observation{Name: "search", Text: "[1] Config", Evidence: ev}},
		{Role: "assistant", Content: "garbled"},
		{Role: "user", Content: "Error: reply with one line"}, // a correction: no observation
		{Role: "assistant", Content: "Ask Agent[helper]: port?"},
		{Role: "user", Content: "Agent[helper] says: 8086", Observation: &Observation{Agent: true, Name: "helper", Text: "8086"}},
	}
	st := []Stanza{{Index: 1, Text: "Q: x\nA: y"}}
	ep := NewEpisode(st, "  What port?\n", after)
	if ep.Question != "What port?" || ep.Actions != 3 || len(ep.FewShots) != 1 {
		t.Errorf("episode = %+v", ep)
	}
	if len(ep.Observations) != 2 || ep.Observations[0].Evidence != ev || !ep.Observations[1].Agent || ep.Observations[1].Text != "8086" {
		t.Errorf("observations = %+v", ep.Observations)
	}
}

func TestAgentToolName(t *testing.T) {
	for in, want := range map[string]string{"docs": "ask_agent_docs", "a.b c": "ask_agent_a_b_c"} {
		if got := AgentToolName(in); got != want {
			t.Errorf("AgentToolName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := AgentToolName(string(make([]byte, 100))); len(got) != 64 {
		t.Errorf("long name: %d bytes", len(got))
	}
}

func TestStepText(t *testing.T) {
	tests := []struct {
		st         Step
		line, text string
	}{
		{Step{Kind: StepFunc, Name: "quote", Input: "GOOG"}, "Ask Func[quote]: GOOG", "Ask Func[quote]: GOOG"},
		{Step{Kind: StepAgent, Name: "docs", Input: "port?", Thought: "ask docs"}, "Ask Agent[docs]: port?", "ask docs\nAsk Agent[docs]: port?"},
		{Step{Kind: StepAnswer, Answer: "8086 [1]"}, "A: 8086 [1]", "A: 8086 [1]"},
	}
	for _, tt := range tests {
		if got := tt.st.Line(); got != tt.line {
			t.Errorf("Line() = %q, want %q", got, tt.line)
		}
		if got := tt.st.Text(); got != tt.text {
			t.Errorf("Text() = %q, want %q", got, tt.text)
		}
	}
}
