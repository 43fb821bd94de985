package openai

import (
	"testing"

	"github.com/kgagent/kgagent/llm"
)

// FuzzStructuredResult feeds arbitrary model output to the json and tools
// step readers: they never panic, and every step they return is valid.
func FuzzStructuredResult(f *testing.F) {
	f.Add(`{"thought":"t","action":"search","input":"q"}`, "search", `{"input":"x"}`)
	f.Add(`{"thought":"","action":"answer","input":{"a":1}}`, "", "")
	f.Add(`not json`, "search", `{"input":`)
	tools := []llm.Tool{{Name: "search"}, {Name: "cmd", Parameters: map[string]any{"type": "object"}}}
	f.Fuzz(func(t *testing.T, content, callName, callArgs string) {
		for _, proto := range []string{llm.ProtocolJSON, llm.ProtocolTools} {
			s := &structured{proto: proto, tools: tools}
			s.content.WriteString(content)
			if callName != "" && proto == llm.ProtocolTools {
				s.calls = []ToolCall{{Function: FunctionCall{Name: callName, Arguments: callArgs}}}
			}
			text, steps := s.result()
			for _, st := range steps {
				switch st.Kind {
				case llm.StepAnswer:
					if st.Answer == "" {
						t.Fatalf("%s: empty answer from %q", proto, content)
					}
				case llm.StepFunc:
					if st.Name == "" && callName == "" {
						t.Fatalf("%s: func step without a name from %q", proto, content)
					}
				default:
					t.Fatalf("%s: step kind %v", proto, st.Kind)
				}
			}
			if len(steps) > 0 && text == "" {
				t.Fatalf("%s: steps without a rendering", proto)
			}
		}
	})
}
