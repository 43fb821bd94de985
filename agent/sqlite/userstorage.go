package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"unicode/utf8"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
)

// MaxKeyLen bounds a user-storage key in bytes.
const MaxKeyLen = 512

// UserStorage is agent.UserStorage in the store: one row per (agent, user,
// key), the value in the type-tagged encoding of EncodeValue.
type UserStorage struct{ db *DB }

var _ agent.UserStorage = (*UserStorage)(nil)

// check validates the scope and key shared by every method.
func check(agentName, userID, key string, needKey bool) error {
	if userID == "" {
		return kgagent.Errorf(kgagent.EUserStorageNeedsUser, "user storage requires an authenticated user")
	}
	if agentName == "" {
		return kgagent.Errorf(kgagent.EINVALID, "user storage needs an agent name")
	}
	if !needKey {
		return nil
	}
	switch {
	case key == "":
		return kgagent.Errorf(kgagent.EINVALID, "user storage key is empty")
	case len(key) > MaxKeyLen:
		return kgagent.Errorf(kgagent.EINVALID, "user storage key over %d bytes", MaxKeyLen)
	case !utf8.ValidString(key):
		return kgagent.Errorf(kgagent.EINVALID, "user storage key is not valid UTF-8")
	}
	return nil
}

func notFound(key string) error {
	return &kgagent.Error{Code: kgagent.EUserStorageNotFound, Message: "user storage key not found", Details: map[string]any{"key": key}}
}

// Get returns the value under key in canonical form (see NormalizeValue).
// Errors: ERR_USERSTORAGE_REQUIRES_USER for an empty userID,
// ERR_USERSTORAGE_KEY_NOT_FOUND for a missing key, EINVALID for a bad key.
func (s *UserStorage) Get(ctx context.Context, agentName, userID, key string) (any, error) {
	if err := check(agentName, userID, key, true); err != nil {
		return nil, err
	}
	var raw []byte
	err := s.db.getValue.QueryRowContext(ctx, agentName, userID, key).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(key)
	}
	if err != nil {
		return nil, dbError(ctx, err, "user storage get")
	}
	v, err := DecodeValue(raw)
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EINTERNAL, err, "stored value of %q is corrupt", key)
	}
	return v, nil
}

// Set stores value under key, replacing any earlier value, in one
// transaction. Errors as for Get, plus EINVALID for a value of another type
// and ETOOLARGE for one over MaxValueSize; the earlier value then stays.
func (s *UserStorage) Set(ctx context.Context, agentName, userID, key string, value any) error {
	if err := check(agentName, userID, key, true); err != nil {
		return err
	}
	raw, err := EncodeValue(value)
	if err != nil {
		return err
	}
	return s.db.write(ctx, "user storage set", func(tx *sql.Tx) error {
		_, err := tx.StmtContext(ctx, s.db.putValue).ExecContext(ctx, agentName, userID, key, raw, s.db.now().UnixNano())
		return err
	})
}

// Delete removes key. Errors as for Get; a missing key is
// ERR_USERSTORAGE_KEY_NOT_FOUND.
func (s *UserStorage) Delete(ctx context.Context, agentName, userID, key string) error {
	if err := check(agentName, userID, key, true); err != nil {
		return err
	}
	return s.db.write(ctx, "user storage delete", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM user_storage WHERE agent = ? AND user_id = ? AND key = ?`, agentName, userID, key)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return notFound(key)
		}
		return err
	})
}

// Keys returns the user's keys for the agent, sorted. Errors:
// ERR_USERSTORAGE_REQUIRES_USER for an empty userID.
func (s *UserStorage) Keys(ctx context.Context, agentName, userID string) ([]string, error) {
	if err := check(agentName, userID, "", false); err != nil {
		return nil, err
	}
	rows, err := s.db.db.QueryContext(ctx, `SELECT key FROM user_storage WHERE agent = ? AND user_id = ? ORDER BY key`, agentName, userID)
	if err != nil {
		return nil, dbError(ctx, err, "user storage keys")
	}
	defer rows.Close()
	keys := []string{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, dbError(ctx, err, "user storage keys")
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError(ctx, err, "user storage keys")
	}
	return keys, nil
}
