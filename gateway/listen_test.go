package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"
)

// startLimited serves h with NewHTTPServer(h, l) on a loopback port.
func startLimited(t *testing.T, h http.Handler, l HTTPLimits) string {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = NewHTTPServer(h, l)
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.Listener.Addr().String()
}

// dialRaw opens a TCP connection to addr, closed when the test ends.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedWithin reports whether the server closes c within d (reading and
// discarding whatever it sends), and how long that took.
func closedWithin(c net.Conn, d time.Duration) (bool, time.Duration) {
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false, time.Since(start)
	}
	return true, time.Since(start)
}

// TestHTTPIdleConnectionClosed: a keep-alive connection that sends no next
// request is closed after IdleTimeout.
func TestHTTPIdleConnectionClosed(t *testing.T) {
	addr := startLimited(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }),
		HTTPLimits{IdleTimeout: 200 * time.Millisecond})
	c := dialRaw(t, addr)
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("first request: %v %v", resp, err)
	}
	resp.Body.Close()
	if closed, took := closedWithin(c, 5*time.Second); !closed || took > 3*time.Second {
		t.Errorf("idle keep-alive connection: closed %v after %s, want closed after ~200ms", closed, took)
	}
}

// TestHTTPSlowBodyCut: a body sent a byte at a time is cut at ReadTimeout;
// the handler gets an error, not the body.
func TestHTTPSlowBodyCut(t *testing.T) {
	got := make(chan error, 1)
	addr := startLimited(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		got <- err
		if err != nil {
			http.Error(w, "slow", http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}), HTTPLimits{ReadTimeout: 300 * time.Millisecond})
	c := dialRaw(t, addr)
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
	stop := make(chan struct{})
	defer close(stop)
	go func() { // one byte every 50 ms: 5 s for the whole body
		for i := 0; i < 100; i++ {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if _, err := c.Write([]byte("a")); err != nil {
				return
			}
		}
	}()
	select {
	case err := <-got:
		if err == nil {
			t.Fatal("the handler read the whole slow body")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the slow body was not cut within 3 s (ReadTimeout 300 ms)")
	}
	if closed, _ := closedWithin(c, 3*time.Second); !closed {
		t.Error("the connection of the slow body stayed open")
	}
}

// TestHTTPErrorBeforeBodyIsPrompt: a response written before the body was
// read (a 401 to an unauthenticated upload) does not wait for a slow body:
// it arrives at once, long before ReadTimeout, and the connection closes.
func TestHTTPErrorBeforeBodyIsPrompt(t *testing.T) {
	addr := startLimited(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "credentials required", http.StatusUnauthorized)
	}), HTTPLimits{ReadTimeout: 20 * time.Second})
	c := dialRaw(t, addr)
	start := time.Now()
	fmt.Fprintf(c, "POST /api/v1/agent HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no response to the slow unauthenticated body within 5 s: %v", err)
	}
	if resp.StatusCode != 401 || time.Since(start) > 3*time.Second {
		t.Errorf("got %d after %s, want 401 at once", resp.StatusCode, time.Since(start))
	}
	if closed, _ := closedWithin(c, 3*time.Second); !closed {
		t.Error("the connection stayed open waiting for the rest of the body")
	}
}

// TestHTTPHeaderCap: headers over MaxHeaderBytes get 431.
func TestHTTPHeaderCap(t *testing.T) {
	addr := startLimited(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }), HTTPLimits{})
	c := dialRaw(t, addr)
	go func() {
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 900<<10))
	}()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("900 KB header: %v", err)
	}
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("900 KB header: %d, want 431", resp.StatusCode)
	}
}

// TestHTTPWriteTimeoutSparesStreamsAndLongAnswers: a response not written
// within WriteTimeout is cut; a response that flushes (a stream) runs on
// past it; and a long answer after its body was read is not cut by the
// read deadline (its context stays alive, its connection is reused).
func TestHTTPWriteTimeoutSparesStreamsAndLongAnswers(t *testing.T) {
	const limit = 300 * time.Millisecond
	mux := http.NewServeMux()
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * limit)
		_, _ = io.WriteString(w, "late")
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for i := 0; i < 3; i++ {
			fmt.Fprintf(w, "data: %d\n\n", i)
			if err := rc.Flush(); err != nil {
				return
			}
			time.Sleep(limit)
		}
	})
	mux.HandleFunc("/answer", func(w http.ResponseWriter, r *http.Request) {
		var q struct{ Q string }
		if r.URL.Query().Has("all") {
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &q)
		} else {
			_ = jsonDecode(r.Body, &q)
		}
		time.Sleep(2 * limit) // longer than the read timeout, shorter than the write one
		if r.Context().Err() != nil {
			http.Error(w, "canceled", 500)
			return
		}
		fmt.Fprintf(w, "answer to %s", q.Q)
	})
	addr := startLimited(t, mux, HTTPLimits{ReadTimeout: limit, WriteTimeout: 4 * limit})
	base := "http://" + addr
	client := &http.Client{Timeout: 10 * time.Second}

	// /slow is within the write timeout only when it is long: use one of
	// 4x the limit for /answer, and check /slow against a server whose
	// write timeout is shorter than its sleep.
	slowAddr := startLimited(t, mux, HTTPLimits{WriteTimeout: limit})
	if resp, err := client.Get("http://" + slowAddr + "/slow"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) == "late" {
			t.Errorf("a response after the write timeout arrived: %d %q", resp.StatusCode, b)
		}
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + slowAddr + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Count(string(b), "data: ") != 3 {
		t.Errorf("stream cut by the write timeout: %q", b)
	}

	for i, path := range []string{"/answer?all", "/answer", "/answer"} {
		reused := false
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) { reused = ci.Reused }})
		req, _ := http.NewRequestWithContext(ctx, "POST", base+path, strings.NewReader(`{"q":"x"}`+"\n"))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "answer to x" {
			t.Errorf("long answer %d: %d %q", i, resp.StatusCode, b)
		}
		if i == 2 && !reused {
			t.Error("the connection was not kept alive after an answer whose body had a newline left unread")
		}
	}
}

// jsonDecode decodes one JSON value from r, leaving what follows unread
// (as handlers using json.Decoder do).
func jsonDecode(r io.Reader, v any) error {
	return json.NewDecoder(r).Decode(v)
}

// TestHTTPStreamsOutliveWriteTimeout: on the gateway's own routes behind
// NewHTTPServer, a websocket and an OpenAI SSE stream keep working past
// the write and read timeouts: their answers come after both.
func TestHTTPStreamsOutliveWriteTimeout(t *testing.T) {
	const limit = 300 * time.Millisecond
	limits := HTTPLimits{ReadTimeout: limit, WriteTimeout: limit}
	f := newFixture(t, Config{})
	base := "http://" + startLimited(t, f.srv.Handler(), limits)
	c := dialSocket(t, base, "")
	time.Sleep(2 * limit)
	send(t, c, `{"id":"late","service":"agent","request":{"question":"block then answer"}}`)
	time.Sleep(2 * limit) // the answer blocks past both timeouts
	f.asker.unblock()
	got := readUntilComplete(t, c, "late")["late"]
	if last := got[len(got)-1]; last.Error != nil || last.Response.Answer == nil {
		t.Errorf("websocket answer after the timeouts: %+v", last)
	}

	g := newFixture(t, Config{})
	base = "http://" + startLimited(t, g.srv.Handler(), limits)
	go func() { time.Sleep(3 * limit); g.asker.unblock() }()
	resp, err := http.Post(base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"kgagent","stream":true,"messages":[{"role":"user","content":"block then answer"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "data: [DONE]") {
		t.Errorf("SSE stream past the write timeout: %d %q", resp.StatusCode, b)
	}
}
