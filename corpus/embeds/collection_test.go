package embeds

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
)

func TestCollections(t *testing.T) {
	s, _, _ := newStore(t, 1024)
	ctx := context.Background()
	put := func(coll, body string) Blob {
		t.Helper()
		b, err := s.PutIn(ctx, coll, "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if b.Collection != coll {
			t.Fatalf("blob %+v: collection %q", b, coll)
		}
		return b
	}
	a1, a2 := put("a", "one"), put("a", "two")
	b1 := put("b", "one")
	free := put("", "one")
	if a1.ID == b1.ID || a1.ID == free.ID || b1.ID == free.ID {
		t.Fatal("the same bytes in different collections must be different blobs")
	}
	if again := put("a", "one"); again != a1 {
		t.Errorf("same bytes, same collection: %+v vs %+v", again, a1)
	}
	// the bound every other store has (issue 22: it was 256 here, 128 in
	// kgagent.ValidateCollection)
	if _, err := s.PutIn(ctx, strings.Repeat("c", kgagent.MaxCollectionLen+1), "text/plain", strings.NewReader("x")); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("collection name of %d bytes: %v", kgagent.MaxCollectionLen+1, err)
	}
	if _, err := s.PutIn(ctx, strings.Repeat("c", kgagent.MaxCollectionLen), "text/plain", strings.NewReader("x")); err != nil {
		t.Errorf("collection name of %d bytes: %v", kgagent.MaxCollectionLen, err)
	}
	list, err := s.List("a")
	if err != nil || len(list) != 2 {
		t.Fatalf("List(a) = %v, %v", list, err)
	}

	n, err := s.DeleteCollection(ctx, "a")
	if err != nil || n != 2 {
		t.Fatalf("DeleteCollection(a) = %d, %v", n, err)
	}
	tests := []struct {
		name string
		id   string
		want string
	}{
		{"a/one", a1.ID, kgagent.ENOTFOUND},
		{"a/two", a2.ID, kgagent.ENOTFOUND},
		{"b/one", b1.ID, ""},
		{"no collection", free.ID, ""},
	}
	for _, tt := range tests {
		if _, err := s.Stat(tt.id); kgagent.ErrorCode(err) != tt.want {
			t.Errorf("%s after deleting a: %v, want %q", tt.name, err, tt.want)
		}
	}
	if _, err := os.Stat(s.indexDir("a")); !os.IsNotExist(err) {
		t.Errorf("index of a is left: %v", err)
	}
	if n, err := s.DeleteCollection(ctx, "a"); err != nil || n != 0 {
		t.Errorf("deleting again: %d, %v", n, err)
	}
	// Delete by id also clears the index row.
	if err := s.Delete(b1.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.indexDir("b"), b1.ID)); !os.IsNotExist(err) {
		t.Errorf("index row of a deleted blob is left: %v", err)
	}
}

// TestDeleteCollectionHalfway fails a collection delete after its first
// blob and checks what is left is consistent: every remaining blob still has
// its index row, and a second delete finishes the job.
func TestDeleteCollectionHalfway(t *testing.T) {
	s, _, _ := newStore(t, 1024)
	ctx := context.Background()
	var ids []string
	for _, body := range []string{"one", "two", "three"} {
		b, err := s.PutIn(ctx, "c", "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, b.ID)
	}
	// the second blob (in index order) cannot be removed
	rows, _ := os.ReadDir(s.indexDir("c"))
	stuck, _ := s.paths(rows[1].Name())
	s.rm = func(p string) error {
		if p == stuck {
			return os.ErrPermission
		}
		return os.Remove(p)
	}
	n, err := s.DeleteCollection(ctx, "c")
	if kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE || n != 1 {
		t.Fatalf("DeleteCollection with a stuck blob = %d, %v", n, err)
	}
	for _, id := range ids {
		_, statErr := s.Stat(id)
		_, rowErr := os.Stat(filepath.Join(s.indexDir("c"), id))
		if statErr == nil && rowErr != nil {
			t.Errorf("blob %s is left without its index row", id[:8])
		}
	}
	s.rm = os.Remove
	n, err = s.DeleteCollection(ctx, "c")
	if err != nil || n != 2 {
		t.Fatalf("retry = %d, %v", n, err)
	}
	for _, id := range ids {
		if _, err := s.Stat(id); kgagent.ErrorCode(err) != kgagent.ENOTFOUND {
			t.Errorf("blob %s survived the retry: %v", id[:8], err)
		}
	}
}

// TestReaderReadsOwnURLsFromDisk proves the Reader never fetches a URL the
// store signed: the server at the store's base URL counts every request.
func TestReaderReadsOwnURLsFromDisk(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s, err := Open(Config{Dir: t.TempDir(), Secret: []byte("k"), TTL: time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	s.SetBaseURL(srv.URL + "/api/v1/embeds/")
	if s.BaseURL() != srv.URL+"/api/v1/embeds" {
		t.Fatalf("BaseURL %q", s.BaseURL())
	}
	ctx := context.Background()
	b, _ := s.PutIn(ctx, "c", "text/plain", strings.NewReader("local bytes"))
	rd := &Reader{Store: s, HTTPClient: http.DefaultClient} // the test's server is on loopback
	uri, exp := s.Sign(b.ID)
	if !exp.Equal(now.Add(time.Minute)) || !strings.HasPrefix(uri, srv.URL+"/api/v1/embeds/"+b.ID+"?") {
		t.Fatalf("Sign = %q, %v", uri, exp)
	}
	got, err := rd.ReadText(ctx, kgagent.Embed{ContentType: "text/plain", URI: uri})
	if err != nil || got != "local bytes" || hits.Load() != 0 {
		t.Fatalf("own URL: %q, %v, %d requests", got, err, hits.Load())
	}
	// Not signed by this store (another instance behind the same URL):
	// fetched, and that server's answer counts.
	other := srv.URL + "/api/v1/embeds/" + b.ID + "?exp=99999999999&sig=00"
	if _, err := rd.Read(ctx, kgagent.Embed{URI: other}); kgagent.ErrorCode(err) != kgagent.EFORBIDDEN || hits.Load() != 1 {
		t.Errorf("foreign signature: %v, %d requests", err, hits.Load())
	}
	// Our signature, expired: refused without a request.
	now = now.Add(2 * time.Minute)
	if _, err := rd.Read(ctx, kgagent.Embed{URI: uri}); kgagent.ErrorCode(err) != kgagent.EFORBIDDEN || hits.Load() != 1 {
		t.Errorf("expired own URL: %v, %d requests", err, hits.Load())
	}
}

func TestLoadOrCreateSecret(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "url.key")
	k1, err := LoadOrCreateSecret(path)
	if err != nil || len(k1) != 32 {
		t.Fatalf("create: %d bytes, %v", len(k1), err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v", fi.Mode(), err)
	}
	k2, err := LoadOrCreateSecret(path)
	if err != nil || string(k1) != string(k2) {
		t.Fatalf("reload gave another key: %v", err)
	}
	os.Chmod(path, 0o644)
	if _, err := LoadOrCreateSecret(path); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("an open key file is not narrowed: %v", fi.Mode())
	}
	bad := filepath.Join(dir, "bad.key")
	os.WriteFile(bad, []byte("abcd\n"), 0o600)
	if _, err := LoadOrCreateSecret(bad); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("short key: %v", err)
	}
}

// FuzzLoadSecret reads arbitrary key files: a key of MinSecretLen bytes or
// more, or INVALID_ARGUMENT; never a panic or a short key.
func FuzzLoadSecret(f *testing.F) {
	f.Add([]byte(strings.Repeat("ab", 32) + "\n"))
	f.Add([]byte("abcd"))
	f.Add([]byte(" " + strings.Repeat("0", 32) + " \r\n"))
	f.Add([]byte{0xff, 0})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "key")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		key, err := LoadOrCreateSecret(path)
		if err != nil {
			if kgagent.ErrorCode(err) != kgagent.EINVALID {
				t.Fatalf("code %s", kgagent.ErrorCode(err))
			}
			return
		}
		if len(key) < MinSecretLen {
			t.Fatalf("accepted a %d-byte key", len(key))
		}
	})
}
