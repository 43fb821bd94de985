package agent

import (
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent/extractive"
	"github.com/kgagent/kgagent/llm"
)

// Defaults of Config, each set in Config.withDefaults (the one place).
const (
	DefaultAgentName      = "default"
	DefaultMaxIterations  = 10
	DefaultMaxMalformed   = 2
	DefaultFuncTimeout    = 30 * time.Second
	DefaultMaxDepth       = 3
	DefaultRouteThreshold = 0.5
	DefaultHistoryTurns   = 10
	DefaultSearchK        = 5
	maxObservationChars   = 16000
)

// StopSequences end every LLM call: the model stops when it asks for a func
// or an agent, or starts a new question.
var StopSequences = []string{"\nFunc[", "\nAgent[", "\nQ:"}

// Config configures a Manager, one struct per concern. Its zero value
// works: the built-in extractive model, no corpus (fixie_query_corpus
// reports that none is configured), lexical routing and the default limits.
type Config struct {
	Model    ModelConfig    // the language model and how steps are asked of it
	Loop     LoopConfig     // the ReAct loop's limits, search-first and grounding
	Builtins BuiltinsConfig // what the fixie_ built-in funcs read
	Route    RouteConfig    // how a question without an agent finds one
	Sessions SessionsConfig // conversational history
	Cache    CacheConfig    // the answer cache

	Components  []Component // added to every agent, after the built-ins
	UserStorage UserStorage
	OAuth       func(agent string, caller Caller) OAuthHandler

	// Logger receives a debug line per LLM call (model, tokens in and out,
	// time, stop reason) and a warning per malformed output; nil: none.
	Logger *slog.Logger
	// Observer receives the measurements of every LLM call and run (for
	// metrics); nil: none.
	Observer Observer

	Now      func() time.Time // nil: time.Now
	Location *time.Location   // the server's time zone; nil: time.Local
	NewID    func() string    // request ids; nil: random UUIDs
}

// ModelConfig is the language model and how the loop asks it for steps.
type ModelConfig struct {
	LLM         llm.LLM // nil: the built-in extractive model
	Name        string  // default model name sent to the LLM
	Temperature float64 // default temperature
	MaxTokens   int     // default max tokens of one step (0: provider default)
	// Protocol is how steps are asked for: llm.ProtocolText (default),
	// llm.ProtocolTools, llm.ProtocolJSON or llm.ProtocolAuto (see
	// llm.CompletionRequest.Protocol). The events are the same whichever ran.
	// The built-in model reads the text protocol's run: text for it.
	Protocol string
	// ActFirst makes the first step of a run call a func when steps are
	// structured (tools or json): a docs question is answered from what a
	// search found, not from the model's memory.
	ActFirst bool
	// CallTimeout bounds one LLM call (0: none). Whatever it is, when the
	// question has a deadline a call gets at most an equal share of the time
	// left among the iterations left, counting at most three of them (the
	// first calls, which usually answer, get enough time; later ones less).
	// A call cut by its timeout is judged on what it wrote so far.
	CallTimeout time.Duration
	// PlainTextAnswers takes an output with no Ask/A: line at all as the
	// answer instead of a malformed output (lenient with chat models).
	PlainTextAnswers bool
	// ObservationTokens bounds each observation fed back to the model, in
	// estimated tokens (4 bytes each), keeping every source's header line
	// and giving the best-ranked passages their share first; the events
	// keep the whole observation. 0: only the 16,000-byte cap. The built-in
	// model reads whole observations: 0 for it, whatever is set.
	ObservationTokens int
}

// LoopConfig bounds the ReAct loop and says how a run starts and how its
// answer is grounded.
type LoopConfig struct {
	MaxIterations int           // LLM calls per run, default 10
	MaxMalformed  int           // malformed outputs fed back before giving up, default 2
	FuncTimeout   time.Duration // per func call, default 30s
	MaxDepth      int           // Ask Agent delegation depth, default 3
	// SearchFirst runs the corpus search on the question before the first
	// LLM call of a docs agent (one whose few-shots ask
	// Func[fixie_query_corpus], or that lists corpora) and gives the model
	// its result as the first observation, with the same thought, action
	// and observation events as if the model had asked; it is the run's
	// first iteration. Weak models that never call a tool still answer
	// from the docs. The built-in model searches by itself: false for it.
	SearchFirst bool
	// AttributeCitations: when the final answer cites no source, cite the
	// evidence passages shown to the model that support its sentences
	// (extractive.Support.Attribute), and when none does, say so after the
	// answer and add what the docs say (extractive.Compose).
	// Answer.Citations tells which happened. The built-in model always
	// cites: false for it.
	AttributeCitations bool
	// DocsAnswer configures the built-in answerer that says what the docs
	// say beside a model's answer, and whether they answer the question at
	// all (which decides whether a partly supported or looping model's
	// answer is kept). Give it the Embed the built-in model has: a question
	// in a user's words is then judged by meaning as the built-in model
	// judges it. The zero value judges by words only: any word the
	// collection lacks makes what the docs say an abstention.
	DocsAnswer extractive.Config
}

// BuiltinsConfig is what the fixie_ built-in funcs read.
type BuiltinsConfig struct {
	// Knowledge answers fixie_query_corpus with evidence (the knowledge
	// service); nil: a knowledge.Retriever over Searcher and Graph.
	Knowledge   Retriever
	Searcher    Searcher       // fixie_query_corpus when Knowledge is nil; nil: not configured
	Graph       GraphRetriever // graph facts for fixie_query_corpus and fixie_query_graph
	EmbedSearch EmbedSearchFunc
	EmbedFetch  EmbedFetchFunc // nil: data URIs, and http(s) through netguard
	SearchK     int            // hits per corpus search, default 5
	Collection  string         // collection when neither request nor agent names one, default "default"
}

// RouteConfig is how a question posted without an agent finds one (Route).
type RouteConfig struct {
	Embedder     Embedder // nil: lexical bag-of-words similarity
	Threshold    float64  // minimum similarity, default 0.5
	DefaultAgent string   // fallback agent, default "default"
}

// SessionsConfig is where conversational agents keep their history.
type SessionsConfig struct {
	Store SessionStore // conversational agents read their history here
	// Record makes Ask append the question and the answer (with its
	// events) to the request's session. Leave it off when the caller (the
	// gateway's session endpoints) records them itself.
	Record       bool
	HistoryTurns int // question/answer pairs of session history in the prompt, default 10
}

// CacheConfig is the answer cache.
type CacheConfig struct {
	// Size is how many answers the answer cache keeps (0: no cache). A
	// question asked again, without a session or embeds, is answered by
	// replaying the events of the earlier answer while the entry is younger
	// than TTL and Generation has not changed; only answers whose funcs are
	// all Cacheable are kept.
	Size int
	// MaxBytes bounds the bytes the cached answers hold, their strings and
	// events (default 16 MiB; the least recently used go first): an
	// answer with its streamed events and sources takes ~30 KB on the
	// OpenJDK docs, so Size alone let a cache of distinct questions grow
	// serve's heap by ~120 MB.
	MaxBytes int
	TTL      time.Duration // 0: entries live until evicted or the generation changes
	// Generation returns a number that changes whenever the stored
	// knowledge (corpus, graph) changes, so no cached answer outlives what
	// it was drawn from; nil: only the TTL ends entries.
	Generation func() uint64
}

// withDefaults is the one place Config's defaults are set.
func (c Config) withDefaults() Config {
	if c.Model.LLM == nil {
		c.Model.LLM = extractive.NewModel(extractive.ModelConfig{})
	}
	if _, builtin := c.Model.LLM.(*extractive.Model); builtin {
		// The built-in model reads whole observations, in the text
		// protocol, searches by itself and always cites: what these
		// settings do for other LLMs does not apply to it.
		c.Model.ObservationTokens, c.Model.Protocol = 0, llm.ProtocolText
		c.Loop.SearchFirst, c.Loop.AttributeCitations = false, false
	}
	if c.Loop.MaxIterations <= 0 {
		c.Loop.MaxIterations = DefaultMaxIterations
	}
	if c.Loop.MaxMalformed < 0 {
		c.Loop.MaxMalformed = 0
	} else if c.Loop.MaxMalformed == 0 {
		c.Loop.MaxMalformed = DefaultMaxMalformed
	}
	if c.Loop.FuncTimeout <= 0 {
		c.Loop.FuncTimeout = DefaultFuncTimeout
	}
	if c.Loop.MaxDepth <= 0 {
		c.Loop.MaxDepth = DefaultMaxDepth
	}
	if c.Builtins.SearchK <= 0 {
		c.Builtins.SearchK = DefaultSearchK
	}
	if c.Builtins.Collection == "" {
		c.Builtins.Collection = kgagent.DefaultCollection
	}
	if c.Route.Threshold <= 0 {
		c.Route.Threshold = DefaultRouteThreshold
	}
	if c.Route.DefaultAgent == "" {
		c.Route.DefaultAgent = DefaultAgentName
	}
	if c.Sessions.HistoryTurns <= 0 {
		c.Sessions.HistoryTurns = DefaultHistoryTurns
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Location == nil {
		c.Location = time.Local
	}
	if c.NewID == nil {
		c.NewID = uuid.NewString
	}
	return c
}
