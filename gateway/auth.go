package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
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

// principal is who a request authenticated as.
type principal struct {
	key    *APIKey // nil for JWT callers and open servers
	caller agent.Caller
	scopes []Scope
	open   bool // auth is off
}

func (p *principal) has(s Scope) bool {
	return p.open || s == scopePublic || slices.Contains(p.scopes, ScopeAdmin) || slices.Contains(p.scopes, s)
}

// collection checks that c is a collection name a user may give
// (kgagent.ValidateCollection: internal names are refused) and that p may
// use it, and returns the collection to use: a restricted key with no
// collection given gets its first one.
func (p *principal) collection(c string) (string, error) {
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

// owner is whose sessions p sees: the user id, else the key ("key:<name>"),
// else "" (anonymous).
func (p *principal) owner() string {
	if p.caller.UserID != "" {
		return p.caller.UserID
	}
	if p.key != nil {
		return "key:" + p.key.Name
	}
	return ""
}

func principalFrom(ctx context.Context) *principal {
	p, _ := ctx.Value(ctxPrincipal).(*principal)
	if p == nil {
		return &principal{open: true, caller: agent.Caller{Anonymous: true}}
	}
	return p
}

// authenticator checks API keys and JWTs and counts daily queries.
type authenticator struct {
	keys    map[string]*APIKey // by hash
	enabled bool
	jwt     *jwtVerifier
	limit   int

	mu     sync.Mutex
	day    string
	counts map[string]int
	now    func() time.Time
}

func newAuthenticator(cfg Config) (*authenticator, error) {
	a := &authenticator{keys: map[string]*APIKey{}, enabled: cfg.AuthEnabled(), limit: cfg.DailyLimit, counts: map[string]int{}, now: time.Now}
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

// credential returns the token a request carries: Authorization: Bearer,
// X-API-Key, or the api_key query parameter (browsers cannot set headers on a
// websocket).
func credential(r *http.Request) string {
	if t, ok := headerCredential(r.Header); ok {
		return t
	}
	return r.URL.Query().Get("api_key")
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

// authenticate returns the principal of token. Errors: EUNAUTH.
func (a *authenticator) authenticate(ctx context.Context, token string) (*principal, error) {
	if !a.enabled {
		return &principal{open: true, caller: agent.Caller{Anonymous: true}}, nil
	}
	if token == "" {
		return nil, kgagent.Errorf(kgagent.EUNAUTH, "credentials required: Authorization: Bearer <api key or token>")
	}
	if a.jwt != nil && strings.Count(token, ".") == 2 {
		c, err := a.jwt.verify(ctx, token)
		if err != nil {
			return nil, err
		}
		return &principal{caller: c, scopes: []Scope{ScopeAsk}}, nil
	}
	h := HashKey(token)
	for kh, k := range a.keys {
		if subtle.ConstantTimeCompare([]byte(kh), []byte(h)) == 1 {
			return &principal{key: k, scopes: k.Scopes, caller: agent.Caller{UserID: k.UserID, Anonymous: k.UserID == ""}}, nil
		}
	}
	return nil, kgagent.Errorf(kgagent.EUNAUTH, "unknown API key or token")
}

// charge counts one query for p's key and user; over a daily limit it fails
// with ERATELIMIT and a retry_after_s detail (seconds to the next UTC day).
func (a *authenticator) charge(p *principal) error {
	if p.open || a.limit < 0 {
		return nil
	}
	now := a.now().UTC()
	day := now.Format("2006-01-02")
	a.mu.Lock()
	defer a.mu.Unlock()
	if day != a.day {
		a.day, a.counts = day, map[string]int{}
	}
	type bucket struct {
		name  string
		limit int
	}
	var bs []bucket
	if p.key != nil {
		lim := a.limit
		if p.key.DailyLimit > 0 {
			lim = p.key.DailyLimit
		}
		bs = append(bs, bucket{"key:" + p.key.Name, lim})
	}
	if p.caller.UserID != "" {
		bs = append(bs, bucket{"user:" + p.caller.UserID, a.limit})
	}
	for _, b := range bs {
		if a.counts[b.name] >= b.limit {
			next := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
			e := kgagent.Errorf(kgagent.ERATELIMIT, "daily query limit of %d reached", b.limit)
			e.Details = map[string]any{"retry_after_s": int(next.Sub(now).Seconds()) + 1, "limit": b.limit}
			return e
		}
	}
	for _, b := range bs {
		a.counts[b.name]++
	}
	return nil
}

// require wraps h so it runs only for requests holding scope.
func (s *Server) require(scope Scope, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if scope == scopePublic {
			h(w, r)
			return
		}
		p, err := s.auth.authenticate(r.Context(), credential(r))
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="kgagent"`)
			s.writeError(w, r, err)
			return
		}
		if !p.has(scope) {
			s.writeError(w, r, kgagent.Errorf(kgagent.EFORBIDDEN, "this key lacks the %q scope", scope))
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), ctxPrincipal, p)))
	}
}

// charge counts one query for the request's principal.
func (s *Server) charge(ctx context.Context) error {
	return s.auth.charge(principalFrom(ctx))
}

var errInternalPanic = errors.New("handler panicked")
