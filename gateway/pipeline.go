package gateway

import (
	"context"
	"fmt"
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
//  2. admit: the scope, the flow, the request's validation, the collection
//     (one name rule, the key's collections), the session's owner, then
//     one query charged to the daily limit (Limiter);
//  3. the request timeout is set, and the service runs.
//
// Run does 2 and 3 for service calls; admit is the shared step 2. A
// stream another replica took over runs step 3 only (runAdmitted).

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

// admission is what admit checks of one request.
type admission struct {
	scope   Scope    // needed scope
	service string   // a service name, or "" for calls that are not service calls
	flow    string   // for service calls
	req     *Request // validated for service, its collection resolved in place; nil: none
	charge  bool     // count one query
}

// admit runs the pipeline's checks for p in the order every transport
// shares, and returns ctx with p and the request timeout set.
func (s *Server) admit(ctx context.Context, p *Principal, a admission) (context.Context, context.CancelFunc, error) {
	if p == nil {
		return ctx, func() {}, kgagent.Errorf(kgagent.EUNAUTH, "credentials required")
	}
	if !p.has(a.scope) {
		return ctx, func() {}, kgagent.Errorf(kgagent.EFORBIDDEN, "this key lacks the %q scope", a.scope)
	}
	ctx = withPrincipal(ctx, p)
	if a.service != "" {
		if err := s.checkFlow(a.flow); err != nil {
			return ctx, func() {}, err
		}
		if err := a.req.validate(a.service); err != nil {
			return ctx, func() {}, err
		}
	}
	if a.req != nil {
		col, err := p.collection(a.req.Collection)
		if err != nil {
			return ctx, func() {}, err
		}
		a.req.Collection = col
		if err := s.checkSession(ctx, a.req.SessionID); err != nil {
			return ctx, func() {}, err
		}
	}
	if a.charge {
		if err := s.charge(ctx, p); err != nil {
			return ctx, func() {}, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	return ctx, cancel, nil
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

// Run executes c through the pipeline (admit, then the service with the
// request timeout), sending its response frames in order to send (seq is
// left for the caller to set); the last frame has Complete set. c.Principal
// nil is the anonymous caller, refused when auth is on. send must not block
// for long. Run returns when the call is done.
func (s *Server) Run(ctx context.Context, c Call, send func(Frame)) {
	s.run(ctx, c, send, s.runCall)
}

// run runs c with call (runCall, or runAdmitted for a takeover), sending
// its frames and an error frame to send.
func (s *Server) run(ctx context.Context, c Call, send func(Frame), call func(context.Context, Call, func(map[string]any, bool)) error) {
	start := time.Now()
	if !services[c.Service] {
		// Refused before the name becomes a metrics label: the label
		// set stays bounded whatever clients send (issue 21, finding 11).
		err := unknownService(c.Service)
		send(errorFrame(c.ID, err))
		s.metrics.observeCall(serviceUnknown, kgagent.ErrorCode(err), time.Since(start))
		return
	}
	out := func(resp map[string]any, complete bool) {
		send(Frame{ID: c.ID, Response: resp, Complete: complete})
	}
	err := call(ctx, c, out)
	if err != nil {
		send(errorFrame(c.ID, err))
	}
	s.metrics.observeCall(c.Service, kgagent.ErrorCode(err), time.Since(start))
}

func (s *Server) runCall(ctx context.Context, c Call, out func(map[string]any, bool)) error {
	p := c.Principal
	if p == nil && !s.auth.enabled {
		p = &Principal{open: true, caller: c.Caller}
	}
	ctx, cancel, err := s.admit(ctx, p, admission{scope: ScopeAsk, service: c.Service, flow: c.Flow, req: &c.Request, charge: true})
	defer cancel()
	if err != nil {
		return err
	}
	c.Caller = s.callerOf(p)
	if c.admitted != nil {
		dl, _ := ctx.Deadline()
		c.admitted(&c, dl)
	}
	return s.safeDispatch(ctx, c, out)
}

// runAdmitted runs a call that was admitted on the replica that started
// it (authenticated, checked and charged there: none of it again), with
// its recorded caller, until ctx's deadline (the recorded one): the
// pipeline's step 3 for a stream taken over (Server.takeover).
func (s *Server) runAdmitted(ctx context.Context, c Call, out func(map[string]any, bool)) error {
	return s.safeDispatch(ctx, c, out)
}

// safeDispatch is dispatch with a panic in a backend turned into an
// internal error, so one bad request never takes the server down.
func (s *Server) safeDispatch(ctx context.Context, c Call, out func(map[string]any, bool)) (err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.ErrorContext(ctx, "panic in service call", "panic", p, "service", c.Service, "request_id", c.ID)
			err = kgagent.WrapError(kgagent.EINTERNAL, fmt.Errorf("panic: %v", p), "internal error")
		}
	}()
	return s.dispatch(ctx, c, out)
}
