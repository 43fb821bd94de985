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
	// Citations says, on the final answer, who wrote its [n] citations
	// (CitationsModel, CitationsAttributed, CitationsUnsupported,
	// CitationsFallback; empty:
	// the answer cites nothing and no search ran).
	Citations string `json:"citations,omitempty"`
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
	// Citations says who wrote the answer's [n] citations: CitationsModel,
	// CitationsAttributed, CitationsUnsupported or CitationsFallback; empty
	// when the answer cites nothing and the run searched nothing.
	Citations string `json:"citations,omitempty"`
}

// Values of Answer.Citations.
const (
	// CitationsModel: the model wrote the citations (the built-in model
	// always does), and at least one names a source that supports its
	// sentence; kgagent dropped the others, or moved them to a source that
	// supports their sentence.
	CitationsModel = "model"
	// CitationsAttributed: the model wrote none; kgagent cited the sources
	// that support the answer's sentences (shared content words, numbers
	// included), and only those sentences.
	CitationsAttributed = "attributed"
	// CitationsUnsupported: no source the model was shown supports its
	// answer; kgagent says so after it and adds what the docs say, cited
	// (or that they don't say, naming the nearest sections).
	CitationsUnsupported = "unsupported"
	// CitationsFallback: the model gave no answer (the iteration limit, or
	// only malformed or timed-out steps); kgagent says so and answers with
	// what the docs say, from the sources the run found, cited.
	CitationsFallback = "fallback"
)
