// Package llm holds what a language model and the agent that drives it
// exchange: chat messages, the run in structured form (Episode) for a model
// that reads structure, tool offers, and the streamed completion with its
// structured steps. The ReAct manager (package agent), the built-in
// extractive model (agent/extractive) and the OpenAI-compatible client
// (package openai) all speak these types.
package llm

import (
	"context"
	"strings"

	"github.com/kgagent/kgagent"
)

// LLM is a language model the ReAct manager drives. The built-in extractive
// model and the OpenAI-compatible client (package openai) implement it.
type LLM interface {
	// Complete starts a completion. The stream ends with io.EOF.
	Complete(ctx context.Context, req CompletionRequest) (Stream, error)
}

// CompletionRequest is one call to an LLM.
type CompletionRequest struct {
	Model       string        `json:"model,omitempty"`
	Messages    []ChatMessage `json:"messages"`
	Stop        []string      `json:"stop,omitempty"`
	Temperature float64       `json:"temperature"`
	MaxTokens   int           `json:"max_tokens,omitempty"`
	// Protocol asks for structured steps: ProtocolTools (native tool
	// calls), ProtocolJSON (a JSON-schema-constrained step), ProtocolAuto
	// (the best the provider takes) or ProtocolText / "" (the text
	// protocol). An LLM that has no structured mode answers in text.
	Protocol string `json:"-"`
	// Tools are the funcs the step may call, for ProtocolTools and
	// ProtocolJSON.
	Tools []Tool `json:"-"`
	// AnswerOnly asks for an answer, not an action (the iteration limit or
	// the deadline is near): a json step may then only answer and no tools
	// are offered. The text protocol can only ask, in the prompt.
	AnswerOnly bool `json:"-"`
	// ActionOnly asks for an action, not an answer (the first step of an
	// agent with agent.Config.Model.ActFirst): a json step may then not answer and tool
	// calls are required.
	ActionOnly bool `json:"-"`
	// Episode is the run in structured form (few-shots, question,
	// observations), for a model that reads structure: the built-in
	// extractive model. It is never sent to an LLM API.
	Episode *Episode `json:"-"`
}

// The step protocols of CompletionRequest.Protocol.
const (
	ProtocolAuto  = "auto"
	ProtocolTools = "tools"
	ProtocolJSON  = "json"
	ProtocolText  = "text"
)

// Tool is a func, or another agent to ask, offered to an LLM as a native
// tool or a step action.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the func's input. Nil for a func
	// that takes text: it is offered as {"input": string}.
	Parameters any
	// Agent marks the agent named Name (Ask Agent[Name]: question), offered
	// under the name AgentToolName(Name) and taking {"input": question}.
	Agent bool
}

// AgentToolName is the tool name under which agent name is offered:
// "ask_agent_" and the name, with every character a tool name may not hold
// (OpenAI takes [a-zA-Z0-9_-], 64 at most) written as "_".
func AgentToolName(name string) string {
	b := []byte("ask_agent_" + name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}

// WireName is the name t is offered under.
func (t Tool) WireName() string {
	if t.Agent {
		return AgentToolName(t.Name)
	}
	return t.Name
}

// ChatMessage is one message of a chat prompt.
type ChatMessage struct {
	Role    string `json:"role"` // system, user, assistant
	Content string `json:"content"`
	// Observation is the structured form of a `Func[x] says:` or
	// `Agent[x] says:` message, set by the manager; the built-in model reads
	// it instead of the text. It is never sent to an LLM API.
	Observation *Observation `json:"-"`
}

// Observation is one reply of a func or agent to an action, as the manager
// fed it back to the model.
type Observation struct {
	Agent bool   // an Agent[Name] reply; otherwise Func[Name]
	Name  string // the func or agent that replied
	Text  string // the reply as fed to the model, trimmed
	// Evidence is what a built-in search func found, numbered as the text
	// numbers it; the built-in answerer reads it instead of the text.
	Evidence *kgagent.Evidence
}

// Episode is a run in structured form: what the built-in model reads
// instead of parsing the prompt back. The manager sets it on every
// CompletionRequest; an LLM behind an API ignores it.
type Episode struct {
	FewShots []Stanza // the agent's validated few-shot stanzas, in order
	Question string   // the question of this run, trimmed
	// Actions counts the model's outputs since the question (its actions,
	// and malformed outputs fed back).
	Actions      int
	Observations []Observation // the replies to its actions, in order
}

// NewEpisode builds the episode of a run from its few-shots, its question
// and the messages that follow the question, reading their structured
// fields (ChatMessage.Observation); no text is parsed.
func NewEpisode(fewShots []Stanza, question string, after []ChatMessage) *Episode {
	ep := &Episode{FewShots: fewShots, Question: strings.TrimSpace(question)}
	for _, m := range after {
		switch {
		case m.Role == "assistant":
			ep.Actions++
		case m.Observation != nil:
			ep.Observations = append(ep.Observations, *m.Observation)
		}
	}
	return ep
}

// Stream yields a completion piece by piece: Recv until io.EOF, Close once.
type Stream interface {
	Recv() (Delta, error)
	Close() error
}

// Delta is a piece of a completion; Usage is set on the last piece when the
// provider reports it, FinishReason when it says why the output ended
// ("stop", "length", ...).
type Delta struct {
	Text         string
	Usage        *kgagent.Usage
	FinishReason string
	// Steps are the structured steps of a tools or json completion (several
	// for parallel tool calls), set on the last piece; Text then renders
	// them in the text protocol for logs. The manager takes Steps over Text.
	Steps []Step
}

// StepKind says what a step asks for.
type StepKind int

// Step kinds.
const (
	StepFunc   StepKind = iota + 1 // Ask Func[name]: input
	StepAgent                      // Ask Agent[name]: input
	StepAnswer                     // A: answer
)

// Step is one step of the model (parsed from text, or structured as the
// built-in model and tool calls give it): the thought before the action and the
// action itself.
type Step struct {
	Thought string
	Kind    StepKind
	Name    string // func or agent name
	Input   string // the Ask text
	Answer  string // the A: text
	// Degraded: the answer was written around a failure that may pass
	// (a model call that ran out of time), so it is given but not kept
	// as what the question gets: the agent's answer cache skips it.
	Degraded bool
}

// Line writes the step's action or answer as the text protocol does:
// "Ask Func[name]: input", "Ask Agent[name]: input" or "A: answer".
func (s Step) Line() string {
	switch s.Kind {
	case StepAnswer:
		return "A: " + s.Answer
	case StepAgent:
		return "Ask Agent[" + s.Name + "]: " + s.Input
	}
	return "Ask Func[" + s.Name + "]: " + s.Input
}

// Text writes the step in the text protocol: its thought, if any, on the
// lines before its Line.
func (s Step) Text() string {
	if s.Thought != "" {
		return s.Thought + "\n" + s.Line()
	}
	return s.Line()
}

// LineKind classifies one line of a few-shot stanza or of LLM output.
type LineKind int

// Line kinds of the few-shot grammar (reference SDK).
const (
	LineThought   LineKind = iota // free text: a thought
	LineQuery                     // Q: query
	LineAnswer                    // A: answer
	LineAskFunc                   // Ask Func[x]: input
	LineFuncSays                  // Func[x] says: output
	LineAskAgent                  // Ask Agent[x]: input
	LineAgentSays                 // Agent[x] says: output
)

// String names the kind as the rules do.
func (k LineKind) String() string {
	switch k {
	case LineQuery:
		return "Q:"
	case LineAnswer:
		return "A:"
	case LineAskFunc:
		return "Ask Func[x]:"
	case LineFuncSays:
		return "Func[x] says:"
	case LineAskAgent:
		return "Ask Agent[x]:"
	case LineAgentSays:
		return "Agent[x] says:"
	}
	return "thought"
}

// FewShotLine is one classified line. Name is the func or agent name of Ask
// and says lines; Text is what follows the prefix.
type FewShotLine struct {
	Kind LineKind
	Name string
	Text string
	Raw  string
}

// Stanza is one validated few-shot example: the stripped text and its lines.
type Stanza struct {
	Index int // 1-based position in the agent's few-shots
	Text  string
	Lines []FewShotLine
}

// Query returns the text of the stanza's first Q: line.
func (s Stanza) Query() string {
	for _, l := range s.Lines {
		if l.Kind == LineQuery {
			return l.Text
		}
	}
	return ""
}
