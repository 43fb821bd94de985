// Package natsapi serves kgagent's services over NATS: requests on
// kgagent.request.<service> (agent, search, graph-rag, triples) in a queue
// group, so any number of workers share them; responses streamed to the
// request's reply inbox in the websocket's JSON (gateway.Frame), the last one
// with "complete": true. Bad requests get an error frame on the inbox.
//
// The same requests on kgagent.ask.<service> get one reply, the last frame
// (the answer, or the error): what a plain request/reply call
// (nc.Request, nats-py's request, `nats req` without --replies) waits for.
//
// From the plain nats CLI (replies=0 waits for every reply until the timeout):
//
//	nats req kgagent.request.agent '{"question":"What is the GIL?"}' --replies=0 --timeout=30s
//	nats req kgagent.ask.search '{"query":"asyncio","collection":"python","k":3}'
//
// The message is the websocket's "request" object, plus an optional "id" (the
// request id, generated when absent) and "flow" (default "default"), or the
// websocket's whole frame {"id","service","flow","request"} (its service, if
// given, must be the subject's).
//
// Requests carry the caller's credential in a header, as over HTTP
// ("Authorization: Bearer <api key or JWT>" or "X-API-Key"), and run
// through the gateway's pipeline: checked for scope and collection and
// charged to the daily limit exactly like HTTP. A server without keys
// treats NATS callers as it treats HTTP ones (open). The bus itself must
// still keep clients to asking: the embedded server gives them a user that
// may only publish on the two request prefixes and subscribe to reply
// inboxes, so no client reads another's requests (their credentials) or
// answers in the queue group.
//
//	nats req kgagent.request.agent '{"question":"What is the GIL?"}' -H 'Authorization:Bearer <key>'
package natsapi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/gateway"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
)

// Runner authenticates callers and runs calls through the gateway's request
// pipeline (scope, collection, daily limit, timeout), sending the frames
// in order; *gateway.Server implements it.
type Runner interface {
	Authenticate(ctx context.Context, token, remote string) (*gateway.Principal, error)
	Run(ctx context.Context, c gateway.Call, send func(gateway.Frame))
}

// Headers a request carries its credential in, as over HTTP: an API key or
// JWT, as "Authorization: Bearer <token>" or "X-API-Key: <key>".
const (
	HeaderAuthorization = "Authorization"
	HeaderAPIKey        = "X-API-Key"
)

// credential returns the token of m's headers.
func credential(m *nats.Msg) string {
	if m.Header == nil {
		return ""
	}
	if h := m.Header.Get(HeaderAuthorization); h != "" {
		t, _ := strings.CutPrefix(h, "Bearer ")
		return strings.TrimSpace(t)
	}
	return m.Header.Get(HeaderAPIKey)
}

var _ Runner = (*gateway.Server)(nil)

// The default subject prefixes: requests on <prefix>.<service>.
const (
	DefaultSubjectPrefix = "kgagent.request" // frames streamed to the reply inbox
	DefaultAskPrefix     = "kgagent.ask"     // one reply: the last frame
)

// Config configures a Server. The zero value works.
type Config struct {
	SubjectPrefix   string       // default DefaultSubjectPrefix; services are <prefix>.<service>, streamed
	AskPrefix       string       // default DefaultAskPrefix; <prefix>.<service> answers once
	Queue           string       // queue group; default "kgagent"
	MaxConcurrent   int          // calls run at once per Server; default 64
	MaxMessageBytes int          // larger requests get TOO_LARGE; default 64 KiB
	Logger          *slog.Logger // default slog.Default()
}

// Server subscribes to the request subjects and runs each request.
type Server struct {
	nc     *nats.Conn
	run    Runner
	cfg    Config
	subs   []*nats.Subscription
	sem    chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a Server on nc; Start subscribes.
func New(nc *nats.Conn, r Runner, cfg Config) *Server {
	if cfg.SubjectPrefix == "" {
		cfg.SubjectPrefix = DefaultSubjectPrefix
	}
	if cfg.AskPrefix == "" {
		cfg.AskPrefix = DefaultAskPrefix
	}
	if cfg.Queue == "" {
		cfg.Queue = "kgagent"
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = 64
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = 64 << 10
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{nc: nc, run: r, cfg: cfg, sem: make(chan struct{}, cfg.MaxConcurrent), ctx: ctx, cancel: cancel}
}

// Start subscribes to <prefix>.* and <ask prefix>.* in the queue group.
func (s *Server) Start() error {
	for _, p := range []struct {
		prefix string
		once   bool
	}{{s.cfg.SubjectPrefix, false}, {s.cfg.AskPrefix, true}} {
		sub, err := s.nc.QueueSubscribe(p.prefix+".*", s.cfg.Queue, func(m *nats.Msg) { s.handle(m, p.prefix, p.once) })
		if err != nil {
			return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "cannot subscribe to %s.*", p.prefix)
		}
		// Requests wait in the client's buffer while MaxConcurrent run;
		// allow a deep buffer instead of dropping them as a slow consumer.
		_ = sub.SetPendingLimits(1<<16, 256<<20)
		s.subs = append(s.subs, sub)
	}
	return s.nc.Flush()
}

// Close unsubscribes, cancels running calls and waits for them.
func (s *Server) Close() error {
	var err error
	for _, sub := range s.subs {
		if e := sub.Unsubscribe(); e != nil && err == nil {
			err = e
		}
	}
	s.cancel()
	s.wg.Wait()
	return err
}

// Message is the JSON a NATS request carries: gateway.Request, whose id and
// flow fields are used here.
type Message = gateway.Request

// envelope is the websocket's request frame, which NATS accepts too.
type envelope struct {
	ID      string          `json:"id"`
	Service string          `json:"service"`
	Flow    string          `json:"flow"`
	Request json.RawMessage `json:"request"`
}

// DecodeMessage decodes a request for service: the bare request object or
// the websocket's envelope around it. Errors are those of
// gateway.DecodeRequest, TOO_LARGE over max bytes, and INVALID_ARGUMENT for
// an envelope naming another service than the subject.
func DecodeMessage(service string, data []byte, max int) (gateway.Request, error) {
	if len(data) > max {
		return gateway.Request{}, kgagent.Errorf(kgagent.ETOOLARGE, "request is over %d bytes", max)
	}
	var env envelope
	if json.Unmarshal(data, &env) != nil || len(env.Request) == 0 || string(env.Request) == "null" {
		return gateway.DecodeRequest(service, data)
	}
	if env.Service != "" && env.Service != service {
		return gateway.Request{}, &kgagent.Error{Code: kgagent.EINVALID,
			Message: fmt.Sprintf("the envelope names service %q but was sent to the subject of service %q", env.Service, service),
			Details: map[string]any{"reason": gateway.ReasonUnknownValue, "field": "service"}}
	}
	req, err := gateway.DecodeRequest(service, env.Request)
	if req.ID == "" {
		req.ID = env.ID
	}
	if req.Flow == "" {
		req.Flow = env.Flow
	}
	return req, err
}

// handle runs the request m on a subject of prefix: its frames go to the
// reply inbox as they come, or, once, only the last one.
func (s *Server) handle(m *nats.Msg, prefix string, once bool) {
	if m.Reply == "" {
		s.cfg.Logger.Warn("nats request without reply subject; dropped", "subject", m.Subject)
		return
	}
	service := strings.TrimPrefix(m.Subject, prefix+".")
	req, err := DecodeMessage(service, m.Data, s.cfg.MaxMessageBytes)
	id := req.ID
	if id == "" {
		id = nuid.Next()
	}
	if err != nil {
		e := kgagent.Error{Code: kgagent.ErrorCode(err), Message: kgagent.ErrorMessage(err), Details: kgagent.ErrorDetails(err)}
		s.publish(m.Reply, gateway.Frame{ID: id, Seq: 1, Error: &gateway.FrameError{Message: e.Message, Type: e.Code, Details: e.Details}, Complete: true})
		return
	}
	select {
	case s.sem <- struct{}{}:
	case <-s.ctx.Done():
		return
	}
	s.wg.Add(1)
	go func() {
		defer func() { <-s.sem; s.wg.Done() }()
		var seq int64
		send := func(f gateway.Frame) {
			seq++
			f.Seq = seq
			if !once || f.Complete {
				s.publish(m.Reply, f)
			}
		}
		p, err := s.run.Authenticate(s.ctx, credential(m), "nats")
		if err != nil {
			e := kgagent.Error{Code: kgagent.ErrorCode(err), Message: kgagent.ErrorMessage(err), Details: kgagent.ErrorDetails(err)}
			send(gateway.Frame{ID: id, Error: &gateway.FrameError{Message: e.Message, Type: e.Code, Details: e.Details}, Complete: true})
			return
		}
		s.run.Run(s.ctx, gateway.Call{ID: id, Service: service, Flow: req.Flow, Request: req, Principal: p}, send)
	}()
}

func (s *Server) publish(subject string, f gateway.Frame) {
	data, err := json.Marshal(f)
	if err != nil {
		s.cfg.Logger.Error("cannot encode frame", "err", err)
		return
	}
	if err := s.nc.Publish(subject, data); err != nil {
		s.cfg.Logger.Warn("cannot publish response", "subject", subject, "err", err)
	}
}
