// Package gateway serves kgagent to its clients: REST, the multiplexed
// websocket, NATS request streams (gateway/natsapi), the Fixie agent-protocol
// endpoints, GraphQL, an OpenAI-compatible chat API, auth and limits, metrics
// and the docs chat page. It depends on small interfaces declared here;
// cmd/kgagent wires the real services in.
//
// Library choices (see DECISIONS.md): net/http's ServeMux as the router
// (Go 1.22 method and wildcard patterns are enough), gorilla/websocket for the
// socket, golang-jwt/jwt/v5 for JWTs (the Ed25519 JWK parsing is ours, it is
// ten lines), prometheus/client_golang for /metrics and graph-gophers/graphql-go
// for /graphql.
package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/graphrag"
)

// Asker answers questions, streaming the events of each run to emit. The
// agent service implements it. Errors: EINVALID, ENOTFOUND (unknown agent),
// EUNAVAILABLE, ETIMEOUT, ECANCELED.
type Asker interface {
	Ask(ctx context.Context, req agent.Request, emit agent.Emit) (kgagent.Answer, error)
}

// noAsker is the Asker of a server without one: every question is
// UNAVAILABLE.
type noAsker struct{}

func (noAsker) Ask(context.Context, agent.Request, agent.Emit) (kgagent.Answer, error) {
	return kgagent.Answer{}, unavailable("agent")
}

// AgentEndpoint serves the Fixie agent protocol for every agent. The agent
// service implements it. Errors: ENOTFOUND for an unknown agent,
// EFuncNotDefined for an unknown func (with details func_name and
// available_funcs), anything else is an unhandled exception.
// FuncCollection names the collection an agent's funcs read, which the
// caller must be allowed to use.
type AgentEndpoint interface {
	Handshake(name string) (agent.Handshake, error)
	FuncCollection(name string) (string, error)
	CallFunc(ctx context.Context, agentName, funcName string, msg kgagent.Message, caller agent.Caller) (kgagent.Message, error)
}

// Searcher runs searches and manages collections of the corpus index.
type Searcher interface {
	Search(ctx context.Context, req corpus.SearchRequest) ([]corpus.Hit, error)
	Collections(ctx context.Context) ([]corpus.CollectionInfo, error)
	DeleteCollection(ctx context.Context, name string) error
}

// Grapher reads the triple graph and answers questions from it (the
// triples and graph-rag services); graphrag.Service implements it. Errors:
// EINVALID for a bad pattern, EUNAVAILABLE when the store fails.
type Grapher interface {
	Find(ctx context.Context, p graphrag.Pattern) ([]kgagent.Triple, error)
	Answer(ctx context.Context, question, collection string) (graphrag.GraphAnswer, error)
}

// Jobs runs ingestion jobs. Errors: ENOTFOUND for an unknown job id,
// EINVALID for a bad spec.
type Jobs interface {
	Submit(ctx context.Context, spec crawler.Spec) (crawler.JobStatus, error)
	Get(ctx context.Context, id string) (crawler.JobStatus, error)
	List(ctx context.Context) ([]crawler.JobStatus, error)
}

// AgentInfo describes an agent in the registry.
type AgentInfo struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	URL         string `json:"url,omitempty"` // set for remote agents
	Owner       string `json:"owner,omitempty"`
}

// Registry lists agents and registers remote ones (seed 002). Errors:
// EINVALID for a bad name or URL, ECONFLICT when the name is taken.
type Registry interface {
	ListAgents(ctx context.Context) ([]AgentInfo, error)
	RegisterAgent(ctx context.Context, name, url string) (AgentInfo, error)
}

// Check is one named readiness check; /readyz runs them all.
type Check struct {
	Name  string
	Check func(ctx context.Context) error
}

// Backends are the services behind the gateway. A nil backend makes its
// endpoints answer 503 UNAVAILABLE.
type Backends struct {
	Asker    Asker
	Agents   AgentEndpoint
	Search   Searcher
	Graph    Grapher
	Jobs     Jobs
	Sessions agent.SessionStore
	Registry Registry
	Embeds   EmbedStore     // uploads and signed URLs of embeds (embeds.go)
	Docs     DocumentReader // documents and their stored text (MCP resources)
	Ready    []Check
}

// Config configures a Server. Its zero value works: no auth (loopback only,
// which cmd/kgagent enforces using AuthEnabled), default limits.
type Config struct {
	Logger *slog.Logger // default slog.Default()

	// Auth. With no APIKeys and no JWT, the API is open.
	APIKeys    []APIKey
	JWT        JWTConfig
	DailyLimit int     // queries per key and per user per UTC day; default 1000; <0 disables
	Limiter    Limiter // counts daily queries; default NewMemLimiter() (per process)
	// ForwardCallerToken passes the caller's JWT on to remote agents and
	// funcs; off, they never see it (they could replay it).
	ForwardCallerToken bool

	CORSOrigins []string // allowed Origins for browsers ("*" for any); default none
	// AllowedHosts are the Host names served besides loopback ones ("*":
	// any). Empty: loopback only when auth is off, any when it is on.
	AllowedHosts []string

	PrivateMetrics bool // /metrics needs the admin scope; default public (scrapers on a private network)

	Flows []string // known flow names; default ["default"]

	// MaxAnswers bounds the questions the Asker answers at once, on every
	// transport together (answering is CPU work: more at once only makes
	// each slower); a question waits for a free slot within its request
	// timeout. 0: no bound.
	MaxAnswers int

	MaxBodyBytes    int64         // REST request bodies; default 1 MiB
	RequestTimeout  time.Duration // per question; default 2m
	MaxFrameBytes   int64         // websocket frame limit (TOO_LARGE; 16x closes the socket); default 64 KiB
	MaxInFlight     int           // requests in flight per socket; default 16
	SendBuffer      int           // frames queued per socket before it is cut off; default 256
	PingInterval    time.Duration // websocket ping period; default 30s (pong wait is 2x)
	WriteTimeout    time.Duration // websocket write deadline; default 10s
	RetainStreams   time.Duration // how long finished streams stay resumable; default 2m
	MaxStreams      int           // resumable streams kept at once; default 10000
	MaxStreamEvents int           // events kept per stream; default 2048
	MaxStreamBytes  int64         // bytes of events kept across all streams, oldest dropped first; default 64 MiB
	Streams         StreamStore   // where resumable streams are kept; default NewMemStreams(RetainStreams, MaxStreams, MaxStreamEvents, MaxStreamBytes)

	Metrics *Metrics // default: NewMetrics(nil), a fresh registry
}

// AuthEnabled reports whether any credential is configured. When false,
// cmd/kgagent binds to loopback only.
func (c Config) AuthEnabled() bool {
	return len(c.APIKeys) > 0 || c.JWT.enabled()
}

// Defaults of Config shared with other stores: gateway/natsstate's
// Streams keeps frames as long as the in-memory StreamStore does.
const (
	DefaultRequestTimeout  = 2 * time.Minute // Config.RequestTimeout
	DefaultRetainStreams   = 2 * time.Minute // Config.RetainStreams: how long a finished stream stays resumable
	DefaultMaxStreamEvents = 2048            // Config.MaxStreamEvents
	DefaultMaxStreamBytes  = 64 << 20        // Config.MaxStreamBytes
)

func (c *Config) fill() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.DailyLimit == 0 {
		c.DailyLimit = 1000
	}
	if len(c.Flows) == 0 {
		c.Flows = []string{"default"}
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.MaxFrameBytes <= 0 {
		c.MaxFrameBytes = 64 << 10
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 16
	}
	if c.SendBuffer <= 0 {
		c.SendBuffer = 256
	}
	if c.PingInterval <= 0 {
		c.PingInterval = 30 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.RetainStreams <= 0 {
		c.RetainStreams = DefaultRetainStreams
	}
	if c.MaxStreams <= 0 {
		c.MaxStreams = 10000
	}
	if c.MaxStreamEvents <= 0 {
		c.MaxStreamEvents = DefaultMaxStreamEvents
	}
	if c.MaxStreamBytes <= 0 {
		c.MaxStreamBytes = DefaultMaxStreamBytes
	}
	if c.Limiter == nil {
		c.Limiter = NewMemLimiter()
	}
	if c.Streams == nil {
		c.Streams = NewMemStreams(c.RetainStreams, c.MaxStreams, c.MaxStreamEvents, c.MaxStreamBytes)
	}
}

// Server is the gateway: one http.Handler for every HTTP transport, and Run
// for the stream transports (websocket here, NATS in gateway/natsapi).
type Server struct {
	cfg     Config
	b       Backends
	log     *slog.Logger
	mux     *http.ServeMux
	handler http.Handler
	routes  []Route
	auth    *authenticator
	limiter Limiter
	now     func() time.Time
	streams StreamStore
	metrics *Metrics
	// activity: the calls in flight and when the last ended (Quiet).
	activity activity
	answers  chan struct{} // one slot per question being answered; nil: no bound (Config.MaxAnswers)
	flows    map[string]bool
	openapi  []byte          // the document served at /api/v1/openapi.json
	ctx      context.Context // canceled by Close: stops detached websocket runs
	cancel   context.CancelFunc
}

// Route is one registered method and path pattern.
type Route struct {
	Method string
	Path   string
}

// New validates cfg, fills its defaults and builds the Server.
func New(cfg Config, b Backends) (*Server, error) {
	cfg.fill()
	auth, err := newAuthenticator(cfg)
	if err != nil {
		return nil, err
	}
	if b.Asker == nil {
		b.Asker = noAsker{}
	}
	s := &Server{cfg: cfg, b: b, log: cfg.Logger, mux: http.NewServeMux(), auth: auth, flows: map[string]bool{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	for _, f := range cfg.Flows {
		s.flows[f] = true
	}
	s.metrics = cfg.Metrics
	if s.metrics == nil {
		s.metrics = NewMetrics(nil)
	}
	s.limiter, s.now, s.streams = cfg.Limiter, time.Now, cfg.Streams
	if cfg.MaxAnswers > 0 {
		s.answers = make(chan struct{}, cfg.MaxAnswers)
	}
	if d, ok := cfg.Streams.(DurableStreams); ok {
		d.OnTakeover(s.takeover)
	}
	s.openapi = openAPIFor(cfg)
	s.routesSetup()
	s.handler = s.middleware(s.mux)
	return s, nil
}

// Handler returns the http.Handler serving every HTTP route.
func (s *Server) Handler() http.Handler { return s.handler }

// Routes returns every registered method and path pattern.
func (s *Server) Routes() []Route { return append([]Route(nil), s.routes...) }

// Metrics returns the metrics the server records, for cmd to feed (crawl
// pages, LLM tokens).
func (s *Server) Metrics() *Metrics { return s.metrics }

// Close stops background work: the stream janitor and websocket requests
// still running detached from their sockets.
func (s *Server) Close() error {
	s.cancel()
	return s.streams.Close()
}

func (s *Server) handle(method, path string, scope Scope, h http.HandlerFunc) {
	s.routes = append(s.routes, Route{Method: method, Path: path})
	pattern := path
	if method != "" {
		pattern = method + " " + path
	}
	s.mux.Handle(pattern, s.require(pattern, scope, h))
}
