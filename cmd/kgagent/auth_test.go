package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgagent/kgagent/gateway"
)

// TestAPIKeysFile serves with an API keys file: no key is refused, the key
// is accepted, and an open API on a non-loopback address is refused at start.
func TestAPIKeysFile(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys.yaml")
	yaml := "keys:\n  - name: bot\n    hash: " + gateway.HashKey("s3cret-key") + "\n    scopes: [ask, ingest, admin]\n"
	if err := os.WriteFile(keys, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _ := startServe(t, "--api-keys-file", keys)
	do := func(key string) int {
		req, _ := http.NewRequest("GET", base+"/api/v1/collections", nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := do(""); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Fatalf("no key: %d", code)
	}
	if code := do("wrong"); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Fatalf("wrong key: %d", code)
	}
	if code := do("s3cret-key"); code != http.StatusOK {
		t.Fatalf("right key: %d", code)
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("keys:\n  - name: x\n    hash: short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb syncBuffer
	code := run(context.Background(), []string{"serve", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--nats-listen", "127.0.0.1:-1", "--api-keys-file", bad}, &out, &errb, testEnv())
	if code == 0 || !strings.Contains(errb.String(), "api_keys_file") {
		t.Fatalf("bad keys file: exit %d, %q", code, errb.String())
	}
	var errOpen syncBuffer
	code = run(context.Background(), []string{"serve", "--data-dir", t.TempDir(), "--addr", "0.0.0.0:0", "--nats-listen", "127.0.0.1:-1"}, &out, &errOpen, testEnv())
	if code == 0 || !strings.Contains(errOpen.String(), "loopback") {
		t.Fatalf("open API on 0.0.0.0: exit %d, %q", code, errOpen.String())
	}
}
