package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus/embeds"
	"github.com/kgagent/kgagent/gateway"
)

// httpCount returns the kgagent_http_requests_total of a route pattern,
// summed over statuses, from the server's /metrics.
func httpCount(t *testing.T, base, pattern string) int {
	t.Helper()
	n := 0
	sc := bufio.NewScanner(strings.NewReader(scrape(t, base)))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "kgagent_http_requests_total{") && strings.Contains(line, `"`+pattern+`"`) {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			n += int(v)
		}
	}
	return n
}

func uploadEmbed(t *testing.T, base, collection, contentType, body string) gateway.EmbedUpload {
	t.Helper()
	u := base + gateway.EmbedsPath
	if collection != "" {
		u += "?collection=" + collection
	}
	resp, err := http.Post(u, contentType, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var up gateway.EmbedUpload
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(data, &up) != nil {
		t.Fatalf("upload: %d %s", resp.StatusCode, data)
	}
	return up
}

// askWithEmbed asks the agent API a question that names embed key, the
// way a Fixie client passes an embed: the built-in model then calls
// fixie_query_embed on it. It returns the answer.
func askWithEmbed(t *testing.T, base, question, key string, e kgagent.Embed) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"question": question, "embeds": map[string]kgagent.Embed{key: e}})
	resp, err := http.Post(base+"/api/v1/agent", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out struct {
		Answer  string           `json:"answer"`
		Sources []kgagent.Source `json:"sources"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(data, &out) != nil {
		t.Fatalf("ask: %d %s", resp.StatusCode, data)
	}
	return out.Answer
}

// TestServeEmbeds runs the real serve command: upload, the signed URL, a
// question whose embed is that URL (read from the store: the embed
// route counts no request for it), tampering, the size limit, and a collection delete
// that takes the collection's embeds along and leaves the others.
func TestServeEmbeds(t *testing.T) {
	base, _ := startServe(t, "--embed-max-bytes", "4096")
	const notes = "Release notes.\n\nThe flux capacitor needs 1.21 gigawatts to start.\n\nThe warp core runs on dilithium crystals."
	up := uploadEmbed(t, base, "docs", "text/plain; charset=utf-8", notes)
	if up.Collection != "docs" || up.Size != int64(len(notes)) || !strings.HasPrefix(up.URL, base+gateway.EmbedsPath+"/"+up.ID+"?") {
		t.Fatalf("upload answer %+v (base %s)", up, base)
	}

	// The agent reads the embed from the store, not over HTTP.
	const route = "GET " + gateway.EmbedsPath + "/{id}"
	before := httpCount(t, base, route)
	ans := askWithEmbed(t, base, "#notes how much power does the flux capacitor need?", "notes", up.Embed)
	if !strings.Contains(ans, "1.21 gigawatts") {
		t.Fatalf("agent answer %q", ans)
	}
	if n := httpCount(t, base, route); n != before {
		t.Errorf("the agent fetched its embed over HTTP (%d requests to the embed route)", n-before)
	}

	// The signed URL serves the same bytes (and is counted).
	code, got := get(t, up.URL)
	if code != 200 || got != notes {
		t.Fatalf("GET signed URL: %d %q", code, got)
	}
	if n := httpCount(t, base, route); n != before+1 {
		t.Errorf("embed route count %d, want %d", n, before+1)
	}
	// Tampered: 403.
	if code, _ := get(t, strings.Replace(up.URL, "sig=", "sig=00", 1)); code != 403 {
		t.Errorf("tampered signature: %d", code)
	}
	// Over embed_max_bytes: 413.
	resp, err := http.Post(base+gateway.EmbedsPath, "text/plain", strings.NewReader(strings.Repeat("x", 4097)))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 || !strings.Contains(string(data), kgagent.ETOOLARGE) {
		t.Errorf("oversized upload: %d %s", resp.StatusCode, data)
	}

	// Deleting the collection deletes its embeds only.
	other := uploadEmbed(t, base, "other", "text/plain", "other collection")
	free := uploadEmbed(t, base, "", "text/plain", "no collection")
	req, _ := http.NewRequest("DELETE", base+"/api/v1/collections/docs", nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete collection: %d", resp.StatusCode)
	}
	tests := []struct {
		name string
		url  string
		want int
	}{
		{"embed of the deleted collection", up.URL, 404},
		{"embed of another collection", other.URL, 200},
		{"embed without a collection", free.URL, 200},
	}
	for _, tt := range tests {
		if code, _ := get(t, tt.url); code != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, code, tt.want)
		}
	}
	// and DELETE /api/v1/embeds/{id}
	req, _ = http.NewRequest("DELETE", base+gateway.EmbedsPath+"/"+free.ID, nil)
	if resp, err = http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete embed: %v %v", resp, err)
	}
	resp.Body.Close()
	if code, _ := get(t, free.URL); code != 404 {
		t.Errorf("deleted embed: %d", code)
	}
}

// TestServeEmbedsPublicURL points signed URLs at public_url, where nothing
// listens: the agent still reads its embed, so it never used the network.
func TestServeEmbedsPublicURL(t *testing.T) {
	const dead = "http://127.0.0.1:1"
	base, _ := startServe(t, "--public-url", dead)
	up := uploadEmbed(t, base, "", "text/markdown", "# Ports\n\nThe admin console listens on port 9443.")
	if !strings.HasPrefix(up.URL, dead+gateway.EmbedsPath+"/") {
		t.Fatalf("signed URL %q does not use public_url", up.URL)
	}
	if ans := askWithEmbed(t, base, "#doc which port does the admin console use?", "doc", up.Embed); !strings.Contains(ans, "9443") {
		t.Fatalf("agent answer with an unreachable public URL: %q", ans)
	}
	// the same path on the real listener serves it
	code, got := get(t, base+strings.TrimPrefix(up.URL, dead))
	if code != 200 || !strings.Contains(got, "9443") {
		t.Errorf("GET on the listener: %d %q", code, got)
	}
}

// TestEmbedKeyKept checks the URL key is generated once, kept 0600 in the
// data dir and used again, so signed URLs outlive a restart; embed_secret
// replaces it.
func TestEmbedKeyKept(t *testing.T) {
	cfg := defaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.PublicURL = "https://kgagent.example"
	open := func(cfg Config) *embeds.Store {
		a := &app{cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if err := a.openEmbeds(); err != nil {
			t.Fatal(err)
		}
		return a.svc.embeds
	}
	first := open(cfg)
	b, err := first.Put(context.Background(), "text/plain", strings.NewReader("kept"))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := first.Sign(b.ID)
	if !strings.HasPrefix(u, "https://kgagent.example/api/v1/embeds/") {
		t.Errorf("signed URL %q", u)
	}
	keyFile := filepath.Join(cfg.DataDir, "embeds", "url.key")
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	if id, err := open(cfg).ParseSignedURL(u); err != nil || id != b.ID {
		t.Errorf("after a restart: %q, %v", id, err)
	}
	cfg.EmbedSecret = "a-configured-secret-key"
	if _, err := open(cfg).ParseSignedURL(u); kgagent.ErrorCode(err) != kgagent.EFORBIDDEN {
		t.Errorf("embed_secret must replace the kept key: %v", err)
	}
}

func TestEmbedConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		mod  func(c *Config)
		key  string
	}{
		{"relative public_url", func(c *Config) { c.PublicURL = "kgagent.example" }, "public_url"},
		{"public_url with a query", func(c *Config) { c.PublicURL = "https://h/?x=1" }, "public_url"},
		{"short secret", func(c *Config) { c.EmbedSecret = "short" }, "embed_secret"},
		{"zero ttl", func(c *Config) { c.EmbedURLTTL = 0 }, "embed_url_ttl"},
		{"negative size", func(c *Config) { c.EmbedMaxBytes = -1 }, "embed_max_bytes"},
	}
	for _, tt := range tests {
		c := defaultConfig()
		tt.mod(&c)
		if err := c.validate(); err == nil || !strings.Contains(err.Error(), tt.key) {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	c := defaultConfig()
	c.PublicURL = "https://kgagent.example/base/"
	if err := c.validate(); err != nil {
		t.Errorf("good public_url: %v", err)
	}
	if got := embedBaseURL(c); got != "https://kgagent.example/base/api/v1/embeds" {
		t.Errorf("embedBaseURL = %q", got)
	}
	bases := map[string]string{"127.0.0.1:8080": "http://127.0.0.1:8080/api/v1/embeds", "127.0.0.1:0": "", ":8080": "", "0.0.0.0:80": "", "[::1]:9": "http://[::1]:9/api/v1/embeds"}
	for addr, want := range bases {
		if got := embedBaseURL(Config{Addr: addr}); got != want {
			t.Errorf("embedBaseURL(addr %s) = %q, want %q", addr, got, want)
		}
	}
}
