// Package sqlite is the embedded page state (knowledge.PageStates) and the
// crawler's log of complete specs (crawler.SpecLog): the ETag,
// Last-Modified, content hash and last-seen time of every crawled page, per
// collection, in one SQLite file in the data dir (modernc.org/sqlite, pure
// Go, WAL journal), so that re-crawls send conditional requests and skip
// unchanged pages across restarts.
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
	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/knowledge"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// FileName is the database file Open creates in a data dir.
const FileName = "crawler.db"

// Store is knowledge.PageStates and a crawler.SpecLog in SQLite.
type Store struct {
	db *sql.DB
}

var (
	_ knowledge.PageStates = (*Store)(nil)
	_ crawler.SpecLog      = (*Store)(nil)
)

// Open opens (creating when needed) the store at path: a file, or a
// directory that gets FileName in it. ":memory:" gives a private in-memory
// database.
func Open(path string) (*Store, error) {
	if path == "" {
		return nil, kgagent.Errorf(kgagent.EINVALID, "page state store needs a path")
	}
	dsn := path
	if path != ":memory:" {
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			path = filepath.Join(path, FileName)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "creating the data dir")
		}
		dsn = "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "opening the page state store")
	}
	if path == ":memory:" {
		db.SetMaxOpenConns(1)
	}
	_, err = db.Exec(`CREATE TABLE IF NOT EXISTS pages (
		collection    TEXT NOT NULL,
		url           TEXT NOT NULL,
		etag          TEXT NOT NULL DEFAULT '',
		last_modified TEXT NOT NULL DEFAULT '',
		content_hash  TEXT NOT NULL DEFAULT '',
		last_seen     INTEGER NOT NULL DEFAULT 0,
		links         TEXT NOT NULL DEFAULT '',
		PRIMARY KEY (collection, url)
	) WITHOUT ROWID;
	CREATE TABLE IF NOT EXISTS complete_specs (
		collection TEXT NOT NULL,
		spec       TEXT NOT NULL,
		PRIMARY KEY (collection, spec)
	) WITHOUT ROWID`)
	if err != nil {
		db.Close()
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "creating the page state schema")
	}
	return &Store{db: db}, nil
}

// Close releases the database.
func (s *Store) Close() error { return s.db.Close() }

// ListPages implements knowledge.PageStates.
func (s *Store) ListPages(ctx context.Context, collection string) ([]knowledge.PageState, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT url, etag, last_modified, content_hash, last_seen, links FROM pages WHERE collection = ? ORDER BY url`, collection)
	if err != nil {
		return nil, dbError(err, "listing page states")
	}
	defer rows.Close()
	var out []knowledge.PageState
	for rows.Next() {
		st := knowledge.PageState{Collection: collection}
		var seen int64
		var links string
		if err := rows.Scan(&st.URL, &st.ETag, &st.LastModified, &st.ContentHash, &seen, &links); err != nil {
			return nil, dbError(err, "reading page states")
		}
		st.LastSeen = time.UnixMilli(seen).UTC()
		if links != "" {
			st.Links = strings.Split(links, "\n")
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError(err, "reading page states")
	}
	return out, nil
}

// PutPage implements knowledge.PageStates.
func (s *Store) PutPage(ctx context.Context, st knowledge.PageState) error {
	if st.Collection == "" || st.URL == "" {
		return kgagent.Errorf(kgagent.EINVALID, "page state needs a collection and a URL")
	}
	for _, l := range st.Links {
		if strings.ContainsAny(l, "\n") {
			return kgagent.Errorf(kgagent.EINVALID, "page state link holds a newline")
		}
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO pages (collection, url, etag, last_modified, content_hash, last_seen, links)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (collection, url) DO UPDATE SET etag = excluded.etag, last_modified = excluded.last_modified,
			content_hash = excluded.content_hash, last_seen = excluded.last_seen, links = excluded.links`,
		st.Collection, st.URL, st.ETag, st.LastModified, st.ContentHash, st.LastSeen.UnixMilli(), strings.Join(st.Links, "\n"))
	return dbError(err, "saving page state")
}

// DeletePage implements knowledge.PageStates.
func (s *Store) DeletePage(ctx context.Context, collection, url string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM pages WHERE collection = ? AND url = ?`, collection, url)
	return dbError(err, "deleting page state")
}

// DeleteCollection implements knowledge.PageStates; it forgets the
// collection's complete specs too.
func (s *Store) DeleteCollection(ctx context.Context, collection string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return dbError(err, "deleting page states")
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM pages WHERE collection = ?`, collection); err != nil {
		return dbError(err, "deleting page states")
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM complete_specs WHERE collection = ?`, collection); err != nil {
		return dbError(err, "deleting complete specs")
	}
	return dbError(tx.Commit(), "deleting page states")
}

// CompleteSpecs implements crawler.SpecLog.
func (s *Store) CompleteSpecs(ctx context.Context, collection string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT spec FROM complete_specs WHERE collection = ? ORDER BY spec`, collection)
	if err != nil {
		return nil, dbError(err, "listing complete specs")
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, dbError(err, "reading complete specs")
		}
		out = append(out, k)
	}
	return out, dbError(rows.Err(), "reading complete specs")
}

// AddCompleteSpec implements crawler.SpecLog.
func (s *Store) AddCompleteSpec(ctx context.Context, collection, key string) error {
	if collection == "" || key == "" {
		return kgagent.Errorf(kgagent.EINVALID, "a complete spec needs a collection and a key")
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO complete_specs (collection, spec) VALUES (?, ?) ON CONFLICT DO NOTHING`, collection, key)
	return dbError(err, "saving a complete spec")
}

// dbError maps a database failure to a stable code.
func dbError(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled):
		return kgagent.WrapError(kgagent.ECANCELED, err, "%s: canceled", what)
	case errors.Is(err, context.DeadlineExceeded):
		return kgagent.WrapError(kgagent.ETIMEOUT, err, "%s: deadline exceeded", what)
	case strings.Contains(err.Error(), "database is closed"):
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "%s: store closed", what)
	}
	return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "%s", what)
}
