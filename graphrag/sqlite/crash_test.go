package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/graphtest"
	"github.com/kgagent/kgagent/graphrag/sqlite"
)

const crashEnv = "GRAPHRAG_SQLITE_CRASH_WRITER"

// TestMain lets the test binary double as the writer process that
// TestCrashSafety kills.
func TestMain(m *testing.M) {
	if path := os.Getenv(crashEnv); path != "" {
		crashWriter(path)
		return
	}
	os.Exit(m.Run())
}

// crashWriter rewrites three documents forever, each round's triples all
// tagged with the round, until it is killed.
func crashWriter(path string) {
	s, err := sqlite.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := startBulk(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for round := 0; ; round++ {
		for d := range 3 {
			doc := fmt.Sprintf("https://x.test/%d.html", d)
			var ts []kgagent.Triple
			for i := range 40 {
				ts = append(ts, graphtest.T("c", doc, fmt.Sprintf("d%d", d), "links_to", fmt.Sprintf("r%d n%d d%d", round, i, d), ""))
			}
			if err := s.ReplaceDocument(context.Background(), "c", doc, ts); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			if round == 0 && d == 2 {
				fmt.Println("ready")
			}
		}
	}
}

// killWriter runs crashWriter on path in a child process (with env added
// to its environment), waits until it wrote its first round (failing when
// it did not and mustStart is set), lets it run for d and kills it.
func killWriter(t *testing.T, path string, mustStart bool, d time.Duration, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), crashEnv+"="+path), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil && mustStart {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("writer did not start: %v", err)
	}
	time.Sleep(d)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// TestCrashSafety kills a writer mid-transaction (SIGKILL) several times and
// checks that every document holds exactly one complete round of triples.
func TestCrashSafety(t *testing.T) {
	path := filepath.Join(t.TempDir(), "graph.db")
	for kill := range 3 {
		killWriter(t, path, kill == 0, time.Duration(50+kill*70)*time.Millisecond) // let it get into later rounds

		s, err := sqlite.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		checkOneRound(t, s, fmt.Sprintf("kill %d", kill))
		s.Close()
	}
}

// checkOneRound checks that every document crashWriter writes holds
// exactly one complete round of triples, and the entities those hold.
func checkOneRound(t *testing.T, s *sqlite.Store, what string) {
	t.Helper()
	for d := range 3 {
		got, err := s.Find(t.Context(), graphrag.Pattern{Collection: "c", S: fmt.Sprintf("d%d", d), Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 40 {
			t.Errorf("%s, doc %d: %d triples, want 40", what, d, len(got))
			continue
		}
		round, _, _ := strings.Cut(got[0].Object.Name, " ")
		for _, tr := range got {
			if !strings.HasPrefix(tr.Object.Name, round+" ") {
				t.Errorf("%s, doc %d: mixed rounds %q and %q", what, d, round, tr.Object.Name)
				break
			}
		}
	}
	if n, e, err := s.Stats(t.Context(), "c"); err != nil || n != 120 || e != 3+120 {
		t.Errorf("%s: stats %d triples, %d entities, %v; want 120, 123", what, n, e, err)
	}
}
