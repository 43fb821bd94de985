package embeds

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// newStore mounts a store's handler on a real loopback server.
func newStore(t *testing.T, max int64) (*Store, *clock, *httptest.Server) {
	t.Helper()
	c := &clock{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s, err := Open(Config{Dir: t.TempDir(), MaxBytes: max, Secret: []byte("k"), BaseURL: srv.URL + "/api/v1/embeds", TTL: time.Minute, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/api/v1/embeds/", http.StripPrefix("/api/v1/embeds", s.Handler(statusOnly)))
	return s, c, srv
}

// statusOnly is the ErrorWriter of these tests: the status of err's code.
func statusOnly(w http.ResponseWriter, _ *http.Request, err error) {
	w.WriteHeader(kgagent.HTTPStatus(kgagent.ErrorCode(err)))
}

// TestHandlerWritesErrorsWithTheGivenWriter: every error the handler
// answers goes through the server's ErrorWriter (the handler has no error
// shape of its own), with a stable code; a wrong method is EMETHOD (405)
// with an Allow header, not EINVALID.
func TestHandlerWritesErrorsWithTheGivenWriter(t *testing.T) {
	s, _, _ := newStore(t, 1024)
	b, err := s.Put(context.Background(), "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	h := s.Handler(func(w http.ResponseWriter, r *http.Request, err error) {
		got = append(got, kgagent.ErrorCode(err))
		w.WriteHeader(299)
	})
	signed, _ := url.Parse(s.SignedURL(b.ID, time.Minute))
	unknown, _ := url.Parse(s.SignedURL(strings.Repeat("a", 64), time.Minute))
	for _, tt := range []struct {
		method, target, want, allow string
	}{
		{"GET", "/" + b.ID + "?exp=1&sig=00", kgagent.EFORBIDDEN, ""},
		{"GET", "/" + strings.Repeat("a", 64) + "?" + unknown.RawQuery, kgagent.ENOTFOUND, ""},
		{"POST", "/" + b.ID + "?" + signed.RawQuery, kgagent.EMETHOD, "GET, HEAD"},
	} {
		got = nil
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.target, nil))
		if len(got) != 1 || got[0] != tt.want || rec.Code != 299 || rec.Header().Get("Allow") != tt.allow {
			t.Errorf("%s %s: writer got %v, status %d, Allow %q; want [%s] 299 %q", tt.method, tt.target, got, rec.Code, rec.Header().Get("Allow"), tt.want, tt.allow)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/"+b.ID+"?"+signed.RawQuery, nil))
	if rec.Code != 200 || rec.Body.String() != "x" || len(got) != 1 {
		t.Errorf("good GET: %d %q, writer calls %v", rec.Code, rec.Body.String(), got)
	}
}

func get(t *testing.T, u string) (int, string, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

func TestPutServeExpire(t *testing.T) {
	s, c, _ := newStore(t, 1024)
	ctx := context.Background()
	b, err := s.Put(ctx, "text/plain; charset=utf-8", strings.NewReader("hello embed"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Put(ctx, "text/plain; charset=utf-8", strings.NewReader("hello embed"))
	if err != nil || again != b {
		t.Fatalf("same content twice: %+v vs %+v (%v)", again, b, err)
	}
	other, _ := s.Put(ctx, "text/markdown", strings.NewReader("hello embed"))
	if other.ID == b.ID {
		t.Error("a different content type must give a different blob")
	}
	e := s.Embed(b)
	if e.ContentType != "text/plain; charset=utf-8" {
		t.Errorf("embed %+v", e)
	}
	code, ct, body := get(t, e.URI)
	if code != 200 || body != "hello embed" || ct != "text/plain; charset=utf-8" {
		t.Fatalf("GET signed URL: %d %q %q", code, ct, body)
	}
	// tampering
	u, _ := url.Parse(e.URI)
	q := u.Query()
	tests := []struct {
		name string
		mod  func(u url.URL, q url.Values) string
		want int
	}{
		{"no signature", func(u url.URL, q url.Values) string { u.RawQuery = ""; return u.String() }, 403},
		{"other expiry", func(u url.URL, q url.Values) string {
			q.Set("exp", "99999999999")
			u.RawQuery = q.Encode()
			return u.String()
		}, 403},
		{"other blob", func(u url.URL, q url.Values) string { u.Path = u.Path[:len(u.Path)-64] + other.ID; return u.String() }, 403},
		{"not an id", func(u url.URL, q url.Values) string { u.Path += "x"; return u.String() }, 404},
	}
	for _, tt := range tests {
		if code, _, _ := get(t, tt.mod(*u, url.Values{"exp": q["exp"], "sig": q["sig"]})); code != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, code, tt.want)
		}
	}
	c.t = c.t.Add(2 * time.Minute)
	if code, _, _ := get(t, e.URI); code != 403 {
		t.Errorf("expired URL: %d", code)
	}
	// a deleted blob is gone
	fresh := s.SignedURL(b.ID, 0)
	if err := s.Delete(b.ID); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := get(t, fresh); code != 404 {
		t.Errorf("deleted blob: %d", code)
	}
}

func TestPutLimits(t *testing.T) {
	s, _, _ := newStore(t, 10)
	ctx := context.Background()
	if _, err := s.Put(ctx, "text/plain", strings.NewReader(strings.Repeat("x", 11))); kgagent.ErrorCode(err) != kgagent.ETOOLARGE {
		t.Errorf("oversized: %v", err)
	}
	if _, err := s.Put(ctx, "not a / type;;", strings.NewReader("x")); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("bad type: %v", err)
	}
	// nothing was left behind
	var files []string
	filepath.WalkDir(s.cfg.Dir, func(p string, d os.DirEntry, err error) error {
		if !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != 0 {
		t.Errorf("failed puts left files: %v", files)
	}
	if _, err := Open(Config{}); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("no dir: %v", err)
	}
}

func TestReader(t *testing.T) {
	s, _, srv := newStore(t, 64)
	ctx := context.Background()
	stored, _ := s.Put(ctx, "text/plain", strings.NewReader("from the store"))
	var extHits atomic.Int64
	ext := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		extHits.Add(1)
		switch r.URL.Path {
		case "/big":
			w.Write(bytes.Repeat([]byte("y"), 100))
		case "/missing":
			http.NotFound(w, r)
		case "/broken":
			w.WriteHeader(502)
		default:
			w.Write([]byte("external text"))
		}
	}))
	defer ext.Close()
	rd := &Reader{Store: s, HTTPClient: http.DefaultClient} // the test's server is on loopback
	tests := []struct {
		name  string
		embed kgagent.Embed
		text  string
		code  string
	}{
		{"data uri", kgagent.Embed{ContentType: "text/plain", URI: kgagent.DataURI([]byte("hi there"))}, "hi there", ""},
		{"data uri with media type", kgagent.Embed{ContentType: "text/markdown", URI: "data:text/markdown;base64,IyBI"}, "# H", ""},
		{"signed url", s.Embed(stored), "from the store", ""},
		{"external url", kgagent.Embed{ContentType: "text/plain", URI: ext.URL + "/doc"}, "external text", ""},
		{"no type, text bytes", kgagent.Embed{URI: kgagent.DataURI([]byte("plain"))}, "plain", ""},
		{"undecodable data uri", kgagent.Embed{ContentType: "text/plain", URI: "data:base64,@@@"}, "", kgagent.EINVALID},
		{"oversized data uri", kgagent.Embed{ContentType: "text/plain", URI: kgagent.DataURI(bytes.Repeat([]byte("z"), 200))}, "", kgagent.ETOOLARGE},
		{"oversized url", kgagent.Embed{ContentType: "text/plain", URI: ext.URL + "/big"}, "", kgagent.ETOOLARGE},
		{"missing url", kgagent.Embed{ContentType: "text/plain", URI: ext.URL + "/missing"}, "", kgagent.ENOTFOUND},
		{"failing url", kgagent.Embed{ContentType: "text/plain", URI: ext.URL + "/broken"}, "", kgagent.EUNAVAILABLE},
		{"bad signature", kgagent.Embed{ContentType: "text/plain", URI: srv.URL + "/api/v1/embeds/" + stored.ID + "?exp=1&sig=00"}, "", kgagent.EFORBIDDEN},
		{"ftp", kgagent.Embed{ContentType: "text/plain", URI: "ftp://x/y"}, "", kgagent.EINVALID},
		{"image as text", kgagent.Embed{ContentType: "image/png", URI: kgagent.DataURI([]byte{0x89, 'P', 'N', 'G'})}, "", kgagent.EUNSUPPORTED},
		{"binary bytes as text", kgagent.Embed{URI: kgagent.DataURI([]byte{0xff, 0x00, 0xfe})}, "", kgagent.EUNSUPPORTED},
	}
	for _, tt := range tests {
		got, err := rd.ReadText(ctx, tt.embed)
		if kgagent.ErrorCode(err) != tt.code || got != tt.text {
			t.Errorf("%s: %q, %v; want %q, code %q", tt.name, got, err, tt.text, tt.code)
		}
	}
	// The zero Reader goes through netguard: the loopback server is never
	// reached (issue 11, finding 1).
	before := extHits.Load()
	if _, err := (&Reader{}).Read(ctx, kgagent.Embed{URI: ext.URL + "/doc"}); kgagent.ErrorCode(err) != kgagent.EFORBIDDEN || extHits.Load() != before {
		t.Errorf("default reader fetched a loopback URL: %v", err)
	}
	// binary content is readable as bytes
	if b, err := rd.Read(ctx, kgagent.Embed{ContentType: "image/png", URI: kgagent.DataURI([]byte{1, 2})}); err != nil || len(b) != 2 {
		t.Errorf("Read binary: %v %v", b, err)
	}
}

func TestIsText(t *testing.T) {
	tests := map[string]bool{
		"text/plain": true, "text/html; charset=utf-8": true, "application/json": true, "application/ld+json": true,
		"image/png": false, "application/pdf": false, "application/octet-stream": false, "": false, "garbage;;": false,
	}
	for ct, want := range tests {
		if got := IsText(ct); got != want {
			t.Errorf("IsText(%q) = %v", ct, got)
		}
	}
}

func FuzzParseSignedURL(f *testing.F) {
	s, err := Open(Config{Dir: f.TempDir(), Secret: []byte("k"), BaseURL: "https://h/e", Now: func() time.Time { return time.Unix(1000, 0) }})
	if err != nil {
		f.Fatal(err)
	}
	good := s.SignedURL(strings.Repeat("a", 64), time.Minute)
	f.Add(good)
	f.Add("https://h/e/" + strings.Repeat("a", 64) + "?exp=1060&sig=zz")
	f.Add("https://h/e/../x?exp=-1")
	f.Add("%%%")
	f.Fuzz(func(t *testing.T, raw string) {
		id, err := s.ParseSignedURL(raw)
		if err == nil {
			// only a URL this store signed for that id verifies
			u, _ := url.Parse(raw)
			if !validID(id) || !strings.HasSuffix(u.Path, id) {
				t.Fatalf("accepted %q as %q", raw, id)
			}
			if raw != good && u.Query().Get("sig") == "" {
				t.Fatalf("accepted an unsigned URL %q", raw)
			}
		} else if c := kgagent.ErrorCode(err); c != kgagent.EINVALID && c != kgagent.EFORBIDDEN && c != kgagent.ENOTFOUND {
			t.Fatalf("unexpected code %s", c)
		}
	})
}

func FuzzReadDataURI(f *testing.F) {
	f.Add("data:base64,aGVsbG8=", "text/plain")
	f.Add("data:text/plain;base64,", "")
	f.Add("data:,,,", "image/png")
	f.Add("data:base64,"+strings.Repeat("QUFB", 40), "text/plain")
	rd := &Reader{MaxBytes: 64}
	f.Fuzz(func(t *testing.T, uri, ct string) {
		if !strings.HasPrefix(uri, "data:") {
			uri = "data:" + uri
		}
		b, err := rd.Read(context.Background(), kgagent.Embed{ContentType: ct, URI: uri})
		if err == nil && int64(len(b)) > 64 {
			t.Fatalf("read %d bytes over the limit", len(b))
		}
		if err != nil {
			if c := kgagent.ErrorCode(err); c != kgagent.EINVALID && c != kgagent.ETOOLARGE {
				t.Fatalf("code %s", c)
			}
		}
		txt, err := rd.ReadText(context.Background(), kgagent.Embed{ContentType: ct, URI: uri})
		if err == nil && strings.IndexByte(txt, 0) >= 0 {
			t.Fatal("text with NUL")
		}
	})
}
