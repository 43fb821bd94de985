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
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/netguard"
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

func validID(id string) bool {
	if len(id) != 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (s *Store) paths(id string) (blob, meta string) {
	d := filepath.Join(s.cfg.Dir, id[:2])
	return filepath.Join(d, id), filepath.Join(d, id+".json")
}

func checkCollection(c string) error {
	if len(c) > kgagent.MaxCollectionLen || !utf8.ValidString(c) || strings.ContainsRune(c, 0) {
		return kgagent.Errorf(kgagent.EINVALID, "bad collection name for an embed")
	}
	return nil
}

// indexDir is the directory of a collection's index rows.
func (s *Store) indexDir(collection string) string {
	sum := sha256.Sum256([]byte(collection))
	return filepath.Join(s.cfg.Dir, "collections", hex.EncodeToString(sum[:]))
}

// addIndexRow records that blob id belongs to collection (durably: the
// file and its directory entry are synced before the blob is published).
func (s *Store) addIndexRow(collection, id string) error {
	dir := s.indexDir(collection)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "index embed")
	}
	row := filepath.Join(dir, id)
	if _, err := os.Stat(row); err == nil {
		return nil
	}
	if err := writeFileAtomic(row, []byte(collection)); err != nil {
		return err
	}
	syncDir(dir)
	return nil
}

// syncDir makes renames and removals in dir durable where the platform
// allows it; failures are ignored (the operation itself succeeded).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// normType cleans a content type; empty means application/octet-stream.
func normType(ct string) (string, error) {
	if strings.TrimSpace(ct) == "" {
		return "application/octet-stream", nil
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return "", kgagent.Errorf(kgagent.EINVALID, "bad content type %q", ct)
	}
	return mime.FormatMediaType(mt, params), nil
}

// Put stores content read from r (at most MaxBytes) under its content
// address, tied to no collection. Storing the same bytes with the same type
// again returns the existing blob. Errors: ETOOLARGE over the limit,
// EINVALID for a bad content type; nothing is stored then.
func (s *Store) Put(ctx context.Context, contentType string, r io.Reader) (Blob, error) {
	return s.PutIn(ctx, "", contentType, r)
}

// PutIn is Put for a blob that belongs to collection ("" for none): the
// collection is part of its address and DeleteCollection removes it.
// Errors: those of Put, and EINVALID for a collection name over
// kgagent.MaxCollectionLen bytes or not UTF-8.
func (s *Store) PutIn(ctx context.Context, collection, contentType string, r io.Reader) (Blob, error) {
	ct, err := normType(contentType)
	if err != nil {
		return Blob{}, err
	}
	if err := checkCollection(collection); err != nil {
		return Blob{}, err
	}
	tmp, err := os.CreateTemp(filepath.Join(s.cfg.Dir, "tmp"), "put-*")
	if err != nil {
		return Blob{}, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "store embed")
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	h := sha256.New()
	if collection != "" {
		// a content type always holds a '/', so this prefix never
		// collides with the address of a blob without a collection.
		h.Write([]byte("collection\x00" + collection + "\x00"))
	}
	h.Write([]byte(ct))
	h.Write([]byte{0})
	n, err := io.Copy(io.MultiWriter(tmp, h), &ctxReader{ctx, io.LimitReader(r, s.cfg.MaxBytes+1)})
	if err != nil {
		return Blob{}, readErr(err, "read embed")
	}
	if n > s.cfg.MaxBytes {
		return Blob{}, tooLarge(s.cfg.MaxBytes)
	}
	id := hex.EncodeToString(h.Sum(nil))
	blobPath, metaPath := s.paths(id)
	if err := tmp.Sync(); err != nil {
		return Blob{}, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "store embed")
	}
	if err := tmp.Close(); err != nil {
		return Blob{}, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "store embed")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if collection != "" {
		// the index row goes in first (see the package doc); it is also
		// restored here for a blob that exists, in case it was lost.
		if err := s.addIndexRow(collection, id); err != nil {
			return Blob{}, err
		}
	}
	if b, err := s.Stat(id); err == nil {
		return b, nil
	}
	if err := os.MkdirAll(filepath.Dir(blobPath), 0o755); err != nil {
		return Blob{}, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "store embed")
	}
	b := Blob{ID: id, Collection: collection, ContentType: ct, Size: n, CreatedAt: s.cfg.Now().UTC()}
	meta, _ := json.Marshal(b)
	// the metadata goes in next and the blob's rename publishes it: a blob
	// file never exists without its metadata and index row.
	if err := writeFileAtomic(metaPath, meta); err != nil {
		return Blob{}, err
	}
	if err := os.Rename(tmp.Name(), blobPath); err != nil {
		return Blob{}, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "store embed")
	}
	syncDir(filepath.Dir(blobPath))
	return b, nil
}

func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".meta-*")
	if err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "store embed metadata")
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "store embed metadata")
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "store embed metadata")
	}
	if err := f.Close(); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "store embed metadata")
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "store embed metadata")
	}
	return nil
}

// Stat returns a blob's metadata; ENOTFOUND when it does not exist.
func (s *Store) Stat(id string) (Blob, error) {
	if !validID(id) {
		return Blob{}, kgagent.Errorf(kgagent.ENOTFOUND, "no such embed")
	}
	blobPath, metaPath := s.paths(id)
	if _, err := os.Stat(blobPath); err != nil {
		return Blob{}, kgagent.Errorf(kgagent.ENOTFOUND, "no such embed")
	}
	data, err := os.ReadFile(metaPath)
	if err != nil {
		return Blob{}, kgagent.Errorf(kgagent.ENOTFOUND, "no such embed")
	}
	var b Blob
	if err := json.Unmarshal(data, &b); err != nil || b.ID != id {
		return Blob{}, kgagent.Errorf(kgagent.EINTERNAL, "embed metadata is damaged")
	}
	return b, nil
}

// Open returns a blob's metadata and content; ENOTFOUND when it does not exist.
func (s *Store) Open(id string) (Blob, *os.File, error) {
	b, err := s.Stat(id)
	if err != nil {
		return Blob{}, nil, err
	}
	blobPath, _ := s.paths(id)
	f, err := os.Open(blobPath)
	if err != nil {
		return Blob{}, nil, kgagent.Errorf(kgagent.ENOTFOUND, "no such embed")
	}
	return b, f, nil
}

// Delete removes a blob (retention, or its owner's deletion) and then its
// collection index row; deleting a missing blob is not an error.
func (s *Store) Delete(id string) error {
	if !validID(id) {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	collection := ""
	if b, err := s.Stat(id); err == nil {
		collection = b.Collection
	}
	if err := s.remove(id); err != nil {
		return err
	}
	if collection != "" {
		return s.removeFile(filepath.Join(s.indexDir(collection), id))
	}
	return nil
}

// remove deletes a blob, then its metadata (a blob never outlives its
// metadata). Callers hold s.mu.
func (s *Store) remove(id string) error {
	blobPath, metaPath := s.paths(id)
	if err := s.removeFile(blobPath); err != nil {
		return err
	}
	return s.removeFile(metaPath)
}

func (s *Store) removeFile(path string) error {
	if err := s.rm(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "delete embed")
	}
	return nil
}

// DeleteCollection removes every blob of collection, returning how many
// index rows it cleared. Blobs go first and each index row after its blob:
// if it fails halfway (error EUNAVAILABLE), the rows of the blobs still
// there remain and calling it again finishes the job. Blobs of other
// collections and blobs with no collection are untouched.
func (s *Store) DeleteCollection(ctx context.Context, collection string) (int, error) {
	if collection == "" || checkCollection(collection) != nil {
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := s.indexDir(collection)
	rows, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "list the embeds of collection %q", collection)
	}
	n := 0
	for _, row := range rows {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		id := row.Name()
		if !validID(id) {
			continue // a temporary file of an interrupted write
		}
		if err := s.remove(id); err != nil {
			return n, err
		}
		if err := s.removeFile(filepath.Join(dir, id)); err != nil {
			return n, err
		}
		n++
	}
	syncDir(dir)
	// only an empty directory goes; temporary leftovers keep it, harmlessly
	_ = os.Remove(dir)
	return n, nil
}

// List returns the blobs of collection, in ID order; index rows whose blob
// is gone (a delete that stopped halfway) are skipped.
func (s *Store) List(collection string) ([]Blob, error) {
	rows, err := os.ReadDir(s.indexDir(collection))
	if errors.Is(err, fs.ErrNotExist) || collection == "" {
		return nil, nil
	}
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "list the embeds of collection %q", collection)
	}
	var out []Blob
	for _, row := range rows {
		if b, err := s.Stat(row.Name()); err == nil && b.Collection == collection {
			out = append(out, b)
		}
	}
	return out, nil
}

// Embed returns an Embed for a stored blob: its content type and a signed
// URL that expires after the configured TTL.
func (s *Store) Embed(b Blob) kgagent.Embed {
	return kgagent.Embed{ContentType: b.ContentType, URI: s.SignedURL(b.ID, s.cfg.TTL)}
}

// Sign returns a signed URL of blob id valid for the configured TTL, and
// when it expires.
func (s *Store) Sign(id string) (string, time.Time) {
	exp := s.cfg.Now().Add(s.cfg.TTL).Unix()
	return s.signed(id, exp), time.Unix(exp, 0).UTC()
}

func (s *Store) signed(id string, exp int64) string {
	return fmt.Sprintf("%s/%s?exp=%d&sig=%s", s.BaseURL(), id, exp, hex.EncodeToString(s.mac(id, exp)))
}

func (s *Store) mac(id string, exp int64) []byte {
	var m hash.Hash = hmac.New(sha256.New, s.cfg.Secret)
	fmt.Fprintf(m, "%s\n%d", id, exp)
	return m.Sum(nil)
}

// SignedURL returns BaseURL/<id>?exp=<unix seconds>&sig=<hex HMAC>.
func (s *Store) SignedURL(id string, ttl time.Duration) string {
	if ttl <= 0 {
		ttl = s.cfg.TTL
	}
	return s.signed(id, s.cfg.Now().Add(ttl).Unix())
}

// Verify checks the signature and expiry of a signed URL's path tail (the
// blob ID) and query, returning the ID. Errors: EFORBIDDEN for a missing,
// malformed, wrong or expired signature; ENOTFOUND for a malformed ID.
func (s *Store) Verify(id string, query url.Values) (string, error) {
	id, _, err := s.verify(id, query)
	return id, err
}

// verify is Verify, also reporting whether the signature was good (so the
// failure, if any, is the expiry).
func (s *Store) verify(id string, query url.Values) (string, bool, error) {
	if !validID(id) {
		return "", false, kgagent.Errorf(kgagent.ENOTFOUND, "no such embed")
	}
	exp, err := strconv.ParseInt(query.Get("exp"), 10, 64)
	if err != nil {
		return "", false, &kgagent.Error{Code: kgagent.EFORBIDDEN, Message: "embed URL is not signed", Details: map[string]any{"reason": "unsigned"}}
	}
	sig, err := hex.DecodeString(query.Get("sig"))
	if err != nil || !hmac.Equal(sig, s.mac(id, exp)) {
		return "", false, &kgagent.Error{Code: kgagent.EFORBIDDEN, Message: "embed URL signature is not valid", Details: map[string]any{"reason": "bad_signature"}}
	}
	if s.cfg.Now().Unix() > exp {
		return "", true, &kgagent.Error{Code: kgagent.EFORBIDDEN, Message: "embed URL has expired", Details: map[string]any{"reason": "expired"}}
	}
	return id, true, nil
}

// ParseSignedURL verifies a full signed URL issued by this store and
// returns the blob ID. Errors as Verify, plus EINVALID for a URL that is
// not under BaseURL.
func (s *Store) ParseSignedURL(raw string) (string, error) {
	id, _, err := s.parseSignedURL(raw)
	return id, err
}

func (s *Store) parseSignedURL(raw string) (string, bool, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", false, kgagent.Errorf(kgagent.EINVALID, "bad embed URL")
	}
	base, _ := url.Parse(s.BaseURL())
	if base == nil || base.Host == "" || u.Scheme != base.Scheme || u.Host != base.Host {
		return "", false, kgagent.Errorf(kgagent.EINVALID, "not an embed URL of this store")
	}
	prefix := strings.TrimRight(base.Path, "/") + "/"
	if !strings.HasPrefix(u.Path, prefix) || strings.Contains(u.Path[len(prefix):], "/") {
		return "", false, kgagent.Errorf(kgagent.EINVALID, "not an embed URL of this store")
	}
	return s.verify(u.Path[len(prefix):], u.Query())
}

// IsOwnURL reports whether raw points under this store's BaseURL.
func (s *Store) IsOwnURL(raw string) bool {
	_, err := s.ParseSignedURL(raw)
	return kgagent.ErrorCode(err) != kgagent.EINVALID
}

// Handler serves signed embed URLs: GET or HEAD <mount>/<id>?exp=..&sig=..
// with the blob's content type, ranges and an ETag. Mount it with
// http.StripPrefix so the request path is "/<id>". Bad or expired signatures
// get 403, unknown blobs 404.
func (s *Store) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeErr(w, kgagent.Errorf(kgagent.EINVALID, "method not allowed"), http.StatusMethodNotAllowed)
			return
		}
		id, err := s.Verify(strings.TrimPrefix(r.URL.Path, "/"), r.URL.Query())
		if err != nil {
			writeErr(w, err, 0)
			return
		}
		b, f, err := s.Open(id)
		if err != nil {
			writeErr(w, err, 0)
			return
		}
		defer f.Close()
		h := w.Header()
		h.Set("Content-Type", b.ContentType)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "sandbox")
		h.Set("Cache-Control", "private, max-age=300, immutable")
		h.Set("ETag", `"`+id+`"`)
		http.ServeContent(w, r, "", b.CreatedAt, f)
	})
}

func writeErr(w http.ResponseWriter, err error, status int) {
	if status == 0 {
		status = kgagent.HTTPStatus(kgagent.ErrorCode(err))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": kgagent.ErrorCode(err), "message": kgagent.ErrorMessage(err)}})
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func readErr(err error, what string) error {
	if c := kgagent.ErrorCode(err); c == kgagent.ECANCELED || c == kgagent.ETIMEOUT {
		return err
	}
	return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "%s", what)
}

func tooLarge(limit int64) error {
	return &kgagent.Error{Code: kgagent.ETOOLARGE, Message: fmt.Sprintf("embed is over %d bytes", limit), Details: map[string]any{"limit": limit}}
}

// IsText reports whether a content type names text that fixie_query_embed
// can search: text/*, JSON, XML, YAML, JavaScript and their +json/+xml kin.
func IsText(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	switch {
	case strings.HasPrefix(mt, "text/"),
		strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"), strings.HasSuffix(mt, "+yaml"):
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/yaml", "application/x-yaml",
		"application/javascript", "application/x-ndjson", "application/toml", "application/sql":
		return true
	}
	return false
}

// Reader reads the content of embeds. The zero value reads data URIs and
// http(s) URLs with netguard's client (no loopback, private or link-local
// address is ever dialled) up to DefaultMaxBytes.
//
// With a Store, a URL under the store's BaseURL whose signature verifies is
// read from disk, never over the network; an expired one is EFORBIDDEN. A
// URL under BaseURL that this store did not sign, or whose blob it does not
// hold, may come from another instance behind the same public URL, so it is
// fetched over HTTP like any other URL and that server decides.
type Reader struct {
	Store      *Store       // when set, its signed URLs are read from disk
	HTTPClient *http.Client // for other http(s) URLs; nil: netguard.DefaultClient()
	MaxBytes   int64        // default: Store's limit, else DefaultMaxBytes
}

func (rd *Reader) max() int64 {
	if rd.MaxBytes > 0 {
		return rd.MaxBytes
	}
	if rd.Store != nil {
		return rd.Store.cfg.MaxBytes
	}
	return DefaultMaxBytes
}

// Read returns an embed's bytes. Errors: EINVALID for a URI that is neither
// a data URI nor http(s), or undecodable; ETOOLARGE over the limit;
// EFORBIDDEN for an expired signed URL of the store or a URL that answers
// 401/403; ENOTFOUND when the URL answers 404; EUNAVAILABLE when it cannot
// be fetched.
func (rd *Reader) Read(ctx context.Context, e kgagent.Embed) ([]byte, error) {
	limit := rd.max()
	uri := strings.TrimSpace(e.URI)
	switch {
	case strings.HasPrefix(uri, "data:"):
		if i := strings.IndexByte(uri, ','); i >= 0 && int64(len(uri)-i-1)/4*3 > limit+3 {
			return nil, tooLarge(limit)
		}
		b, err := kgagent.DecodeDataURI(uri)
		if err != nil {
			return nil, err
		}
		if int64(len(b)) > limit {
			return nil, tooLarge(limit)
		}
		return b, nil
	case strings.HasPrefix(uri, "http://"), strings.HasPrefix(uri, "https://"):
	default:
		return nil, kgagent.Errorf(kgagent.EINVALID, "embed URI must be a data URI or http(s) URL")
	}
	if rd.Store != nil {
		id, signedHere, err := rd.Store.parseSignedURL(uri)
		switch {
		case err == nil:
			if _, f, err := rd.Store.Open(id); err == nil {
				defer f.Close()
				return readLimited(ctx, f, limit)
			}
		case signedHere:
			return nil, err // our signature, expired
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return nil, kgagent.Errorf(kgagent.EINVALID, "bad embed URL")
	}
	hc := rd.HTTPClient
	if hc == nil {
		hc = netguard.DefaultClient()
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ke *kgagent.Error
		if errors.Is(err, netguard.ErrBlocked) && errors.As(err, &ke) {
			return nil, kgagent.WrapError(ke.Code, err, "embed URL refused: %s", ke.Message)
		}
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "fetch embed")
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, kgagent.Errorf(kgagent.ENOTFOUND, "embed URL answered 404")
	case resp.StatusCode == http.StatusForbidden, resp.StatusCode == http.StatusUnauthorized:
		return nil, kgagent.Errorf(kgagent.EFORBIDDEN, "embed URL answered %d", resp.StatusCode)
	case resp.StatusCode == http.StatusRequestEntityTooLarge:
		return nil, tooLarge(limit)
	case resp.StatusCode/100 != 2:
		return nil, kgagent.Errorf(kgagent.EUNAVAILABLE, "embed URL answered %d", resp.StatusCode)
	case resp.ContentLength > limit:
		return nil, tooLarge(limit)
	}
	return readLimited(ctx, resp.Body, limit)
}

func readLimited(ctx context.Context, r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(&ctxReader{ctx, io.LimitReader(r, limit+1)})
	if err != nil {
		return nil, readErr(err, "read embed")
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(limit)
	}
	return b, nil
}

// ReadText returns an embed's content as text. Errors: those of Read, and
// EUNSUPPORTED for a binary content type (images, audio, PDFs...) or content
// that is not UTF-8 text; an empty content type is accepted when the bytes
// are UTF-8 text.
func (rd *Reader) ReadText(ctx context.Context, e kgagent.Embed) (string, error) {
	if e.ContentType != "" && !IsText(e.ContentType) {
		return "", &kgagent.Error{Code: kgagent.EUNSUPPORTED, Message: fmt.Sprintf("embed of type %s cannot be read as text", e.ContentType), Details: map[string]any{"content_type": e.ContentType}}
	}
	b, err := rd.Read(ctx, e)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) || strings.IndexByte(string(b), 0) >= 0 {
		return "", kgagent.Errorf(kgagent.EUNSUPPORTED, "embed content is not UTF-8 text")
	}
	return string(b), nil
}

// MinSecretLen is the shortest HMAC key Open's callers should accept.
const MinSecretLen = 16

// LoadOrCreateSecret returns the HMAC key kept in the file at path,
// creating it (32 random bytes, hex, mode 0600) on first use, so signed URLs
// outlive a restart. A file readable by others is narrowed to 0600.
// Errors: EINVALID for a file that holds no key of MinSecretLen bytes,
// EUNAVAILABLE when it cannot be read or written.
func LoadOrCreateSecret(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, kgagent.WrapError(kgagent.EINTERNAL, err, "embed URL key")
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "create the embed URL key")
		}
		// CreateTemp makes the file 0600; the rename publishes it whole.
		if err := writeFileAtomic(path, []byte(hex.EncodeToString(key)+"\n")); err != nil {
			return nil, err
		}
		return key, nil
	}
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "read the embed URL key")
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		_ = os.Chmod(path, 0o600)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(key) < MinSecretLen {
		return nil, kgagent.Errorf(kgagent.EINVALID, "embed URL key file %s is damaged: want at least %d hex-encoded bytes", path, MinSecretLen)
	}
	return key, nil
}
