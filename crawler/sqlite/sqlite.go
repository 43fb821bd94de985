// Package sqlite is the embedded page state (knowledge.PageStates) and the
// crawler's log of complete specs (crawler.SpecLog): the ETag,
// Last-Modified, content hash and last-seen time of every crawled page, per
// collection, in one SQLite file in the data dir (modernc.org/sqlite, pure
// Go, WAL journal), so that re-crawls send conditional requests and skip
// unchanged pages across restarts. A page's links are stored
// zstd-compressed (format 1, see crawler/DECISIONS.md).
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/internal/sqlitefile"
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
		dsn = sqlitefile.URI(path) + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "opening the page state store")
	}
	if path == ":memory:" {
		db.SetMaxOpenConns(1)
	}
	// A file written by a newer kgagent, in a format this one does not
	// know, is refused rather than read wrong (format 1's links read as
	// text by a format 0 build were garbage).
	var ver int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&ver); err != nil {
		db.Close()
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "opening the page state store")
	}
	if ver > formatVersion {
		db.Close()
		return nil, kgagent.Errorf(kgagent.EUNAVAILABLE, "%s is format %d, this kgagent reads up to %d: use a newer kgagent", filepath.Base(path), ver, formatVersion)
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
	if err := migrateLinks(db); err != nil {
		db.Close()
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "compressing the stored page links")
	}
	return &Store{db: db}, nil
}

// formatVersion is the layout Open leaves the file in (PRAGMA
// user_version): 1 since links are stored compressed (packLinks). Files of
// format 0 hold them as text; rows of either kind read back the same.
const formatVersion = 1

// migrateLinks compresses the links of every page a format 0 file stores
// as text, in one transaction (rows read and rewritten 1,024 at a time),
// stamps format 1 and VACUUMs so the space is given back.
func migrateLinks(db *sql.DB) error {
	var v int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil || v >= formatVersion {
		return err
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	type row struct{ collection, url, links string }
	var last row
	for {
		rows, err := tx.Query(`SELECT collection, url, links FROM pages
			WHERE (collection, url) > (?, ?) AND typeof(links) = 'text' AND links != '' ORDER BY collection, url LIMIT 1024`, last.collection, last.url)
		if err != nil {
			return err
		}
		var batch []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.collection, &r.url, &r.links); err != nil {
				rows.Close()
				return err
			}
			batch = append(batch, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, r := range batch {
			packed, err := packLinks(strings.Split(r.links, "\n"))
			if err != nil {
				return err
			}
			if _, err := tx.Exec(`UPDATE pages SET links = ? WHERE collection = ? AND url = ?`, packed, r.collection, r.url); err != nil {
				return err
			}
		}
		if len(batch) < 1024 {
			break
		}
		last = batch[len(batch)-1]
	}
	if _, err := tx.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, formatVersion)); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	// The links are migrated and stamped: a failed compaction (disk full, a
	// reader holding the file) only leaves the file at its old size, so it
	// is logged, not a failed Open.
	if _, err := db.Exec(vacuumSQL); err != nil {
		slog.Warn("page state store: links compressed, but compacting the file failed; it keeps its old size (run VACUUM on it to reclaim the space)", "err", err)
	}
	return nil
}

// vacuumSQL is the compaction migrateLinks runs after its commit (a
// variable so a test can make it fail).
var vacuumSQL = `VACUUM`

// The links codec: one encoder and decoder for the process (both are safe
// for concurrent use), built when first needed.
var (
	linksEncoder = sync.OnceValues(newLinksEncoder)
	linksDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
		return zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxMemory(maxLinksLen))
	})
)

// newLinksEncoder is the links' encoder, with a 256 KiB window instead of
// the level's 8 MiB: the encoder keeps a history buffer of the window's
// size for as long as the process lives (a heap profile at the end of an
// OpenJDK docs ingest, its peak, held 8.1 MB of it, beside ~190 MB live),
// while a page's links are a few kilobytes (a link list of 300 KB
// compresses to the same size either way).
func newLinksEncoder() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true),
		zstd.WithWindowSize(linksWindow))
}

// linksWindow is the links encoder's window (newLinksEncoder).
const linksWindow = 256 << 10

// maxLinksLen bounds the decoded length of a page's stored links (a page
// of 10,000 links of 100 bytes is 1 MB): a corrupt frame header must not
// make a read allocate gigabytes.
const maxLinksLen = 64 << 20

// packLinks is the stored form of a page's links: empty text for none, else
// the zstd frame of the links joined by newlines (a blob). Link lists are
// mostly URLs of one site, so they compress several times over; as text
// they made rows of kilobytes that spilled into overflow pages.
func packLinks(links []string) (any, error) {
	if len(links) == 0 {
		return "", nil
	}
	e, err := linksEncoder()
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EINTERNAL, err, "page state links: no zstd encoder")
	}
	return e.EncodeAll([]byte(strings.Join(links, "\n")), nil), nil
}

// unpackLinks reads what packLinks stored, or the text of a format 0 row.
func unpackLinks(v any) ([]string, error) {
	var text string
	switch v := v.(type) {
	case nil:
	case string:
		text = v
	case []byte:
		d, err := linksDecoder()
		if err != nil {
			return nil, kgagent.WrapError(kgagent.EINTERNAL, err, "page state links: no zstd decoder")
		}
		b, err := d.DecodeAll(v, nil)
		if err != nil {
			return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "page state links are corrupt")
		}
		text = string(b)
	default:
		return nil, kgagent.Errorf(kgagent.EUNAVAILABLE, "page state links stored as %T", v)
	}
	if text == "" {
		return nil, nil
	}
	return strings.Split(text, "\n"), nil
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
		var links any
		if err := rows.Scan(&st.URL, &st.ETag, &st.LastModified, &st.ContentHash, &seen, &links); err != nil {
			return nil, dbError(err, "reading page states")
		}
		st.LastSeen = time.UnixMilli(seen).UTC()
		if st.Links, err = unpackLinks(links); err != nil {
			return nil, err
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
	packed, err := packLinks(st.Links)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO pages (collection, url, etag, last_modified, content_hash, last_seen, links)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (collection, url) DO UPDATE SET etag = excluded.etag, last_modified = excluded.last_modified,
			content_hash = excluded.content_hash, last_seen = excluded.last_seen, links = excluded.links`,
		st.Collection, st.URL, st.ETag, st.LastModified, st.ContentHash, st.LastSeen.UnixMilli(), packed)
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
