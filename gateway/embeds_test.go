package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus/embeds"
)

// embedClock is a settable clock for the store's signatures.
type embedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *embedClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *embedClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type embedFixture struct {
	ts    *httptest.Server
	store *embeds.Store
	clock *embedClock
	dir   string // the store's directory
}

// newEmbedFixture serves a gateway over a real embed store in a temp dir on
// a loopback listener.
func newEmbedFixture(t *testing.T, cfg Config, maxBytes int64) *embedFixture {
	t.Helper()
	clock := &embedClock{t: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	dir := t.TempDir()
	st, err := embeds.Open(embeds.Config{Dir: dir, MaxBytes: maxBytes, Secret: []byte("test-secret-0123456789"), TTL: time.Minute, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := New(cfg, Backends{Embeds: st})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); srv.Close() })
	st.SetBaseURL(ts.URL + EmbedsPath)
	return &embedFixture{ts: ts, store: st, clock: clock, dir: dir}
}

type embedResponse struct {
	status int
	header http.Header
	body   []byte
}

func (r embedResponse) errCode() string {
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(r.body, &e)
	return e.Error.Code
}

func embedSend(t *testing.T, method, u, key, contentType string, body io.Reader) embedResponse {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return embedResponse{resp.StatusCode, resp.Header, b}
}

func upload(t *testing.T, f *embedFixture, query, key, contentType string, body []byte) (EmbedUpload, embedResponse) {
	t.Helper()
	r := embedSend(t, "POST", f.ts.URL+EmbedsPath+query, key, contentType, bytes.NewReader(body))
	var up EmbedUpload
	if r.status == http.StatusCreated {
		if err := json.Unmarshal(r.body, &up); err != nil {
			t.Fatalf("upload answer %s: %v", r.body, err)
		}
	}
	return up, r
}

func multipartBody(t *testing.T, field, filename, partType string, content []byte) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("note", "ignored")
	h := textproto.MIMEHeader{}
	disp := `form-data; name="` + field + `"`
	if filename != "" {
		disp += `; filename="` + filename + `"`
	}
	h.Set("Content-Disposition", disp)
	if partType != "" {
		h.Set("Content-Type", partType)
	}
	pw, _ := mw.CreatePart(h)
	pw.Write(content)
	mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

func TestEmbedUploadServeDelete(t *testing.T) {
	f := newEmbedFixture(t, Config{}, 1024)
	mpType, mpBody := multipartBody(t, "file", "notes.md", "text/markdown", []byte("# Notes\nmultipart bytes"))
	tests := []struct {
		name     string
		ct       string
		body     []byte
		wantType string
		want     []byte
	}{
		{"raw text", "text/plain; charset=utf-8", []byte("hello embed"), "text/plain; charset=utf-8", []byte("hello embed")},
		{"raw binary", "image/png", []byte{0x89, 'P', 'N', 'G', 0, 1, 2}, "image/png", []byte{0x89, 'P', 'N', 'G', 0, 1, 2}},
		{"no type", "", []byte("x"), "application/octet-stream", []byte("x")},
		{"multipart", mpType, mpBody, "text/markdown", []byte("# Notes\nmultipart bytes")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up, r := upload(t, f, "", "", tt.ct, tt.body)
			if r.status != http.StatusCreated {
				t.Fatalf("upload: %d %s", r.status, r.body)
			}
			if up.ContentType != tt.wantType || up.Size != int64(len(tt.want)) || len(up.ID) != 64 || up.Collection != "" {
				t.Errorf("upload answer %+v", up)
			}
			if r.header.Get("Location") != up.URL || up.Embed.URI != up.URL || up.Embed.ContentType != up.ContentType {
				t.Errorf("Location %q, url %q, embed %+v", r.header.Get("Location"), up.URL, up.Embed)
			}
			if !up.ExpiresAt.Equal(f.clock.now().Add(time.Minute)) || !strings.HasPrefix(up.URL, f.ts.URL+EmbedsPath+"/"+up.ID+"?") {
				t.Errorf("signed URL %q expires %v", up.URL, up.ExpiresAt)
			}
			got := embedSend(t, "GET", up.URL, "", "", nil)
			if got.status != 200 || !bytes.Equal(got.body, tt.want) || got.header.Get("Content-Type") != tt.wantType {
				t.Errorf("GET signed URL: %d %q %q", got.status, got.header.Get("Content-Type"), got.body)
			}
		})
	}

	up, _ := upload(t, f, "", "", "text/plain", []byte("to be deleted"))
	u, _ := url.Parse(up.URL)
	tampered := func(mod func(q url.Values)) string {
		v := *u
		q := v.Query()
		mod(q)
		v.RawQuery = q.Encode()
		return v.String()
	}
	bad := []struct {
		name   string
		url    string
		status int
		code   string
	}{
		{"flipped signature", tampered(func(q url.Values) {
			sig := []byte(q.Get("sig"))
			sig[0] ^= 1
			q.Set("sig", string(sig))
		}), 403, kgagent.EFORBIDDEN},
		{"later expiry", tampered(func(q url.Values) { q.Set("exp", "99999999999") }), 403, kgagent.EFORBIDDEN},
		{"no signature", tampered(func(q url.Values) { q.Del("sig"); q.Del("exp") }), 403, kgagent.EFORBIDDEN},
		{"unknown id", f.store.SignedURL(strings.Repeat("0", 64), 0), 404, kgagent.ENOTFOUND},
		{"not an id", f.ts.URL + EmbedsPath + "/nope?exp=1&sig=00", 404, kgagent.ENOTFOUND},
	}
	for _, tt := range bad {
		if r := embedSend(t, "GET", tt.url, "", "", nil); r.status != tt.status || r.errCode() != tt.code {
			t.Errorf("%s: %d %s, want %d %s", tt.name, r.status, r.body, tt.status, tt.code)
		}
	}

	// delete, then the signed URL is 404 and a second delete too
	if r := embedSend(t, "DELETE", f.ts.URL+EmbedsPath+"/"+up.ID, "", "", nil); r.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r := embedSend(t, "GET", up.URL, "", "", nil); r.status != 404 || r.errCode() != kgagent.ENOTFOUND {
		t.Errorf("GET after delete: %d %s", r.status, r.body)
	}
	if r := embedSend(t, "DELETE", f.ts.URL+EmbedsPath+"/"+up.ID, "", "", nil); r.status != 404 {
		t.Errorf("second delete: %d %s", r.status, r.body)
	}

	// expiry
	up, _ = upload(t, f, "", "", "text/plain", []byte("short-lived"))
	f.clock.add(2 * time.Minute)
	if r := embedSend(t, "GET", up.URL, "", "", nil); r.status != 403 || r.errCode() != kgagent.EFORBIDDEN {
		t.Errorf("expired URL: %d %s", r.status, r.body)
	}
}

func TestEmbedUploadErrors(t *testing.T) {
	f := newEmbedFixture(t, Config{}, 100)
	big := bytes.Repeat([]byte("z"), 101)
	mpBig, mpBigBody := multipartBody(t, "file", "big.txt", "text/plain", big)
	mpNone, mpNoneBody := multipartBody(t, "other", "", "", []byte("not a file"))
	tests := []struct {
		name   string
		ct     string
		body   io.Reader
		status int
		code   string
	}{
		{"too large", "text/plain", bytes.NewReader(big), 413, kgagent.ETOOLARGE},
		{"too large, no length", "text/plain", io.MultiReader(bytes.NewReader(big)), 413, kgagent.ETOOLARGE},
		{"way too large", "text/plain", bytes.NewReader(bytes.Repeat([]byte("z"), 200<<10)), 413, kgagent.ETOOLARGE},
		{"too large, multipart", mpBig, bytes.NewReader(mpBigBody), 413, kgagent.ETOOLARGE},
		{"multipart without a file", mpNone, bytes.NewReader(mpNoneBody), 400, kgagent.EINVALID},
		{"multipart without a boundary", "multipart/form-data", strings.NewReader("x"), 400, kgagent.EINVALID},
		{"multipart, garbage", "multipart/form-data; boundary=zz", strings.NewReader("garbage"), 400, kgagent.EINVALID},
		{"bad content type", "text/;;", strings.NewReader("x"), 400, kgagent.EINVALID},
	}
	for _, tt := range tests {
		r := embedSend(t, "POST", f.ts.URL+EmbedsPath, "", tt.ct, tt.body)
		if r.status != tt.status || r.errCode() != tt.code {
			t.Errorf("%s: %d %s, want %d %s", tt.name, r.status, r.body, tt.status, tt.code)
		}
	}
	// nothing was stored by the failed uploads
	if up, r := upload(t, f, "", "", "text/plain", []byte("ok")); r.status != 201 || up.Size != 2 {
		t.Errorf("upload after failures: %d %s", r.status, r.body)
	}

	// no store configured: 503 on every route
	srv, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, Backends{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	for _, m := range []string{"POST", "DELETE", "GET"} {
		path := EmbedsPath
		if m != "POST" {
			path += "/" + strings.Repeat("a", 64)
		}
		if r := embedSend(t, m, ts.URL+path, "", "text/plain", strings.NewReader("x")); r.status != 503 || r.errCode() != kgagent.EUNAVAILABLE {
			t.Errorf("%s without a store: %d %s", m, r.status, r.body)
		}
	}
}

func TestEmbedAuth(t *testing.T) {
	f := newEmbedFixture(t, authConfig(), 1024)
	// scopes
	tests := []struct {
		name, key string
		status    int
	}{
		{"no key", "", 401},
		{"ask key", "ask-key", 403},
		{"ingest key", "ingest-key", 201},
		{"admin key", "admin-key", 201},
	}
	for _, tt := range tests {
		if _, r := upload(t, f, "?collection=python", tt.key, "text/plain", []byte("scoped "+tt.name)); r.status != tt.status {
			t.Errorf("upload with %s: %d %s, want %d", tt.name, r.status, r.body, tt.status)
		}
	}
	py, r := upload(t, f, "?collection=python", "ingest-key", "text/plain", []byte("python notes"))
	if r.status != 201 || py.Collection != "python" {
		t.Fatalf("upload into python: %d %s", r.status, r.body)
	}
	// the signed URL needs no key
	if r := embedSend(t, "GET", py.URL, "", "", nil); r.status != 200 || string(r.body) != "python notes" {
		t.Errorf("public GET: %d %s", r.status, r.body)
	}
	// a key restricted to python: uploads land in python, other
	// collections are refused, and it cannot delete outside python.
	restricted := APIKey{Name: "py-ingest", Hash: HashKey("py-ingest"), Scopes: []Scope{ScopeIngest}, Collections: []string{"python"}}
	cfg := authConfig()
	cfg.APIKeys = append(cfg.APIKeys, restricted)
	g := newEmbedFixture(t, cfg, 1024)
	up, r := upload(t, g, "", "py-ingest", "text/plain", []byte("default collection"))
	if r.status != 201 || up.Collection != "python" {
		t.Errorf("restricted upload without collection: %d %s", r.status, r.body)
	}
	if _, r := upload(t, g, "?collection=go", "py-ingest", "text/plain", []byte("x")); r.status != 403 {
		t.Errorf("restricted upload into go: %d %s", r.status, r.body)
	}
	other, _ := upload(t, g, "?collection=go", "admin-key", "text/plain", []byte("go only"))
	unscoped, _ := upload(t, g, "", "admin-key", "text/plain", []byte("no collection"))
	dels := []struct {
		name, key, id string
		status        int
	}{
		{"ask key", "ask-key", other.ID, 403},
		{"restricted, other collection", "py-ingest", other.ID, 404},
		{"restricted, no collection", "py-ingest", unscoped.ID, 404},
		{"restricted, own collection", "py-ingest", up.ID, 204},
		{"admin", "admin-key", other.ID, 204},
	}
	for _, tt := range dels {
		if r := embedSend(t, "DELETE", g.ts.URL+EmbedsPath+"/"+tt.id, tt.key, "", nil); r.status != tt.status {
			t.Errorf("delete, %s: %d %s, want %d", tt.name, r.status, r.body, tt.status)
		}
	}
}

// FuzzDecodeEmbedUpload feeds arbitrary content types and bodies to the
// upload decoder: it never panics, fails only with INVALID_ARGUMENT, and
// what it accepts can be read to the end.
func FuzzDecodeEmbedUpload(f *testing.F) {
	ct, body := multipartBody(&testing.T{}, "file", "a.txt", "text/plain", []byte("hello"))
	f.Add(ct, body)
	f.Add("multipart/form-data; boundary=x", []byte("--x\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nabc\r\n--x--\r\n"))
	f.Add("multipart/form-data; boundary=x", []byte("--x\r\n\r\n--x--"))
	f.Add("multipart/form-data", []byte(""))
	f.Add("text/plain", []byte("raw"))
	f.Add(";;", []byte{0xff})
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		gotType, r, err := DecodeEmbedUpload(contentType, bytes.NewReader(body))
		if err != nil {
			if kgagent.ErrorCode(err) != kgagent.EINVALID {
				t.Fatalf("code %s: %v", kgagent.ErrorCode(err), err)
			}
			return
		}
		data, _ := io.ReadAll(r)
		if len(data) > len(body) {
			t.Fatalf("read %d bytes from a %d-byte body", len(data), len(body))
		}
		if strings.HasPrefix(contentType, "multipart/form-data") && gotType == "" {
			t.Fatal("a multipart upload without a content type")
		}
	})
}

// lockedBuffer is a log sink safe to read while the server writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestEmbedServeErrorsUseTheGatewayWriter: the signed-URL route writes its
// errors with the gateway's one error writer, not a shape of its own: an
// INTERNAL error (damaged blob metadata) answers 500 with the gateway's
// body and is logged with the request's path, as on every other route
// (the embed store's own writer logged nothing).
func TestEmbedServeErrorsUseTheGatewayWriter(t *testing.T) {
	logs := &lockedBuffer{}
	f := newEmbedFixture(t, Config{Logger: slog.New(slog.NewTextHandler(logs, nil))}, 1024)
	st := f.store
	b, err := st.Put(t.Context(), "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := st.Sign(b.ID)
	if err := os.WriteFile(filepath.Join(f.dir, b.ID[:2], b.ID+".json"), []byte("{damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := embedSend(t, "GET", u, "", "", nil)
	want := `{"error":{"code":"INTERNAL","message":"embed metadata is damaged"}}` + "\n"
	if r.status != 500 || r.header.Get("Content-Type") != "application/json" || string(r.body) != want {
		t.Errorf("damaged embed: %d %q %s; want 500 application/json %s", r.status, r.header.Get("Content-Type"), r.body, want)
	}
	if l := logs.String(); !strings.Contains(l, "request failed") || !strings.Contains(l, EmbedsPath+"/"+b.ID) || !strings.Contains(l, "embed metadata is damaged") {
		t.Errorf("the INTERNAL error was not logged with its path: %q", l)
	}
}
