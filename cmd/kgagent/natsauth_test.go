package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent/gateway"
	"github.com/kgagent/kgagent/internal/natscluster"
	"github.com/kgagent/kgagent/internal/poll"
	"github.com/nats-io/nats.go"
)

// TestEmbeddedNATSRequiresCredentials is finding 2 of issue 11, against the
// real binary: the in-process NATS server refuses clients without the
// credentials `kgagent nats-url` prints (kept 0600 in a 0700 data dir);
// with them, a request without an API key is refused when keys are
// configured, and one with a key is answered; a non-loopback --nats-listen
// without API keys is refused at start.
func TestEmbeddedNATSRequiresCredentials(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	keys := filepath.Join(t.TempDir(), "keys.yaml")
	if err := os.WriteFile(keys, []byte("keys:\n  - name: bot\n    hash: "+gateway.HashKey("s3cret-key")+"\n    scopes: [ask]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := natscluster.FreePort(t)
	cmd := exec.Command(bin, "serve", "--data-dir", dir, "--addr", "127.0.0.1:0", "--nats-listen", "127.0.0.1:"+strconv.Itoa(port), "--api-keys-file", keys)
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	poll.True(t, 30*time.Second, "serve prints its NATS address", func() bool { return strings.Contains(stdout.String(), "NATS: ") })

	plain := "nats://127.0.0.1:" + strconv.Itoa(port)
	if nc, err := nats.Connect(plain, nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("the embedded NATS server accepted a client without credentials")
	} else if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Errorf("no credentials: %v", err)
	}
	if nc, err := nats.Connect(plain, nats.UserInfo("kgagent", "guess"), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("a wrong password was accepted")
	}
	if strings.Contains(stdout.String(), "kgagent:") {
		t.Errorf("serve printed the NATS password: %s", stdout.String())
	}
	// The banner says how to connect: the URL with credentials comes
	// from `kgagent nats-url` on this data dir.
	if want := bin + " nats-url --data-dir " + dir; !strings.Contains(stdout.String(), "NATS: "+plain+" (credentials required: `"+want+"` prints the URL with them)") {
		t.Errorf("serve's NATS line does not say to run %q: %s", want, stdout.String())
	}

	out, err := exec.Command(bin, "nats-url", "--data-dir", dir).Output()
	if err != nil {
		t.Fatalf("nats-url: %v", err)
	}
	url := strings.TrimSpace(string(out))
	nc, err := nats.Connect(url, nats.MaxReconnects(0))
	if err != nil {
		t.Fatalf("connect with %s: %v", url, err)
	}
	defer nc.Close()
	ask := func(hdr nats.Header) gateway.Frame {
		t.Helper()
		inbox := nats.NewInbox()
		sub, err := nc.SubscribeSync(inbox)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
		if err := nc.PublishMsg(&nats.Msg{Subject: "kgagent.request.search", Reply: inbox, Data: []byte(`{"query":"port"}`), Header: hdr}); err != nil {
			t.Fatal(err)
		}
		for {
			m, err := sub.NextMsg(10 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var f gateway.Frame
			if err := json.Unmarshal(m.Data, &f); err != nil {
				t.Fatal(err)
			}
			if f.Complete {
				return f
			}
		}
	}
	if f := ask(nil); f.Error == nil || f.Error.Type != "UNAUTHENTICATED" {
		t.Errorf("NATS request without a key: %+v", f)
	}
	// (the data dir is empty: the search itself answers NOT_FOUND)
	if f := ask(nats.Header{"Authorization": {"Bearer s3cret-key"}}); f.Error != nil && f.Error.Type != "NOT_FOUND" {
		t.Errorf("NATS request with a key: %+v", f.Error)
	}

	// Files: the data dir is 0700, the password and URL files 0600.
	for _, p := range []string{dir, filepath.Join(dir, natsPasswordFile), filepath.Join(dir, natsURLFile), filepath.Join(dir, "jobs.key"), filepath.Join(dir, "agent.db")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is %v: readable by others", p, fi.Mode().Perm())
		}
	}

	// A NATS listener beyond loopback needs API keys.
	bad := exec.Command(bin, "serve", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--nats-listen", "0.0.0.0:"+strconv.Itoa(natscluster.FreePort(t)))
	msg, err := bad.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "nats_listen") {
		t.Errorf("serve --nats-listen 0.0.0.0 without keys: %v %s", err, msg)
	}
}
