package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent/internal/testdep"
)

// TestNATSCLIAsInReadme runs the README's `nats req` line with the real
// nats CLI (natscli) against the served demo: the answer streams back to the
// CLI's inbox, the last message complete and naming the port. The CLI is
// KGAGENT_TEST_NATS_CLI or `nats` on PATH; make test installs it and sets
// KGAGENT_REQUIRE_NATSCLI=1, so there the test fails instead of skipping.
func TestNATSCLIAsInReadme(t *testing.T) {
	cli := os.Getenv("KGAGENT_TEST_NATS_CLI")
	if cli == "" {
		cli, _ = exec.LookPath("nats")
	}
	if cli == "" {
		testdep.Missing(t, "KGAGENT_REQUIRE_NATSCLI", "the nats CLI is not installed (go install github.com/nats-io/natscli/nats@v0.5.1)")
	}
	// The README's set-up: `make demo` built bin/kgagent and serves the
	// demo on ./kgagent-data. Here: a directory with bin/kgagent (the real
	// binary) and kgagent-data served by serve --demo; the NATS port is
	// random, which `bin/kgagent nats-url` reads from the data dir.
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(buildBinary(t), filepath.Join(home, "bin", "kgagent")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(cli, filepath.Join(home, "bin", "nats")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, "kgagent-data")
	_, logs := startServe(t, "--demo", "--demo-site-dir", siteDir, "--data-dir", dir)
	waitDemoIngested(t, logs)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The line exactly as the README shows it, run by sh in that
	// directory, `nats` found on PATH.
	runLine := func(subject string) string {
		line := readmeNATSLine(t, subject)
		cmd := exec.CommandContext(ctx, "sh", "-c", line)
		cmd.Dir = home
		cmd.Env = append(os.Environ(), "PATH="+filepath.Join(home, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		return string(out)
	}
	s := runLine("kgagent.request.agent")
	if !strings.Contains(s, `"complete":true`) || !strings.Contains(s, "8086") || !strings.Contains(s, `"sources":[{`) {
		t.Fatalf("nats req printed no complete, cited answer naming 8086:\n%s", s)
	}
	// The single-reply line (finding 3 of issue 21): without --replies,
	// nats req waits for one reply, which is the whole answer.
	s = runLine("kgagent.ask.agent")
	if !strings.Contains(s, `"complete":true`) || !strings.Contains(s, "8086") || strings.Contains(s, `"thought"`) {
		t.Fatalf("nats req on kgagent.ask.agent printed no single, complete answer naming 8086:\n%s", s)
	}
}

// readmeNATSLine returns the README's `nats --server … req <subject>` line.
func readmeNATSLine(t *testing.T, subject string) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "nats --server ") && strings.Contains(line, " req "+subject+" ") {
			return line
		}
	}
	t.Fatalf("the README shows no `nats --server … req %s` command", subject)
	return ""
}
