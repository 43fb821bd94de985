package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kgagent/kgagent/agent/extractive"
	"github.com/kgagent/kgagent/agent/remote"
	"github.com/kgagent/kgagent/llm"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/agent/agentfile"
	"github.com/kgagent/kgagent/agent/natscache"
	agentsqlite "github.com/kgagent/kgagent/agent/sqlite"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/backfill"
	"github.com/kgagent/kgagent/corpus/embeds"
	"github.com/kgagent/kgagent/corpus/minilm"
	"github.com/kgagent/kgagent/corpus/qdrant"
	corpussqlite "github.com/kgagent/kgagent/corpus/sqlite"
	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/crawler/natsjobs"
	crawlersqlite "github.com/kgagent/kgagent/crawler/sqlite"
	"github.com/kgagent/kgagent/gateway"
	"github.com/kgagent/kgagent/gateway/natsapi"
	"github.com/kgagent/kgagent/gateway/natsstate"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/neo4j"
	graphsqlite "github.com/kgagent/kgagent/graphrag/sqlite"
	"github.com/kgagent/kgagent/knowledge"
	"github.com/kgagent/kgagent/netguard"
	"github.com/kgagent/kgagent/openai"
)

// services are the wired implementations behind the transports.
type services struct {
	embedder corpus.Embedder
	index    corpus.Index
	// semantic embeds the semantic vector set (semantic_search), nil when
	// off; semPass is the background pass that fills it (serve, worker,
	// ingest --semantic).
	semantic corpus.Embedder
	semPass  *backfill.Pass
	// graphWarm builds the graph's in-memory indexes (the embedded store);
	// nil when the store has none.
	graphWarm warmer
	// graphStore is the graph store, for what serve and ingest ask of the
	// embedded one beyond graphrag.Store (snapshots, rebuild counts).
	graphStore graphrag.Store
	corpus     *corpus.Service
	graph      *graphrag.Service
	states     *crawlersqlite.Store
	// knowledge keeps index, graph, page state and embeds in step; the
	// crawler writes and the gateway and agents read through it.
	knowledge *knowledge.Service
	agentDB   *agentsqlite.DB
	embeds    *embeds.Store
	llm       llm.LLM
	// llmMetrics are registered on the gateway's registry when it is built.
	llmMetrics *llmMetrics
	agents     *agent.Manager
	jobs       *natsjobs.Queue
	gw         *gateway.Server
}

// openServices opens every store named by the config and builds the
// services on them.
func (a *app) openServices(ctx context.Context) error {
	cfg := a.cfg
	s := &a.svc

	switch cfg.Embedder {
	case "openai":
		e, err := openai.NewEmbedder(openai.EmbedConfig{
			BaseURL: cfg.EmbedBaseURL, APIKey: cfg.EmbedAPIKey, Model: cfg.EmbedModel, Dimensions: cfg.EmbedDimension,
			BatchSize: cfg.EmbedBatchSize, Concurrency: cfg.EmbedConcurrency, Timeout: cfg.EmbedTimeout,
			QueryPrefix: cfg.EmbedQueryPrefix, DocumentPrefix: cfg.EmbedDocumentPrefix,
			QueryInputType: cfg.EmbedQueryInputType, DocumentInputType: cfg.EmbedDocumentInputType,
			Progress: embedProgressLog(a.log, 10*time.Second),
		})
		if err != nil {
			return err
		}
		s.embedder = e
	case "minilm":
		e, err := openMiniLM(cfg.EmbedModelDir)
		switch {
		case err == nil:
			a.log.Info("embedder: built-in semantic model", "model", e.Name(), "kernel", e.Kernel(), "max_tokens", e.MaxTokens())
			s.embedder = e
		case cfg.EmbedModelDir == "" && kgagent.ErrorCode(err) == kgagent.ENOTFOUND:
			// No weights fetched: start anyway, on the lexical embedder.
			a.log.Warn("embedder: the semantic model's weights are not fetched; using the built-in lexical embedder (bash deploy/minilm.sh fetches them)", "err", err)
			s.embedder = corpus.NewLexical(corpus.LexicalConfig{})
		default:
			return fmt.Errorf("config: key %q: %w", "embed_model_dir", err)
		}
	default:
		s.embedder = corpus.NewLexical(corpus.LexicalConfig{})
	}
	if cfg.Index != "qdrant" {
		// The embedded index keeps no record of the embedder its vectors
		// came from; the data dir does, so that vectors of one model are
		// never searched with another's.
		if err := checkDataDirEmbedder(cfg.DataDir, s.embedder.Name()); err != nil {
			return err
		}
	}

	switch cfg.Index {
	case "qdrant":
		qc, err := qdrant.ConfigFromURL(cfg.QdrantAddr)
		if err != nil {
			return fmt.Errorf("config: key %q: %v", "qdrant_addr", err)
		}
		qc.APIKey = cfg.QdrantAPIKey
		qc.TLS = qc.TLS || cfg.QdrantTLS
		idx, err := qdrant.New(ctx, qc, s.embedder.Dimension(), s.embedder.Name())
		if err != nil {
			return err
		}
		s.index = idx
		a.onClose(func() { idx.Close() })
	default:
		ic := corpussqlite.Config{Path: filepath.Join(cfg.DataDir, "index.db")}
		if a.background() {
			ic.CacheKiB = serveSQLiteCacheKiB
		}
		idx, err := corpussqlite.Open(ic)
		if err != nil {
			return err
		}
		s.index = idx
		a.onClose(func() { idx.Close() })
	}
	if err := a.openSemantic(); err != nil {
		return err
	}
	cc := corpus.ServiceConfig{Index: s.index, Embedder: s.embedder, DefaultCollection: cfg.Collection}
	if s.semantic != nil {
		cc.Semantic = s.semantic
	}
	cs, err := corpus.NewService(cc)
	if err != nil {
		return err
	}
	s.corpus = cs
	if s.semantic != nil {
		bc := backfill.Config{Store: cs, Embedder: s.semantic, Workers: semanticWorkers(cfg), Logger: a.log}
		if a.background() {
			// Answers first: the pass starts once the app is warm and then
			// embeds when no request has been in flight for semanticQuiet
			// (or semanticMostWait has passed), in batches short
			// enough (~0.2 s of a core) that a request arriving mid-batch
			// waits little for the core it shares.
			// Mid-batch too: before each layer of a forward pass it waits
			// while a request runs (semanticPauseQuiet, semanticPauseMost),
			// so a request that arrives during a batch shares the cores
			// with one layer of it, not the rest of the batch.
			bc.Batch, bc.Yield, bc.Pause = semanticServeBatch, a.yieldToRequests, a.pauseForRequests
		}
		p, err := backfill.New(bc)
		if err != nil {
			return err
		}
		s.semPass = p
	}

	var store graphrag.Store
	var cache graphrag.Cache
	switch cfg.Graph {
	case "neo4j":
		st, err := neo4j.Open(ctx, neo4j.Config{URL: cfg.Neo4jURL, User: cfg.Neo4jUser, Password: cfg.Neo4jPassword, Database: cfg.Neo4jDatabase, RetryTime: cfg.Neo4jRetryTime})
		if err != nil {
			return err
		}
		store = st
		a.onClose(func() { st.Close() })
	default:
		var gopt graphsqlite.Options
		if a.background() {
			gopt.ReadCacheKiB = serveSQLiteCacheKiB
		}
		st, err := graphsqlite.OpenWith(filepath.Join(cfg.DataDir, "graph.db"), gopt)
		if err != nil {
			return err
		}
		switch a.command {
		case "ask":
			st.NoNameIndexes() // one question: SQL answers it before an index could be built
		case "ingest":
			// Into a fresh data dir: indexes and entity words built once,
			// when the app closes (graphrag/sqlite bulk.go).
			if _, err := st.BulkLoad(ctx); err != nil {
				st.Close()
				return err
			}
		}
		store, cache = st, st
		a.onClose(func() { st.Close() })
	}

	switch cfg.LLM {
	case "openai":
		c, err := openai.New(openai.Config{
			BaseURL: cfg.LLMBaseURL, APIKey: cfg.LLMAPIKey, Model: cfg.LLMModel,
			Temperature: cfg.LLMTemperature, MaxTokens: cfg.LLMMaxTokens, Logger: a.log,
		})
		if err != nil {
			return err
		}
		if err := checkLLMModel(ctx, c, a.log); err != nil {
			return err
		}
		s.llm = c
	default:
		s.llm = extractive.NewModel(extractive.ModelConfig{Answer: extractive.Config{Embed: answerEmbed(s.semantic)}})
	}

	var extractor graphrag.Extractor = graphrag.BuiltinExtractor{}
	if cfg.Extractor == "llm" {
		extractor = graphrag.Combine(graphrag.BuiltinExtractor{}, &graphrag.LLMExtractor{
			LLM: graphrag.CompleterFunc(llmCompleter(s.llm, cfg.LLMModel)), Cache: cache, Model: cfg.LLMModel, Grounded: true,
		})
	}
	g, err := graphrag.New(graphrag.Config{Store: store, Extractor: extractor, Embedder: s.embedder, Index: s.index, Entities: s.corpus, SemanticQuery: s.corpus.SemanticQuery})
	if err != nil {
		return err
	}
	s.graph = g
	if w, ok := store.(warmer); ok {
		s.graphWarm = w
	}
	s.graphStore = store

	states, err := crawlersqlite.Open(filepath.Join(cfg.DataDir, "crawl.db"))
	if err != nil {
		return err
	}
	s.states = states
	a.onClose(func() { states.Close() })

	db, err := agentsqlite.Open(filepath.Join(cfg.DataDir, "agent.db"))
	if err != nil {
		return err
	}
	s.agentDB = db
	a.onClose(func() { db.Close() })

	if err := a.openEmbeds(); err != nil {
		return err
	}
	k, err := knowledge.New(knowledge.Config{Corpus: s.corpus, Graph: s.graph, States: s.states, Blobs: s.embeds})
	if err != nil {
		return err
	}
	s.knowledge = k
	// The answer cache's generation: this process's writes, plus, with a
	// bus, every other replica's and worker's (agent/natscache).
	generation := k.Generation
	if a.bus != nil {
		g, err := natscache.New(ctx, a.bus.conn, k.Generation, natscache.Config{})
		if err != nil {
			return err
		}
		a.onClose(g.Close)
		generation = g.Value
	}
	s.llmMetrics = newLLMMetrics()
	// The built-in model's own settings (whole observations, the text
	// protocol, no search-first, always cited) are agent.Config's defaults
	// for it: the llm_* settings below apply to an openai LLM only.
	m, err := agent.New(agent.Config{
		Model: agent.ModelConfig{LLM: s.llm, Name: cfg.LLMModel, Temperature: cfg.LLMTemperature, MaxTokens: cfg.LLMMaxTokens,
			CallTimeout: cfg.LLMCallTimeout, ObservationTokens: cfg.LLMObservationTokens, Protocol: cfg.LLMProtocol, ActFirst: cfg.LLMActFirst},
		Loop: agent.LoopConfig{SearchFirst: cfg.LLMSearchFirst, AttributeCitations: cfg.LLMAttribute, MaxIterations: cfg.MaxIterations,
			DocsAnswer: extractive.Config{Embed: answerEmbed(s.semantic)}},
		Builtins:    agent.BuiltinsConfig{Knowledge: k, Graph: s.graph, Collection: cfg.Collection, EmbedFetch: a.embedFetch()},
		Route:       agent.RouteConfig{Embedder: s.embedder},
		Sessions:    agent.SessionsConfig{Store: db.Sessions()},
		Cache:       agent.CacheConfig{Size: cfg.AnswerCacheSize, TTL: cfg.AnswerCacheTTL, Generation: generation},
		Logger:      a.log,
		Observer:    s.llmMetrics,
		UserStorage: db.UserStorage(),
	})
	if err != nil {
		return err
	}
	if cfg.AgentsDir != "" {
		names, err := agentfile.Register(ctx, m, cfg.AgentsDir, agentfile.Options{Funcs: agentFileFuncs(m)})
		if err != nil {
			return err
		}
		a.log.Info("agents loaded", "dir", cfg.AgentsDir, "agents", names)
	}
	s.agents = m

	if a.bus != nil {
		key, err := a.secretKey()
		if err != nil {
			return err
		}
		q, err := natsjobs.New(ctx, a.bus.conn, natsjobs.Config{SecretKey: key, AckWait: a.cfg.JobAckWait})
		if err != nil {
			return err
		}
		s.jobs = q
	}
	return nil
}

// secretKey is the key sealing what kgagent keeps on the bus (internal/seal):
// the bearer tokens of queued jobs, and the resume tokens, requests and
// frames of shared websocket streams. job_secret, else a key generated
// once and kept in <data_dir>/jobs.key (0600); processes sharing a NATS
// server need the same one.
func (a *app) secretKey() ([]byte, error) {
	if a.cfg.JobSecret != "" {
		return []byte(a.cfg.JobSecret), nil
	}
	k, err := loadOrCreateSecretFile(filepath.Join(a.cfg.DataDir, "jobs.key"))
	if err != nil {
		return nil, err
	}
	return []byte(k), nil
}

// llmCompleter adapts the agent's streaming LLM to graphrag's Completer.
func llmCompleter(model llm.LLM, name string) func(ctx context.Context, prompt string) (string, error) {
	return func(ctx context.Context, prompt string) (string, error) {
		st, err := model.Complete(ctx, llm.CompletionRequest{Model: name, Messages: []llm.ChatMessage{{Role: "user", Content: prompt}}})
		if err != nil {
			return "", err
		}
		defer st.Close()
		var b strings.Builder
		for {
			d, err := st.Recv()
			if err == io.EOF {
				return b.String(), nil
			}
			if err != nil {
				return b.String(), err
			}
			b.WriteString(d.Text)
		}
	}
}

// ingester returns an Ingester over the wired stores, whose runs end with
// afterIngest. allowPrivate lets it fetch loopback and private addresses
// (the CLI and the demo); scaleBudget lets a higher page limit raise the
// crawl's byte budget (the CLI's --max-pages, never a remote caller's).
func (a *app) ingester(allowPrivate, scaleBudget bool) *crawler.Ingester {
	cc := crawler.Config{
		Parallelism: a.cfg.CrawlParallelism, Delay: a.cfg.CrawlDelay, MaxPages: a.cfg.CrawlMaxPages, ScaleBudget: scaleBudget,
		RequestTimeout: a.cfg.CrawlTimeout, AllowPrivate: allowPrivate, AllowedPrivateHosts: a.cfg.AllowedPrivateHosts,
		InFlightBytes: crawler.InFlightBytesWithin(a.cfg.IngestMemoryLimit),
	}
	return crawler.NewIngester(crawler.IngesterConfig{Crawler: cc, Knowledge: a.svc.knowledge.Writer(), Specs: a.svc.states, AfterRun: a.afterIngest})
}

// grapher adapts graphrag.Service to the gateway. A request that names no
// collection gets the configured default one, as searches and questions do.
type grapher struct {
	g          *graphrag.Service
	collection string
}

// Find returns the triples matching p.
func (g grapher) Find(ctx context.Context, p graphrag.Pattern) ([]kgagent.Triple, error) {
	if p.Collection == "" {
		p.Collection = g.collection
	}
	return g.g.Find(ctx, p)
}

// Answer answers from the graph alone.
func (g grapher) Answer(ctx context.Context, question, collection string) (graphrag.GraphAnswer, error) {
	if collection == "" {
		collection = g.collection
	}
	return g.g.Answer(ctx, question, collection)
}

// registry adapts the agent manager to the gateway's agent registry.
type registry struct {
	m  *agent.Manager
	hc *http.Client // guarded: the URL comes from an API caller
}

// ListAgents lists the registered agents.
func (r registry) ListAgents(ctx context.Context) ([]gateway.AgentInfo, error) {
	var out []gateway.AgentInfo
	for _, ai := range r.m.Agents() {
		out = append(out, gateway.AgentInfo{Name: ai.Name, Description: ai.Description, URL: ai.Remote})
	}
	return out, nil
}

// RegisterAgent registers a remote agent by its agent-protocol URL, given
// by an API caller: the handshake and every later call go through the
// guarded client (netguard), so it cannot reach private addresses other
// than allowed_private_hosts. Agents in agent files (an operator's) may.
func (r registry) RegisterAgent(ctx context.Context, name, url string) (gateway.AgentInfo, error) {
	ra, err := remote.NewAgent(ctx, name, url, r.hc)
	if errors.Is(err, netguard.ErrBlocked) {
		return gateway.AgentInfo{}, kgagent.WrapError(kgagent.EFORBIDDEN, err, "agent URL %s is a private, loopback or link-local address (see allowed_private_hosts)", url)
	}
	if err != nil {
		return gateway.AgentInfo{}, err
	}
	if err := r.m.Register(ra); err != nil {
		return gateway.AgentInfo{}, err
	}
	ai, err := r.m.Agent(name)
	if err != nil {
		return gateway.AgentInfo{}, err
	}
	return gateway.AgentInfo{Name: ai.Name, Description: ai.Description, URL: ai.Remote}, nil
}

// gateway builds the gateway server over the services (once).
// sharedGatewayState keeps the daily limits and the resumable websocket
// streams in NATS when the bus is an external NATS server, which other
// serve replicas may share (gateway/natsstate); the in-process server has
// no other replicas, and the gateway's in-memory defaults serve it.
func (a *app) sharedGatewayState(gc *gateway.Config) error {
	if a.cfg.NATSURL == "" || a.bus == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := natsstate.NewLimiter(ctx, a.bus.conn, natsstate.LimiterConfig{})
	if err != nil {
		return err
	}
	gc.Limiter = l
	if a.cfg.JobSecret == "" {
		a.log.Warn("job_secret is not set: websocket streams and queued jobs are sealed with this data dir's jobs.key, so other replicas cannot resume them; set the same job_secret on every process")
	}
	key, err := a.secretKey()
	if err != nil {
		return err
	}
	st, err := natsstate.NewStreams(ctx, a.bus.conn, natsstate.StreamsConfig{MaxBytes: a.cfg.MaxStreamBytes, SecretKey: key})
	if err != nil {
		return err
	}
	gc.Streams = st
	return nil
}

func (a *app) gateway() (*gateway.Server, error) {
	if a.svc.gw != nil {
		return a.svc.gw, nil
	}
	cfg := a.cfg
	gc := gateway.Config{
		Logger: a.log, DailyLimit: cfg.DailyQueryLimit, CORSOrigins: cfg.CORSOrigins, MaxBodyBytes: cfg.MaxBodyBytes,
		AllowedHosts: cfg.AllowedHosts, MaxStreamBytes: cfg.MaxStreamBytes, ForwardCallerToken: cfg.ForwardJWT, PrivateMetrics: cfg.PrivateMetrics,
		MaxAnswers: 2 * runtime.GOMAXPROCS(0),
	}
	if err := loadAuth(cfg, &gc); err != nil {
		return nil, err
	}
	if err := a.sharedGatewayState(&gc); err != nil {
		return nil, err
	}
	b := gateway.Backends{
		Asker: a.svc.agents, Agents: a.svc.agents, Search: a.svc.knowledge, Graph: grapher{a.svc.graph, a.cfg.Collection},
		Jobs: a.svc.jobs, Sessions: a.svc.agentDB.Sessions(), Registry: registry{a.svc.agents, a.guardedClient()}, Embeds: a.svc.embeds,
		Ready: []gateway.Check{
			{Name: "nats", Check: func(context.Context) error { return a.readiness() }},
			{Name: "index", Check: func(ctx context.Context) error { _, err := a.svc.corpus.Collections(ctx); return err }},
			{Name: "warm", Check: func(context.Context) error { return a.warmth() }},
			{Name: "graph", Check: func(ctx context.Context) error {
				_, err := a.svc.graph.Find(ctx, graphrag.Pattern{Collection: cfg.Collection, Limit: 1})
				return err
			}},
		},
	}
	if a.svc.jobs == nil {
		b.Jobs = nil
	}
	b.Docs = a.svc.corpus
	gw, err := gateway.New(gc, b)
	if err != nil {
		return nil, err
	}
	a.svc.gw = gw
	a.onClose(func() { gw.Close() })
	registerCacheMetrics(gw.Metrics().Registry(), a.svc.agents)
	a.svc.llmMetrics.register(gw.Metrics().Registry())
	return gw, nil
}

func (a *app) httpHandler() (http.Handler, error) {
	gw, err := a.gateway()
	if err != nil {
		return nil, err
	}
	if !gatewayAuthEnabled(a.cfg) && !isLoopbackAddr(a.cfg.Addr) {
		return nil, fmt.Errorf("config: key %q: %s is not a loopback address and no API keys or JWKS are configured; refusing to serve an open API beyond this machine (set api_keys_file)", "addr", a.cfg.Addr)
	}
	a.mountMCP(gw)
	if !gatewayAuthEnabled(a.cfg) {
		a.log.Warn("no API keys configured: the API is open, so it binds to loopback only", "addr", a.cfg.Addr)
	}
	return a.learnEmbedBase(gw.Handler()), nil
}

// startBackground starts the ingestion job worker and the NATS request
// server; serve and worker both run them. The channel receives the error
// that stopped the job worker, if one did before shutdown.
func (a *app) startBackground(ctx context.Context) (<-chan error, error) {
	gw, err := a.gateway()
	if err != nil {
		return nil, err
	}
	ns := natsapi.New(a.bus.conn, gw, natsapi.Config{Logger: a.log})
	if err := ns.Start(); err != nil {
		return nil, err
	}
	a.startSemanticPass(ctx)
	registerSemanticMetrics(gw.Metrics().Registry(), a.svc.semPass)
	ing := meteredRunner{r: countedRunner{r: a.ingester(a.cfg.AllowPrivateIngest, false), n: &a.ingests}, m: gw.Metrics()}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	failed := make(chan error, 1)
	go func() {
		defer close(done)
		if err := a.svc.jobs.Run(wctx, ing); err != nil && wctx.Err() == nil {
			a.log.Error("ingestion worker stopped", "err", err)
			failed <- err
		}
	}()
	a.onClose(func() { cancel(); <-done })
	a.onClose(func() { ns.Close() })
	return failed, nil
}

// startDemo serves the sample docs site on loopback and ingests it; it
// says what it does on out ("crawling", then "ready at" the chat page). The
// site keeps its address across restarts (demoSiteFile), so a restart finds
// every page unchanged; when that address is taken, the pages ingested from
// it are forgotten first, so the index never holds a dead copy.
func (a *app) startDemo(ctx context.Context, base string, out io.Writer) error {
	d, err := startDemoSite(a.cfg.DemoSiteDir, a.cfg.DataDir)
	if err != nil {
		return err
	}
	a.demo = d
	spec := crawler.Spec{Collection: a.cfg.Collection, URLs: []string{d.URL + "/*"}}
	ing := a.ingester(true, false)
	fmt.Fprintf(out, "demo: crawling the sample docs site at %s/ …\n", d.URL)
	a.ingests.Add(1)
	go func() {
		defer a.ingests.Add(-1)
		start := time.Now()
		if d.Moved != "" {
			n, err := ing.Forget(ctx, spec.Collection, d.Moved+"/")
			if err != nil {
				a.log.Error("demo: forgetting the pages of the site's former address failed", "site", d.Moved, "err", err)
			}
			a.log.Info("demo site moved", "from", d.Moved, "to", d.URL, "forgotten", n)
		}
		rep, err := ing.Run(ctx, spec, nil)
		if err != nil {
			a.log.Error("demo ingestion failed", "err", err)
			fmt.Fprintf(out, "demo: ingestion failed: %v\n", err)
			return
		}
		// The graph's name index is built before the demo says it is
		// ready: until it is, questions are answered from SQL (see
		// graphrag/sqlite), whose entity order can differ, so the first
		// answers after the ingest could differ from the later ones.
		if a.svc.graphWarm != nil {
			if err := a.svc.graphWarm.Warm(ctx, spec.Collection); err != nil {
				a.log.Warn("demo: graph warm-up", "err", err)
			}
		}
		s := rep.Summary()
		took := time.Since(start).Round(time.Millisecond)
		a.log.Info("demo site ingested", "site", d.URL, "pages", s.Pages, "indexed", rep.Counters.Indexed, "unchanged", s.Unchanged, "removed", rep.Counters.Removed,
			"chunks", s.Chunks, "triples", s.Triples, "failed", s.Failed, "took", took)
		fmt.Fprintf(out, "demo: ready at %s/ (%d pages: %d indexed, %d unchanged, %d failed; %s)\n", base, s.Pages, rep.Counters.Indexed, s.Unchanged, s.Failed, took)
	}()
	return nil
}

// agentFileFuncs are the Go funcs an agent file may name with the value
// `builtin` (funcs: {search_docs: builtin}), so that an agent without Go
// code can expose a func over the agent protocol: search_docs searches the
// agent's collection (fixie_query_corpus), utc_time tells the time in UTC
// (fixie_utc_datetime).
func agentFileFuncs(m *agent.Manager) map[string]agent.Func {
	out := map[string]agent.Func{}
	for name, builtin := range map[string]string{"search_docs": "fixie_query_corpus", "utc_time": "fixie_utc_datetime"} {
		if f, ok := m.Builtin(builtin); ok {
			f.Name = name
			out[name] = f
		}
	}
	return out
}

// checkLLMModel asks the LLM server which models it has (GET /models) and
// fails when the configured model is not one of them, naming it and listing them, so a
// typo fails at start instead of on every question. A server that cannot
// list its models (no /models, an empty list) is let through with a
// warning; one that cannot be reached fails.
func checkLLMModel(ctx context.Context, c *openai.Client, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	base := c.Config().BaseURL
	model := c.Config().Model // llm_model, or the client's default
	ids, err := c.Models(ctx)
	switch {
	case kgagent.ErrorCode(err) == kgagent.ENOTFOUND || (err == nil && len(ids) == 0):
		log.Warn("the LLM server does not list its models; not checking the model", "base_url", base, "model", model, "err", err)
		return nil
	case err != nil:
		return fmt.Errorf("config: key %q: the LLM server at %s: %w", "llm_base_url", base, err)
	}
	for _, id := range ids {
		if id == model || strings.TrimSuffix(id, ":latest") == model {
			return nil
		}
	}
	slices.Sort(ids)
	return fmt.Errorf("config: key %q: the LLM server at %s has no model %q; it has: %s", "llm_model", base, model, strings.Join(ids, ", "))
}

// openSemantic loads the semantic model of semantic_search: with the
// embedded index, unless the index's own vectors are already the semantic
// model's (embedder minilm). Without weights (and no embed_model_dir) it
// says so once and leaves search lexical.
func (a *app) openSemantic() error {
	cfg := a.cfg
	if cfg.SemanticSearch == "off" || cfg.Index == "qdrant" || cfg.Embedder == "minilm" {
		return nil
	}
	if h, ok := a.svc.index.(interface{ HasSemantic() bool }); ok && !h.HasSemantic() && a.command != "serve" && a.command != "worker" && a.command != "ingest" {
		// ask, eval, mcp: nothing to search by meaning yet (serve's pass
		// makes the vectors); loading the model would cost 1-8 s for nothing.
		return nil
	}
	if cfg.EmbedModelDir == "" && a.background() {
		// serve, worker, mcp: the model loads on first use (lazySemantic),
		// after the app is ready, not before it listens.
		if err := minilm.DefaultFetched(); err != nil {
			if kgagent.ErrorCode(err) != kgagent.ENOTFOUND {
				return fmt.Errorf("config: key %q: %w", "embed_model_dir", err)
			}
			a.log.Warn("semantic search off: the semantic model's weights are not fetched; search is lexical only (bash deploy/minilm.sh fetches them)", "err", err)
			return nil
		}
		a.svc.semantic = &lazySemantic{load: func() (*minilm.Embedder, error) { return openMiniLM("") }, log: a.log}
		return nil
	}
	e, err := openMiniLM(cfg.EmbedModelDir)
	switch {
	case err == nil:
		a.log.Info("semantic search: built-in semantic model", "model", e.Name(), "kernel", e.Kernel())
		a.svc.semantic = e
	case cfg.EmbedModelDir == "" && kgagent.ErrorCode(err) == kgagent.ENOTFOUND:
		a.log.Warn("semantic search off: the semantic model's weights are not fetched; search is lexical only (bash deploy/minilm.sh fetches them)", "err", err)
	default:
		return fmt.Errorf("config: key %q: %w", "embed_model_dir", err)
	}
	return nil
}

// semanticWorkers is how many goroutines the background pass embeds with:
// semantic_workers, else one less than the cores (at least 1), so queries
// keep a core.
func semanticWorkers(cfg Config) int {
	if cfg.SemanticWorkers > 0 {
		return cfg.SemanticWorkers
	}
	return max(1, runtime.GOMAXPROCS(0)-1)
}

// semanticServeBatch is how many chunks the background pass embeds and
// commits at once in serve, worker and mcp (ingest --semantic: 64): at
// ~70 chunks/s on one core, ~0.2 s between two looks for requests.
const semanticServeBatch = 16

// semanticQuiet is how long no request must have been in flight before
// the background pass embeds its next batch.
const semanticQuiet = 200 * time.Millisecond

// semanticMostWait bounds how long the background pass waits for a quiet
// gap: on a server never idle for semanticQuiet it still embeds a batch
// (~0.2 s of one core) every few seconds, so the vectors arrive under
// sustained load too, at a few per cent of one core.
const semanticMostWait = 5 * time.Second

// semanticPauseQuiet is how long no request must have been in flight
// before a batch of the background pass goes on with its next layer.
const semanticPauseQuiet = 50 * time.Millisecond

// semanticPauseMost bounds each mid-batch pause: on a server never idle
// for semanticPauseQuiet a batch still advances a layer (~20 ms of one
// core at most) a second.
const semanticPauseMost = time.Second

// serveSQLiteCacheKiB is the page cache of each SQLite connection of the
// search store and of the graph store's readers in serve, worker and mcp
// (SQLite's default is 2,000 KiB; the graph writer keeps 32 MiB): their
// dozen connections' caches were ~18 MB of serve's resident memory on the
// OpenJDK API docs, for pages the OS caches anyway. The ingest command
// keeps the default (its writes read the B-trees they update).
const serveSQLiteCacheKiB = 256

// background reports whether the command runs the background semantic
// pass (serve, worker, mcp), which yields to requests.
func (a *app) background() bool {
	return a.command == "serve" || a.command == "worker" || a.command == "mcp"
}

// yieldToRequests is the background pass's Yield: it returns once the app
// is warm (its search copies loaded: the pass neither delays readiness nor
// competes with the load), no ingest is running in this process (ingest
// stays as fast as without the pass; its vectors come after it), and no
// service call has been in flight for semanticQuiet, or semanticMostWait
// has passed.
func (a *app) yieldToRequests(ctx context.Context) error {
	select {
	case <-a.warmed:
	case <-ctx.Done():
		return ctx.Err()
	}
	for a.ingests.Load() > 0 {
		select {
		case <-time.After(ingestPoll):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if a.svc.gw == nil {
		return nil
	}
	return a.svc.gw.Quiet(ctx, semanticQuiet, semanticMostWait)
}

// pauseForRequests is the background pass's mid-batch pause
// (corpus.WithPause): it returns once no service call has been in flight
// for semanticPauseQuiet, or semanticPauseMost has passed, or ctx ended.
func (a *app) pauseForRequests(ctx context.Context) {
	if a.svc.gw != nil {
		_ = a.svc.gw.Quiet(ctx, semanticPauseQuiet, semanticPauseMost)
	}
}

// ingestPoll is how often the background pass looks whether the ingests
// it waits for have ended.
const ingestPoll = 100 * time.Millisecond

// countedRunner runs ingest jobs with r, counting those running in n.
type countedRunner struct {
	r natsjobs.Runner
	n *atomic.Int32
}

// Run runs one job with r, counted while it runs.
func (c countedRunner) Run(ctx context.Context, spec crawler.Spec, progress func(crawler.Counters)) (crawler.Report, error) {
	c.n.Add(1)
	defer c.n.Add(-1)
	return c.r.Run(ctx, spec, progress)
}

// startSemanticPass runs the background semantic pass until the app
// closes; serve and worker start it.
func (a *app) startSemanticPass(ctx context.Context) {
	p := a.svc.semPass
	if p == nil {
		return
	}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		switch err := p.Run(pctx, false); {
		case errors.Is(err, backfill.ErrNoModel):
			a.log.Warn("semantic pass not run: the semantic model did not load (see above); search stays lexical")
		case err != nil:
			a.log.Error("semantic pass stopped", "err", err)
		}
	}()
	a.onClose(func() { cancel(); <-done })
}

// openMiniLM loads the built-in semantic embedder from dir, or from the
// user cache when dir is empty.
func openMiniLM(dir string) (*minilm.Embedder, error) {
	if dir != "" {
		return minilm.Load(dir, minilm.Options{})
	}
	return minilm.LoadDefault(minilm.Options{})
}

// answerEmbedTimeout bounds how long the answerer waits for the semantic
// model to embed the words it compares (a model still loading), within
// the request's own deadline.
const answerEmbedTimeout = 5 * time.Second

// answerEmbed is extractive.Config.Embed by the semantic model e (nil
// without one: the answerer then judges by words alone). It runs under
// the request's context, bounded by answerEmbedTimeout.
func answerEmbed(e corpus.Embedder) func(context.Context, []string) ([][]float32, error) {
	if e == nil {
		return nil
	}
	return func(ctx context.Context, texts []string) ([][]float32, error) {
		ctx, cancel := context.WithTimeout(ctx, answerEmbedTimeout)
		defer cancel()
		return e.Embed(ctx, texts)
	}
}
