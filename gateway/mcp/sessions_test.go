package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type whoKey struct{}

// asWho sends X-Who on every request (the test's stand-in for a key).
type asWho string

func (w asWho) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Who", string(w))
	return http.DefaultTransport.RoundTrip(r)
}

// Streamable HTTP sessions (protocol revisions before 2026-07-28, which
// keep no sessions) are bounded per caller and in all; ending a session
// frees its place.
func TestSessionLimits(t *testing.T) {
	s := New(newFakeBackend(map[string]int{"a": 1}), Options{
		MaxSessions: 3, MaxSessionsPerCaller: 2,
		Authenticate: func(ctx context.Context, h http.Header) (context.Context, error) {
			return context.WithValue(ctx, whoKey{}, h.Get("X-Who")), nil
		},
		Owner: func(ctx context.Context) string { s, _ := ctx.Value(whoKey{}).(string); return s },
	})
	ts := httptest.NewServer(s.HTTPHandler())
	t.Cleanup(ts.Close) // after the sessions (cleanups run last first)
	open := func(who string) (*sdk.ClientSession, error) {
		tr := &sdk.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: &http.Client{Transport: asWho(who)}}
		return sdk.NewClient(&sdk.Implementation{Name: who, Version: "1"}, nil).Connect(context.Background(), tr, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	}
	mustOpen := func(who string) *sdk.ClientSession {
		t.Helper()
		cs, err := open(who)
		if err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	a1 := mustOpen("alice")
	mustOpen("alice")
	if cs, err := open("alice"); err == nil {
		cs.Close()
		t.Fatal("a third session for alice")
	}
	mustOpen("bob")
	if cs, err := open("carol"); err == nil {
		cs.Close()
		t.Fatal("a fourth session in all")
	}
	if err := a1.Close(); err != nil {
		t.Fatal(err)
	}
	mustOpen("alice") // the closed session's place is free again
}
