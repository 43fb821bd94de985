// Package agent runs CodeShotAgents: few-shot validation, registered funcs,
// Forge-style components, the ReAct manager that streams
// thought/action/observation/answer events, the router, grounding of
// answers, user storage, OAuth and sessions. The model interface is package
// llm (the built-in extractive model, agent/extractive, by default); remote
// funcs are agent/remote, the call journal agent/journal, citation
// numbering agent/cite. Adapters (agent/sqlite) live in subpackages named
// after their dependency; the OpenAI-compatible client, shared with the
// corpus's embeddings, is the top-level package openai.
package agent

import (
	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent/journal"
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
	Journal journal.Journal `json:"-"`
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

// episode reads the structured fields of the messages that follow a run's
// question; no text is parsed.
func episode(fewShots []llm.Stanza, question string, after []llm.ChatMessage) *llm.Episode {
	return llm.NewEpisode(fewShots, question, after)
}
