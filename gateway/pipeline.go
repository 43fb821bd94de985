package gateway

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
)

// The request pipeline. Every transport — REST, the websocket, NATS
// (gateway/natsapi), the agent protocol, the OpenAI API, GraphQL, and any
// handler mounted beside them — runs a request the same way, once:
//
//  1. authenticate: Authenticate / AuthenticateRequest (or the route's
//     require) gives the Principal;
//  2. admission: the scope, the flow, the request's validation, the collection
//     (one name rule, the key's collections), the session's owner, then
//     one query charged to the daily limit (Limiter);
//  3. the request timeout is set, and the service runs, a panic in it
//     turned into an INTERNAL error;
//  4. the call is counted (kgagent_calls_total) by service and code.
//
// call does 2 to 4, for every transport: Run (REST service routes, the
// websocket, NATS), Calls (MCP), the OpenAI and session routes, GraphQL
// and the agent protocol's funcs. A stream another replica took over runs
// steps 3 and 4 only (Call.recorded).

// Bucket is one daily-limit counter: a key ("key:<name>", "user:<id>",
// "anon:agent:<aid>" or "anon:token:<sha256>" for a JWT without sub) and
// its limit.
type Bucket struct {
	Key   string
	Limit int
}

// Limiter counts queries per bucket and UTC day. The default, used when
// Config.Limiter is nil, counts in this process's memory; a deployment with
// several replicas plugs in a shared one so the limits hold across them.
type Limiter interface {
	// Take counts one query in every bucket for day ("2006-01-02", UTC),
	// all or none: when a bucket has reached its limit nothing is counted,
	// and that bucket is returned with ok false. err is for a store that
	// cannot be reached (the request then fails UNAVAILABLE).
	Take(ctx context.Context, day string, buckets []Bucket) (full Bucket, ok bool, err error)
}

// memLimiter is the in-memory Limiter: counts of the current day only.
type memLimiter struct {
	mu     sync.Mutex
	day    string
	counts map[string]int
}

// NewMemLimiter returns the in-process Limiter (the default).
func NewMemLimiter() Limiter { return &memLimiter{counts: map[string]int{}} }

func (l *memLimiter) Take(_ context.Context, day string, buckets []Bucket) (Bucket, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if day != l.day {
		l.day, l.counts = day, map[string]int{}
	}
	for _, b := range buckets {
		if l.counts[b.Key] >= b.Limit {
			return b, false, nil
		}
	}
	for _, b := range buckets {
		l.counts[b.Key]++
	}
	return Bucket{}, true, nil
}

// charge counts one query of p; over a daily limit it fails with
// ERATELIMIT and a retry_after_s detail (seconds to the next UTC day).
func (s *Server) charge(ctx context.Context, p *Principal) error {
	bs := p.buckets(s.cfg.DailyLimit)
	if len(bs) == 0 {
		return nil
	}
	now := s.now().UTC()
	full, ok, err := s.limiter.Take(ctx, now.Format("2006-01-02"), bs)
	if err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "the daily limit store is unavailable")
	}
	if ok {
		return nil
	}
	next := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	e := kgagent.Errorf(kgagent.ERATELIMIT, "daily query limit of %d reached", full.Limit)
	e.Details = map[string]any{"retry_after_s": int(next.Sub(now).Seconds()) + 1, "limit": full.Limit}
	return e
}

// admission is what call checks of one request before running it.
type admission struct {
	id      string   // the request id, for the log
	scope   Scope    // needed scope
	service string   // the service (a Service* name, or serviceFunc): the metrics label
	flow    string   // for service calls
	req     *Request // validated for service, its collection resolved in place; nil: none
	charge  bool     // count one query
	// admitted: the call was admitted on the replica that started it (a
	// stream taken over): nothing is checked or charged again, and ctx
	// carries its recorded deadline.
	admitted bool
	// slot: fn answers with the agent, once one of Config.MaxAnswers
	// answer slots is free (the wait ends with the request timeout); the
	// slot is held until fn returns.
	slot bool
}

// refuseScope is admission's scope check of a service call on an HTTP
// route, run before the route reads the request's body: a key without the
// ask scope is refused (403, counted like every refusal, by call itself)
// before the body's validation (400) or the model's lookup (404) could
// tell it anything. It returns nil for a key that holds the scope (or no
// key: the route's require answered that), and call checks it again only
// as part of the same admission.
func (s *Server) refuseScope(r *http.Request, service string) error {
	p := principalFrom(r.Context())
	if p == nil || p.has(ScopeAsk) {
		return nil
	}
	return s.call(r.Context(), p, admission{id: requestID(r.Context()), scope: ScopeAsk, service: service}, func(context.Context) error { return nil })
}

// serviceFunc is the service label of agent-protocol func calls.
const serviceFunc = "func"

// call is the one call path of every transport (REST, the websocket, NATS,
// the OpenAI API, sessions, GraphQL, MCP through Calls, the agent
// protocol's funcs): it admits the call of p (skipped for a call
// admitted elsewhere), runs fn with the request timeout, turns a panic in
// fn into an INTERNAL error so one bad request never takes the server
// down, and counts the call, admitted or refused, in kgagent_calls_total
// by service and code. Transports only decode the request before and
// encode what fn produced after.
func (s *Server) call(ctx context.Context, p *Principal, a admission, fn func(context.Context) error) (err error) {
	start := time.Now()
	defer s.activity.begin()()
	defer func() { s.metrics.observeCall(a.service, kgagent.ErrorCode(err), time.Since(start)) }()
	if !a.admitted {
		// Admission: the pipeline's checks for p, in the order every
		// transport shares; then ctx carries p and the request timeout.
		if p == nil {
			return kgagent.Errorf(kgagent.EUNAUTH, "credentials required")
		}
		if !p.has(a.scope) {
			return kgagent.Errorf(kgagent.EFORBIDDEN, "this key lacks the %q scope", a.scope)
		}
		ctx = withPrincipal(ctx, p)
		if a.req != nil {
			if err := s.checkFlow(a.flow); err != nil {
				return err
			}
			if err := a.req.validate(a.service); err != nil {
				return err
			}
			col, err := p.collection(a.req.Collection)
			if err != nil {
				return err
			}
			a.req.Collection = col
			if err := s.checkSession(ctx, a.req.SessionID); err != nil {
				return err
			}
		}
		if a.charge {
			if err := s.charge(ctx, p); err != nil {
				return err
			}
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.RequestTimeout)
		defer cancel()
	}
	if a.slot && s.answers != nil {
		select {
		case s.answers <- struct{}{}:
		case <-ctx.Done():
			return kgagent.WrapError(kgagent.ErrorCode(ctx.Err()), ctx.Err(), "gave up waiting for a free answer slot")
		}
		defer func() { <-s.answers }()
	}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v) // net/http's way to abort a response: not a bug
			}
			s.log.ErrorContext(ctx, "panic in service call", "panic", v, "service", a.service, "request_id", a.id)
			err = kgagent.WrapError(kgagent.EINTERNAL, fmt.Errorf("panic: %v", v), "internal error")
		}
	}()
	return fn(ctx)
}

// callerOf is the agent's view of p: its JWT is kept for remote agents
// only when Config.ForwardCallerToken says so.
func (s *Server) callerOf(p *Principal) (c agent.Caller) {
	c = p.caller
	if !s.cfg.ForwardCallerToken {
		c.Token = ""
	}
	return c
}

// Run executes c through the pipeline (serve), sending its response
// frames in order to send (seq is left for the caller to set); the last
// frame has Complete set, an error frame included. c.Principal nil is the
// anonymous caller, refused when auth is on. send must not block for
// long. Run returns when the call is done.
func (s *Server) Run(ctx context.Context, c Call, send func(Frame)) {
	err := s.serve(ctx, c, func(resp Response, complete bool) {
		send(Frame{ID: c.ID, Response: resp, Complete: complete})
	})
	if err != nil {
		send(errorFrame(c.ID, err))
	}
}
