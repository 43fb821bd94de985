package embeds

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/kgagent/kgagent"
)

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
