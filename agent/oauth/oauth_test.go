package oauth_test

import (
	"context"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/agent/oauth"
	"github.com/kgagent/kgagent/agent/oauth/oauthtest"
	"github.com/kgagent/kgagent/agent/sqlite"
)

const redirect = "https://kgagent.example/agents/cal/_oauth"

type fixture struct {
	idp     *oauthtest.Provider
	st      agent.UserStorage
	prov    *oauth.Provider
	params  oauth.OAuthParams
	storage *sqlite.DB
}

func setup(t *testing.T) *fixture {
	t.Helper()
	idp := oauthtest.New(t, "client-1", "secret-1")
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	params := oauth.OAuthParams{ClientID: "client-1", ClientSecret: "secret-1", AuthURI: idp.AuthURL, TokenURI: idp.TokenURL,
		Scopes: []string{"calendar.read", "calendar.write"}, RedirectURL: redirect}
	prov, err := oauth.NewProvider("cal", params, db.UserStorage())
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{idp: idp, st: db.UserStorage(), prov: prov, params: params, storage: db}
}

// login runs the whole browser dance for h and returns the redirect URL the
// provider sent the user back to.
func (f *fixture) login(t *testing.T, h *oauth.Handler) string {
	t.Helper()
	authURL, err := h.AuthorizationURL(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	back, err := f.idp.Visit(authURL)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

func TestAuthorizationFlow(t *testing.T) {
	ctx := context.Background()
	f := setup(t)
	h := f.prov.Handler("alice")

	tok, err := h.UserToken(ctx)
	if err != nil || tok != nil {
		t.Fatalf("before authorization: %v %v, want nil token", tok, err)
	}
	authURL, err := h.AuthorizationURL(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(authURL)
	q := u.Query()
	if !strings.HasPrefix(authURL, f.idp.AuthURL+"?") || q.Get("client_id") != "client-1" || q.Get("redirect_uri") != redirect ||
		q.Get("scope") != "calendar.read calendar.write" || q.Get("code_challenge_method") != "S256" || q.Get("access_type") != "offline" {
		t.Errorf("authorization URL %s", authURL)
	}
	state := q.Get("state")
	if agentName, rnd, ok := strings.Cut(state, ":"); !ok || agentName != "cal" || len(rnd) < 20 {
		t.Errorf("state %q, want cal:<random>", state)
	}
	if v, err := f.st.Get(ctx, "cal", "alice", oauth.StateKey); err != nil || v.(map[string]any)[state] == nil {
		t.Errorf("state not stored: %v %v", v, err)
	}

	back, err := f.idp.Visit(authURL)
	if err != nil {
		t.Fatal(err)
	}
	reply, err := h.HandleCallback(ctx, kgagent.Message{Text: back})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(reply.Text, "cal") {
		t.Errorf("reply %q", reply.Text)
	}
	tok, err = h.UserToken(ctx)
	if err != nil || tok == nil || !tok.Valid() || !f.idp.Valid(tok.AccessToken) || tok.RefreshToken == "" {
		t.Fatalf("after authorization: %+v %v", tok, err)
	}
	if s, _ := tok.Extra("scope").(string); s != "calendar.read calendar.write" {
		t.Errorf("scope = %q", s)
	}
	// The token is usable at the provider.
	req, _ := http.NewRequest(http.MethodGet, f.idp.URL+"/userinfo", nil)
	tok.SetAuthHeader(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("userinfo: %v %v", resp, err)
	}
	resp.Body.Close()

	// Another handler of the same user (a later request) sees the token;
	// another user and another agent do not.
	if tok2, _ := f.prov.Handler("alice").UserToken(ctx); tok2 == nil || tok2.AccessToken != tok.AccessToken {
		t.Errorf("stored token not found by a new handler: %+v", tok2)
	}
	if tok3, err := f.prov.Handler("bob").UserToken(ctx); tok3 != nil || err != nil {
		t.Errorf("bob got %+v %v", tok3, err)
	}
	other, _ := oauth.NewProvider("mail", f.params, f.st)
	if tok4, _ := other.Handler("alice").UserToken(ctx); tok4 != nil {
		t.Errorf("another agent got alice's token")
	}
	if ex, _ := f.idp.Counts(); ex != 1 {
		t.Errorf("%d exchanges, want 1", ex)
	}

	if err := h.Revoke(ctx); err != nil {
		t.Fatal(err)
	}
	if tok, _ := h.UserToken(ctx); tok != nil {
		t.Errorf("token after revoke: %+v", tok)
	}
}

func TestCallbackRejected(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, f *fixture) error
		code string
	}{
		{"replayed callback", func(t *testing.T, f *fixture) error {
			h := f.prov.Handler("alice")
			back := f.login(t, h)
			if _, err := h.HandleCallback(ctx, kgagent.Message{Text: back}); err != nil {
				t.Fatal(err)
			}
			_, err := h.HandleCallback(ctx, kgagent.Message{Text: back})
			return err
		}, kgagent.EINVALID},
		{"state of another user", func(t *testing.T, f *fixture) error {
			back := f.login(t, f.prov.Handler("alice"))
			_, err := f.prov.Handler("mallory").HandleCallback(ctx, kgagent.Message{Text: back})
			return err
		}, kgagent.EINVALID},
		{"state of another agent", func(t *testing.T, f *fixture) error {
			return f.prov.Handler("alice").Authorize(ctx, "mail:abc", "code")
		}, kgagent.EINVALID},
		{"made-up state", func(t *testing.T, f *fixture) error {
			f.login(t, f.prov.Handler("alice"))
			return f.prov.Handler("alice").Authorize(ctx, "cal:made-up", "code")
		}, kgagent.EINVALID},
		{"expired state", func(t *testing.T, f *fixture) error {
			h := f.prov.Handler("alice")
			back := f.login(t, h)
			f.prov.Now = func() time.Time { return time.Now().Add(oauth.DefaultStateTTL + time.Minute) }
			_, err := h.HandleCallback(ctx, kgagent.Message{Text: back})
			return err
		}, kgagent.EINVALID},
		{"wrong code", func(t *testing.T, f *fixture) error {
			h := f.prov.Handler("alice")
			u, _ := url.Parse(f.login(t, h))
			return h.Authorize(ctx, u.Query().Get("state"), "not-the-code")
		}, kgagent.EUNAUTH},
		{"wrong client secret", func(t *testing.T, f *fixture) error {
			p := f.params
			p.ClientSecret = "wrong"
			prov, _ := oauth.NewProvider("cal", p, f.st)
			h := prov.Handler("alice")
			_, err := h.HandleCallback(ctx, kgagent.Message{Text: f.login(t, h)})
			return err
		}, kgagent.EUNAUTH},
		{"user denied", func(t *testing.T, f *fixture) error {
			f.idp.Deny(true)
			h := f.prov.Handler("alice")
			_, err := h.HandleCallback(ctx, kgagent.Message{Text: f.login(t, h)})
			return err
		}, kgagent.EFORBIDDEN},
		{"anonymous url", func(t *testing.T, f *fixture) error {
			_, err := f.prov.Handler("").AuthorizationURL(ctx)
			return err
		}, kgagent.EUserStorageNeedsUser},
		{"anonymous token", func(t *testing.T, f *fixture) error {
			_, err := f.prov.Handler("").UserToken(ctx)
			return err
		}, kgagent.EUserStorageNeedsUser},
		{"anonymous callback", func(t *testing.T, f *fixture) error {
			return f.prov.Handler("").Authorize(ctx, "cal:x", "y")
		}, kgagent.EUserStorageNeedsUser},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t)
			err := tt.run(t, f)
			if got := kgagent.ErrorCode(err); got != tt.code {
				t.Fatalf("code = %q (%v), want %q", got, err, tt.code)
			}
			if tok, _ := f.prov.Handler("mallory").UserToken(ctx); tok != nil {
				t.Errorf("a token was stored for the attacker")
			}
		})
	}
}

func TestPendingStatesBounded(t *testing.T) {
	ctx := context.Background()
	f := setup(t)
	h := f.prov.Handler("alice")
	var first string
	for i := range oauth.MaxPendingStates + 3 {
		back := f.login(t, h)
		if i == oauth.MaxPendingStates+2 {
			first = back
		}
	}
	v, err := f.st.Get(ctx, "cal", "alice", oauth.StateKey)
	if err != nil || len(v.(map[string]any)) > oauth.MaxPendingStates {
		t.Fatalf("pending states: %v %v", v, err)
	}
	// The newest still works.
	if _, err := h.HandleCallback(ctx, kgagent.Message{Text: first}); err != nil {
		t.Fatal(err)
	}
}

func TestRefresh(t *testing.T) {
	ctx := context.Background()
	f := setup(t)
	h := f.prov.Handler("alice")
	f.idp.SetExpiresIn(1) // stale at once for x/oauth2 (10 s early expiry)
	if _, err := h.HandleCallback(ctx, kgagent.Message{Text: f.login(t, h)}); err != nil {
		t.Fatal(err)
	}
	stale, _ := f.st.Get(ctx, "cal", "alice", oauth.TokenKey)
	staleAccess := stale.(map[string]any)["access_token"]
	f.idp.SetExpiresIn(3600)
	f.idp.RotateRefreshTokens()

	tok, err := h.UserToken(ctx)
	if err != nil || tok == nil || !tok.Valid() || tok.AccessToken == staleAccess {
		t.Fatalf("refreshed token %+v %v", tok, err)
	}
	if _, r := f.idp.Counts(); r != 1 {
		t.Errorf("%d refreshes, want 1", r)
	}
	stored, _ := f.st.Get(ctx, "cal", "alice", oauth.TokenKey)
	m := stored.(map[string]any)
	if m["access_token"] != tok.AccessToken || m["refresh_token"] != tok.RefreshToken {
		t.Errorf("refreshed token not stored: %v", m)
	}
	// A valid stored token is returned without a refresh.
	if tok2, _ := h.UserToken(ctx); tok2.AccessToken != tok.AccessToken {
		t.Errorf("second call changed the token")
	}
	if _, r := f.idp.Counts(); r != 1 {
		t.Errorf("%d refreshes after a valid token, want 1", r)
	}
}

func TestConcurrentRefreshOnce(t *testing.T) {
	ctx := context.Background()
	f := setup(t)
	h := f.prov.Handler("alice")
	f.idp.SetExpiresIn(1)
	if _, err := h.HandleCallback(ctx, kgagent.Message{Text: f.login(t, h)}); err != nil {
		t.Fatal(err)
	}
	f.idp.SetExpiresIn(3600)
	f.idp.RotateRefreshTokens() // a second refresh with the old token would fail
	var wg sync.WaitGroup
	toks := make([]string, 8)
	for i := range toks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, err := f.prov.Handler("alice").UserToken(ctx)
			if err != nil || tok == nil {
				t.Errorf("goroutine %d: %v %v", i, tok, err)
				return
			}
			toks[i] = tok.AccessToken
		}()
	}
	wg.Wait()
	if _, r := f.idp.Counts(); r != 1 {
		t.Errorf("%d refreshes, want 1", r)
	}
	slices.Sort(toks)
	if len(slices.Compact(toks)) != 1 {
		t.Errorf("goroutines got different tokens: %v", toks)
	}
}

func TestRefreshRevokedOrImpossible(t *testing.T) {
	ctx := context.Background()
	t.Run("revoked refresh token drops the token", func(t *testing.T) {
		f := setup(t)
		h := f.prov.Handler("alice")
		f.idp.SetExpiresIn(1)
		if _, err := h.HandleCallback(ctx, kgagent.Message{Text: f.login(t, h)}); err != nil {
			t.Fatal(err)
		}
		f.idp.RevokeAll()
		tok, err := h.UserToken(ctx)
		if err != nil || tok != nil {
			t.Fatalf("got %+v %v, want nil token", tok, err)
		}
		if _, err := f.st.Get(ctx, "cal", "alice", oauth.TokenKey); kgagent.ErrorCode(err) != kgagent.EUserStorageNotFound {
			t.Errorf("revoked token still stored: %v", err)
		}
	})
	t.Run("expired without refresh token", func(t *testing.T) {
		f := setup(t)
		err := f.st.Set(ctx, "cal", "alice", oauth.TokenKey, map[string]any{"access_token": "x", "expiry": time.Now().Add(-time.Hour).UnixNano()})
		if err != nil {
			t.Fatal(err)
		}
		if tok, err := f.prov.Handler("alice").UserToken(ctx); tok != nil || err != nil {
			t.Fatalf("got %+v %v", tok, err)
		}
	})
	t.Run("provider down", func(t *testing.T) {
		f := setup(t)
		p := f.params
		p.TokenURI = "http://127.0.0.1:1/token"
		prov, _ := oauth.NewProvider("cal", p, f.st)
		err := f.st.Set(ctx, "cal", "alice", oauth.TokenKey, map[string]any{"access_token": "x", "refresh_token": "r", "expiry": time.Now().Add(-time.Hour).UnixNano()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := prov.Handler("alice").UserToken(ctx); kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
			t.Fatalf("err = %v, want %s", err, kgagent.EUNAVAILABLE)
		}
		if v, _ := f.st.Get(ctx, "cal", "alice", oauth.TokenKey); v == nil {
			t.Errorf("token dropped on a network failure")
		}
	})
}

func TestNewProviderValidates(t *testing.T) {
	st := func() agent.UserStorage {
		db, err := sqlite.Open(filepath.Join(t.TempDir(), "a.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db.UserStorage()
	}()
	good := oauth.OAuthParams{ClientID: "c", AuthURI: "https://idp/auth", TokenURI: "https://idp/token"}
	tests := []struct {
		name  string
		agent string
		mod   func(p *oauth.OAuthParams)
		ok    bool
	}{
		{"good", "cal", func(*oauth.OAuthParams) {}, true},
		{"no client id", "cal", func(p *oauth.OAuthParams) { p.ClientID = "" }, false},
		{"relative auth uri", "cal", func(p *oauth.OAuthParams) { p.AuthURI = "/auth" }, false},
		{"ftp token uri", "cal", func(p *oauth.OAuthParams) { p.TokenURI = "ftp://idp/token" }, false},
		{"bad redirect", "cal", func(p *oauth.OAuthParams) { p.RedirectURL = "nope" }, false},
		{"empty agent", "", func(*oauth.OAuthParams) {}, false},
		{"agent with colon", "a:b", func(*oauth.OAuthParams) {}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := good
			tt.mod(&p)
			_, err := oauth.NewProvider(tt.agent, p, st)
			if (err == nil) != tt.ok || (err != nil && kgagent.ErrorCode(err) != kgagent.EINVALID) {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
