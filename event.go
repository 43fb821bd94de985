package kgagent

import "time"

// EventKind names a step of an agent run.
type EventKind string

// Event kinds streamed to clients.
const (
	EventRoute       EventKind = "route"       // which agent the router chose
	EventThought     EventKind = "thought"     // free text the LLM wrote before acting
	EventAction      EventKind = "action"      // Ask Func[x] / Ask Agent[x]
	EventObservation EventKind = "observation" // what a func or agent said
	EventAnswer      EventKind = "answer"      // the final answer, or a token of it when Delta
	EventError       EventKind = "error"
)

// Event is one step of an agent run, streamed as it happens.
type Event struct {
	RequestID string    `json:"request_id"`
	Seq       int64     `json:"seq"`
	Time      time.Time `json:"time"`
	Kind      EventKind `json:"kind"`
	Text      string    `json:"text"`
	Agent     string    `json:"agent,omitempty"`
	Func      string    `json:"func,omitempty"`  // for actions and observations
	Delta     bool      `json:"delta,omitempty"` // an answer token; the full answer follows with Final
	Final     bool      `json:"final,omitempty"` // the last event of the run
	Sources   []Source  `json:"sources,omitempty"`
	Error     *Error    `json:"error,omitempty"`
	Usage     *Usage    `json:"usage,omitempty"`
}

// Source is a cited piece of knowledge: a page section and why it was used.
type Source struct {
	URL         string   `json:"url"` // with the section anchor
	Title       string   `json:"title"`
	Score       float64  `json:"score"`
	HeadingPath []string `json:"heading_path,omitempty"`
	Snippet     string   `json:"snippet,omitempty"`
}

// Usage counts LLM tokens of one call or one run.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// Answer is the result of an agent run.
type Answer struct {
	RequestID  string   `json:"request_id,omitempty"`
	Agent      string   `json:"agent,omitempty"`
	Answer     string   `json:"answer"`
	Sources    []Source `json:"sources"`
	Iterations int      `json:"iterations,omitempty"`
	Usage      Usage    `json:"usage"`
}
