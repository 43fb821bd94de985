package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent/internal/poll"
)

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServe runs the real serve command on random ports and a temp data dir
// and returns its base URL; the server stops when the test ends.
func startServe(t *testing.T, extra ...string) (string, *syncBuffer) {
	t.Helper()
	s := startServeFull(t, extra...)
	return s.base, s.stderr
}

// served is a `kgagent serve` started by startServeFull: its base URL, the
// URL of its in-process NATS server and its output.
type served struct {
	base, natsURL  string // natsURL has the credentials (kgagent nats-url)
	dir            string // the data dir
	stdout, stderr *syncBuffer
}

// startServeFull starts `kgagent serve` in process and waits for its chat
// page and NATS lines; natsURL carries the in-process server's credentials.
func startServeFull(t *testing.T, extra ...string) served {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--nats-listen", "127.0.0.1:-1", "--data-dir", dir, "--shutdown-timeout", "5s"}, extra...)
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, &out, &errb, testEnv()) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d: %s", code, errb.String())
			}
		case <-time.After(20 * time.Second):
			t.Errorf("serve did not shut down")
		}
	})
	var base string
	poll.Until(t, 30*time.Second, func() error {
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, errb.String())
		default:
		}
		var ok bool
		base, ok = chatPageURL(out.String())
		if !ok {
			return fmt.Errorf("serve printed no chat page URL: %s %s", out.String(), errb.String())
		}
		return nil
	})
	s := served{base: base, dir: dir, stdout: &out, stderr: &errb}
	var nu, ne syncBuffer
	if code := run(context.Background(), []string{"nats-url", "--data-dir", dir}, &nu, &ne, testEnv()); code == 0 {
		s.natsURL = strings.TrimSpace(nu.String())
	}
	// The printed URL has no credentials; the data dir keeps the URL with
	// them (what `kgagent nats-url` prints).
	for i := range args {
		if args[i] == "--data-dir" && i+1 < len(args) {
			dir = args[i+1]
		}
	}
	if u, err := natsURLOf(dir); err == nil && s.natsURL != "" {
		s.natsURL = u
	}
	return s
}

// chatPageURL finds the base URL in serve's "chat page: URL" line.
func chatPageURL(stdout string) (string, bool) {
	i := strings.Index(stdout, "chat page: ")
	if i < 0 {
		return "", false
	}
	line := stdout[i+len("chat page: "):]
	j := strings.IndexByte(line, '\n')
	if j < 0 {
		return "", false
	}
	return strings.TrimSuffix(strings.TrimSpace(line[:j]), "/"), true
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServeHealthAndReady(t *testing.T) {
	base, _ := startServe(t)
	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Fatalf("healthz: %d", code)
	}
	var body string
	poll.Until(t, 20*time.Second, func() error {
		var code int
		if code, body = get(t, base+"/readyz"); code != 200 {
			return fmt.Errorf("readyz: %d %s", code, body)
		}
		return nil
	})
	// Every store a question needs is checked, the graph included, and
	// the search indexes are loaded.
	for _, check := range []string{`"nats":"ok"`, `"index":"ok"`, `"graph":"ok"`, `"warm":"ok"`} {
		if !strings.Contains(body, check) {
			t.Errorf("readyz does not report %s: %s", check, body)
		}
	}
}

func TestSecondProcessOnSameDataDirFails(t *testing.T) {
	dir := t.TempDir()
	l, err := lockDataDir(dir, "serve")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out, errb syncBuffer
	code := run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--nats-listen", "127.0.0.1:-1", "--data-dir", dir}, &out, &errb, testEnv())
	if code == 0 || !strings.Contains(errb.String(), "in use by pid") {
		t.Fatalf("got exit %d, stderr %q; want a lock error naming the holder", code, errb.String())
	}
}

func TestHelpListsEveryFlag(t *testing.T) {
	for _, sub := range []string{"serve", "worker", "ingest", "ask", "eval", "version"} {
		var out, errb syncBuffer
		if code := run(context.Background(), []string{sub, "--help"}, &out, &errb, testEnv()); code != 0 {
			t.Fatalf("%s --help exited %d", sub, code)
		}
		for _, f := range (&Config{}).fields() {
			if !strings.Contains(out.String(), "--"+f.flag) {
				t.Errorf("%s --help does not list --%s", sub, f.flag)
			}
		}
	}
}

// TestServeWarmsBeforeReady: `kgagent ingest` leaves current snapshots of
// the search copy and the graph's name index (before, the first serve or
// ask built them), and serve right after it loads them before /readyz says
// ready without rebuilding any: its warm line says rebuilt=0. The ingest
// wrote the search copies' snapshots from the copies it kept current while
// it crawled, not from SQLite: its line says search_rebuilt=0, and, as it
// loaded nothing from SQLite, os_frees=0.
func TestServeWarmsBeforeReady(t *testing.T) {
	site := httptest.NewServer(http.FileServer(http.Dir(siteDir)))
	defer site.Close()
	dir := t.TempDir()
	var out, errb syncBuffer
	if code := run(context.Background(), []string{"ingest", "--data-dir", dir, "--json", site.URL + "/*"}, &out, &errb, testEnv()); code != 0 {
		t.Fatalf("ingest: %s", errb.String())
	}
	m := regexp.MustCompile(`msg="snapshots written" collection=default search_rebuilt=(\d+) os_frees=(\d+)`).FindStringSubmatch(errb.String())
	if m == nil || m[1] != "0" {
		t.Errorf("the ingest's search copies were built from SQLite at its end (%v): %s", m, errb.String())
	}
	// It kept every copy, so it loaded nothing at its end that needed the
	// crawl's heap handed back to the OS first.
	if m == nil || m[2] != "0" {
		t.Errorf("the ingest freed memory to the OS at its end with every copy kept (%v)", m)
	}
	coll := hex.EncodeToString([]byte("default"))
	for _, snap := range []string{filepath.Join(dir, "index.db-snap", coll), filepath.Join(dir, "graph.db-snap", coll)} {
		if _, err := os.Stat(snap); err != nil {
			t.Errorf("no snapshot after the ingest: %v", err)
		}
	}
	base, logs := startServe(t, "--data-dir", dir)
	poll.Until(t, 30*time.Second, func() error {
		if code, body := get(t, base+"/readyz"); code != 200 {
			return fmt.Errorf("readyz: %d %s", code, body)
		}
		return nil
	})
	warm := regexp.MustCompile(`msg=warm collections=(\d+) rebuilt=(\d+)`).FindStringSubmatch(logs.String())
	if warm == nil {
		t.Fatalf("ready before the warm-up ended: %s", logs.String())
	}
	if warm[1] == "0" || warm[2] != "0" {
		t.Errorf("serve right after an ingest: %s collections warmed, %s rebuilt from the stores, want some and 0", warm[1], warm[2])
	}
}

func TestWarmthGatesReadiness(t *testing.T) {
	a := &app{}
	if a.warmth() == nil {
		t.Fatal("warm before warmUp ran")
	}
	a.warm.Store(true)
	if err := a.warmth(); err != nil {
		t.Fatal(err)
	}
}
