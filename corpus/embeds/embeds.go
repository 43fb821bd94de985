// Package embeds stores the embeds of Fixie messages (seed 002: "immutable
// once created, stored in a managed bucket, passed by reference using a
// signed URL") and reads an embed's content back, whether its URI is a data
// URI, one of our signed URLs or any other http(s) URL.
//
// Blobs are content-addressed files in a directory (ID = SHA-256 of
// collection, content type and bytes), written to a temporary file and
// renamed into place, so a blob is either complete or absent. Signed URLs
// carry an expiry and an HMAC-SHA256 over ID and expiry; Handler serves them
// and is what the gateway mounts.
//
// A blob uploaded into a collection belongs to it alone (the collection is
// part of its address, so the same bytes in two collections are two blobs)
// and is listed in a per-collection index of marker files,
// collections/<sha256 of name>/<id>. The index row is written before the
// blob is published and removed after the blob is deleted: the index is
// always a superset of the collection's blobs, so a delete that fails
// halfway leaves rows that a retry of DeleteCollection finishes, and never
// a blob that no index row can find.
package embeds

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kgagent/kgagent"
)

// Defaults.
const (
	DefaultMaxBytes = 16 << 20 // largest embed stored or read
	DefaultTTL      = time.Hour
)

// Config configures a Store. Dir is required.
type Config struct {
	Dir      string        // where blobs live (created if missing), e.g. <data dir>/embeds
	MaxBytes int64         // largest blob (default 16 MiB)
	Secret   []byte        // HMAC key of signed URLs; empty: a random key (URLs die with the process); see LoadOrCreateSecret
	BaseURL  string        // public URL the Handler is mounted at, e.g. https://host/api/v1/embeds; may be set later with SetBaseURL
	TTL      time.Duration // lifetime of a signed URL (default 1h)
	Now      func() time.Time
}

// Blob describes a stored embed.
type Blob struct {
	ID          string    `json:"id"`
	Collection  string    `json:"collection,omitempty"` // empty: not tied to a collection
	ContentType string    `json:"content_type"`
	Size        int64     `json:"size"`
	CreatedAt   time.Time `json:"created_at"`
}

// Store is the embed store. It is safe for concurrent use within one
// process; one process owns a store directory (kgagent's data-dir lock).
type Store struct {
	cfg Config
	// mu orders publishing (index row, metadata, blob) against deletes, so
	// a delete never runs between an upload's index row and its blob.
	mu   sync.Mutex
	rm   func(path string) error // os.Remove; tests make it fail
	base struct {
		sync.RWMutex
		url string
	}
}

// Open opens (creating) the store directory.
func Open(cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		return nil, kgagent.Errorf(kgagent.EINVALID, "embed store needs a directory")
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if len(cfg.Secret) == 0 {
		cfg.Secret = make([]byte, 32)
		if _, err := rand.Read(cfg.Secret); err != nil {
			return nil, kgagent.WrapError(kgagent.EINTERNAL, err, "embed store secret")
		}
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	for _, d := range []string{"tmp", "collections"} {
		if err := os.MkdirAll(filepath.Join(cfg.Dir, d), 0o755); err != nil {
			return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "create embed store")
		}
	}
	s := &Store{cfg: cfg, rm: os.Remove}
	s.base.url = cfg.BaseURL
	return s, nil
}

// SetBaseURL sets the public URL the Handler is mounted at, for a server
// that learns its address only once it listens. URLs signed before keep
// their old base.
func (s *Store) SetBaseURL(u string) {
	s.base.Lock()
	s.base.url = strings.TrimRight(u, "/")
	s.base.Unlock()
}

// BaseURL returns the public URL the Handler is mounted at ("" when unset).
func (s *Store) BaseURL() string {
	s.base.RLock()
	defer s.base.RUnlock()
	return s.base.url
}

// TTL is the lifetime of the signed URLs the store hands out.
func (s *Store) TTL() time.Duration { return s.cfg.TTL }

// MaxBytes is the size limit of one embed.
func (s *Store) MaxBytes() int64 { return s.cfg.MaxBytes }
