package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/kgagent/kgagent/internal/poll"
)

const siteDir = "../../testdata/site"

func postJSON(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// TestDemoAnswersWithSources is the README's first command as a user runs it:
// serve --demo, then ask over REST about the sample site.
func TestDemoAnswersWithSources(t *testing.T) {
	start := time.Now()
	base, logs := startServe(t, "--demo", "--demo-site-dir", siteDir)
	// Ask only once the whole demo site is in: an answer found while the
	// ingest is half done would pass on whichever pages happened to be in.
	waitDemoIngested(t, logs)
	code, m := postJSON(t, base+"/api/v1/agent", `{"question":"What is the default HTTP port of the Lumen server?"}`)
	srcs, _ := m["sources"].([]any)
	if code != 200 || len(srcs) == 0 {
		t.Fatalf("no answer with sources after the demo ingest: %d %v", code, m)
	}
	ans, _ := m["answer"].(string)
	if !strings.Contains(ans, "8086") {
		t.Fatalf("answer does not name the port 8086: %q", ans)
	}
	first, _ := srcs[0].(map[string]any)
	if u, _ := first["url"].(string); !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.Contains(u, "#") {
		t.Fatalf("source is not a section URL of the demo site: %v", first)
	}
	t.Logf("answered with %d sources %.1fs after start", len(srcs), time.Since(start).Seconds())

	// GET /api/v1/triples without collection reads the default collection,
	// as every other endpoint does.
	code, body := get(t, base+"/api/v1/triples?limit=5")
	var tr struct {
		Triples []map[string]any `json:"triples"`
	}
	if err := json.Unmarshal([]byte(body), &tr); code != 200 || err != nil || len(tr.Triples) == 0 {
		t.Fatalf("GET /api/v1/triples without collection: %d %s", code, body)
	}
	if c, _ := tr.Triples[0]["collection"].(string); c != "default" {
		t.Errorf("triple of collection %q, want default: %v", c, tr.Triples[0])
	}
}

// TestIngestCLIIncremental runs `kgagent ingest --json` twice over the
// sample site: the second run re-indexes nothing. Then `ask` answers from it.
func TestIngestCLIIncremental(t *testing.T) {
	site := httptest.NewServer(http.FileServer(http.Dir(siteDir)))
	defer site.Close()
	dir := t.TempDir()
	ingest := func() map[string]float64 {
		var out, errb syncBuffer
		code := run(context.Background(), []string{"ingest", "--data-dir", dir, "--json", "--collection", "docs", site.URL + "/*"}, &out, &errb, testEnv())
		if code != 0 {
			t.Fatalf("ingest exited %d: %s", code, errb.String())
		}
		m := summaryCounts(t, []byte(out.String()))
		for _, k := range []string{"pages", "chunks", "triples", "unchanged", "failed", "seconds"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("summary lacks %q: %v", k, m)
			}
		}
		return m
	}
	first := ingest()
	if first["pages"] < 25 || first["failed"] != 0 || first["chunks"] < first["pages"] || first["triples"] == 0 {
		t.Fatalf("first ingest: %v", first)
	}
	second := ingest()
	if second["unchanged"] != first["pages"] || second["pages"] != first["pages"] || second["failed"] != 0 {
		t.Fatalf("second ingest re-indexed pages: first %v second %v", first, second)
	}

	var out, errb syncBuffer
	code := run(context.Background(), []string{"ask", "--data-dir", dir, "--collection", "docs", "--json", "How", "do", "I", "change", "the", "HTTP", "port", "of", "Lumen?"}, &out, &errb, testEnv())
	if code != 0 {
		t.Fatalf("ask exited %d: %s", code, errb.String())
	}
	var ans struct {
		Answer  string `json:"answer"`
		Sources []struct {
			URL string `json:"url"`
		} `json:"sources"`
	}
	if err := json.Unmarshal([]byte(out.String()), &ans); err != nil {
		t.Fatal(err)
	}
	if ans.Answer == "" || len(ans.Sources) == 0 || !strings.HasPrefix(ans.Sources[0].URL, site.URL) {
		t.Fatalf("ask: %+v", ans)
	}
}

// TestWorkerAnswersOverExternalNATS runs `kgagent worker` against a NATS
// server that is not its own and asks it a question the way the nats CLI
// does: a request with a reply inbox, streamed responses until complete.
func TestWorkerAnswersOverExternalNATS(t *testing.T) {
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats not ready")
	}
	defer ns.Shutdown()

	site := httptest.NewServer(http.FileServer(http.Dir(siteDir)))
	defer site.Close()
	dir := t.TempDir()
	var out, errb syncBuffer
	if code := run(context.Background(), []string{"ingest", "--data-dir", dir, "--json", site.URL + "/*"}, &out, &errb, testEnv()); code != 0 {
		t.Fatalf("ingest: %s", errb.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var wout, werr syncBuffer
	go func() {
		done <- run(ctx, []string{"worker", "--data-dir", dir, "--nats-url", ns.ClientURL(), "--job-secret", testJobSecret}, &wout, &werr, testEnv())
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("worker exited %d: %s", code, werr.String())
		}
	}()

	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	// The worker subscribes shortly after start: ask again until it answers.
	var msg *nats.Msg
	poll.Until(t, 20*time.Second, func() error {
		if err := nc.PublishRequest("kgagent.request.agent", inbox, []byte(`{"question":"What is the default HTTP port of the Lumen server?"}`)); err != nil {
			t.Fatal(err)
		}
		if msg, err = sub.NextMsg(time.Second); err != nil {
			return fmt.Errorf("worker never answered (%v): %s", err, werr.String())
		}
		return nil
	})
	var kinds []string
	for {
		var f struct {
			Response map[string]any `json:"response"`
			Complete bool           `json:"complete"`
			Error    any            `json:"error"`
		}
		if err := json.Unmarshal(msg.Data, &f); err != nil {
			t.Fatalf("frame %q: %v", msg.Data, err)
		}
		if f.Error != nil {
			t.Fatalf("error frame: %s", msg.Data)
		}
		for k := range f.Response {
			kinds = append(kinds, k)
		}
		if f.Complete {
			ans, _ := f.Response["answer"].(string)
			if !strings.Contains(ans, "8086") {
				t.Fatalf("final answer %q (frames %v)", ans, kinds)
			}
			return
		}
		if msg, err = sub.NextMsg(10 * time.Second); err != nil {
			t.Fatalf("stream ended without complete after %v: %v", kinds, err)
		}
	}
}

var kgagentBin string

// TestMain removes the binary that buildBinary built once the package's
// tests are done (the tests share it, so none of them may remove it).
func TestMain(m *testing.M) {
	// Loading the semantic model costs every serve, ask and eval 1-8 s,
	// and serve's background pass changes the rankings as its vectors land
	// (so the same question can get another answer on its next call); the
	// tests that need semantic search pass --semantic-search auto. A
	// binary inherits this; a command run in process gets it by testEnv.
	if os.Getenv("KGAGENT_SEMANTIC_SEARCH") == "" {
		os.Setenv("KGAGENT_SEMANTIC_SEARCH", "off")
	}
	code := m.Run()
	if kgagentBin != "" {
		os.RemoveAll(filepath.Dir(kgagentBin))
	}
	os.Exit(code)
}

// testEnv is the environment of a command the tests run in process (run's
// environ): what TestMain set for every test (KGAGENT_SEMANTIC_SEARCH,
// off unless the caller chose), as a spawned binary inherits it. Run with
// no environment, an in-process serve had semantic search on wherever the
// weights are fetched, and its background pass landed vectors between the
// questions a test compared (TestPythonAPIClients under -race, about 1
// run in 3).
func testEnv() []string {
	if v := os.Getenv("KGAGENT_SEMANTIC_SEARCH"); v != "" {
		return []string{"KGAGENT_SEMANTIC_SEARCH=" + v}
	}
	return nil
}

// summaryCounts is `ingest --json`'s summary's numbers by key; its other
// fields (the failed pages, "truncated", the reasons) are left out.
func summaryCounts(t testing.TB, out []byte) map[string]float64 {
	t.Helper()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatalf("ingest --json printed %q: %v", out, err)
	}
	m := map[string]float64{}
	for k, v := range raw {
		var f float64
		if json.Unmarshal(v, &f) == nil {
			m[k] = f
		}
	}
	return m
}

// stderrOf returns what a failed command printed on stderr, for test messages.
func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

// kgagentBinMu guards kgagentBin: parallel tests build it once.
var kgagentBinMu sync.Mutex

// buildBinary builds the real kgagent binary once for the process tests.
func buildBinary(t *testing.T) string {
	t.Helper()
	kgagentBinMu.Lock()
	defer kgagentBinMu.Unlock()
	if kgagentBin != "" {
		if _, err := os.Stat(kgagentBin); err == nil {
			return kgagentBin // (a test may have removed it)
		}
	}
	dir, err := os.MkdirTemp("", "kgagent-test-")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "kgagent")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Stderr = os.Stderr
	if err = cmd.Run(); err != nil {
		t.Fatalf("go build: %v", err)
	}
	kgagentBin = bin
	return bin
}

// TestSignalsAndKill9 runs the real binary: SIGTERM shuts it down cleanly
// and releases the data dir; a kill -9 after an ingestion loses nothing that
// was acknowledged, and the next start opens the same stores.
func TestSignalsAndKill9(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	site := httptest.NewServer(http.FileServer(http.Dir(siteDir)))
	defer site.Close()

	out, err := exec.Command(bin, "ingest", "--data-dir", dir, "--json", site.URL+"/*").Output()
	if err != nil {
		t.Fatalf("ingest: %v: %s", err, stderrOf(err))
	}
	sum := summaryCounts(t, out)
	if sum["pages"] == 0 {
		t.Fatalf("ingest summary %q", out)
	}

	start := func() (*exec.Cmd, string) {
		cmd := exec.Command(bin, "serve", "--data-dir", dir, "--addr", "127.0.0.1:0", "--nats-listen", "127.0.0.1:-1")
		var stdout syncBuffer
		cmd.Stdout = &stdout
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var base string
		poll.Until(t, 20*time.Second, func() error {
			var ok bool
			if base, ok = chatPageURL(stdout.String()); !ok {
				return fmt.Errorf("serve printed %q", stdout.String())
			}
			return nil
		})
		return cmd, base
	}
	collections := func(base string) float64 {
		resp, err := http.Get(base + "/api/v1/collections")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m struct {
			Collections []struct {
				Chunks float64 `json:"chunks"`
			} `json:"collections"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&m)
		if len(m.Collections) == 0 {
			return 0
		}
		return m.Collections[0].Chunks
	}

	cmd, base := start()
	if got := collections(base); got != sum["chunks"] {
		t.Fatalf("chunks after ingest: %v, want %v", got, sum["chunks"])
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v", err)
	}

	cmd, _ = start()                           // the lock was released
	if err := cmd.Process.Kill(); err != nil { // kill -9
		t.Fatal(err)
	}
	_ = cmd.Wait()
	cmd, base = start() // a kill -9 leaves no stale lock behind
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	if got := collections(base); got != sum["chunks"] {
		t.Fatalf("chunks after kill -9 and restart: %v, want %v", got, sum["chunks"])
	}
}
