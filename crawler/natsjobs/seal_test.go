package natsjobs

import (
	"bytes"
	"context"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent/crawler"
)

// TestBearerTokenNeverInPlainText is part of finding 2 of issue 11, on a
// real NATS server with JetStream on disk: a job's bearer token reaches
// the crawled site, but neither the job record on the bus nor any file of
// JetStream's store holds it in plain text.
func TestBearerTokenNeverInPlainText(t *testing.T) {
	const token = "s3cret-bearer-token-4711"
	dir := t.TempDir()
	s := startNATS(t, dir)
	defer s.Shutdown()
	nc, q := connect(t, s, Config{SecretKey: []byte("a job key kept in the data dir")})
	fsrv := http.FileServer(http.Dir(filepath.Join("..", "..", "testdata", "site")))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		fsrv.ServeHTTP(w, r)
	}))
	defer srv.Close()
	// Watch the bus: every message of the job bucket and stream.
	sub, err := nc.SubscribeSync(">")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = q.Run(ctx, ingester()) }()
	st, err := q.Submit(ctx, crawler.Spec{Collection: "lumen", URLs: []string{srv.URL + "/*"}, BearerToken: token, MaxPages: 5})
	if err != nil {
		t.Fatal(err)
	}
	done := waitState(t, q, st.ID, crawler.JobSucceeded)
	if done.Counters.Indexed == 0 {
		t.Fatalf("the token did not reach the site: %+v", done)
	}
	raw, err := q.kv.Get(ctx, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw.Value(), []byte(token)) || !bytes.Contains(raw.Value(), []byte(sealedPrefix)) {
		t.Errorf("job record holds the token: %s", raw.Value())
	}
	for {
		m, err := sub.NextMsg(0)
		if err != nil {
			break
		}
		if bytes.Contains(m.Data, []byte(token)) {
			t.Errorf("the token crossed the bus on %s", m.Subject)
		}
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(token)) {
			t.Errorf("JetStream file %s holds the token", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSealerKeys: another key cannot open a token; damage is refused.
func TestSealerKeys(t *testing.T) {
	a, _ := newSealer([]byte("key a"))
	b, _ := newSealer([]byte("key b"))
	sealed := a.seal("tok")
	if got, err := a.open(sealed); err != nil || got != "tok" {
		t.Fatalf("open: %q %v", got, err)
	}
	for _, bad := range []string{"tok", sealedPrefix + "!!", sealed[:len(sealed)-2]} {
		if _, err := a.open(bad); err == nil {
			t.Errorf("opened %q", bad)
		}
	}
	if _, err := b.open(sealed); err == nil || !strings.Contains(err.Error(), "another key") {
		t.Errorf("other key: %v", err)
	}
}

// TestEveryURLFailedIsFailed is part of finding 9 of issue 11: a job whose
// every page failed ends failed, not succeeded.
func TestEveryURLFailedIsFailed(t *testing.T) {
	s := startNATS(t, t.TempDir())
	defer s.Shutdown()
	_, q := connect(t, s, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = q.Run(ctx, ingester()) }()
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	st, err := q.Submit(ctx, crawler.Spec{Collection: "c", URLs: []string{srv.URL + "/a.html", srv.URL + "/b.html"}})
	if err != nil {
		t.Fatal(err)
	}
	done := waitState(t, q, st.ID, crawler.JobFailed)
	if done.Counters.Failed == 0 || done.Message == "" {
		t.Errorf("failed job %+v", done)
	}
}

// TestStalledJobSaysSo is part of finding 9 of issue 11: a job left
// running by a worker that died (kill -9) no longer looks healthy: its
// status says no progress has been reported.
func TestStalledJobSaysSo(t *testing.T) {
	s := startNATS(t, t.TempDir())
	defer s.Shutdown()
	_, q := connect(t, s, Config{StatusInterval: 10 * time.Millisecond})
	ctx := context.Background()
	// No worker runs: write the status a dead worker would have left.
	st, err := q.Submit(ctx, crawler.Spec{Collection: "c", URLs: []string{"https://docs.example.org/"}})
	if err != nil {
		t.Fatal(err)
	}
	st.State = crawler.JobRunning
	if err := q.put(ctx, st); err != nil {
		t.Fatal(err)
	}
	got, err := q.Get(ctx, st.ID)
	if err != nil || got.State != crawler.JobRunning || strings.Contains(got.Message, "stalled") {
		t.Fatalf("fresh running job: %+v %v", got, err)
	}
	_, at, _, _ := q.getAt(ctx, st.ID)
	later := q.stalled(got, at, at.Add(6*time.Second))
	if !strings.HasPrefix(later.Message, "stalled: no progress report for 6s") {
		t.Errorf("a job without reports for 6 s: %q", later.Message)
	}
}
