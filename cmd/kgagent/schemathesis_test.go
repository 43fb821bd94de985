package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent/internal/testdep"

	"github.com/kgagent/kgagent/gateway"
)

// stFailure is one line of schemathesis's summary: "❌ ST108 Response
// violates schema: 3".
var stFailure = regexp.MustCompile(`(ST\d{3}) ([^:\n]+): (\d+)`)

// stSection is the heading schemathesis prints above an operation's
// findings: "____ POST /api/v1/embeds ____".
var stSection = regexp.MustCompile(`(?m)^_{3,} (.+?) _{3,}$`)

// TestSchemathesis runs schemathesis (PyPI; deploy/testenv/70-schemathesis.sh
// installs it) with --checks all against the real serve's
// /api/v1/openapi.json, bounded in time, once without keys (the document
// then has no security requirements) and once with an admin key. It fails
// on any server error or response that disagrees with the document (ST1xx:
// status codes, content types, schemas) and on any authentication failure
// with keys (ST401); the input-handling findings (ST2xx: a request the
// schema allows refused, or one it forbids accepted) are logged with their
// counts. The websocket route is left out (schemathesis speaks HTTP only).
//
//	KGAGENT_TEST_SCHEMATHESIS=~/.cache/kgagent/venv-schemathesis-4.32.5/bin/schemathesis go test ./cmd/kgagent -run Schemathesis -v
func TestSchemathesis(t *testing.T) {
	st := testdep.Env(t, "KGAGENT_TEST_SCHEMATHESIS", "KGAGENT_REQUIRE_SCHEMATHESIS",
		"schemathesis is not installed (deploy/testenv/70-schemathesis.sh)")
	budget := 60
	if s := os.Getenv("KGAGENT_TEST_SCHEMATHESIS_SECONDS"); s != "" {
		budget, _ = strconv.Atoi(s)
	}
	keys := filepath.Join(t.TempDir(), "keys.yaml")
	if err := os.WriteFile(keys, []byte("keys:\n  - name: st\n    hash: "+gateway.HashKey("schemathesis-key")+"\n    scopes: [admin]\n    daily_limit: 100000000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []struct {
		name  string
		serve []string
		st    []string
	}{
		{"without keys", nil, nil},
		{"with keys", []string{"--api-keys-file", keys}, []string{"-H", "Authorization: Bearer schemathesis-key"}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			base, _ := startServe(t, append([]string{"--daily-query-limit", "100000000"}, mode.serve...)...)
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(budget+120)*time.Second)
			defer cancel()
			args := append([]string{"run", base + "/api/v1/openapi.json", "--checks", "all", "--max-time", strconv.Itoa(budget),
				"--workers", "2", "--seed", "1", "--exclude-path", "/api/v1/socket", "--no-color"}, mode.st...)
			cmd := exec.CommandContext(ctx, st, args...)
			cmd.Env = append(os.Environ(), "SCHEMATHESIS_HOOKS=", "NO_COLOR=1")
			cmd.Dir = t.TempDir() // schemathesis keeps a .schemathesis cache in its working dir
			out, err := cmd.CombinedOutput()
			s := string(out)
			if ctx.Err() != nil {
				t.Fatalf("schemathesis did not finish in time:\n%s", tail(s, 6000))
			}
			if !strings.Contains(s, "Test cases:") {
				t.Fatalf("schemathesis did not run (%v):\n%s", err, tail(s, 6000))
			}
			summary := s[strings.LastIndex(s, "SUMMARY"):]
			for _, m := range stSection.FindAllStringSubmatch(s, -1) {
				t.Logf("schemathesis %s: findings under %s", mode.name, m[1])
			}
			var bad []string
			for _, m := range stFailure.FindAllStringSubmatch(summary, -1) {
				line := m[1] + " " + m[2] + ": " + m[3]
				t.Logf("schemathesis %s: %s", mode.name, line)
				if strings.HasPrefix(m[1], "ST1") || (m[1] == "ST401" && mode.serve != nil) {
					bad = append(bad, line)
				}
			}
			if i := strings.Index(summary, "Test cases:"); i >= 0 {
				t.Logf("schemathesis %s: %s", mode.name, strings.TrimSpace(strings.SplitN(summary[i:], "\n", 3)[1]))
			}
			if len(bad) > 0 {
				t.Errorf("schemathesis %s found server errors or responses that disagree with the document: %v\n%s", mode.name, bad, tail(s, 6000))
			}
		})
	}
}
