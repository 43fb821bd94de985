package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// BindAddr returns the address to listen on: addr itself when auth is
// enabled, else addr with its host replaced by 127.0.0.1 (an open API must not
// be reachable from other machines), with a note to log saying so ("" when
// addr is kept).
func (c Config) BindAddr(addr string) (string, string) {
	if c.AuthEnabled() {
		return addr, ""
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = addr, "0"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() || host == "localhost" {
		return addr, "no API keys or JWT configured: the API is open, serving on loopback only"
	}
	return net.JoinHostPort("127.0.0.1", port), "no API keys or JWT configured: binding to loopback only instead of " + addr + "; configure API keys to serve other machines"
}

// HTTPLimits bound what one client connection may hold of a server, on
// every HTTP listener (NewHTTPServer). The zero value takes the defaults
// given.
type HTTPLimits struct {
	// ReadTimeout is how long a client may take to send a request: its
	// line, headers and body (headers alone get at most 10 s). A body
	// still arriving then is cut. Default 30s.
	ReadTimeout time.Duration
	// WriteTimeout is how long a request may take from its headers to the
	// end of its response. Streams are exempt: a response that flushes
	// (SSE, Streamable HTTP) loses the deadline at its first flush, and a
	// websocket when it is upgraded. Keep it above the question timeout
	// (Config.RequestTimeout, 2m). Default 2m30s.
	WriteTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its next
	// request. Default 60s.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps a request's line and headers; a larger one gets
	// 431. Default 64 KiB.
	MaxHeaderBytes int
}

func (l *HTTPLimits) fill() {
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = 30 * time.Second
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = 150 * time.Second
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = time.Minute
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = 64 << 10
	}
}

// NewHTTPServer returns the http.Server of every kgagent HTTP listener,
// serving h within l: read, write and idle timeouts and a header cap.
//
// The read deadline covers the request's headers and body only (net/http
// lifts it once the body has been read, so a long answer is not cut by
// it), and an error response written before the body was read (a 401 to a
// slow unauthenticated upload) does not wait for the rest of it: the
// connection is closed after that response instead.
func NewHTTPServer(h http.Handler, l HTTPLimits) *http.Server {
	l.fill()
	return &http.Server{
		Handler:           deadlines(h),
		ReadHeaderTimeout: min(10*time.Second, l.ReadTimeout),
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
}

// deadlines adjusts the connection deadlines NewHTTPServer sets for each
// request: an error answered before the body was read ends the reading,
// and a stream's first flush lifts the write deadline.
func deadlines(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w)}
		if r.Body == nil || r.Body == http.NoBody {
			dw.bodyDone.Store(true)
		} else {
			r.Body = &watchedBody{ReadCloser: r.Body, done: &dw.bodyDone}
		}
		h.ServeHTTP(dw, r)
	})
}

// watchedBody notes when the body has been read to its end.
type watchedBody struct {
	io.ReadCloser
	done *atomic.Bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.done.Store(true)
	}
	return n, err
}

// deadlineWriter is the ResponseWriter of deadlines.
type deadlineWriter struct {
	http.ResponseWriter
	rc       *http.ResponseController
	bodyDone atomic.Bool
	wrote    atomic.Bool // the response's header was written
	flushed  atomic.Bool // the response flushed: a stream
}

// header runs before the response's header is written. An error response
// to a request whose body was not read to its end does not wait for the
// rest of it (net/http would read up to 256 KiB of it, as slowly as the
// client sends it, before the response and again at its end): reading
// ends now, and the connection is closed after the response.
func (w *deadlineWriter) header(status int) {
	if status < 200 || !w.wrote.CompareAndSwap(false, true) { // 1xx are not the response
		return
	}
	if status >= 400 && !w.bodyDone.Load() {
		w.Header().Set("Connection", "close")
		_ = w.rc.SetReadDeadline(time.Now())
	}
}

func (w *deadlineWriter) WriteHeader(code int) {
	w.header(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(b []byte) (int, error) {
	w.header(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

// FlushError flushes; the first flush marks the response a stream, which
// the write deadline no longer bounds.
func (w *deadlineWriter) FlushError() error {
	w.header(http.StatusOK)
	if w.flushed.CompareAndSwap(false, true) {
		_ = w.rc.SetWriteDeadline(time.Time{})
	}
	return w.rc.Flush()
}

// Flush is FlushError for http.Flusher callers.
func (w *deadlineWriter) Flush() { _ = w.FlushError() }

// Hijack hands the connection over (the websocket upgrader clears its
// deadlines).
func (w *deadlineWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return w.rc.Hijack()
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
