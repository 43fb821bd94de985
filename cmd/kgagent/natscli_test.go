package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	_, logs := startServe(t, "--demo", "--demo-site-dir", siteDir, "--nats-listen", "127.0.0.1:"+strconv.Itoa(port), "--data-dir", dir)
	waitDemoIngested(t, logs)
	// `kgagent nats-url`, as the README runs it.
	var urlOut, urlErr syncBuffer
	if code := run(context.Background(), []string{"nats-url", "--data-dir", dir}, &urlOut, &urlErr, nil); code != 0 {
		t.Fatalf("nats-url: %s", urlErr.String())
	}
	natsURL := strings.TrimSpace(urlOut.String())
	if !strings.HasPrefix(natsURL, "nats://kgagent:") || !strings.HasSuffix(natsURL, "@127.0.0.1:"+strconv.Itoa(port)) {
		t.Fatalf("nats-url printed %q", natsURL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := readmeNATSCommand(t, natsURL)
	out, err := exec.CommandContext(ctx, cli, args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	s := string(out)
	if !strings.Contains(s, `"complete":true`) || !strings.Contains(s, "8086") || !strings.Contains(s, `"sources":[{`) {
		t.Fatalf("nats req printed no complete, cited answer naming 8086:\n%s", s)
	}
}

// readmeNATSCommand returns the README's `nats ... req` line split into
// arguments (single-quoted ones kept whole), with natsURL for the output
// of "$(kgagent nats-url)".
func readmeNATSCommand(t *testing.T, natsURL string) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "nats --server ") || !strings.Contains(line, " req kgagent.request.agent ") {
			continue
		}
		line = strings.Replace(line, `"$(kgagent nats-url)"`, natsURL, 1)
		var args []string
		for rest := strings.TrimSpace(line); rest != ""; rest = strings.TrimSpace(rest) {
			if rest[0] == '\'' {
				end := strings.IndexByte(rest[1:], '\'')
				if end < 0 {
					t.Fatalf("unclosed quote in %q", line)
				}
				args = append(args, rest[1:end+1])
				rest = rest[end+2:]
				continue
			}
			f, r, _ := strings.Cut(rest, " ")
			args, rest = append(args, f), r
		}
		return args
	}
	t.Fatal("the README shows no `nats --server … req kgagent.request.agent` command")
	return nil
}
