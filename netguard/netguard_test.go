package netguard

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kgagent/kgagent"
)

func TestBlocked(t *testing.T) {
	tests := []struct {
		ip   string
		want bool
	}{
		{"127.0.0.1", true}, {"127.0.0.2", true}, {"10.1.2.3", true}, {"172.16.0.1", true}, {"192.168.1.1", true},
		{"169.254.169.254", true}, {"0.0.0.0", true}, {"100.64.1.1", true}, {"::1", true},
		{"fe80::1", true}, {"fc00::1", true}, {"::ffff:127.0.0.1", true}, {"::ffff:169.254.169.254", true}, {"224.0.0.1", true},
		{"64:ff9b::7f00:1", true}, {"2002:7f00:1::", true},
		{"8.8.8.8", false}, {"93.184.216.34", false}, {"2606:4700::1111", false}, {"::ffff:8.8.8.8", false},
	}
	for _, tt := range tests {
		if got := Blocked(netip.MustParseAddr(tt.ip)); got != tt.want {
			t.Errorf("Blocked(%s) = %v, want %v", tt.ip, got, tt.want)
		}
	}
}

// secretServer counts the requests that reach it.
func secretServer(t *testing.T, addr string) (string, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.WriteString(w, "the secret")
	}))
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, &hits
}

// TestClientRefusesInternalAddresses is finding 1 of issue 11: every form of
// an internal address is refused before or at dial time and the server is
// never reached, while an allowed private host is.
func TestClientRefusesInternalAddresses(t *testing.T) {
	base, hits := secretServer(t, "127.0.0.1:0")
	port := base[strings.LastIndexByte(base, ':')+1:]
	hc := DefaultClient()
	for _, u := range []string{
		base + "/secret",
		"http://localhost:" + port + "/secret",
		"http://2130706433:" + port + "/secret", // decimal 127.0.0.1
		"http://0x7f000001:" + port + "/secret", // hex
		"http://0177.0.0.1:" + port + "/secret", // octal
		"http://127.1:" + port + "/secret",      // short form
		"http://[::ffff:127.0.0.1]:" + port + "/secret",
		"http://[::1]:" + port + "/secret",
		"http://169.254.169.254/latest/meta-data/",
		"http://[::ffff:a9fe:a9fe]/latest/meta-data/",
		"http://0.0.0.0:" + port + "/secret",
	} {
		resp, err := hc.Get(u)
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: fetched (%d)", u, resp.StatusCode)
			continue
		}
		if !errors.Is(err, ErrBlocked) || kgagent.ErrorCode(err) != kgagent.EFORBIDDEN {
			t.Errorf("%s: %v, want a FORBIDDEN refusal", u, err)
		}
	}
	for _, u := range []string{"ftp://example.com/x", "file:///etc/passwd", "gopher://127.0.0.1/"} {
		if _, err := hc.Get(u); err == nil || kgagent.ErrorCode(err) != kgagent.EINVALID {
			t.Errorf("%s: %v, want INVALID_ARGUMENT", u, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the internal server was reached %d times", n)
	}

	// The dial-time check catches names that resolve to loopback even when
	// the URL check is skipped (DNS rebinding: the name was public a
	// moment ago).
	g, _ := New(Config{})
	raw := &http.Client{Transport: g.Transport(Config{})}
	if _, err := raw.Get("http://localhost:" + port + "/secret"); !errors.Is(err, ErrBlocked) {
		t.Errorf("transport dialled localhost: %v", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the internal server was reached %d times", n)
	}

	// An operator's allowed private host is reached.
	allowed, err := NewClient(Config{AllowedPrivateHosts: []string{"127.0.0.0/8"}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := allowed.Get(base + "/secret")
	if err != nil {
		t.Fatalf("allowed host: %v", err)
	}
	resp.Body.Close()
	if hits.Load() != 1 {
		t.Errorf("allowed host not reached")
	}
}

// TestRedirectIntoBlockedRange: a redirect from an allowed host to a
// blocked address is refused, and the blocked server never sees a request.
func TestRedirectIntoBlockedRange(t *testing.T) {
	secret, hits := secretServer(t, "127.0.0.2:0")
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, secret+"/secret", http.StatusFound)
	}))
	defer front.Close()
	hc, err := NewClient(Config{AllowedPrivateHosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(context.Background(), "GET", front.URL, nil)
	resp, err := hc.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("redirect followed: %d", resp.StatusCode)
	}
	if !errors.Is(err, ErrBlocked) {
		t.Errorf("redirect: %v", err)
	}
	if hits.Load() != 0 {
		t.Error("blocked server reached through a redirect")
	}
}

func TestBadAllowedHost(t *testing.T) {
	for _, h := range []string{"10.0.0.0/99", "bad host", "a/b/c"} {
		if _, err := New(Config{AllowedPrivateHosts: []string{h}}); kgagent.ErrorCode(err) != kgagent.EINVALID {
			t.Errorf("%q: %v", h, err)
		}
	}
}

func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1/", "http://2130706433/", "https://example.com/x", "http://[::1]/", "http://0x7f.1/"} {
		f.Add(s)
	}
	g, _ := New(Config{})
	f.Fuzz(func(t *testing.T, raw string) {
		err := g.CheckURL(raw)
		if err != nil {
			if c := kgagent.ErrorCode(err); c != kgagent.EINVALID && c != kgagent.EFORBIDDEN {
				t.Fatalf("code %s", c)
			}
			return
		}
		// an accepted URL with an IP literal host is never a blocked address
		if a, perr := netip.ParseAddr(strings.Trim(hostOf(raw), "[]")); perr == nil && Blocked(a) {
			t.Fatalf("accepted %q", raw)
		}
	})
}

func hostOf(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 {
		return ""
	}
	h := raw[i+3:]
	if j := strings.IndexAny(h, "/?#"); j >= 0 {
		h = h[:j]
	}
	if j := strings.LastIndexByte(h, '@'); j >= 0 {
		h = h[j+1:]
	}
	if hh, _, err := net.SplitHostPort(h); err == nil {
		return hh
	}
	return h
}
