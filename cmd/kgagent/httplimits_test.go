package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent/gateway"
)

// TestServeHTTPLimits is finding 10 of issue 21, on the real serve with
// small configured limits: an idle keep-alive connection is closed, a
// slow body is cut, an unauthenticated slow body gets its 401 at once (not
// after the read timeout), and a 900 KB header gets 431. On main serve
// built its own http.Server with only ReadHeaderTimeout: all four held.
func TestServeHTTPLimits(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys.yaml")
	if err := os.WriteFile(keys, []byte("keys:\n  - name: bot\n    hash: "+gateway.HashKey("limits-key")+"\n    scopes: [ask]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const readTimeout = 3 * time.Second
	base, _ := startServe(t, "--api-keys-file", keys, "--http-read-timeout", readTimeout.String(),
		"--http-idle-timeout", "300ms", "--http-max-header-bytes", "8192")
	addr := strings.TrimPrefix(base, "http://")
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// closed reports whether the server closes c within d, and when.
	closed := func(c net.Conn, d time.Duration) (bool, time.Duration) {
		start := time.Now()
		_ = c.SetReadDeadline(start.Add(d))
		_, err := io.Copy(io.Discard, c)
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout()), time.Since(start)
	}

	t.Run("idle keep-alive closed", func(t *testing.T) {
		c := dial()
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("healthz: %v %v", resp, err)
		}
		if ok, took := closed(c, 10*time.Second); !ok || took > 5*time.Second {
			t.Errorf("idle connection closed %v after %s, want closed after ~300ms", ok, took)
		}
	})

	t.Run("slow body cut", func(t *testing.T) {
		c := dial()
		fmt.Fprintf(c, "POST /api/v1/agent HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer limits-key\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
		stop := make(chan struct{})
		defer close(stop)
		go func() { // 1 byte every 200 ms: 200 s for the body
			for {
				select {
				case <-stop:
					return
				case <-time.After(200 * time.Millisecond):
				}
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}()
		if ok, took := closed(c, 4*readTimeout); !ok {
			t.Errorf("a slow body still held its connection after %s (read timeout %s)", took, readTimeout)
		}
	})

	t.Run("unauthenticated slow body gets 401 at once", func(t *testing.T) {
		c := dial()
		start := time.Now()
		fmt.Fprintf(c, "POST /api/v1/agent HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
		_ = c.SetReadDeadline(time.Now().Add(2 * readTimeout))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no response: %v", err)
		}
		took := time.Since(start)
		if resp.StatusCode != 401 || took >= readTimeout/2 {
			t.Errorf("got %d after %s, want 401 well before the read timeout (%s)", resp.StatusCode, took, readTimeout)
		}
		if ok, _ := closed(c, readTimeout/2); !ok {
			t.Error("the connection stayed open for the rest of the body")
		}
	})

	t.Run("oversized header 431", func(t *testing.T) {
		c := dial()
		go fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 900<<10))
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("900 KB header: %v %v, want 431", resp, err)
		}
	})
}
