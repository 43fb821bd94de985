package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kgagent/kgagent/internal/testdep"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/qdrant"
	"github.com/kgagent/kgagent/corpus/qdrant/qdranttest"
	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/crawler/natsjobs"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/neo4j"
	"github.com/kgagent/kgagent/internal/natscluster"
	"github.com/kgagent/kgagent/internal/poll"
)

// proc is a kgagent process started by a fault test.
type proc struct {
	name   string
	cmd    *exec.Cmd
	out    syncBuffer
	exited chan struct{}
}

// startProc starts the real binary with args and env added to this
// process's environment; it is stopped (SIGTERM) when the test ends.
func startProc(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, exited: make(chan struct{})}
	p.cmd = exec.Command(buildBinary(t), args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", p.name, tail(p.out.String(), 3000))
		}
	})
	return p
}

// kill9 kills the process with SIGKILL and waits until it is gone.
func (p *proc) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// neo4jEnv is the real Neo4j make test starts (deploy/testenv/30-neo4j.sh):
// the test skips without one, or fails with KGAGENT_REQUIRE_NEO4J=1.
func neo4jEnv(t *testing.T) neo4j.Config {
	t.Helper()
	url := testdep.Env(t, "NEO4J_URL", "KGAGENT_REQUIRE_NEO4J", "NEO4J_URL not set: no Neo4j (make test starts one)")
	return neo4j.Config{URL: url, User: os.Getenv("NEO4J_USER"), Password: os.Getenv("NEO4J_PASSWORD")}
}

// startJetStream starts an in-process NATS server with JetStream for the
// test's processes to share.
func startJetStream(t *testing.T) *natsserver.Server { return natscluster.StartServer(t) }

// slowSite serves the sample site with delay per request, so an ingestion
// lasts long enough to be interrupted.
func slowSite(t *testing.T, delay time.Duration) *httptest.Server {
	fs := http.FileServer(http.Dir(siteDir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		fs.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func randSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// waitJobState polls the job's status until it is in state want.
func waitJobState(t *testing.T, q *natsjobs.Queue, id string, d time.Duration, ok func(crawler.JobStatus) bool) crawler.JobStatus {
	t.Helper()
	var st crawler.JobStatus
	poll.Until(t, d, func() error {
		var err error
		st, err = q.Get(context.Background(), id)
		if err != nil || !ok(st) {
			return fmt.Errorf("job %s: %+v %v", id, st, err)
		}
		return nil
	})
	return st
}

// storedSets reads what an ingestion left in the shared stores for
// collection: its pages, its chunks (doc URL, ordinal, hash) and entity
// index entries from the Qdrant stand-in, and its triples from Neo4j, each
// as a sorted list; duplicates are reported as errors.
func storedSets(t *testing.T, srv *qdranttest.Server, ix *qdrant.Index, g *neo4j.Store, collection string) (pages, chunks, entities, triples []string) {
	t.Helper()
	// Chunk ids hash the collection name in, so triples are compared by
	// their chunk's document and ordinal instead.
	chunkKey := map[string]string{}
	read := func(coll string) []string {
		var out []string
		seen := map[string]bool{}
		for _, p := range srv.Payloads(ix.CollectionName(coll)) {
			pos := p["doc_url"].GetStringValue() + "#" + fmt.Sprint(p["ordinal"].GetIntegerValue())
			chunkKey[p["chunk_id"].GetStringValue()] = pos
			k := pos + " " + p["hash"].GetStringValue()
			if seen[k] {
				t.Errorf("%s: chunk %s stored twice", coll, k)
			}
			seen[k] = true
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	chunks = read(collection)
	entities = read(collection + "__entities")
	for _, c := range chunks {
		u, _, _ := strings.Cut(c, "#")
		if len(pages) == 0 || pages[len(pages)-1] != u {
			pages = append(pages, u)
		}
	}
	ts, err := g.Find(context.Background(), graphrag.Pattern{Collection: collection, Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, tr := range ts {
		// Entities are compared by id: a node has one name, set by the
		// write that last named it (a page's title, or the text of a link
		// to it), which depends on the order pages were written in.
		k := fmt.Sprintf("%s|%s|%s|%s|%s|%s|%s", tr.Subject.ID, tr.Predicate, tr.Object.ID, tr.Literal, tr.DocURL, tr.SourceURL, chunkKey[tr.ChunkID])
		if seen[k] {
			t.Errorf("%s: triple %s stored twice", collection, k)
		}
		seen[k] = true
		triples = append(triples, k)
	}
	sort.Strings(triples)
	return pages, chunks, entities, triples
}

// TestFaultWorkerKilledMidIngest: two `kgagent worker` processes share a
// NATS JetStream server, the Qdrant stand-in and a real Neo4j. A clean
// ingestion of the sample site runs first; then a second ingestion of the
// same site into another collection, and the worker running it is killed
// with SIGKILL mid-job. The job finishes on the other worker, and the
// pages, chunks, entity-index entries and triples it stored equal the clean
// run's, with no duplicates.
func TestFaultWorkerKilledMidIngest(t *testing.T) {
	t.Parallel() // its own processes and ports: the fault tests run side by side
	neo := neo4jEnv(t)
	ns := startJetStream(t)
	qs, err := qdranttest.Start(qdranttest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer qs.Close()
	site := slowSite(t, 60*time.Millisecond)
	env := []string{"KGAGENT_NEO4J_PASSWORD=" + neo.Password}
	worker := func(name string) *proc {
		return startProc(t, name, env, "worker", "--data-dir", t.TempDir(), "--nats-url", ns.ClientURL(), "--job-secret", testJobSecret,
			"--index", "qdrant", "--qdrant-addr", qs.Addr(), "--graph", "neo4j", "--neo4j-url", neo.URL, "--neo4j-user", neo.User,
			"--allow-private-ingest", "--job-ack-wait", "2s", "--crawl-parallelism", "1")
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx := context.Background()
	q, err := natsjobs.New(ctx, nc, natsjobs.Config{AckWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sfx := randSuffix()
	clean, fault := "clean"+sfx, "fault"+sfx
	g, err := neo4j.Open(ctx, neo)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	defer func() {
		_ = g.DeleteCollection(context.Background(), clean)
		_ = g.DeleteCollection(context.Background(), fault)
	}()

	a := worker("worker-a")
	spec := func(c string) crawler.Spec { return crawler.Spec{Collection: c, URLs: []string{site.URL + "/*"}} }
	st, err := q.Submit(ctx, spec(clean))
	if err != nil {
		t.Fatal(err)
	}
	done := waitJobState(t, q, st.ID, 90*time.Second, func(s crawler.JobStatus) bool { return s.State == crawler.JobSucceeded })
	t.Logf("clean run: %+v", done.Counters)

	st, err = q.Submit(ctx, spec(fault))
	if err != nil {
		t.Fatal(err)
	}
	mid := waitJobState(t, q, st.ID, 30*time.Second, func(s crawler.JobStatus) bool {
		return s.State == crawler.JobRunning && s.Counters.Indexed >= 3
	})
	worker("worker-b")
	a.kill9(t)
	killed := time.Now()
	t.Logf("killed worker-a with %d of %d pages indexed", mid.Counters.Indexed, done.Counters.Indexed)
	fin := waitJobState(t, q, st.ID, 90*time.Second, func(s crawler.JobStatus) bool {
		return s.State == crawler.JobSucceeded || s.State == crawler.JobFailed
	})
	t.Logf("job finished %.1fs after the kill: %s, %q, %+v", time.Since(killed).Seconds(), fin.State, fin.Message, fin.Counters)
	if fin.State != crawler.JobSucceeded || !strings.Contains(fin.Message, "resumed") || fin.Counters.Failed != 0 {
		t.Fatalf("job after the kill: %+v", fin)
	}

	lex := corpus.NewLexical(corpus.LexicalConfig{})
	ix, err := qdrant.New(ctx, qdrant.Config{Addr: qs.Addr()}, lex.Dimension(), lex.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	cp, cc, ce, ct := storedSets(t, qs, ix, g, clean)
	fp, fc, fe, ft := storedSets(t, qs, ix, g, fault)
	if len(cp) < 20 || len(cc) < len(cp) || len(ct) == 0 {
		t.Fatalf("clean run stored little: %d pages, %d chunks, %d triples", len(cp), len(cc), len(ct))
	}
	for _, s := range []struct {
		what         string
		clean, fault []string
	}{{"pages", cp, fp}, {"chunks", cc, fc}, {"entity index entries", ce, fe}, {"triples", ct, ft}} {
		if !slices.Equal(s.clean, s.fault) {
			var only []string
			for _, x := range s.clean {
				if _, found := slices.BinarySearch(s.fault, x); !found && len(only) < 3 {
					only = append(only, x)
				}
			}
			var onlyF []string
			for _, x := range s.fault {
				if _, found := slices.BinarySearch(s.clean, x); !found && len(onlyF) < 3 {
					onlyF = append(onlyF, x)
				}
			}
			t.Errorf("%s differ: clean run %d, killed run %d; only in the clean run: %q; only in the killed run: %q", s.what, len(s.clean), len(s.fault), only, onlyF)
		}
	}
	t.Logf("clean and killed runs equal: %d pages, %d chunks, %d entity entries, %d triples", len(cp), len(cc), len(ce), len(ct))
}
