package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent/gateway"
	"github.com/kgagent/kgagent/internal/testdep"
)

// TestNATSPythonClient is findings 2 and 3 of issue 21 with nats-py, a
// NATS client of another implementation, against a real `serve --demo`
// and the credential `kgagent nats-url` prints: nc.request() on
// kgagent.ask.agent gets the whole answer in one reply; the frames of
// kgagent.request.agent, read from an inbox, end with complete:true and
// the same answer; subscribing to ">" and joining queue group kgagent on
// kgagent.request.* get "Permissions Violation". The python is
// KGAGENT_TEST_NATSPY (deploy/testenv/83-natspy.sh installs nats-py there
// and sets KGAGENT_REQUIRE_NATSPY=1, so make test fails instead of
// skipping).
func TestNATSPythonClient(t *testing.T) {
	python := os.Getenv("KGAGENT_TEST_NATSPY")
	if python == "" || exec.Command(python, "-c", "import nats").Run() != nil {
		testdep.Missing(t, "KGAGENT_REQUIRE_NATSPY",
			fmt.Sprintf("KGAGENT_TEST_NATSPY (%q) is not a python with nats-py (deploy/testenv/83-natspy.sh installs one)", python))
	}
	script, err := filepath.Abs("testdata/nats_client.py")
	if err != nil {
		t.Fatal(err)
	}
	s := startServeFull(t, "--demo", "--demo-site-dir", siteDir)
	waitDemoIngested(t, s.stderr)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stderr syncBuffer
	cmd := exec.CommandContext(ctx, python, script, s.natsURL)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nats-py client: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	var r struct {
		Single gateway.Frame   `json:"single"`
		Frames []gateway.Frame `json:"frames"`
		Errors []string        `json:"errors"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("nats-py client printed %q: %v", out, err)
	}
	answer := textOf(r.Single.Response.Answer)
	if !r.Single.Complete || r.Single.Error != nil || !strings.Contains(answer, "8086") || r.Single.Response.Sources == nil {
		t.Errorf("nc.request() on kgagent.ask.agent: %+v", r.Single)
	}
	if n := len(r.Frames); n < 2 {
		t.Fatalf("streamed frames: %+v", r.Frames)
	}
	last := r.Frames[len(r.Frames)-1]
	for i, f := range r.Frames {
		if f.Seq != int64(i+1) || f.Complete != (i == len(r.Frames)-1) {
			t.Errorf("frame %d: seq %d complete %v", i, f.Seq, f.Complete)
		}
	}
	if got := textOf(last.Response.Answer); got != answer {
		t.Errorf("streamed answer %q, single reply %q", got, answer)
	}
	joined := strings.ToLower(strings.Join(r.Errors, "\n"))
	for _, want := range []string{`Subscription to ">"`, `Subscription to "kgagent.request.*" using queue "kgagent"`} {
		if !strings.Contains(joined, strings.ToLower("Permissions Violation for "+want)) {
			t.Errorf("nats-py got no Permissions Violation for %s; errors: %s", want, joined)
		}
	}
}

// textOf is the text p points to, or "" for nil (Response.Answer).
func textOf(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
