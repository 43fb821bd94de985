// Package agent runs CodeShotAgents: few-shot validation, registered and
// remote funcs, Forge-style components, the ReAct manager that streams
// thought/action/observation/answer events, the router, LLM providers behind
// one interface (the built-in extractive model by default), user storage,
// OAuth and sessions. Adapters (agent/openai, agent/sqlite) live in
// subpackages named after their dependency.
package agent

import (
	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/llm"
)

// Request is one question to the agent service.
type Request struct {
	ID         string                   `json:"id,omitempty"`         // request id; generated when empty
	Question   string                   `json:"question"`             // required
	Agent      string                   `json:"agent,omitempty"`      // empty: the router chooses
	Collection string                   `json:"collection,omitempty"` // empty: the agent's corpora / "default"
	SessionID  string                   `json:"session_id,omitempty"` // conversational agents keep history here
	TimeZone   string                   `json:"time_zone,omitempty"`  // IANA name for fixie_local_datetime
	Embeds     map[string]kgagent.Embed `json:"embeds,omitempty"`
	Caller     Caller                   `json:"-"`
	// Journal, when set, records the model's outputs, or replays those it
	// has (a request continued on another replica; see Journal).
	Journal Journal `json:"-"`
}

// Caller is who asks: set by the gateway from the API key or JWT.
type Caller struct {
	UserID    string // empty when anonymous
	AgentID   string // the JWT's aid claim, when a platform calls
	Token     string // the bearer token to forward to remote agents
	Anonymous bool
}

// Handshake is what GET /agents/{name}/ returns (seed 000/001 wire format).
type Handshake struct {
	BasePrompt     string   `json:"base_prompt" yaml:"base_prompt"`
	FewShots       []string `json:"few_shots" yaml:"few_shots"`
	Corpora        []Corpus `json:"corpora" yaml:"corpora"`
	Conversational bool     `json:"conversational" yaml:"conversational"`
	ResponseModel  any      `json:"response_model" yaml:"response_model"`
	Type           string   `json:"type" yaml:"type"` // "code_shot"
}

// Corpus is a DocumentCorpus as the handshake lists it.
type Corpus struct {
	URLs    []string `json:"urls" yaml:"urls"`
	Exclude []string `json:"exclude,omitempty" yaml:"exclude,omitempty"`
}

// Emit receives the events of a run, in order. It must not block for long.
type Emit func(kgagent.Event)

// The model-facing types live in package llm; these names keep the agent
// package's callers and adapters reading as before.
type (
	// LLM is llm.LLM: a language model the ReAct manager drives.
	LLM = llm.LLM
	// CompletionRequest is llm.CompletionRequest: one call to an LLM.
	CompletionRequest = llm.CompletionRequest
	// Tool is llm.Tool: a func or agent offered as a native tool.
	Tool = llm.Tool
	// ChatMessage is llm.ChatMessage: one message of a chat prompt.
	ChatMessage = llm.ChatMessage
	// Observation is llm.Observation: a reply to an action.
	Observation = llm.Observation
	// Episode is llm.Episode: a run in structured form.
	Episode = llm.Episode
	// Stream is llm.Stream: a completion, piece by piece.
	Stream = llm.Stream
	// Delta is llm.Delta: a piece of a completion.
	Delta = llm.Delta
)

// The step protocols of CompletionRequest.Protocol (llm.Protocol*).
const (
	ProtocolAuto  = llm.ProtocolAuto
	ProtocolTools = llm.ProtocolTools
	ProtocolJSON  = llm.ProtocolJSON
	ProtocolText  = llm.ProtocolText
)

// episode reads the structured fields of the messages that follow a run's
// question; no text is parsed.
func episode(fewShots []Stanza, question string, after []ChatMessage) *Episode {
	return llm.NewEpisode(fewShots, question, after)
}
