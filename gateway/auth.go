package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
)

// Scope is a permission an API key holds.
type Scope string

// Scopes. Admin implies every other scope.
const (
	ScopeAsk    Scope = "ask"    // questions, search, triples, sessions, the socket
	ScopeIngest Scope = "ingest" // corpora and jobs
	ScopeAdmin  Scope = "admin"  // deleting collections, registering agents
	scopePublic Scope = ""       // no credentials needed
	// scopeAtAdmission marks a route whose handler is one service call
	// (call): require only authenticates, and the call's admission checks
	// the scope with the rest of the request, so it is checked once.
	scopeAtAdmission Scope = "\x00admission"
)

// APIKey is one configured key. The key itself is never stored: only its
// hex sha256 (HashKey).
type APIKey struct {
	Name        string   `json:"name" yaml:"name"`
	Hash        string   `json:"hash" yaml:"hash"` // hex sha256 of the key
	Scopes      []Scope  `json:"scopes" yaml:"scopes"`
	Collections []string `json:"collections,omitempty" yaml:"collections,omitempty"` // empty: all
	UserID      string   `json:"user_id,omitempty" yaml:"user_id,omitempty"`         // per-user limits and sessions
	DailyLimit  int      `json:"daily_limit,omitempty" yaml:"daily_limit,omitempty"` // 0: Config.DailyLimit
}

// HashKey returns the hex sha256 of an API key, the form APIKey.Hash holds.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// Principal is who a request authenticated as: an API key, a JWT caller,
// or the anonymous caller of an open server. Transports get one from
// Server.Authenticate (or AuthenticateRequest) and pass it in Call.
type Principal struct {
	key    *APIKey // nil for JWT callers and open servers
	caller agent.Caller
	scopes []Scope
	open   bool   // auth is off
	remote string // the caller's address (host), for anonymous JWT limits
}

func (p *Principal) has(s Scope) bool {
	return p.open || s == scopePublic || slices.Contains(p.scopes, ScopeAdmin) || slices.Contains(p.scopes, s)
}

// collection checks that c is a collection name a user may give
// (kgagent.ValidateCollection: internal names are refused) and that p may
// use it, and returns the collection to use: a restricted key with no
// collection given gets its first one.
func (p *Principal) collection(c string) (string, error) {
	if c != "" {
		if err := kgagent.ValidateCollection(c); err != nil {
			return "", err
		}
	}
	if p.key == nil || len(p.key.Collections) == 0 {
		return c, nil
	}
	if c == "" {
		return p.key.Collections[0], nil
	}
	if !slices.Contains(p.key.Collections, c) {
		return "", kgagent.Errorf(kgagent.EFORBIDDEN, "this key may not use collection %q", c)
	}
	return c, nil
}

// mayUse reports whether p may see collection c (a restricted key only its
// own collections; everyone else every collection).
func (p *Principal) mayUse(c string) bool {
	return p.key == nil || len(p.key.Collections) == 0 || slices.Contains(p.key.Collections, c)
}

// owner is whose sessions, streams and MCP sessions p sees, namespaced by
// kind so that no credential can name another kind's owner:
// "user:<id>" (a JWT's sub, or a key's user_id: both name users),
// "key:<name>" (a key without user_id), "agent:<aid>" (an anonymous JWT
// with an agent id), "token:<sha256 of the JWT>" (an anonymous JWT without
// one: only the holder of that very token is bound to it), and "" only for
// the caller of an open server (no credentials, loopback only). A JWT's sub
// "key:askA" is the owner "user:key:askA", never the key askA.
func (p *Principal) owner() string {
	switch {
	case p.open:
		return ""
	case p.caller.UserID != "":
		return "user:" + p.caller.UserID
	case p.key != nil:
		return "key:" + p.key.Name
	case p.caller.AgentID != "":
		return "agent:" + p.caller.AgentID
	case p.caller.Token != "":
		return "token:" + HashKey(p.caller.Token)
	}
	return "" // unreachable: an authenticated principal is one of the above
}

// anonymous names the identity of a JWT without sub (its agent id, else
// the token itself), for its one daily budget whatever address or
// transport it comes from; "" for everyone else.
func (p *Principal) anonymous() string {
	switch {
	case p.open || p.key != nil || p.caller.UserID != "":
		return ""
	case p.caller.AgentID != "":
		return "agent:" + p.caller.AgentID
	}
	return "token:" + HashKey(p.caller.Token)
}

// buckets are the daily-limit counters a query of p is charged to: its
// key, its user, and for a JWT without sub its one anonymous identity
// (agent id, else the token), never its address or transport, so a
// caller gets one budget however many addresses and transports it uses.
func (p *Principal) buckets(limit int) []Bucket {
	if p.open || limit < 0 {
		return nil
	}
	var bs []Bucket
	if p.key != nil {
		lim := limit
		if p.key.DailyLimit > 0 {
			lim = p.key.DailyLimit
		}
		bs = append(bs, Bucket{Key: "key:" + p.key.Name, Limit: lim})
	}
	if p.caller.UserID != "" {
		bs = append(bs, Bucket{Key: "user:" + p.caller.UserID, Limit: limit})
	}
	if a := p.anonymous(); a != "" {
		bs = append(bs, Bucket{Key: "anon:" + a, Limit: limit})
	}
	return bs
}

func principalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(ctxPrincipal).(*Principal)
	if p == nil {
		return &Principal{open: true, caller: agent.Caller{Anonymous: true}}
	}
	return p
}

// withPrincipal returns ctx carrying p.
func withPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, ctxPrincipal, p)
}

// authenticator checks API keys and JWTs.
type authenticator struct {
	keys    map[string]*APIKey // by hash
	enabled bool
	jwt     *jwtVerifier
}

func newAuthenticator(cfg Config) (*authenticator, error) {
	a := &authenticator{keys: map[string]*APIKey{}, enabled: cfg.AuthEnabled()}
	for i := range cfg.APIKeys {
		k := cfg.APIKeys[i]
		h := strings.ToLower(k.Hash)
		if len(h) != 64 {
			return nil, kgagent.Errorf(kgagent.EINVALID, "api key %q: hash must be 64 hex digits (sha256)", k.Name)
		}
		if _, err := hex.DecodeString(h); err != nil {
			return nil, kgagent.Errorf(kgagent.EINVALID, "api key %q: hash is not hex", k.Name)
		}
		for _, s := range k.Scopes {
			if s != ScopeAsk && s != ScopeIngest && s != ScopeAdmin {
				return nil, kgagent.Errorf(kgagent.EINVALID, "api key %q: unknown scope %q", k.Name, s)
			}
		}
		a.keys[h] = &k
	}
	if cfg.JWT.enabled() {
		v, err := newJWTVerifier(cfg.JWT)
		if err != nil {
			return nil, err
		}
		a.jwt = v
	}
	return a, nil
}

// Credential returns the token an HTTP request carries: Authorization:
// Bearer, X-API-Key, or — on a websocket upgrade only, since browsers
// cannot set headers there — the api_key query parameter. Everywhere else
// ?api_key= is ignored, so a key never works from a URL that a link, a
// log line or a Referer header could carry.
func Credential(r *http.Request) string {
	if t, ok := headerCredential(r.Header); ok {
		return t
	}
	if r.Method == http.MethodGet && isWebSocketUpgrade(r.Header) {
		return r.URL.Query().Get("api_key")
	}
	return ""
}

// isWebSocketUpgrade reports whether h asks for a websocket upgrade
// (Connection: upgrade and Upgrade: websocket, as RFC 6455 has them).
func isWebSocketUpgrade(h http.Header) bool {
	return headerHasToken(h, "Connection", "upgrade") && headerHasToken(h, "Upgrade", "websocket")
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// headerCredential returns the token of an Authorization: Bearer or
// X-API-Key header, and whether either header was present.
func headerCredential(h http.Header) (string, bool) {
	if a := h.Get("Authorization"); a != "" {
		if t, ok := strings.CutPrefix(a, "Bearer "); ok {
			return strings.TrimSpace(t), true
		}
		return "", true
	}
	if k := h.Get("X-API-Key"); k != "" {
		return k, true
	}
	return "", false
}

// authenticate returns the Principal of token. Errors: EUNAUTH.
func (a *authenticator) authenticate(ctx context.Context, token, remote string) (*Principal, error) {
	if !a.enabled {
		return &Principal{open: true, caller: agent.Caller{Anonymous: true}, remote: remote}, nil
	}
	if token == "" {
		return nil, kgagent.Errorf(kgagent.EUNAUTH, "credentials required: Authorization: Bearer <api key or token>")
	}
	if a.jwt != nil && strings.Count(token, ".") == 2 {
		c, err := a.jwt.verify(ctx, token)
		if err != nil {
			return nil, err
		}
		return &Principal{caller: c, scopes: []Scope{ScopeAsk}, remote: remote}, nil
	}
	h := HashKey(token)
	for kh, k := range a.keys {
		if subtle.ConstantTimeCompare([]byte(kh), []byte(h)) == 1 {
			return &Principal{key: k, scopes: k.Scopes, caller: agent.Caller{UserID: k.UserID, Anonymous: k.UserID == ""}, remote: remote}, nil
		}
	}
	return nil, kgagent.Errorf(kgagent.EUNAUTH, "unknown API key or token")
}

// Authenticate returns the principal of a credential (an API key or a
// JWT) presented from remote (an address, or a transport's name): the
// anonymous open principal when auth is off. Errors: EUNAUTH.
func (s *Server) Authenticate(ctx context.Context, token, remote string) (*Principal, error) {
	return s.auth.authenticate(ctx, token, remote)
}

// AuthenticateRequest is Authenticate with an HTTP request's credential
// and remote address.
func (s *Server) AuthenticateRequest(r *http.Request) (*Principal, error) {
	return s.Authenticate(r.Context(), Credential(r), remoteHost(r))
}

func remoteHost(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// require wraps h, the handler of the route pattern, so it runs only for
// requests holding scope (only authenticated ones for scopeAtAdmission,
// whose call checks the scope), and records the route's request metrics: in
// flight while it runs, then count and latency by pattern and status (a
// handler's panic goes on to middleware, which logs it, uncounted here).
func (s *Server) require(pattern string, scope Scope, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		s.metrics.inFlight.Inc()
		defer s.metrics.inFlight.Dec()
		sw, ok := w.(*statusWriter)
		if !ok {
			sw = &statusWriter{ResponseWriter: w}
			w = sw
		}
		defer func() {
			if p := recover(); p != nil {
				panic(p) // to middleware, which recovers and logs it
			}
			s.metrics.observeHTTP(pattern, sw.status, time.Since(start))
		}()
		if scope == scopePublic {
			h(w, r)
			return
		}
		p, err := s.AuthenticateRequest(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="kgagent"`)
			s.writeError(w, r, err)
			return
		}
		if scope != scopeAtAdmission && !p.has(scope) {
			s.writeError(w, r, kgagent.Errorf(kgagent.EFORBIDDEN, "this key lacks the %q scope", scope))
			return
		}
		h(w, r.WithContext(withPrincipal(r.Context(), p)))
	}
}

var errInternalPanic = errors.New("handler panicked")
