// Package sqlite keeps the agent service's own state in one SQLite file in
// the data dir: user storage (agent.UserStorage, seed 001) and sessions with
// their messages and events (agent.SessionStore, seed 002).
//
// It uses modernc.org/sqlite, a pure-Go SQLite already in go.mod: no cgo, one
// file, crash-safe transactions. The file runs in WAL mode (readers do not
// block the writer), every write is one IMMEDIATE transaction, and
// busy_timeout lets concurrent writers queue instead of failing.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/sqlitefile"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// schemaVersion is stored in PRAGMA user_version.
const schemaVersion = 1

var schema = []string{
	`CREATE TABLE IF NOT EXISTS user_storage (
		agent      TEXT NOT NULL,
		user_id    TEXT NOT NULL,
		key        TEXT NOT NULL,
		value      BLOB NOT NULL,
		updated_at INTEGER NOT NULL,
		PRIMARY KEY (agent, user_id, key)
	) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS sessions (
		seq        INTEGER PRIMARY KEY AUTOINCREMENT,
		id         TEXT NOT NULL UNIQUE,
		user_id    TEXT NOT NULL,
		agent      TEXT NOT NULL,
		title      TEXT NOT NULL,
		created_at INTEGER NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS sessions_by_user ON sessions (user_id, created_at)`,
	`CREATE TABLE IF NOT EXISTS session_messages (
		seq        INTEGER PRIMARY KEY AUTOINCREMENT,
		id         TEXT NOT NULL UNIQUE,
		session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
		role       TEXT NOT NULL,
		agent      TEXT NOT NULL,
		text       TEXT NOT NULL,
		sources    TEXT NOT NULL,
		events     TEXT NOT NULL,
		created_at INTEGER NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS session_messages_by_session ON session_messages (session_id, seq)`,
}

// DB is an open store file. Its methods are safe for concurrent use.
type DB struct {
	db   *sql.DB
	path string
	// Prepared statements of the hot paths.
	getValue, putValue *sql.Stmt
	// Now returns the current time; tests may replace it before use.
	Now func() time.Time
}

// Open opens (creating when needed, with its parent directory) the store
// file at path and brings its schema up to date. It fails with EINVALID for
// an empty path and UNAVAILABLE when the file cannot be opened or is not a
// store of this version or older.
func Open(path string) (*DB, error) {
	if path == "" || path == ":memory:" {
		return nil, kgagent.Errorf(kgagent.EINVALID, "sqlite store needs a file path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "cannot create the store's directory")
	}
	dsn := sqlitefile.URI(filepath.ToSlash(path)) +
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)" +
		"&_pragma=foreign_keys(1)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "cannot open the store")
	}
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	d := &DB{db: db, path: path, Now: time.Now}
	if err := d.migrate(); err != nil {
		db.Close()
		return nil, err
	}
	if d.getValue, err = db.Prepare(`SELECT value FROM user_storage WHERE agent = ? AND user_id = ? AND key = ?`); err == nil {
		d.putValue, err = db.Prepare(`INSERT INTO user_storage (agent, user_id, key, value, updated_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (agent, user_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`)
	}
	if err != nil {
		db.Close()
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "cannot prepare the store's statements")
	}
	return d, nil
}

func (d *DB) migrate() error {
	ctx := context.Background()
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "cannot open the store %s", filepath.Base(d.path))
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "%s is not a SQLite store", filepath.Base(d.path))
	}
	if v > schemaVersion {
		return kgagent.Errorf(kgagent.EUNAVAILABLE, "store %s has schema version %d, newer than this program's %d", filepath.Base(d.path), v, schemaVersion)
	}
	for _, stmt := range schema {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "cannot create the store's tables")
		}
	}
	if _, err := tx.ExecContext(ctx, `PRAGMA user_version = 1`); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "cannot set the store's version")
	}
	if err := tx.Commit(); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "cannot create the store's tables")
	}
	return nil
}

// Close closes the file. Calls after Close fail with UNAVAILABLE.
func (d *DB) Close() error {
	d.getValue.Close()
	d.putValue.Close()
	return d.db.Close()
}

// Path returns the file the store lives in.
func (d *DB) Path() string { return d.path }

// UserStorage returns the store's agent.UserStorage.
func (d *DB) UserStorage() *UserStorage { return &UserStorage{db: d} }

// Sessions returns the store's agent.SessionStore.
func (d *DB) Sessions() *SessionStore { return &SessionStore{db: d} }

// now returns the current time at the precision stored (nanoseconds, UTC).
func (d *DB) now() time.Time { return d.Now().UTC().Round(0) }

// write runs fn in one IMMEDIATE transaction and commits it.
func (d *DB) write(ctx context.Context, what string, fn func(tx *sql.Tx) error) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return dbError(ctx, err, what)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		var ke *kgagent.Error
		if errors.As(err, &ke) {
			return err
		}
		return dbError(ctx, err, what)
	}
	if err := tx.Commit(); err != nil {
		return dbError(ctx, err, what)
	}
	return nil
}

// dbError maps a database failure: the context's end, a closed or busy
// store, or an internal error.
func dbError(ctx context.Context, err error, what string) error {
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(cerr, context.DeadlineExceeded) {
			return kgagent.WrapError(kgagent.ETIMEOUT, err, "%s: deadline exceeded", what)
		}
		return kgagent.WrapError(kgagent.ECANCELED, err, "%s: canceled", what)
	}
	msg := err.Error()
	if strings.Contains(msg, "database is closed") || strings.Contains(msg, "statement is closed") || strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked") {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "%s: store unavailable", what)
	}
	return kgagent.WrapError(kgagent.EINTERNAL, err, "%s failed", what)
}
