// Package oauthtest is an in-process OAuth 2.0 authorization server for
// tests: /authorize answers a user's visit with a redirect carrying a code
// (the user always consents unless Deny is set), /token implements the
// authorization_code grant (with PKCE S256 checked when a challenge was
// sent) and the refresh_token grant, and /userinfo accepts the access tokens
// it issued. Tokens, codes and expiry are under the test's control.
package oauthtest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Provider is a running authorization server. Its methods are safe for
// concurrent use.
type Provider struct {
	// URL is the server root; AuthURL and TokenURL its two endpoints.
	URL, AuthURL, TokenURL string
	// ClientID and ClientSecret are the only client it accepts.
	ClientID, ClientSecret string

	srv *httptest.Server

	mu        sync.Mutex
	expiresIn int
	deny      bool
	rotate    bool
	codes     map[string]grant
	refresh   map[string]string // refresh token -> scope
	access    map[string]bool
	exchanges int
	refreshes int
}

type grant struct {
	redirect, scope, challenge string
}

// New starts a provider for one client and closes it when the test ends.
// Access tokens expire in an hour until SetExpiresIn says otherwise.
func New(tb testing.TB, clientID, clientSecret string) *Provider {
	tb.Helper()
	p := &Provider{ClientID: clientID, ClientSecret: clientSecret, expiresIn: 3600,
		codes: map[string]grant{}, refresh: map[string]string{}, access: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	mux.HandleFunc("GET /userinfo", p.userinfo)
	p.srv = httptest.NewServer(mux)
	p.URL, p.AuthURL, p.TokenURL = p.srv.URL, p.srv.URL+"/authorize", p.srv.URL+"/token"
	tb.Cleanup(p.srv.Close)
	return p
}

// SetExpiresIn sets the lifetime in seconds of the access tokens issued
// from now on. x/oauth2 treats a token as expired 10 s early, so 1 makes
// tokens that are due for refresh at once.
func (p *Provider) SetExpiresIn(seconds int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expiresIn = seconds
}

// Deny makes /authorize redirect with error=access_denied.
func (p *Provider) Deny(deny bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deny = deny
}

// RotateRefreshTokens makes each refresh issue a new refresh token and
// invalidate the old one.
func (p *Provider) RotateRefreshTokens() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rotate = true
}

// RevokeAll invalidates every refresh and access token issued.
func (p *Provider) RevokeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refresh = map[string]string{}
	p.access = map[string]bool{}
}

// Valid reports whether accessToken was issued and not revoked.
func (p *Provider) Valid(accessToken string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.access[accessToken]
}

// Counts returns how many codes were exchanged and tokens refreshed.
func (p *Provider) Counts() (exchanges, refreshes int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exchanges, p.refreshes
}

// Visit plays the user's browser: it opens authURL and returns the redirect
// URL the provider sends the user to (with code and state, or error).
func (p *Provider) Visit(authURL string) (string, error) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(authURL)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return "", &url.Error{Op: "visit", URL: authURL, Err: errStatus(resp.Status)}
	}
	return resp.Header.Get("Location"), nil
}

type errStatus string

func (e errStatus) Error() string { return "unexpected status " + string(e) }

func random() string {
	var b [18]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if q.Get("client_id") != p.ClientID || q.Get("response_type") != "code" || err != nil || redirect.Scheme == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	if m := q.Get("code_challenge_method"); m != "" && m != "S256" {
		http.Error(w, "unsupported code_challenge_method", http.StatusBadRequest)
		return
	}
	back := redirect.Query()
	back.Set("state", q.Get("state"))
	p.mu.Lock()
	if p.deny {
		back.Set("error", "access_denied")
	} else {
		code := random()
		p.codes[code] = grant{redirect: q.Get("redirect_uri"), scope: q.Get("scope"), challenge: q.Get("code_challenge")}
		back.Set("code", code)
	}
	p.mu.Unlock()
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func tokenErr(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code})
}

func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		tokenErr(w, http.StatusBadRequest, "invalid_request")
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != p.ClientID || secret != p.ClientSecret {
		tokenErr(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var scope, refresh string
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		g, ok := p.codes[r.PostForm.Get("code")]
		delete(p.codes, r.PostForm.Get("code")) // codes work once
		if !ok || g.redirect != r.PostForm.Get("redirect_uri") {
			tokenErr(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		if g.challenge != "" {
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
				tokenErr(w, http.StatusBadRequest, "invalid_grant")
				return
			}
		}
		p.exchanges++
		scope, refresh = g.scope, random()
		p.refresh[refresh] = scope
	case "refresh_token":
		old := r.PostForm.Get("refresh_token")
		s, ok := p.refresh[old]
		if !ok {
			tokenErr(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		p.refreshes++
		scope = s
		if p.rotate {
			delete(p.refresh, old)
			refresh = random()
			p.refresh[refresh] = scope
		}
	default:
		tokenErr(w, http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	access := random()
	p.access[access] = true
	body := map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": p.expiresIn, "scope": scope}
	if refresh != "" {
		body["refresh_token"] = refresh
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

func (p *Provider) userinfo(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || !p.Valid(tok) {
		http.Error(w, "invalid token", http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"sub": "test-user"})
}
