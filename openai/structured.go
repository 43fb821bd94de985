package openai

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/llm"
)

// answerAction is the "action" of a JSON step that answers.
const answerAction = "answer"

// structured collects a tools or json completion and turns it into steps.
type structured struct {
	proto   string // llm.ProtocolTools or llm.ProtocolJSON
	tools   []llm.Tool
	content strings.Builder
	calls   []ToolCall
}

// mergeToolCall adds a streamed piece of a tool call: a new index starts a
// call, later pieces of it extend its name and arguments.
func mergeToolCall(calls []ToolCall, piece ToolCall) []ToolCall {
	for i := range calls {
		if calls[i].Index == piece.Index {
			if piece.ID != "" {
				calls[i].ID = piece.ID
			}
			calls[i].Function.Name += piece.Function.Name
			calls[i].Function.Arguments += piece.Function.Arguments
			return calls
		}
	}
	return append(calls, piece)
}

// result returns the steps of the completion and their rendering in the text
// protocol. A completion that is not a valid step comes back as its text
// with no steps, for the manager to judge (and correct).
func (s *structured) result() (string, []llm.Step) {
	content := strings.TrimSpace(s.content.String())
	var steps []llm.Step
	switch {
	case len(s.calls) > 0:
		for i, c := range s.calls {
			st := llm.Step{Kind: llm.StepFunc, Name: c.Function.Name, Input: s.input(c.Function.Name, c.Function.Arguments)}
			if t, ok := s.tool(c.Function.Name); ok && t.Agent {
				st.Kind, st.Name = llm.StepAgent, t.Name
			}
			if i == 0 {
				st.Thought = content
			}
			steps = append(steps, st)
		}
	case s.proto == llm.ProtocolJSON:
		var js struct {
			Thought string `json:"thought"`
			Action  string `json:"action"`
			Input   any    `json:"input"`
		}
		if json.Unmarshal([]byte(content), &js) != nil {
			// Cut short (the token limit) or followed by junk: the fields
			// completed before that still count.
			fields := leadingFields(content)
			js.Thought, js.Action = fields["thought"], fields["action"]
			if in, ok := fields["input"]; ok {
				js.Input = in
			}
			if js.Action == "" || js.Input == nil {
				return content, nil
			}
		}
		in := ""
		switch v := js.Input.(type) {
		case string:
			in = v
		case nil:
		default:
			b, _ := json.Marshal(v)
			in = string(b)
		}
		in = strings.TrimSpace(in)
		st := llm.Step{Thought: strings.TrimSpace(js.Thought), Input: in}
		switch {
		case js.Action == answerAction && in == "" && st.Thought != "":
			// An answer left empty with the reasoning written: the
			// reasoning is the answer (small models do this).
			st.Kind, st.Answer, st.Thought = llm.StepAnswer, st.Thought, ""
		case js.Action == answerAction && in != "":
			st.Kind, st.Answer, st.Input = llm.StepAnswer, in, ""
		case js.Action != answerAction && s.known(js.Action):
			st.Kind, st.Name = llm.StepFunc, js.Action
			if t, _ := s.tool(js.Action); t.Agent {
				st.Kind, st.Name = llm.StepAgent, t.Name
			}
		default:
			return content, nil
		}
		steps = append(steps, st)
	default:
		// Tools offered, none called: a step in the text protocol stays
		// text; plain text is the answer (the tools convention).
		if _, err := agent.ParseOutput(content); err == nil || content == "" {
			return content, nil
		}
		steps = append(steps, llm.Step{Kind: llm.StepAnswer, Answer: content})
	}
	return render(steps), steps
}

// input is the func input of a tool call: the arguments object for a func
// with a schema, the "input" string for a text func.
func (s *structured) input(name, args string) string {
	for _, t := range s.tools {
		if t.WireName() == name && t.Parameters == nil {
			var in struct {
				Input *string `json:"input"`
			}
			if json.Unmarshal([]byte(args), &in) == nil && in.Input != nil {
				return strings.TrimSpace(*in.Input)
			}
		}
	}
	return strings.TrimSpace(args)
}

func (s *structured) known(name string) bool {
	_, ok := s.tool(name)
	return ok
}

// tool returns the tool offered under name.
func (s *structured) tool(name string) (llm.Tool, bool) {
	i := slices.IndexFunc(s.tools, func(t llm.Tool) bool { return t.WireName() == name })
	if i < 0 {
		return llm.Tool{}, false
	}
	return s.tools[i], true
}

// render writes steps in the text protocol.
func render(steps []llm.Step) string {
	texts := make([]string, len(steps))
	for i, st := range steps {
		texts[i] = st.Text()
	}
	return strings.TrimRight(strings.Join(texts, "\n"), "\n")
}

// toolDefs are the tools of a request in the wire format; a func without a
// schema takes {"input": string}.
func toolDefs(tools []llm.Tool) []ToolDef {
	out := make([]ToolDef, len(tools))
	for i, t := range tools {
		params := t.Parameters
		if params == nil {
			params = map[string]any{"type": "object", "properties": map[string]any{"input": map[string]any{"type": "string"}}, "required": []string{"input"}}
		}
		out[i] = ToolDef{Type: "function", Function: FunctionDef{Name: t.WireName(), Description: t.Description, Parameters: params}}
	}
	return out
}

// stepFormat is the json_schema response format of one ReAct step: a
// thought, an action (a func name, or "answer" when answer is set) and its
// input.
func stepFormat(tools []llm.Tool, answer bool) *ResponseFormat {
	actions := make([]string, 0, len(tools)+1)
	for _, t := range tools {
		actions = append(actions, t.WireName())
	}
	if answer {
		actions = append(actions, answerAction)
	}
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"thought": map[string]any{"type": "string"},
			"action":  map[string]any{"type": "string", "enum": actions},
			"input":   map[string]any{"type": "string"},
		},
		"required":             []string{"thought", "action", "input"},
		"additionalProperties": false,
	}
	return &ResponseFormat{Type: "json_schema", JSONSchema: &JSONSchema{Name: "react_step", Strict: true, Schema: schema}}
}

// leadingFields reads the string fields of a JSON object up to where it
// stops being valid JSON.
func leadingFields(s string) map[string]string {
	out := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(s))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return out
	}
	for {
		k, err := dec.Token()
		key, ok := k.(string)
		if err != nil || !ok {
			return out
		}
		v, err := dec.Token()
		if err != nil {
			return out
		}
		if str, ok := v.(string); ok {
			out[key] = str
		} else if _, ok := v.(json.Delim); ok {
			return out // a nested value: not a step field
		}
	}
}
