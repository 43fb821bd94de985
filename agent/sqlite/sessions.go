package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
)

// Limits on session fields.
const (
	MaxIDLen    = 128
	MaxTitleLen = 1024
)

// SessionStore is agent.SessionStore in the store. Deleting a session
// deletes its messages in the same transaction.
type SessionStore struct{ db *DB }

var _ agent.SessionStore = (*SessionStore)(nil)

func sessionNotFound(id string) error {
	return &kgagent.Error{Code: kgagent.ENOTFOUND, Message: "session not found", Details: map[string]any{"session_id": id}}
}

func checkID(what, id string) error {
	if len(id) > MaxIDLen || strings.ContainsAny(id, "\x00/") {
		return kgagent.Errorf(kgagent.EINVALID, "%s id is over %d bytes or holds '/' or NUL", what, MaxIDLen)
	}
	return nil
}

// CreateSession stores s, giving it a random id when it has none and the
// current time when CreatedAt is zero, and returns it as stored. Errors:
// ECONFLICT when the id is taken, EINVALID for an over-long id or title.
func (st *SessionStore) CreateSession(ctx context.Context, s agent.Session) (agent.Session, error) {
	if s.ID == "" {
		s.ID = uuid.NewString()
	}
	if err := checkID("session", s.ID); err != nil {
		return agent.Session{}, err
	}
	if len(s.Title) > MaxTitleLen {
		return agent.Session{}, kgagent.Errorf(kgagent.EINVALID, "session title over %d bytes", MaxTitleLen)
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = st.db.now()
	}
	s.CreatedAt = s.CreatedAt.UTC().Round(0)
	err := st.db.write(ctx, "create session", func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, s.ID).Scan(&one)
		if err == nil {
			return kgagent.Errorf(kgagent.ECONFLICT, "session %q exists", s.ID)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO sessions (id, user_id, agent, title, created_at) VALUES (?, ?, ?, ?, ?)`,
			s.ID, s.UserID, s.Agent, s.Title, s.CreatedAt.UnixNano())
		return err
	})
	if err != nil {
		return agent.Session{}, err
	}
	return s, nil
}

// GetSession returns the session. Errors: ENOTFOUND.
func (st *SessionStore) GetSession(ctx context.Context, id string) (agent.Session, error) {
	var s agent.Session
	var ns int64
	err := st.db.db.QueryRowContext(ctx, `SELECT id, user_id, agent, title, created_at FROM sessions WHERE id = ?`, id).
		Scan(&s.ID, &s.UserID, &s.Agent, &s.Title, &ns)
	if errors.Is(err, sql.ErrNoRows) {
		return agent.Session{}, sessionNotFound(id)
	}
	if err != nil {
		return agent.Session{}, dbError(ctx, err, "get session")
	}
	s.CreatedAt = time.Unix(0, ns).UTC()
	return s, nil
}

// ListSessions returns the user's sessions, newest first; userID "" lists
// the sessions created without a user.
func (st *SessionStore) ListSessions(ctx context.Context, userID string) ([]agent.Session, error) {
	rows, err := st.db.db.QueryContext(ctx, `SELECT id, user_id, agent, title, created_at FROM sessions
		WHERE user_id = ? ORDER BY created_at DESC, seq DESC`, userID)
	if err != nil {
		return nil, dbError(ctx, err, "list sessions")
	}
	defer rows.Close()
	out := []agent.Session{}
	for rows.Next() {
		var s agent.Session
		var ns int64
		if err := rows.Scan(&s.ID, &s.UserID, &s.Agent, &s.Title, &ns); err != nil {
			return nil, dbError(ctx, err, "list sessions")
		}
		s.CreatedAt = time.Unix(0, ns).UTC()
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError(ctx, err, "list sessions")
	}
	return out, nil
}

// DeleteSession deletes the session and its messages. Errors: ENOTFOUND.
func (st *SessionStore) DeleteSession(ctx context.Context, id string) error {
	return st.db.write(ctx, "delete session", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM session_messages WHERE session_id = ?`, id); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return sessionNotFound(id)
		}
		return err
	})
}

// AppendMessage adds m to its session, giving it a random id and the current
// time when unset, and returns it as stored. Errors: ENOTFOUND for an unknown
// session, EINVALID for a role other than "user" or "agent", ECONFLICT for a
// taken id.
func (st *SessionStore) AppendMessage(ctx context.Context, m agent.SessionMessage) (agent.SessionMessage, error) {
	if m.Role != "user" && m.Role != "agent" {
		return agent.SessionMessage{}, kgagent.Errorf(kgagent.EINVALID, "message role must be \"user\" or \"agent\", not %q", m.Role)
	}
	if m.ID == "" {
		m.ID = uuid.NewString()
	}
	if err := checkID("message", m.ID); err != nil {
		return agent.SessionMessage{}, err
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = st.db.now()
	}
	m.CreatedAt = m.CreatedAt.UTC().Round(0)
	sources, err := json.Marshal(nonNil(m.Sources))
	if err != nil {
		return agent.SessionMessage{}, kgagent.WrapError(kgagent.EINVALID, err, "message sources cannot be encoded")
	}
	events, err := json.Marshal(nonNil(m.Events))
	if err != nil {
		return agent.SessionMessage{}, kgagent.WrapError(kgagent.EINVALID, err, "message events cannot be encoded")
	}
	err = st.db.write(ctx, "append message", func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, m.SessionID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return sessionNotFound(m.SessionID)
		}
		if err != nil {
			return err
		}
		err = tx.QueryRowContext(ctx, `SELECT 1 FROM session_messages WHERE id = ?`, m.ID).Scan(&one)
		if err == nil {
			return kgagent.Errorf(kgagent.ECONFLICT, "message %q exists", m.ID)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO session_messages (id, session_id, role, agent, text, sources, events, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, m.ID, m.SessionID, m.Role, m.Agent, m.Text, sources, events, m.CreatedAt.UnixNano())
		return err
	})
	if err != nil {
		return agent.SessionMessage{}, err
	}
	return m, nil
}

// Messages returns the session's messages in the order they were appended.
// Errors: ENOTFOUND for an unknown session.
func (st *SessionStore) Messages(ctx context.Context, sessionID string) ([]agent.SessionMessage, error) {
	if _, err := st.GetSession(ctx, sessionID); err != nil {
		return nil, err
	}
	rows, err := st.db.db.QueryContext(ctx, `SELECT id, session_id, role, agent, text, sources, events, created_at
		FROM session_messages WHERE session_id = ? ORDER BY seq`, sessionID)
	if err != nil {
		return nil, dbError(ctx, err, "list messages")
	}
	defer rows.Close()
	out := []agent.SessionMessage{}
	for rows.Next() {
		var m agent.SessionMessage
		var sources, events []byte
		var ns int64
		if err := rows.Scan(&m.ID, &m.SessionID, &m.Role, &m.Agent, &m.Text, &sources, &events, &ns); err != nil {
			return nil, dbError(ctx, err, "list messages")
		}
		if err := json.Unmarshal(sources, &m.Sources); err != nil {
			return nil, kgagent.WrapError(kgagent.EINTERNAL, err, "stored sources of message %q are corrupt", m.ID)
		}
		if err := json.Unmarshal(events, &m.Events); err != nil {
			return nil, kgagent.WrapError(kgagent.EINTERNAL, err, "stored events of message %q are corrupt", m.ID)
		}
		if len(m.Sources) == 0 {
			m.Sources = nil
		}
		if len(m.Events) == 0 {
			m.Events = nil
		}
		m.CreatedAt = time.Unix(0, ns).UTC()
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError(ctx, err, "list messages")
	}
	return out, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
