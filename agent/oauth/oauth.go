// Package oauth lets an agent's funcs act for a user at a third-party OAuth
// 2.0 provider (seed 001): OAuthParams as the reference SDK declares them, a
// Handler per (agent, user) that gives the authorization URL, completes the
// `_oauth` callback and hands out the user's token, refreshed when expired.
//
// The protocol work (authorization URL, code exchange, refresh, PKCE) is done
// by golang.org/x/oauth2; this package adds what the SDK adds: the state
// "agent:random" remembered in the user's storage so the callback can be
// checked, and the token kept in that same storage (agent.UserStorage), so
// it survives restarts and is never shared between users or agents.
package oauth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"
)

// Keys under which the handler keeps its state in the user's storage. They
// start with "_" as the reference SDK's do.
const (
	TokenKey = "_oauth_token"
	StateKey = "_oauth_state"
)

// Defaults of a Provider.
const (
	DefaultStateTTL  = 15 * time.Minute
	MaxPendingStates = 8
)

// OAuthParams describes an agent's OAuth provider, field for field as the
// reference SDK's fixieai.OAuthParams.
type OAuthParams struct {
	ClientID     string   `json:"client_id" yaml:"client_id"`
	ClientSecret string   `json:"client_secret,omitempty" yaml:"client_secret,omitempty"`
	AuthURI      string   `json:"auth_uri" yaml:"auth_uri"`
	TokenURI     string   `json:"token_uri" yaml:"token_uri"`
	Scopes       []string `json:"scopes,omitempty" yaml:"scopes,omitempty"`
	// RedirectURL is where the provider sends the user back; it must lead
	// to the agent's `_oauth` func.
	RedirectURL string `json:"redirect_url,omitempty" yaml:"redirect_url,omitempty"`
}

// Validate checks that the params name a client and two absolute http(s)
// endpoints. It fails with EINVALID naming the field.
func (p OAuthParams) Validate() error {
	if p.ClientID == "" {
		return kgagent.Errorf(kgagent.EINVALID, "oauth params: client_id is empty")
	}
	for name, v := range map[string]string{"auth_uri": p.AuthURI, "token_uri": p.TokenURI, "redirect_url": p.RedirectURL} {
		if v == "" && name == "redirect_url" {
			continue
		}
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return kgagent.Errorf(kgagent.EINVALID, "oauth params: %s %q is not an http(s) URL", name, v)
		}
	}
	return nil
}

// Config returns the x/oauth2 configuration of the params.
func (p OAuthParams) Config() *oauth2.Config {
	return &oauth2.Config{
		ClientID:     p.ClientID,
		ClientSecret: p.ClientSecret,
		Endpoint:     oauth2.Endpoint{AuthURL: p.AuthURI, TokenURL: p.TokenURI},
		RedirectURL:  p.RedirectURL,
		Scopes:       p.Scopes,
	}
}

// Provider is one agent's OAuth set-up; Handler gives the per-user handler a
// func receives. Set the exported fields before first use.
type Provider struct {
	agent   string
	params  OAuthParams
	conf    *oauth2.Config
	storage agent.UserStorage
	flight  singleflight.Group

	// HTTPClient makes the token requests; nil uses http.DefaultClient.
	HTTPClient *http.Client
	// StateTTL is how long an authorization URL stays usable. Default
	// DefaultStateTTL.
	StateTTL time.Duration
	// NoPKCE leaves out the PKCE code challenge, for providers that reject
	// it (most ignore unknown parameters; PKCE is on by default).
	NoPKCE bool
	// Now returns the current time (for state expiry); default time.Now.
	Now func() time.Time
}

// NewProvider returns the OAuth set-up of agentName, keeping states and
// tokens in storage. It fails with EINVALID for bad params or an empty name.
func NewProvider(agentName string, p OAuthParams, storage agent.UserStorage) (*Provider, error) {
	if agentName == "" || strings.Contains(agentName, ":") {
		return nil, kgagent.Errorf(kgagent.EINVALID, "oauth: agent name %q is empty or holds ':'", agentName)
	}
	if storage == nil {
		return nil, kgagent.Errorf(kgagent.EINVALID, "oauth: no user storage")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Provider{agent: agentName, params: p, conf: p.Config(), storage: storage, StateTTL: DefaultStateTTL, Now: time.Now}, nil
}

// Handler returns the handler of userID ("" for an anonymous caller, whose
// every call fails with ERR_USERSTORAGE_REQUIRES_USER).
func (p *Provider) Handler(userID string) *Handler { return &Handler{p: p, user: userID} }

// Handler is agent.OAuthHandler for one (agent, user).
type Handler struct {
	p    *Provider
	user string
}

var _ agent.OAuthHandler = (*Handler)(nil)

func (h *Handler) ctx(ctx context.Context) context.Context {
	if h.p.HTTPClient != nil {
		return context.WithValue(ctx, oauth2.HTTPClient, h.p.HTTPClient)
	}
	return ctx
}

func (h *Handler) needUser() error {
	if h.user == "" {
		return kgagent.Errorf(kgagent.EUserStorageNeedsUser, "OAuth requires an authenticated user")
	}
	return nil
}

func (h *Handler) now() time.Time {
	if h.p.Now != nil {
		return h.p.Now()
	}
	return time.Now()
}

// AuthorizationURL returns the URL the user must visit. Its state is
// "agent:random"; it is remembered (with its PKCE verifier) in the user's
// storage for StateTTL. Errors: those of the user storage.
func (h *Handler) AuthorizationURL(ctx context.Context) (string, error) {
	if err := h.needUser(); err != nil {
		return "", err
	}
	var rnd [24]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", kgagent.WrapError(kgagent.EINTERNAL, err, "no randomness for the OAuth state")
	}
	state := h.p.agent + ":" + base64.RawURLEncoding.EncodeToString(rnd[:])
	verifier := ""
	opts := []oauth2.AuthCodeOption{oauth2.AccessTypeOffline}
	if !h.p.NoPKCE {
		verifier = oauth2.GenerateVerifier()
		opts = append(opts, oauth2.S256ChallengeOption(verifier))
	}
	pending, err := h.pending(ctx)
	if err != nil {
		return "", err
	}
	ttl := h.p.StateTTL
	if ttl <= 0 {
		ttl = DefaultStateTTL
	}
	pending[state] = pendingState{expires: h.now().Add(ttl), verifier: verifier}
	if err := h.savePending(ctx, pending); err != nil {
		return "", err
	}
	return h.p.conf.AuthCodeURL(state, opts...), nil
}

// pendingState is a state the callback may still present.
type pendingState struct {
	expires  time.Time
	verifier string
}

// pending loads the user's unexpired states. Stored as a map of state to
// "unix-seconds:verifier", a user-storage value of primitives.
func (h *Handler) pending(ctx context.Context) (map[string]pendingState, error) {
	out := map[string]pendingState{}
	v, err := h.p.storage.Get(ctx, h.p.agent, h.user, StateKey)
	if kgagent.ErrorCode(err) == kgagent.EUserStorageNotFound {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	m, _ := v.(map[string]any)
	now := h.now()
	for state, raw := range m {
		s, _ := raw.(string)
		exp, verifier, ok := strings.Cut(s, ":")
		if !ok {
			continue
		}
		sec, err := strconv.ParseInt(exp, 10, 64)
		if err != nil || !time.Unix(sec, 0).After(now) {
			continue
		}
		out[state] = pendingState{expires: time.Unix(sec, 0), verifier: verifier}
	}
	return out, nil
}

// savePending stores the newest MaxPendingStates states.
func (h *Handler) savePending(ctx context.Context, pending map[string]pendingState) error {
	states := make([]string, 0, len(pending))
	for s := range pending {
		states = append(states, s)
	}
	sort.Slice(states, func(i, j int) bool { return pending[states[i]].expires.After(pending[states[j]].expires) })
	m := map[string]any{}
	for i, s := range states {
		if i >= MaxPendingStates {
			break
		}
		m[s] = strconv.FormatInt(pending[s].expires.Unix(), 10) + ":" + pending[s].verifier
	}
	if len(m) == 0 {
		err := h.p.storage.Delete(ctx, h.p.agent, h.user, StateKey)
		if kgagent.ErrorCode(err) == kgagent.EUserStorageNotFound {
			return nil
		}
		return err
	}
	return h.p.storage.Set(ctx, h.p.agent, h.user, StateKey, m)
}

// Authorize completes the callback: it checks that state was issued to this
// user for this agent and is unexpired (each state works once), exchanges
// code for a token at the provider and stores the token. Errors: EINVALID
// for an unknown, expired, reused or foreign state; EUNAUTH when the
// provider rejects the code or the client; UNAVAILABLE when it cannot be
// reached; those of the user storage.
func (h *Handler) Authorize(ctx context.Context, state, code string) error {
	if err := h.needUser(); err != nil {
		return err
	}
	agentName, _, ok := strings.Cut(state, ":")
	if !ok || agentName != h.p.agent {
		return kgagent.Errorf(kgagent.EINVALID, "OAuth state is not for agent %s", h.p.agent)
	}
	if code == "" {
		return kgagent.Errorf(kgagent.EINVALID, "OAuth callback has no code")
	}
	pending, err := h.pending(ctx)
	if err != nil {
		return err
	}
	ps, ok := pending[state]
	if !ok {
		return kgagent.Errorf(kgagent.EINVALID, "OAuth state is unknown, expired or already used; ask for a new authorization URL")
	}
	delete(pending, state)
	if err := h.savePending(ctx, pending); err != nil {
		return err
	}
	var opts []oauth2.AuthCodeOption
	if ps.verifier != "" {
		opts = append(opts, oauth2.VerifierOption(ps.verifier))
	}
	tok, err := h.p.conf.Exchange(h.ctx(ctx), code, opts...)
	if err != nil {
		return tokenError(ctx, err, "exchange the authorization code")
	}
	return h.saveToken(ctx, tok)
}

// UserToken returns the user's token, refreshed (and the refreshed one
// stored) when it has expired, or nil when the user has not authorized the
// agent, or the token expired without a refresh token, or the provider
// revoked the refresh token (the stored token is then dropped). Errors:
// UNAVAILABLE when the provider cannot be reached to refresh; those of the
// user storage.
func (h *Handler) UserToken(ctx context.Context) (*oauth2.Token, error) {
	if err := h.needUser(); err != nil {
		return nil, err
	}
	tok, err := h.loadToken(ctx)
	if err != nil || tok == nil || tok.Valid() {
		return tok, err
	}
	if tok.RefreshToken == "" {
		return nil, nil
	}
	// One refresh per user at a time: concurrent funcs share its result.
	v, err, _ := h.p.flight.Do(h.user, func() (any, error) {
		// Another caller may have refreshed it meanwhile.
		if cur, err := h.loadToken(ctx); err != nil || cur == nil || cur.Valid() {
			return cur, err
		}
		fresh, err := h.p.conf.TokenSource(h.ctx(ctx), tok).Token()
		if err != nil {
			var re *oauth2.RetrieveError
			if errors.As(err, &re) && (re.ErrorCode == "invalid_grant" || re.ErrorCode == "invalid_token") {
				derr := h.p.storage.Delete(ctx, h.p.agent, h.user, TokenKey)
				if derr != nil && kgagent.ErrorCode(derr) != kgagent.EUserStorageNotFound {
					return nil, derr
				}
				return (*oauth2.Token)(nil), nil
			}
			return nil, tokenError(ctx, err, "refresh the token")
		}
		if fresh.RefreshToken == "" {
			fresh.RefreshToken = tok.RefreshToken
		}
		if err := h.saveToken(ctx, fresh); err != nil {
			return nil, err
		}
		return fresh, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*oauth2.Token), nil
}

// Revoke forgets the user's token (the provider is not told).
func (h *Handler) Revoke(ctx context.Context) error {
	if err := h.needUser(); err != nil {
		return err
	}
	err := h.p.storage.Delete(ctx, h.p.agent, h.user, TokenKey)
	if kgagent.ErrorCode(err) == kgagent.EUserStorageNotFound {
		return nil
	}
	return err
}

// saveToken stores tok as a map of primitives.
func (h *Handler) saveToken(ctx context.Context, tok *oauth2.Token) error {
	m := map[string]any{
		"access_token":  tok.AccessToken,
		"token_type":    tok.TokenType,
		"refresh_token": tok.RefreshToken,
		"expiry":        int64(0),
	}
	if !tok.Expiry.IsZero() {
		m["expiry"] = tok.Expiry.UnixNano()
	}
	if scope, ok := tok.Extra("scope").(string); ok {
		m["scope"] = scope
	}
	return h.p.storage.Set(ctx, h.p.agent, h.user, TokenKey, m)
}

// loadToken reads the stored token; nil when there is none or it is not a
// token this package wrote.
func (h *Handler) loadToken(ctx context.Context) (*oauth2.Token, error) {
	v, err := h.p.storage.Get(ctx, h.p.agent, h.user, TokenKey)
	if kgagent.ErrorCode(err) == kgagent.EUserStorageNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, nil
	}
	str := func(k string) string { s, _ := m[k].(string); return s }
	tok := &oauth2.Token{AccessToken: str("access_token"), TokenType: str("token_type"), RefreshToken: str("refresh_token")}
	if tok.AccessToken == "" {
		return nil, nil
	}
	if ns, _ := m["expiry"].(int64); ns != 0 {
		tok.Expiry = time.Unix(0, ns)
	}
	if scope := str("scope"); scope != "" {
		tok = tok.WithExtra(map[string]any{"scope": scope})
	}
	return tok, nil
}

// tokenError maps a failure of the token endpoint.
func tokenError(ctx context.Context, err error, what string) error {
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(cerr, context.DeadlineExceeded) {
			return kgagent.WrapError(kgagent.ETIMEOUT, err, "could not %s: deadline exceeded", what)
		}
		return kgagent.WrapError(kgagent.ECANCELED, err, "could not %s: canceled", what)
	}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.Response != nil && re.Response.StatusCode >= 500 {
			return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "OAuth provider failed to %s", what)
		}
		e := kgagent.WrapError(kgagent.EUNAUTH, err, "OAuth provider refused to %s", what)
		if re.ErrorCode != "" {
			e.Details = map[string]any{"oauth_error": re.ErrorCode}
		}
		return e
	}
	return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "OAuth provider unreachable: could not %s", what)
}

// Callback is what the `_oauth` func receives: the state and code the
// provider sent back, or the error it reported instead.
type Callback struct {
	State            string `json:"state"`
	Code             string `json:"code"`
	Error            string `json:"error,omitempty"`
	ErrorDescription string `json:"error_description,omitempty"`
}

// ParseCallback reads the text of an `_oauth` query. It accepts the
// redirect URL the provider sent the user to, its query string alone
// ("code=...&state=..."), or a JSON object {"state","code"}. It fails with
// EINVALID when the text is none of these or lacks the state, and with
// EFORBIDDEN when the provider reported that the user refused.
func ParseCallback(text string) (Callback, error) {
	text = strings.TrimSpace(text)
	var cb Callback
	switch {
	case strings.HasPrefix(text, "{"):
		if err := json.Unmarshal([]byte(text), &cb); err != nil {
			return Callback{}, kgagent.Errorf(kgagent.EINVALID, "OAuth callback is not valid JSON")
		}
	default:
		q := text
		if u, err := url.Parse(text); err == nil && u.Scheme != "" && u.Host != "" {
			q = u.RawQuery
		} else if i := strings.IndexByte(text, '?'); i >= 0 {
			q = text[i+1:]
		}
		vals, err := url.ParseQuery(q)
		if err != nil {
			return Callback{}, kgagent.Errorf(kgagent.EINVALID, "OAuth callback is not a URL or query string")
		}
		cb = Callback{State: vals.Get("state"), Code: vals.Get("code"), Error: vals.Get("error"), ErrorDescription: vals.Get("error_description")}
	}
	if cb.Error != "" {
		return cb, &kgagent.Error{Code: kgagent.EFORBIDDEN, Message: "the OAuth provider did not authorize the agent", Details: map[string]any{"oauth_error": cb.Error}}
	}
	if cb.State == "" {
		return Callback{}, kgagent.Errorf(kgagent.EINVALID, "OAuth callback has no state")
	}
	if cb.Code == "" {
		return Callback{}, kgagent.Errorf(kgagent.EINVALID, "OAuth callback has no code")
	}
	return cb, nil
}

// HandleCallback is the logic of the `_oauth` func: it parses the query
// text (see ParseCallback), completes the authorization and returns the
// reply for the user. Errors: those of ParseCallback and Authorize.
func (h *Handler) HandleCallback(ctx context.Context, query kgagent.Message) (kgagent.Message, error) {
	cb, err := ParseCallback(query.Text)
	if err != nil {
		return kgagent.Message{}, err
	}
	if err := h.Authorize(ctx, cb.State, cb.Code); err != nil {
		return kgagent.Message{}, err
	}
	return kgagent.Message{Text: "Authorization complete: " + h.p.agent + " can now act for you."}, nil
}
