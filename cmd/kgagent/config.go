package main

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus/embeds"
	"github.com/kgagent/kgagent/crawler/natsjobs"
)

// Config is every setting of kgagent. Precedence: flags > environment
// (KGAGENT_<KEY>) > YAML file (--config) > defaults. The zero value is never
// used directly: defaultConfig fills the defaults.
type Config struct {
	ConfigFile string `key:"config" usage:"YAML configuration file"`
	DataDir    string `key:"data_dir" usage:"directory holding everything the embedded defaults store"`
	Addr       string `key:"addr" usage:"HTTP listen address of serve"`
	LogFormat  string `key:"log_format" usage:"log format: text or json"`
	LogLevel   string `key:"log_level" usage:"log level: debug, info, warn or error"`

	NATSURL    string `key:"nats_url" usage:"external NATS server URL; empty starts an in-process NATS server with JetStream"`
	NATSListen string `key:"nats_listen" usage:"listen address of the in-process NATS server (port -1: random)"`

	JobAckWait time.Duration `key:"job_ack_wait" usage:"how long an ingestion job whose worker vanished (kill -9, lost machine) waits before another worker takes it over; a running job renews it every second"`

	ShutdownTimeout time.Duration `key:"shutdown_timeout" usage:"how long in-flight requests may finish on SIGINT/SIGTERM"`

	Demo        bool   `key:"demo" usage:"serve the bundled sample docs site on loopback and ingest it at start"`
	DemoSiteDir string `key:"demo_site_dir" usage:"directory of the sample docs site served by --demo"`
	AgentsDir   string `key:"agents" usage:"directory of agent YAML files to load"`
	Collection  string `key:"collection" usage:"default collection"`

	Index        string `key:"index" usage:"vector index: sqlite (embedded) or qdrant"`
	QdrantAddr   string `key:"qdrant_addr" usage:"Qdrant gRPC address host:port (index=qdrant)"`
	QdrantAPIKey string `key:"qdrant_api_key" usage:"Qdrant API key"`
	QdrantTLS    bool   `key:"qdrant_tls" usage:"use TLS to Qdrant"`

	Graph          string        `key:"graph" usage:"triple store: sqlite (embedded) or neo4j"`
	Neo4jURL       string        `key:"neo4j_url" usage:"Neo4j Bolt URL (graph=neo4j), e.g. bolt://127.0.0.1:7687"`
	Neo4jUser      string        `key:"neo4j_user" usage:"Neo4j user"`
	Neo4jPassword  string        `key:"neo4j_password" usage:"Neo4j password"`
	Neo4jDatabase  string        `key:"neo4j_database" usage:"Neo4j database name (empty: the server's default)"`
	Neo4jRetryTime time.Duration `key:"neo4j_retry_time" usage:"how long a Neo4j write keeps retrying while the server is unreachable or restarting"`

	LLM            string  `key:"llm" usage:"LLM provider: extractive (built-in) or openai (any OpenAI-compatible API)"`
	LLMBaseURL     string  `key:"llm_base_url" usage:"OpenAI-compatible base URL, e.g. http://127.0.0.1:11434/v1"`
	LLMAPIKey      string  `key:"llm_api_key" usage:"API key of the LLM"`
	LLMModel       string  `key:"llm_model" usage:"model name for the LLM"`
	LLMTemperature float64 `key:"llm_temperature" usage:"sampling temperature"`
	LLMMaxTokens   int     `key:"llm_max_tokens" usage:"maximum completion tokens of one ReAct step (the output is also cut after its first complete action line)"`
	MaxIterations  int     `key:"max_iterations" usage:"ReAct iteration limit per question"`

	LLMProtocol          string        `key:"llm_protocol" usage:"how an openai LLM gives its steps: auto (a JSON-schema step, else tools, else text, as the server accepts), tools (native tool calls), json (response_format json_schema) or text (Ask/A: lines)"`
	LLMActFirst          bool          `key:"llm_act_first" usage:"with tools or json steps, the first step must call a func (a docs question is answered from a search, not from the model's memory)"`
	LLMSearchFirst       bool          `key:"llm_search_first" usage:"with an openai LLM, a docs agent's run starts with the corpus search on the question, given to the model as the first observation (the same events as if it had asked; counts as an iteration)"`
	LLMAttribute         bool          `key:"llm_attribute_citations" usage:"when an openai LLM's answer cites no source, kgagent cites the sources shown to it that support its sentences, or says none does and adds what the docs say; a run whose model gives no answer (iteration limit, malformed steps) answers with what the docs say instead of failing (the answer's citations field tells which)"`
	LLMCallTimeout       time.Duration `key:"llm_call_timeout" usage:"longest one LLM call may take; a call also gets at most an equal share of the question's time left among the iterations left (at most 3 counted: the first calls get a third), and one cut short is judged on what it wrote"`
	LLMObservationTokens int           `key:"llm_observation_tokens" usage:"estimated tokens of one observation fed back to an openai LLM (every source keeps its line; the best passages are cut least; events keep it whole); 0: unbounded"`

	AnswerCacheSize int           `key:"answer_cache_size" usage:"answers kept for questions asked again without a session (0: no answer cache)"`
	AnswerCacheTTL  time.Duration `key:"answer_cache_ttl" usage:"longest a cached answer is served; any write to the corpus or graph ends it sooner"`

	Embedder        string `key:"embedder" usage:"embedder: lexical (built-in, hashed n-grams), minilm (built-in semantic model all-MiniLM-L6-v2, run in Go; falls back to lexical, saying so, when its weights are not fetched) or openai"`
	EmbedModelDir   string `key:"embed_model_dir" usage:"the built-in semantic model (embedder minilm, or the semantic vectors of semantic_search): a HuggingFace-format sentence-transformers directory of a BERT model with mean pooling (config.json, tokenizer.json, model.safetensors); empty: all-MiniLM-L6-v2 from the user cache (deploy/minilm.sh fetches it)"`
	SemanticSearch  string `key:"semantic_search" usage:"semantic vectors beside the lexical ones (embedded index): auto (the built-in semantic model when its weights are fetched; serve and worker embed every chunk in the background, search uses the vectors as they land; without weights lexical only, saying so once) or off"`
	SemanticWorkers int    `key:"semantic_workers" usage:"goroutines the background semantic pass embeds with (0: one less than the cores, at least 1)"`
	EmbedBaseURL    string `key:"embed_base_url" usage:"OpenAI-compatible embeddings base URL"`
	EmbedAPIKey     string `key:"embed_api_key" usage:"API key of the embeddings API"`
	EmbedModel      string `key:"embed_model" usage:"embedding model name"`
	EmbedDimension  int    `key:"embed_dimension" usage:"embedding dimension (checked against the API)"`

	EmbedBatchSize         int           `key:"embed_batch_size" usage:"texts per embeddings request"`
	EmbedConcurrency       int           `key:"embed_concurrency" usage:"most embeddings requests in flight; halved while the server times out or answers 429/503, raised again as requests succeed"`
	EmbedTimeout           time.Duration `key:"embed_timeout" usage:"timeout of one embeddings request (a batch that times out is split for its retry)"`
	EmbedQueryPrefix       string        `key:"embed_query_prefix" usage:"text put before search queries, for asymmetric models (E5: \"query: \")"`
	EmbedDocumentPrefix    string        `key:"embed_document_prefix" usage:"text put before documents, for asymmetric models (E5: \"passage: \")"`
	EmbedQueryInputType    string        `key:"embed_query_input_type" usage:"input_type sent with search queries (e.g. search_query); empty: none"`
	EmbedDocumentInputType string        `key:"embed_document_input_type" usage:"input_type sent with documents (e.g. search_document); empty: none"`

	Extractor string `key:"extractor" usage:"triple extractor: builtin or llm"`

	AllowPrivateIngest  bool          `key:"allow_private_ingest" usage:"let API-requested ingestion fetch private, loopback and link-local addresses"`
	AllowedPrivateHosts []string      `key:"allowed_private_hosts" usage:"host names, IP addresses or CIDR prefixes that API-requested fetches (crawls, embeds, registered agents) may reach although private"`
	CrawlParallelism    int           `key:"crawl_parallelism" usage:"parallel requests per host"`
	CrawlDelay          time.Duration `key:"crawl_delay" usage:"delay between requests to one host"`
	CrawlMaxPages       int           `key:"crawl_max_pages" usage:"default page limit of a crawl; a crawl may fetch 2 GiB for this many pages, and as many bytes a page under a higher --max-pages (an API request's max_pages keeps the 2 GiB)"`
	CrawlTimeout        time.Duration `key:"crawl_timeout" usage:"per-request timeout of the crawler"`
	IngestMemoryLimit   int64         `key:"ingest_memory_limit" usage:"memory kgagent ingest aims to stay within, in bytes: 136 MiB of it are left to SQLite's caches and the executable, the rest is Go's soft limit, near which the collector works harder (the GOMEMLIMIT environment variable, when set, wins); a 32nd of it bounds the bytes of the pages a crawl holds at once past their fetch (a page's HTML while it is parsed, then its text until it is written), so pages of megabytes are parsed one or two at a time"`
	ServeMemoryLimit    int64         `key:"serve_memory_limit" usage:"memory serve, worker and mcp aim to stay within, in bytes, the same way as ingest_memory_limit (136 MiB left to SQLite and the executable, the rest Go's soft limit); 0: no limit. Keep it above the search copies and graph indexes the data dir needs (the live heap: ~280 MB for 10,000 pages), or the collector runs without pause (the GOMEMLIMIT environment variable, when set, wins). Below it the collector runs once the heap has grown by 12% (GOGC 12 unless GOGC is set)"`

	APIKeysFile        string        `key:"api_keys_file" usage:"YAML file of API keys (hashed) with scopes and collections"`
	JWKSFile           string        `key:"jwks_file" usage:"JWKS file for agent-protocol JWT verification"`
	JWKSURL            string        `key:"jwks_url" usage:"JWKS URL for agent-protocol JWT verification"`
	JWTAudience        []string      `key:"jwt_audience" usage:"accepted JWT audiences"`
	DailyQueryLimit    int           `key:"daily_query_limit" usage:"queries per API key and per user per day"`
	CORSOrigins        []string      `key:"cors_origins" usage:"origins allowed to call the API from a browser (chat widget)"`
	AllowedHosts       []string      `key:"allowed_hosts" usage:"Host names served besides loopback ones (* for any); empty: loopback only without credentials, any with them"`
	PrivateMetrics     bool          `key:"private_metrics" usage:"/metrics needs an admin key (default: public, for scrapers on a private network)"`
	MaxBodyBytes       int64         `key:"max_body_bytes" usage:"largest accepted request body"`
	HTTPReadTimeout    time.Duration `key:"http_read_timeout" usage:"longest a client may take to send a request's line, headers and body (headers alone: at most 10s); a slower one is cut"`
	HTTPWriteTimeout   time.Duration `key:"http_write_timeout" usage:"longest a request may take from its headers to the end of its response, streams excepted (SSE, websocket, MCP streams); keep it above the 2m question timeout"`
	HTTPIdleTimeout    time.Duration `key:"http_idle_timeout" usage:"how long a keep-alive connection may wait for its next request"`
	HTTPMaxHeaderBytes int           `key:"http_max_header_bytes" usage:"largest request line and headers; larger get 431"`
	MaxStreamBytes     int64         `key:"max_stream_bytes" usage:"bytes of websocket stream events kept for resuming, across all streams (oldest dropped first)"`
	ForwardJWT         bool          `key:"forward_jwt" usage:"forward the caller's JWT to remote agents and funcs (they could replay it)"`

	PublicURL     string        `key:"public_url" usage:"URL clients reach serve at (e.g. https://kgagent.example), for signed embed URLs; empty: http:// and addr, or the listener's address when addr has port 0 or a wildcard host"`
	EmbedMaxBytes int64         `key:"embed_max_bytes" usage:"largest embed uploaded, stored or read by an agent"`
	EmbedURLTTL   time.Duration `key:"embed_url_ttl" usage:"lifetime of a signed embed URL"`
	EmbedSecret   string        `key:"embed_secret" usage:"HMAC key of signed embed URLs (16 bytes or more); empty: a key generated once and kept in embeds/url.key in the data dir (mode 0600)"`
	JobSecret     string        `key:"job_secret" usage:"key sealing the bearer tokens of queued ingestion jobs (the same on every process sharing a NATS server); empty: a key generated once and kept in jobs.key in the data dir (mode 0600)"`
}

func defaultConfig() Config {
	return Config{
		DataDir:              "./kgagent-data",
		Addr:                 "127.0.0.1:8080",
		LogFormat:            "text",
		LogLevel:             "info",
		NATSListen:           "127.0.0.1:4222",
		JobAckWait:           natsjobs.DefaultAckWait,
		ShutdownTimeout:      15 * time.Second,
		DemoSiteDir:          "testdata/site",
		Collection:           kgagent.DefaultCollection,
		Index:                "sqlite",
		Graph:                "sqlite",
		Neo4jUser:            "neo4j",
		Neo4jRetryTime:       30 * time.Second,
		LLM:                  "extractive",
		LLMMaxTokens:         256,
		MaxIterations:        10,
		LLMCallTimeout:       time.Minute,
		LLMProtocol:          "auto",
		LLMActFirst:          true,
		LLMSearchFirst:       true,
		LLMAttribute:         true,
		LLMObservationTokens: 600,
		EmbedBatchSize:       32,
		EmbedConcurrency:     2,
		EmbedTimeout:         time.Minute,
		AnswerCacheSize:      4096,
		AnswerCacheTTL:       10 * time.Minute,
		Embedder:             "lexical",
		SemanticSearch:       "auto",
		Extractor:            "builtin",
		CrawlParallelism:     4,
		CrawlMaxPages:        10000,
		CrawlTimeout:         20 * time.Second,
		IngestMemoryLimit:    400 << 20,
		ServeMemoryLimit:     1 << 30,
		DailyQueryLimit:      1000,
		MaxBodyBytes:         1 << 20,
		HTTPReadTimeout:      30 * time.Second,
		HTTPWriteTimeout:     150 * time.Second,
		HTTPIdleTimeout:      time.Minute,
		HTTPMaxHeaderBytes:   64 << 10,
		MaxStreamBytes:       64 << 20,
		EmbedMaxBytes:        embeds.DefaultMaxBytes,
		EmbedURLTTL:          embeds.DefaultTTL,
	}
}

// configField is one key of Config, found by reflection on its struct tags.
type configField struct {
	key   string // yaml key: data_dir
	flag  string // flag name: data-dir
	env   string // environment: KGAGENT_DATA_DIR
	usage string
	v     reflect.Value
}

func (c *Config) fields() []configField {
	rv := reflect.ValueOf(c).Elem()
	rt := rv.Type()
	out := make([]configField, 0, rt.NumField())
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		key := f.Tag.Get("key")
		out = append(out, configField{
			key:   key,
			flag:  strings.ReplaceAll(key, "_", "-"),
			env:   "KGAGENT_" + strings.ToUpper(key),
			usage: f.Tag.Get("usage"),
			v:     rv.Field(i),
		})
	}
	return out
}

// addFlags registers one flag per key on fs, with the defaults of c.
func (c *Config) addFlags(fs *pflag.FlagSet) {
	for _, f := range c.fields() {
		switch p := f.v.Addr().Interface().(type) {
		case *string:
			fs.StringVar(p, f.flag, *p, f.usage+" ($"+f.env+")")
		case *bool:
			fs.BoolVar(p, f.flag, *p, f.usage+" ($"+f.env+")")
		case *int:
			fs.IntVar(p, f.flag, *p, f.usage+" ($"+f.env+")")
		case *int64:
			fs.Int64Var(p, f.flag, *p, f.usage+" ($"+f.env+")")
		case *float64:
			fs.Float64Var(p, f.flag, *p, f.usage+" ($"+f.env+")")
		case *time.Duration:
			fs.DurationVar(p, f.flag, *p, f.usage+" ($"+f.env+")")
		case *[]string:
			fs.StringSliceVar(p, f.flag, *p, f.usage+" ($"+f.env+", comma-separated)")
		default:
			panic("config: unsupported type for " + f.key)
		}
	}
}

// resolve applies YAML and environment under the flags already parsed into c:
// a key set by a flag keeps its flag value.
func (c *Config) resolve(fs *pflag.FlagSet, environ []string) error {
	flagged := map[string]reflect.Value{}
	for _, f := range c.fields() {
		if fs != nil && fs.Changed(f.flag) {
			flagged[f.key] = reflect.ValueOf(reflect.ValueOf(f.v.Interface()).Interface())
		}
	}
	file := c.ConfigFile
	if v, ok := lookupEnv(environ, "KGAGENT_CONFIG"); ok && !(fs != nil && fs.Changed("config")) {
		file = v
	}
	base := defaultConfig()
	base.ConfigFile = file
	if file != "" {
		if err := base.loadYAML(file); err != nil {
			return err
		}
	}
	if err := base.loadEnv(environ); err != nil {
		return err
	}
	bf := base.fields()
	for i, f := range c.fields() {
		if v, ok := flagged[f.key]; ok {
			bf[i].v.Set(v)
		}
	}
	*c = base
	return c.validate()
}

func (c *Config) loadYAML(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	var raw map[string]yaml.Node
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	byKey := map[string]configField{}
	for _, f := range c.fields() {
		byKey[f.key] = f
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		n := raw[k]
		f, ok := byKey[k]
		if !ok || k == "config" {
			return fmt.Errorf("config %s:%d: unknown key %q", path, n.Line, k)
		}
		if err := n.Decode(f.v.Addr().Interface()); err != nil {
			return fmt.Errorf("config %s:%d: key %q: %v", path, n.Line, k, err)
		}
	}
	return nil
}

func lookupEnv(environ []string, name string) (string, bool) {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

func (c *Config) loadEnv(environ []string) error {
	byEnv := map[string]configField{}
	for _, f := range c.fields() {
		byEnv[f.env] = f
	}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "KGAGENT_") || !isConfigEnv(k) {
			continue
		}
		f, ok := byEnv[k]
		if !ok {
			return fmt.Errorf("config: unknown environment variable %s", k)
		}
		if f.key == "config" {
			continue
		}
		if err := setFromString(f.v, v); err != nil {
			return fmt.Errorf("config: %s (key %q): %v", k, f.key, err)
		}
	}
	return nil
}

// testEnvPrefixes are KGAGENT_ variables that belong to the test and
// benchmark scripts (KGAGENT_TOOLS is where they install their tools,
// KGAGENT_HOME_CHECK=0 turns off make test's check of $HOME), not
// to the configuration.
var testEnvPrefixes = []string{"KGAGENT_REQUIRE_", "KGAGENT_PYDOCS", "KGAGENT_TEST_", "KGAGENT_BENCH_", "KGAGENT_TOOLS", "KGAGENT_HOME_CHECK"}

func isConfigEnv(k string) bool {
	for _, p := range testEnvPrefixes {
		if strings.HasPrefix(k, p) {
			return false
		}
	}
	return true
}

func setFromString(v reflect.Value, s string) error {
	switch p := v.Addr().Interface().(type) {
	case *string:
		*p = s
	case *bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("not a boolean: %q", s)
		}
		*p = b
	case *int:
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("not an integer: %q", s)
		}
		*p = n
	case *int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer: %q", s)
		}
		*p = n
	case *float64:
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("not a number: %q", s)
		}
		*p = n
	case *time.Duration:
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("not a duration: %q", s)
		}
		*p = d
	case *[]string:
		*p = nil
		for _, part := range strings.Split(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				*p = append(*p, part)
			}
		}
	}
	return nil
}

func oneOf(key, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("config: key %q: %q is not one of %s", key, v, strings.Join(allowed, ", "))
}

func (c *Config) validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(oneOf("log_format", c.LogFormat, "text", "json"))
	add(oneOf("log_level", c.LogLevel, "debug", "info", "warn", "error"))
	add(oneOf("index", c.Index, "sqlite", "qdrant"))
	add(oneOf("graph", c.Graph, "sqlite", "neo4j"))
	add(oneOf("llm", c.LLM, "extractive", "openai"))
	add(oneOf("embedder", c.Embedder, "lexical", "minilm", "openai"))
	add(oneOf("semantic_search", c.SemanticSearch, "auto", "off"))
	if c.SemanticWorkers < 0 {
		add(fmt.Errorf("config: key %q: must not be negative, got %d", "semantic_workers", c.SemanticWorkers))
	}
	add(oneOf("llm_protocol", c.LLMProtocol, "auto", "tools", "json", "text"))
	add(oneOf("extractor", c.Extractor, "builtin", "llm"))
	pos := func(key string, n int) {
		if n <= 0 {
			add(fmt.Errorf("config: key %q: must be positive, got %d", key, n))
		}
	}
	pos("max_iterations", c.MaxIterations)
	pos("crawl_parallelism", c.CrawlParallelism)
	pos("crawl_max_pages", c.CrawlMaxPages)
	pos("daily_query_limit", c.DailyQueryLimit)
	if c.IngestMemoryLimit < 64<<20 {
		add(fmt.Errorf("config: key %q: must be at least 67108864 (64 MiB), got %d", "ingest_memory_limit", c.IngestMemoryLimit))
	}
	if c.ServeMemoryLimit != 0 && c.ServeMemoryLimit < 64<<20 {
		add(fmt.Errorf("config: key %q: must be 0 (no limit) or at least 67108864 (64 MiB), got %d", "serve_memory_limit", c.ServeMemoryLimit))
	}
	pos("llm_max_tokens", c.LLMMaxTokens)
	pos("embed_batch_size", c.EmbedBatchSize)
	pos("embed_concurrency", c.EmbedConcurrency)
	pos("http_max_header_bytes", c.HTTPMaxHeaderBytes)
	if c.HTTPReadTimeout <= 0 || c.HTTPWriteTimeout <= 0 || c.HTTPIdleTimeout <= 0 {
		add(fmt.Errorf("config: keys %q, %q and %q: must be positive", "http_read_timeout", "http_write_timeout", "http_idle_timeout"))
	}
	if c.LLMCallTimeout < 0 || c.EmbedTimeout <= 0 || c.LLMObservationTokens < 0 {
		add(fmt.Errorf("config: keys %q, %q and %q: must not be negative (embed_timeout positive)", "llm_call_timeout", "embed_timeout", "llm_observation_tokens"))
	}
	if c.DataDir == "" {
		add(fmt.Errorf("config: key %q: must not be empty", "data_dir"))
	}
	if c.Index == "qdrant" && c.QdrantAddr == "" {
		add(fmt.Errorf("config: key %q: required when index is qdrant", "qdrant_addr"))
	}
	if c.Graph == "neo4j" && c.Neo4jURL == "" {
		add(fmt.Errorf("config: key %q: required when graph is neo4j", "neo4j_url"))
	}
	if c.LLM == "openai" && c.LLMBaseURL == "" {
		add(fmt.Errorf("config: key %q: required when llm is openai", "llm_base_url"))
	}
	if c.Embedder == "openai" && (c.EmbedBaseURL == "" || c.EmbedDimension <= 0) {
		add(fmt.Errorf("config: keys %q and %q: required when embedder is openai", "embed_base_url", "embed_dimension"))
	}
	if c.EmbedModelDir != "" && c.Embedder != "minilm" && c.SemanticSearch == "off" {
		add(fmt.Errorf("config: key %q: only used with embedder minilm or semantic_search auto", "embed_model_dir"))
	}
	if c.Extractor == "llm" && c.LLM != "openai" {
		add(fmt.Errorf("config: key %q: llm extraction needs llm=openai", "extractor"))
	}
	add(checkEmbedConfig(c))
	add(checkGuardConfig(*c))
	if c.JobAckWait < 2*time.Second {
		add(fmt.Errorf("config: key %q: must be at least 2s (running jobs renew it every second), got %s", "job_ack_wait", c.JobAckWait))
	}
	if c.ShutdownTimeout < 0 || c.CrawlDelay < 0 || c.CrawlTimeout <= 0 {
		add(fmt.Errorf("config: keys %q, %q, %q: durations must not be negative", "shutdown_timeout", "crawl_delay", "crawl_timeout"))
	}
	if len(errs) == 0 {
		return nil
	}
	var buf bytes.Buffer
	for i, e := range errs {
		if i > 0 {
			buf.WriteString("; ")
		}
		buf.WriteString(e.Error())
	}
	return fmt.Errorf("%s", buf.String())
}

// referenceTable renders the configuration reference for the README, so the
// README and the code cannot drift (a test compares them).
func referenceTable() string {
	d := defaultConfig()
	var b strings.Builder
	b.WriteString("| key (YAML) | flag | environment | default | meaning |\n|---|---|---|---|---|\n")
	for _, f := range d.fields() {
		def := fmt.Sprint(f.v.Interface())
		if f.v.Kind() == reflect.Slice {
			def = strings.Trim(def, "[]")
		}
		if def == "" {
			def = "(empty)"
		}
		fmt.Fprintf(&b, "| `%s` | `--%s` | `%s` | `%s` | %s |\n", f.key, f.flag, f.env, def, f.usage)
	}
	return b.String()
}
