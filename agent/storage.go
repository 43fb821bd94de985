package agent

import (
	"context"
	"time"

	"github.com/kgagent/kgagent"
	"golang.org/x/oauth2"
)

// UserStorage is a per-agent, per-user key/value store (seed 001). Values are
// bool, int64, float64, string, nil, []byte, and []any / map[string]any of
// those. agent/sqlite implements it persistently.
//
// Errors: EUserStorageNeedsUser when the caller is anonymous,
// EUserStorageNotFound for a missing key, EINVALID for a value of another type.
type UserStorage interface {
	Get(ctx context.Context, agentName, userID, key string) (any, error)
	Set(ctx context.Context, agentName, userID, key string, value any) error
	Delete(ctx context.Context, agentName, userID, key string) error
	Keys(ctx context.Context, agentName, userID string) ([]string, error)
}

// OAuthHandler gives a func the caller's token for the agent's OAuth provider
// (seed 001). agent/oauth implements it over golang.org/x/oauth2.
type OAuthHandler interface {
	// UserToken returns the caller's token, refreshed when expired, or nil
	// when the user has not authorized the agent yet.
	UserToken(ctx context.Context) (*oauth2.Token, error)
	// AuthorizationURL returns the URL the user must visit; its state is
	// "agent:random" and is remembered for the _oauth callback func.
	AuthorizationURL(ctx context.Context) (string, error)
}

// Session is a conversation between a user and one or more agents (seed 002).
type Session struct {
	ID        string    `json:"id"`
	UserID    string    `json:"user_id,omitempty"`
	Agent     string    `json:"agent,omitempty"`
	Title     string    `json:"title,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// SessionMessage is one message of a session: the user's question or an
// agent's answer with the events of its run.
type SessionMessage struct {
	ID        string           `json:"id"`
	SessionID string           `json:"session_id"`
	Role      string           `json:"role"` // "user" or "agent"
	Agent     string           `json:"agent,omitempty"`
	Text      string           `json:"text"`
	Sources   []kgagent.Source `json:"sources,omitempty"`
	Events    []kgagent.Event  `json:"events,omitempty"`
	CreatedAt time.Time        `json:"created_at"`
}

// SessionStore persists sessions and their messages. agent/sqlite implements
// it. Errors: ENOTFOUND for an unknown session.
type SessionStore interface {
	CreateSession(ctx context.Context, s Session) (Session, error)
	GetSession(ctx context.Context, id string) (Session, error)
	ListSessions(ctx context.Context, userID string) ([]Session, error)
	DeleteSession(ctx context.Context, id string) error
	AppendMessage(ctx context.Context, m SessionMessage) (SessionMessage, error)
	Messages(ctx context.Context, sessionID string) ([]SessionMessage, error)
}
