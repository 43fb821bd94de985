package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	crawlersqlite "github.com/kgagent/kgagent/crawler/sqlite"
	"github.com/kgagent/kgagent/internal/poll"
)

// demoRun is one `kgagent serve --demo` on a data dir, run in process.
type demoRun struct {
	base         string
	stdout, logs *syncBuffer
	stop         func() // cancels it (Ctrl-C) and checks it exits 0
}

func startDemo(t *testing.T, dir string) demoRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan int, 1)
	args := []string{"serve", "--demo", "--demo-site-dir", siteDir, "--addr", "127.0.0.1:0", "--nats-listen", "127.0.0.1:-1", "--data-dir", dir, "--shutdown-timeout", "5s"}
	go func() { done <- run(ctx, args, &out, &errb, testEnv()) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case code := <-done:
			if code != 0 || !strings.Contains(out.String(), "kgagent stopped") {
				t.Errorf("serve --demo exited %d on cancel, printed %q: %s", code, out.String(), errb.String())
			}
		case <-time.After(20 * time.Second):
			t.Errorf("serve --demo did not stop")
		}
	}
	t.Cleanup(stop)
	r := demoRun{stdout: &out, logs: &errb, stop: stop}
	poll.Until(t, 30*time.Second, func() error {
		var ok bool
		if r.base, ok = chatPageURL(out.String()); !ok {
			return fmt.Errorf("no chat page URL yet: %s %s", out.String(), errb.String())
		}
		return nil
	})
	waitDemoIngestedWithin(t, &errb, 60*time.Second)
	return r
}

// demoIngested returns the counters of the "demo site ingested" log line.
func demoIngested(t *testing.T, logs string) map[string]string {
	t.Helper()
	i := strings.Index(logs, "demo site ingested")
	if i < 0 {
		t.Fatalf("no demo site ingested line: %s", logs)
	}
	line, _, _ := strings.Cut(logs[i:], "\n")
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(\w+)=(\S+)`).FindAllStringSubmatch(line, -1) {
		out[m[1]] = m[2]
	}
	return out
}

func documentsOf(t *testing.T, base string) float64 {
	t.Helper()
	code, body := get(t, base+"/api/v1/collections/default")
	var c struct {
		Documents float64 `json:"documents"`
	}
	if err := json.Unmarshal([]byte(body), &c); code != 200 || err != nil {
		t.Fatalf("GET /api/v1/collections/default: %d %s", code, body)
	}
	return c.Documents
}

// storedPages lists the page URLs the data dir's crawl state holds (serve
// holds the lock, not the SQLite file: a reader may open it beside it).
func storedPages(t *testing.T, dir string) []string {
	t.Helper()
	st, err := crawlersqlite.Open(filepath.Join(dir, "crawl.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pages, err := st.ListPages(context.Background(), "default")
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, p := range pages {
		urls = append(urls, p.URL)
	}
	slices.Sort(urls)
	return urls
}

// checkURLsAnswer fetches every URL: each must answer 200.
func checkURLsAnswer(t *testing.T, what string, urls []string) {
	t.Helper()
	for _, u := range urls {
		resp, err := http.Get(u)
		if err != nil {
			t.Errorf("%s %s: %v", what, u, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s %s: %d", what, u, resp.StatusCode)
		}
	}
}

// answerSources asks the demo's first questions over REST and returns the
// URLs of every source of every answer.
func answerSources(t *testing.T, base string) []string {
	t.Helper()
	var urls []string
	for _, q := range []string{"What is the default HTTP port of the Lumen server?", "How do I install the Python client?", "How can I check that the server is up?"} {
		b, _ := json.Marshal(map[string]string{"question": q})
		code, m := postJSON(t, base+"/api/v1/agent", string(b))
		srcs, _ := m["sources"].([]any)
		if code != 200 || len(srcs) == 0 {
			t.Fatalf("%q: %d %v", q, code, m)
		}
		for _, s := range srcs {
			if u, _ := s.(map[string]any)["url"].(string); u != "" {
				urls = append(urls, u)
			}
		}
	}
	return urls
}

// TestDemoRestartKeepsCorpus: `serve --demo` stopped (as Ctrl-C does: exit
// 0) and started again on the same data dir serves the sample site on the
// same address, so the re-crawl finds all 35 pages unchanged (0 indexed),
// the collection still holds 35 documents (not a second copy under a new
// port) and every stored page and every source an answer cites answers
// 200. When that address is taken, the next start moves the site and
// forgets the pages of its old address: still 35 documents, none dead.
func TestDemoRestartKeepsCorpus(t *testing.T) {
	dir := t.TempDir()
	first := startDemo(t, dir)
	if c := demoIngested(t, first.logs.String()); c["indexed"] != "35" || c["failed"] != "0" {
		t.Fatalf("first start: %v", c)
	}
	if !strings.Contains(first.stdout.String(), "demo: crawling the sample docs site at ") || !strings.Contains(first.stdout.String(), "demo: ready at "+first.base+"/ (35 pages: 35 indexed, 0 unchanged, 0 failed;") {
		t.Errorf("serve --demo does not say it crawls, then that it is ready: %s", first.stdout.String())
	}
	before := answerSources(t, first.base)
	first.stop()
	pages := storedPages(t, dir)
	if len(pages) != 35 {
		t.Fatalf("the crawl state holds %d pages after the first start, want 35", len(pages))
	}

	second := startDemo(t, dir)
	if c := demoIngested(t, second.logs.String()); c["indexed"] != "0" || c["unchanged"] != "35" || c["removed"] != "0" || c["failed"] != "0" {
		t.Errorf("restart re-indexed: %v", c)
	}
	if n := documentsOf(t, second.base); n != 35 {
		t.Errorf("after a restart the collection holds %v documents, want 35", n)
	}
	if got := storedPages(t, dir); !slices.Equal(got, pages) {
		t.Errorf("pages after the restart differ from before:\n%v\n%v", got, pages)
	}
	checkURLsAnswer(t, "stored page", pages)
	after := answerSources(t, second.base)
	if !slices.Equal(before, after) {
		t.Errorf("the same questions cite other sources after a restart:\n%v\n%v", before, after)
	}
	checkURLsAnswer(t, "cited source", after)
	second.stop()

	// The recorded address is taken: the site moves, its old pages go.
	b, err := os.ReadFile(filepath.Join(dir, demoSiteFile))
	if err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	third := startDemo(t, dir)
	if !strings.Contains(third.logs.String(), "demo site moved") || !strings.Contains(third.logs.String(), "forgotten=35") {
		t.Errorf("no move logged: %s", third.logs.String())
	}
	if n := documentsOf(t, third.base); n != 35 {
		t.Errorf("after the site moved the collection holds %v documents, want 35", n)
	}
	moved := storedPages(t, dir)
	if len(moved) != 35 || strings.HasPrefix(moved[0], "http://"+taken.Addr().String()+"/") {
		t.Errorf("pages after the move: %v", moved)
	}
	checkURLsAnswer(t, "stored page after the move", moved)
	checkURLsAnswer(t, "cited source after the move", answerSources(t, third.base))
}
