package mcp

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
)

// sessionGuard bounds the Streamable HTTP sessions open at once, in all and
// per caller, so one client cannot hold the server's memory with sessions
// it never uses (idle ones also close after the session timeout). A
// request that would open one more session over a bound gets 429
// RATE_LIMITED in the gateway's error format.
type sessionGuard struct {
	s         *Server
	next      http.Handler
	total     int
	perCaller int

	mu     sync.Mutex
	owners map[string]string // session id -> the caller that opened it
}

func (g *sessionGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id := r.Header.Get("Mcp-Session-Id"); r.Method == http.MethodDelete && id != "" {
		rec := &sessionRecorder{ResponseWriter: w}
		g.next.ServeHTTP(rec, r)
		if rec.code < 300 { // ended: its place is free now, though the SDK may list it a moment longer
			g.mu.Lock()
			delete(g.owners, id)
			g.mu.Unlock()
		}
		return
	}
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
		g.next.ServeHTTP(w, r)
		return
	}
	owner := ""
	if g.s.opts.Authenticate != nil && g.s.opts.Owner != nil {
		if ctx, err := g.s.opts.Authenticate(r.Context(), r.Header); err == nil {
			owner = g.s.opts.Owner(ctx)
		}
	}
	listed := map[string]bool{}
	for ss := range g.s.srv.Sessions() {
		if id := ss.ID(); id != "" {
			listed[id] = true
		}
	}
	g.mu.Lock()
	// A session counts while the SDK lists it, this guard saw its id handed
	// out, and no DELETE ended it. The SDK also lists, for a moment, the
	// sessions of requests that get no id (the client's first POST) and
	// sessions a DELETE just ended: neither holds a place.
	live, mine := 0, 0
	for id, o := range g.owners {
		if !listed[id] {
			delete(g.owners, id)
			continue
		}
		live++
		if o == owner {
			mine++
		}
	}
	g.mu.Unlock()
	switch {
	case live >= g.total:
		refuseSessions(w, "the server has "+strconv.Itoa(live)+" MCP sessions open, its limit")
		return
	case mine >= g.perCaller:
		refuseSessions(w, "this caller has "+strconv.Itoa(mine)+" MCP sessions open, the limit per caller; end some (DELETE /mcp with their Mcp-Session-Id) or let them idle out")
		return
	}
	g.next.ServeHTTP(&sessionRecorder{ResponseWriter: w, record: func(id string) {
		g.mu.Lock()
		g.owners[id] = owner
		g.mu.Unlock()
	}}, r)
}

func refuseSessions(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "60")
	w.WriteHeader(http.StatusTooManyRequests)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": "RATE_LIMITED", "message": msg}})
}

// sessionRecorder notes the status of a response and the session id it
// hands out (to record, when set).
type sessionRecorder struct {
	http.ResponseWriter
	record func(id string)
	done   bool
	code   int
}

func (r *sessionRecorder) WriteHeader(code int) {
	if !r.done {
		r.done, r.code = true, code
		if id := r.Header().Get("Mcp-Session-Id"); id != "" && r.record != nil {
			r.record(id)
		}
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *sessionRecorder) Write(b []byte) (int, error) {
	if !r.done {
		r.WriteHeader(http.StatusOK)
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush (server-sent events).
func (r *sessionRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush forwards to the underlying writer.
func (r *sessionRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
