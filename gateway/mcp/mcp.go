// Package mcp serves kgagent to Model Context Protocol clients (coding
// assistants, agent frameworks) on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk): the tools ask, search, graph,
// ingest, ingest_status and collections, and the collections and their
// documents as kgagent:// resources. One Server runs over stdio (`kgagent
// mcp`) or as the Streamable HTTP handler that `kgagent serve` mounts at
// /mcp behind the gateway's API keys, scopes, limits and Host/Origin checks.
//
// Every call goes through a Backend (gateway.Calls implements it), so a tool
// does exactly what the matching REST call does. kgagent's stable error
// codes become tool results with isError set and the code first in the text
// ("NOT_FOUND: …"); resource reads fail with JSON-RPC errors, as the
// protocol says (an unknown resource is -32602 with the URI as data).
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/internal/text"
)

// Backend runs what the tools and resources ask for, with the checks of the
// caller in ctx (scope, collections, daily limit, timeout). gateway.Calls
// implements it. Errors carry kgagent's stable codes.
type Backend interface {
	Ask(ctx context.Context, question, collection, agentName string, emit agent.Emit) (kgagent.Answer, error)
	Search(ctx context.Context, query, collection string, k int, mode corpus.Mode) ([]corpus.Hit, error)
	Triples(ctx context.Context, p graphrag.Pattern) ([]kgagent.Triple, error)
	Ingest(ctx context.Context, spec crawler.Spec) (crawler.JobStatus, error)
	Job(ctx context.Context, id string) (crawler.JobStatus, error)
	Collections(ctx context.Context) ([]corpus.CollectionInfo, error)
	// Collection returns the collection to use for name for this caller
	// ("" stays "" unless the caller is restricted to collections).
	Collection(ctx context.Context, name string) (string, error)
	Documents(ctx context.Context, collection, after string, limit int) ([]corpus.DocumentInfo, error)
	DocumentChunks(ctx context.Context, collection, docURL string) ([]kgagent.Chunk, error)
}

// Options configure a Server.
type Options struct {
	Version           string       // reported as serverInfo.version
	DefaultCollection string       // the collection used when a call names none
	Logger            *slog.Logger // default slog.Default()
	// Authenticate, when set, authenticates every request from the HTTP
	// headers it arrived with and returns ctx carrying the caller; a request
	// without HTTP headers (stdio) is then refused. Set it for the server
	// behind /mcp; leave it nil for stdio, whose caller is the local user.
	Authenticate func(ctx context.Context, h http.Header) (context.Context, error)
	// RequireBearer makes the HTTP handler take credentials from
	// Authorization: Bearer only, and bind each session to the caller who
	// opened it (Owner): another key presenting its session id gets 403.
	// Set it when the gateway has credentials configured.
	RequireBearer bool
	// Owner names the caller of a ctx returned by Authenticate (an API key
	// or user), for binding sessions.
	Owner func(ctx context.Context) string
	// IngestPoll is how often a waiting ingest call reads its job's
	// status; default 250ms.
	IngestPoll time.Duration
	// MaxBodyBytes bounds a Streamable HTTP request body; default 1 MiB.
	MaxBodyBytes int64
	// MaxSessions and MaxSessionsPerCaller bound the Streamable HTTP
	// sessions open at once (idle ones close after 30 minutes); defaults
	// 4096 and 64.
	MaxSessions, MaxSessionsPerCaller int
}

// Server is kgagent's MCP server: the SDK server with kgagent's tools and
// resources registered.
type Server struct {
	b    Backend
	opts Options
	srv  *sdk.Server
}

// New builds the MCP server over b.
func New(b Backend, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.IngestPoll <= 0 {
		opts.IngestPoll = 250 * time.Millisecond
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 1 << 20
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 4096
	}
	if opts.MaxSessionsPerCaller <= 0 {
		opts.MaxSessionsPerCaller = 64
	}
	s := &Server{b: b, opts: opts}
	sopts := &sdk.ServerOptions{
		Instructions: instructions,
		Capabilities: &sdk.ServerCapabilities{},
	}
	if opts.Authenticate != nil {
		// What a caller may list and read depends on its key: no shared
		// caches.
		sopts.SetCacheable = func(_ context.Context, _ sdk.Request, c *sdk.Cacheable) { c.CacheScope = "private" }
	}
	s.srv = sdk.NewServer(&sdk.Implementation{Name: "kgagent", Title: "kgagent knowledge base", Version: opts.Version}, sopts)
	s.addTools()
	s.addResources()
	return s
}

const instructions = `kgagent answers questions from indexed documentation sites (collections of crawled pages, ` +
	`split into sections, plus a graph of facts extracted from them). Use "ask" for a cited answer, "search" ` +
	`to find the sections that mention something, "graph" for facts about a named thing, "collections" to see ` +
	`what is indexed, and "ingest" to crawl a site into a collection. Sources are kgagent:// resources: read ` +
	`one to get the stored text of the cited page or section.`

// SDK returns the underlying SDK server (to connect a transport).
func (s *Server) SDK() *sdk.Server { return s.srv }

// sessionlessVersion is the first protocol revision without sessions
// (SEP-2575, SEP-2567): each request names its version in the
// MCP-Protocol-Version header and _meta, and no Mcp-Session-Id is kept.
const sessionlessVersion = "2026-07-28"

// HTTPHandler returns the Streamable HTTP handler. Clients of protocol
// revisions before 2026-07-28 get one session each (server-sent events for
// progress); requests of 2026-07-28 and later, which carry their version in
// the MCP-Protocol-Version header, are served without sessions, as that
// revision asks (progress still streams within the call). Mount it behind
// the gateway so its credentials, Host/Origin and CORS rules apply;
// Options.Authenticate then names the caller of every request.
func (s *Server) HTTPHandler() http.Handler {
	hopts := sdk.StreamableHTTPOptions{
		MaxRequestBodyBytes: s.opts.MaxBodyBytes,
		SessionTimeout:      30 * time.Minute,
		// The gateway checks Host (loopback, or allowed_hosts) and Origin
		// for every route, /mcp included; the SDK's own loopback-only Host
		// rule would refuse the allowed_hosts a proxy forwards.
		DisableLocalhostProtection: true,
	}
	server := func(*http.Request) *sdk.Server { return s.srv }
	stateless := hopts
	stateless.Stateless = true
	var h http.Handler = sdk.NewStreamableHTTPHandler(server, &hopts)
	h = &sessionGuard{s: s, next: h, total: s.opts.MaxSessions, perCaller: s.opts.MaxSessionsPerCaller, owners: map[string]string{}}
	h = byProtocol{sessions: h, sessionless: sdk.NewStreamableHTTPHandler(server, &stateless)}
	if !s.opts.RequireBearer || s.opts.Authenticate == nil || s.opts.Owner == nil {
		return h
	}
	// The SDK binds a session to TokenInfo.UserID at creation and refuses
	// (403) requests for it from anyone else.
	verify := func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		cctx, err := s.opts.Authenticate(ctx, r.Header)
		if err != nil {
			return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, kgagent.ErrorMessage(err))
		}
		return &auth.TokenInfo{UserID: s.opts.Owner(cctx), Expiration: time.Now().Add(time.Hour)}, nil
	}
	return auth.RequireBearerToken(verify, nil)(h)
}

// byProtocol sends requests of a sessionless protocol revision to the
// sessionless handler and the rest to the session-keeping one.
type byProtocol struct{ sessions, sessionless http.Handler }

func (b byProtocol) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if v := r.Header.Get("Mcp-Protocol-Version"); len(v) == len(sessionlessVersion) && v >= sessionlessVersion && v < "3" {
		b.sessionless.ServeHTTP(w, r)
		return
	}
	b.sessions.ServeHTTP(w, r)
}

// caller returns ctx carrying the caller of a request with extra (nil for
// stdio).
func (s *Server) caller(ctx context.Context, extra *sdk.RequestExtra) (context.Context, error) {
	if s.opts.Authenticate == nil {
		return ctx, nil
	}
	if extra == nil || extra.Header == nil {
		return ctx, kgagent.Errorf(kgagent.EUNAUTH, "credentials required: Authorization: Bearer <api key>")
	}
	return s.opts.Authenticate(ctx, extra.Header)
}

// collection returns the collection a call uses: the caller's choice, a
// restricted key's first collection, else the default.
func (s *Server) collection(ctx context.Context, name string) (string, error) {
	c, err := s.b.Collection(ctx, name)
	if err != nil {
		return "", err
	}
	if c == "" {
		c = s.opts.DefaultCollection
	}
	return c, nil
}

// toolError is the result of a failed tool call: isError, the stable code
// first in the text, and the code, message and details in _meta.
func toolError(err error) *sdk.CallToolResult {
	code, msg := kgagent.ErrorCode(err), kgagent.ErrorMessage(err)
	e := map[string]any{"code": code, "message": msg}
	if d := kgagent.ErrorDetails(err); d != nil {
		e["details"] = d
	}
	return &sdk.CallToolResult{
		IsError: true,
		Content: []sdk.Content{&sdk.TextContent{Text: code + ": " + msg}},
		Meta:    sdk.Meta{"kgagent/error": e},
	}
}

// textOf renders v as indented JSON (the text twin of structured content).
func textOf(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func oneLine(s string, max int) string {
	return text.Truncate(strings.Join(strings.Fields(s), " "), max)
}

// RunIO serves one client over newline-delimited JSON-RPC on r and w (the
// stdio transport: os.Stdin and os.Stdout) until the client disconnects or
// ctx ends.
func (s *Server) RunIO(ctx context.Context, r io.Reader, w io.Writer) error {
	err := s.srv.Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(r), Writer: nopWriteCloser{w}})
	if err != nil && (ctx.Err() != nil || errors.Is(err, io.EOF)) {
		return nil // the client went away or we were told to stop
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
