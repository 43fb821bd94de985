package gateway

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/agent/journal"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/internal/text"
)

// Services are the names a request can address on every transport.
const (
	ServiceAgent    = "agent"
	ServiceSearch   = "search"
	ServiceGraphRAG = "graph-rag"
	ServiceTriples  = "triples"
)

// DefaultK is the number of hits a search returns when its request's k
// is 0: corpus.DefaultK, as MCP's search tool.
const DefaultK = corpus.DefaultK

var services = map[string]bool{ServiceAgent: true, ServiceSearch: true, ServiceGraphRAG: true, ServiceTriples: true}

// unknownService is the error of a request for a service that does not
// exist: ENOTFOUND, naming the ones that do.
func unknownService(name string) error {
	return kgagent.Errorf(kgagent.ENOTFOUND, "unknown service %q (known: agent, search, graph-rag, triples)", text.Truncate(name, 64))
}

// Request is the request object of every service, as REST bodies, websocket
// "request" objects and NATS messages carry it (seed 004 plus kgagent's
// fields). Fields a service does not use are ignored.
type Request struct {
	ID         string                   `json:"id,omitempty"`   // NATS only: the request id (generated when empty)
	Flow       string                   `json:"flow,omitempty"` // NATS only: the flow (default "default")
	Question   string                   `json:"question,omitempty"`
	Query      string                   `json:"query,omitempty"` // search: alias of question
	Collection string                   `json:"collection,omitempty"`
	Agent      string                   `json:"agent,omitempty"`
	SessionID  string                   `json:"session_id,omitempty"`
	TimeZone   string                   `json:"time_zone,omitempty"`
	Embeds     map[string]kgagent.Embed `json:"embeds,omitempty"`
	K          int                      `json:"k,omitempty"`    // search: hits wanted (0: DefaultK)
	Mode       corpus.Mode              `json:"mode,omitempty"` // search: hybrid, dense, keyword
	URLPrefix  string                   `json:"url_prefix,omitempty"`
	S          string                   `json:"s,omitempty"` // triples pattern
	P          string                   `json:"p,omitempty"`
	O          string                   `json:"o,omitempty"`
	Limit      int                      `json:"limit,omitempty"`
	Plan       any                      `json:"plan,omitempty"`  // seed 004: accepted, unused
	State      any                      `json:"state,omitempty"` // seed 004: accepted, unused
}

// DecodeRequest decodes and validates a request object for service. Errors
// are EINVALID with a "reason" detail (invalid_json, wrong_type,
// invalid_utf8, missing_field) or ENOTFOUND for an unknown service.
func DecodeRequest(service string, data []byte) (Request, error) {
	var r Request
	if err := decodeJSON(data, &r); err != nil {
		return r, err
	}
	return r, r.validate(service)
}

func (r *Request) validate(service string) error {
	if !services[service] {
		return unknownService(service)
	}
	if r.Question == "" {
		r.Question = r.Query
	}
	if service != ServiceTriples && strings.TrimSpace(r.Question) == "" {
		return invalid(ReasonMissingField, "question", "question is required")
	}
	if err := kgagent.CheckQuestionSize("question", r.Question); err != nil {
		return err
	}
	if r.K < 0 || r.K > corpus.MaxK || r.Limit < 0 || r.Limit > graphrag.MaxFindLimit {
		return invalid(ReasonUnknownValue, "k", "k must be 0..%d and limit 0..%d", corpus.MaxK, graphrag.MaxFindLimit)
	}
	for key, e := range r.Embeds {
		if err := checkEmbedURI(key, e.URI); err != nil {
			return err
		}
	}
	switch r.Mode {
	case "", corpus.ModeHybrid, corpus.ModeDense, corpus.ModeKeyword:
	default:
		return invalid(ReasonUnknownValue, "mode", "mode must be hybrid, dense or keyword")
	}
	return nil
}

// Frame is one response of a stream, as the websocket and NATS send it (seed
// 004 plus "seq"): a response object or an error, and whether it is the last.
type Frame struct {
	ID       string      `json:"id"`
	Seq      int64       `json:"seq"`
	Response Response    `json:"response,omitzero"`
	Error    *FrameError `json:"error,omitempty"`
	Complete bool        `json:"complete"`
	// ResumeToken is on the first frame of a websocket stream: an anonymous
	// caller resumes the stream with it (resume.token).
	ResumeToken string `json:"resume_token,omitempty"`
}

// Response is the response object of every service (seed 004 plus
// kgagent's fields), as a stream frame carries it and REST returns the
// last one: an agent's event (thought; route: agent and thought; action
// and thought; observation and its sources; an answer delta), an agent's
// answer (answer, sources, and agent, request_id, citations when known),
// search hits, a graph answer (answer, facts, sources) or triples. A field
// is on the wire only when set: Answer and Observation are pointers so
// that an empty one is still sent on the frames that carry it, and a list
// is sent when it is not nil (empty: []). The fields are in the order of
// their JSON names.
type Response struct {
	Action      string           `json:"action,omitempty"`
	Agent       string           `json:"agent,omitempty"`
	Answer      *string          `json:"answer,omitempty"`
	Citations   string           `json:"citations,omitempty"`
	Delta       bool             `json:"delta,omitempty"`
	Facts       []graphrag.Fact  `json:"facts,omitzero"`
	Hits        []corpus.Hit     `json:"hits,omitzero"`
	Observation *string          `json:"observation,omitempty"`
	RequestID   string           `json:"request_id,omitempty"`
	Sources     []kgagent.Source `json:"sources,omitzero"`
	Thought     string           `json:"thought,omitempty"`
	Triples     []kgagent.Triple `json:"triples,omitzero"`
}

// Text returns a pointer to s, for Response.Answer and Observation.
func Text(s string) *string { return &s }

// FrameError is the error of a stream frame: seed 004's message and type,
// where type is kgagent's stable code.
type FrameError struct {
	Message string         `json:"message"`
	Type    string         `json:"type"`
	Details map[string]any `json:"details,omitempty"`
}

func errorFrame(id string, err error) Frame {
	e := toError(err)
	return Frame{ID: id, Error: &FrameError{Message: e.Message, Type: e.Code, Details: e.Details}, Complete: true}
}

// Call is one stream request: which service of which flow, the request, and
// who asks. Principal nil is the anonymous caller (refused when auth is
// on); Caller is set by the pipeline from the principal.
type Call struct {
	ID        string
	Service   string
	Flow      string
	Request   Request
	Principal *Principal
	Caller    agent.Caller
	// admitted, when set, is called once the call is admitted, with the
	// call as admitted and its deadline (the websocket records durable
	// streams with it, and sets journal).
	admitted func(c *Call, deadline time.Time)
	// journal records (or, on a replica continuing the call, replays) the
	// model's outputs (see journal.Journal).
	journal journal.Journal
	// recorded: the call was admitted on the replica that started it and
	// recorded with its stream; this replica continues it (a takeover):
	// nothing is checked or charged again, Caller is the recorded one.
	recorded bool
}

func (s *Server) checkFlow(flow string) error {
	if flow == "" {
		flow = "default"
	}
	if !s.flows[flow] {
		return kgagent.Errorf(kgagent.ENOTFOUND, "unknown flow %q", flow)
	}
	return nil
}

// serve runs the service call c through call (admission, timeout, panic
// recovery, metrics) with its service's method, and encodes the result as
// seed-004 response objects: out receives them, the last with complete
// set, unless an error is returned. REST and Run (the websocket, NATS) use
// it.
func (s *Server) serve(ctx context.Context, c Call, out func(Response, bool)) error {
	if !services[c.Service] {
		// Refused before the name becomes a metrics label: the label
		// set stays bounded whatever clients send (issue 21, finding 11).
		err := unknownService(c.Service)
		s.metrics.observeCall(serviceUnknown, kgagent.ErrorCode(err), 0)
		return err
	}
	p := c.Principal
	if p == nil && !s.auth.enabled {
		p = &Principal{open: true, caller: c.Caller}
	}
	a := admission{id: c.ID, scope: ScopeAsk, service: c.Service, flow: c.Flow, req: &c.Request, charge: true, admitted: c.recorded, slot: c.Service == ServiceAgent}
	return s.call(ctx, p, a, func(ctx context.Context) error {
		if !c.recorded {
			c.Caller = s.callerOf(p)
			if c.admitted != nil {
				dl, _ := ctx.Deadline()
				c.admitted(&c, dl)
			}
		}
		// The admitted call runs with its service's method; the result
		// is encoded as response objects.
		switch c.Service {
		case ServiceAgent:
			ans, err := s.b.Asker.Ask(ctx, c.agentRequest(), func(ev kgagent.Event) {
				if resp, ok := eventResponse(ev); ok {
					out(resp, false)
				}
			})
			// Failed runs count too: their iterations and tokens were spent.
			s.metrics.observeAnswer(ans)
			if err != nil {
				return err
			}
			out(answerResponse(ans), true)
		case ServiceSearch:
			hits, err := s.search(ctx, c.Request)
			if err != nil {
				return err
			}
			out(Response{Hits: hits}, true)
		case ServiceGraphRAG:
			ans, err := s.graphAnswer(ctx, c.Request)
			if err != nil {
				return err
			}
			out(Response{Answer: &ans.Answer, Facts: ans.Facts, Sources: ans.Sources}, true)
		case ServiceTriples:
			ts, err := s.findTriples(ctx, c.Request)
			if err != nil {
				return err
			}
			out(Response{Triples: ts}, true)
		}
		return nil
	})
}

// The service methods: each runs one admitted request (see call) with its
// backend and returns the typed result; transports encode it.

// agentRequest is the agent's request for the admitted call c.
func (c Call) agentRequest() agent.Request {
	r := c.Request
	return agent.Request{
		ID: c.ID, Question: r.Question, Agent: r.Agent, Collection: r.Collection,
		SessionID: r.SessionID, TimeZone: r.TimeZone, Embeds: r.Embeds, Caller: c.Caller, Journal: c.journal,
	}
}

// search runs the admitted search r (k 0 is the documented 10); no hits
// is an empty list, never nil.
func (s *Server) search(ctx context.Context, r Request) ([]corpus.Hit, error) {
	if s.b.Search == nil {
		return nil, unavailable("search")
	}
	k := r.K
	if k == 0 {
		k = DefaultK
	}
	hits, err := s.b.Search.Search(ctx, corpus.SearchRequest{Query: r.Question, Collection: r.Collection, K: k, Mode: r.Mode, URLPrefix: r.URLPrefix})
	if hits == nil && err == nil {
		hits = []corpus.Hit{}
	}
	return hits, err
}

// graphAnswer answers the admitted question r from the graph alone; its
// facts and sources are empty lists, never nil.
func (s *Server) graphAnswer(ctx context.Context, r Request) (graphrag.GraphAnswer, error) {
	if s.b.Graph == nil {
		return graphrag.GraphAnswer{}, unavailable("graph")
	}
	ans, err := s.b.Graph.Answer(ctx, r.Question, r.Collection)
	if err != nil {
		return ans, err
	}
	if ans.Facts == nil {
		ans.Facts = []graphrag.Fact{}
	}
	ans.Sources = nonNil(ans.Sources)
	return ans, nil
}

// findTriples returns the triples matching the admitted pattern of r; none
// is an empty list, never nil.
func (s *Server) findTriples(ctx context.Context, r Request) ([]kgagent.Triple, error) {
	if s.b.Graph == nil {
		return nil, unavailable("graph")
	}
	ts, err := s.b.Graph.Find(ctx, graphrag.Pattern{Collection: r.Collection, S: r.S, P: r.P, O: r.O, Limit: r.Limit})
	if ts == nil && err == nil {
		ts = []kgagent.Triple{}
	}
	return ts, err
}

func unavailable(what string) error {
	return kgagent.Errorf(kgagent.EUNAVAILABLE, "the %s service is not configured", what)
}

// eventResponse maps an agent event to a seed-004 response object; ok is
// false for events not streamed (the final answer comes from Ask's
// result, errors from its error).
func eventResponse(ev kgagent.Event) (r Response, ok bool) {
	switch ev.Kind {
	case kgagent.EventThought:
		return Response{Thought: ev.Text}, true
	case kgagent.EventRoute:
		text := ev.Text
		if text == "" {
			text = "routed to agent " + ev.Agent
		}
		return Response{Thought: text, Agent: ev.Agent}, true
	case kgagent.EventAction:
		text := ev.Text
		if !strings.HasPrefix(text, "Ask ") {
			text = fmt.Sprintf("Ask Func[%s]: %s", ev.Func, ev.Text)
		}
		return Response{Thought: text, Action: ev.Func}, true
	case kgagent.EventError:
		if !ev.Final {
			return Response{Thought: "error: " + ev.Text}, true
		}
	case kgagent.EventObservation:
		r := Response{Observation: Text(ev.Text)}
		if len(ev.Sources) > 0 {
			// The sections the func found, so a client can list them
			// instead of showing the raw text.
			r.Sources = ev.Sources
		}
		return r, true
	case kgagent.EventAnswer:
		if ev.Delta {
			return Response{Answer: Text(ev.Text), Delta: true}, true
		}
	}
	return Response{}, false
}

// answerResponse is the final response of an agent call: seed 004's answer
// plus sources (never null), and the agent, request id and citations when
// known.
func answerResponse(a kgagent.Answer) Response {
	src := a.Sources
	if src == nil {
		src = []kgagent.Source{}
	}
	return Response{Answer: Text(a.Answer), Sources: src, Agent: a.Agent, RequestID: a.RequestID, Citations: a.Citations}
}
