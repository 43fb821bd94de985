package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent/internal/testdep"

	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/neo4j"
	"github.com/kgagent/kgagent/internal/poll"
)

// startOwnNeo4j starts a Neo4j of the test's own with deploy/neo4j/start.sh
// (so it can be restarted), with extra environment; it is stopped when the
// test ends. It returns start.sh's exports.
func startOwnNeo4j(t *testing.T, run string, env ...string) map[string]string {
	t.Helper()
	cmd := exec.Command("bash", "../../deploy/neo4j/start.sh", run)
	// C1 only: the JVM starts faster (two starts per test), and the test
	// writes little; a stop waits 1 s, not 2x5 s, for Bolt to drain.
	cmd.Env = append(append(os.Environ(), "NEO4J_TLS=0", "NEO4J_HEAP=512m", "NEO4J_JAVA_OPTS=-XX:TieredStopAtLevel=1", "NEO4J_SHUTDOWN_WAIT=1s"), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("deploy/neo4j/start.sh: %v", err)
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "="); ok {
			vars[k] = v
		}
	}
	return vars
}

// TestFaultNeo4jRestartedMidIngest: `kgagent ingest --graph neo4j` runs
// against a Neo4j of the test's own, which is stopped and started again
// (on its data) while the ingestion writes: the writes retry
// (neo4j_retry_time) and the ingestion ends with no failed page, and the
// graph equals that of a clean run of the same site.
func TestFaultNeo4jRestartedMidIngest(t *testing.T) {
	t.Parallel() // its own processes and ports: the fault tests run side by side
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			testdep.Missing(t, "KGAGENT_REQUIRE_NEO4J", tool+" not found: no Neo4j of our own")
		}
	}
	run := filepath.Join(t.TempDir(), "neo4j")
	t.Cleanup(func() { _ = exec.Command("bash", "../../deploy/neo4j/stop.sh", run).Run() })
	nv := startOwnNeo4j(t, run)
	url := nv["NEO4J_URL"]
	port := url[strings.LastIndex(url, ":")+1:]
	site := slowSite(t, 80*time.Millisecond)
	bin := buildBinary(t)
	ingest := func(collection string) *exec.Cmd {
		cmd := exec.Command(bin, "ingest", "--data-dir", t.TempDir(), "--graph", "neo4j", "--neo4j-url", url, "--neo4j-user", nv["NEO4J_USER"],
			"--neo4j-retry-time", "3m", "--crawl-parallelism", "1", "--collection", collection, "--json", site.URL+"/*")
		cmd.Env = append(os.Environ(), "KGAGENT_NEO4J_PASSWORD="+nv["NEO4J_PASSWORD"])
		return cmd
	}
	// summary is the summary's counters; its list of failed pages
	// ("errors") is left out, and shown when a counter check fails.
	summary := func(out []byte) map[string]float64 { return summaryCounts(t, out) }
	out, err := ingest("clean").Output()
	if err != nil {
		t.Fatalf("clean ingest: %v %s", err, stderrOf(err))
	}
	clean := summary(out)

	cmd := ingest("restarted")
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	g, err := neo4j.Open(ctx, neo4j.Config{URL: url, User: nv["NEO4J_USER"], Password: nv["NEO4J_PASSWORD"]})
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 60*time.Second, func() error {
		ts, err := g.Find(ctx, graphrag.Pattern{Collection: "restarted", Limit: 1})
		if err != nil || len(ts) == 0 {
			return fmt.Errorf("no triples written yet (%v)", err)
		}
		return nil
	})
	g.Close()
	stopped := time.Now()
	if out, err := exec.Command("bash", "../../deploy/neo4j/stop.sh", run).CombinedOutput(); err != nil {
		t.Fatalf("stop.sh: %v %s", err, out)
	}
	startOwnNeo4j(t, run, "NEO4J_KEEP_DATA=1", "NEO4J_PORT="+port)
	down := time.Since(stopped)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("ingest across the restart: %v: %s", err, tail(stderr.String(), 2000))
	}
	restarted := summary([]byte(stdout.String()))
	t.Logf("Neo4j was down %.1fs mid-ingest; clean run %v, restarted run %v", down.Seconds(), clean, restarted)
	if restarted["failed"] != 0 || restarted["pages"] != clean["pages"] || restarted["triples"] != clean["triples"] {
		t.Errorf("ingest across the restart: %v, clean %v; summary %s", restarted, clean, tail(stdout.String(), 2000))
	}
	g, err = neo4j.Open(ctx, neo4j.Config{URL: url, User: nv["NEO4J_USER"], Password: nv["NEO4J_PASSWORD"]})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	read := func(collection string) []string {
		ts, err := g.Find(ctx, graphrag.Pattern{Collection: collection, Limit: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tr := range ts {
			out = append(out, fmt.Sprintf("%s|%s|%s|%s|%s|%s", tr.Subject.ID, tr.Predicate, tr.Object.ID, tr.Literal, tr.DocURL, tr.SourceURL))
		}
		slices.Sort(out)
		return out
	}
	a, b := read("clean"), read("restarted")
	if len(a) == 0 || !slices.Equal(a, b) {
		t.Errorf("graphs differ: clean run %d triples, restarted run %d", len(a), len(b))
	}
}
