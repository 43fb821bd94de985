package gateway

import (
	"context"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/crawler"
)

// routesSetup registers every route of the gateway.
func (s *Server) routesSetup() {
	// Ops.
	s.handle("GET", "/healthz", scopePublic, s.healthz)
	s.handle("GET", "/readyz", scopePublic, s.readyz)
	metricsScope := scopePublic
	if s.cfg.PrivateMetrics {
		metricsScope = ScopeAdmin
	}
	s.handle("GET", "/metrics", metricsScope, s.metrics.Handler().ServeHTTP)
	s.handle("GET", "/api/v1/openapi.json", scopePublic, s.serveOpenAPI)

	// Questions (seed 004).
	s.handle("POST", "/api/v1/agent", scopeAtAdmission, s.serviceHandler(ServiceAgent, s.bodyRequest))
	s.handle("POST", "/api/v1/flow/{flow}/service/{service}", scopeAtAdmission, s.serviceHandler("", s.bodyRequest))
	s.handle("POST", "/api/v1/search", scopeAtAdmission, s.serviceHandler(ServiceSearch, s.bodyRequest))
	s.handle("POST", "/api/v1/graph-rag", scopeAtAdmission, s.serviceHandler(ServiceGraphRAG, s.bodyRequest))
	s.handle("GET", "/api/v1/triples", scopeAtAdmission, s.serviceHandler(ServiceTriples, triplesRequest))
	s.handle("GET", "/api/v1/socket", ScopeAsk, s.socket)

	// Ingestion and collections.
	s.handle("POST", "/api/v1/corpora", ScopeIngest, s.submitCorpus)
	s.handle("GET", "/api/v1/jobs", ScopeIngest, s.listJobs)
	s.handle("GET", "/api/v1/jobs/{id}", ScopeIngest, s.getJob)
	s.handle("GET", "/api/v1/collections", ScopeAsk, s.listCollections)
	s.handle("GET", "/api/v1/collections/{name}", ScopeAsk, s.getCollection)
	s.handle("DELETE", "/api/v1/collections/{name}", ScopeAdmin, s.deleteCollection)

	// Sessions (seed 002).
	s.handle("POST", "/api/v1/sessions", ScopeAsk, s.createSession)
	s.handle("GET", "/api/v1/sessions", ScopeAsk, s.listSessions)
	s.handle("GET", "/api/v1/sessions/{id}", ScopeAsk, s.getSession)
	s.handle("DELETE", "/api/v1/sessions/{id}", ScopeAsk, s.deleteSession)
	s.handle("GET", "/api/v1/sessions/{id}/messages", ScopeAsk, s.listMessages)
	s.handle("POST", "/api/v1/sessions/{id}/messages", ScopeAsk, s.postMessage)

	s.embedRoutes()
	s.fixieRoutes()
	s.openAIRoutes()
	s.graphQLRoutes()
	s.webRoutes()
	s.handle("", "/api/", scopePublic, s.noRoute)
}

// noRoute answers paths under /api/ that no route serves: 404, or 405 with
// the methods the path has (Allow header) when only the method is wrong.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{"GET", "POST", "DELETE"} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/api/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		s.writeError(w, r, kgagent.Errorf(kgagent.EMETHOD, "%s %s: method not served; use %s", r.Method, r.URL.Path, strings.Join(allow, " or ")))
		return
	}
	s.writeError(w, r, kgagent.Errorf(kgagent.ENOTFOUND, "no route %s %s", r.Method, r.URL.Path))
}

// The bodies of the REST routes that are not service calls (service
// calls answer with a Response). Fields are in the order of their JSON
// names, as the maps before them wrote them.

// Health is the body of /healthz (status "ok") and /readyz (status "ok"
// or "unavailable", and each check's "ok" or error).
type Health struct {
	Checks map[string]string `json:"checks,omitzero"`
	Status string            `json:"status"`
}

// JobResponse is the body of POST /api/v1/corpora.
type JobResponse struct {
	Job crawler.JobStatus `json:"job"`
}

// JobList is the body of GET /api/v1/jobs.
type JobList struct {
	Jobs []crawler.JobStatus `json:"jobs"`
}

// CollectionList is the body of GET /api/v1/collections.
type CollectionList struct {
	Collections []corpus.CollectionInfo `json:"collections"`
}

// SessionList is the body of GET /api/v1/sessions.
type SessionList struct {
	Sessions []agent.Session `json:"sessions"`
}

// MessageList is the body of GET /api/v1/sessions/{id}/messages.
type MessageList struct {
	Messages []agent.SessionMessage `json:"messages"`
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, Health{Status: "ok"})
}

// readyz runs every readiness check with a 5s deadline: 200 when all pass,
// 503 with the failures otherwise.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	checks := map[string]string{}
	ok := true
	for _, c := range s.b.Ready {
		if err := c.Check(ctx); err != nil {
			ok = false
			checks[c.Name] = kgagent.ErrorMessage(err)
			s.log.WarnContext(ctx, "readiness check failed", "check", c.Name, "err", err)
		} else {
			checks[c.Name] = "ok"
		}
	}
	status, code := "ok", http.StatusOK
	if !ok {
		status, code = "unavailable", http.StatusServiceUnavailable
	}
	writeJSON(w, code, Health{Status: status, Checks: checks})
}

// serviceHandler serves one service call over REST: decode reads its
// request (the JSON body; the query of GET /triples), serve runs it, and
// its final response object, or its error, is written. With service ""
// the service and the flow are the path's ({flow}, {service}).
func (s *Server) serviceHandler(service string, decode func(http.ResponseWriter, *http.Request) (Request, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		svc, flow := service, "default"
		if svc == "" {
			// Refused before the body is read: an unknown service is 404
			// whatever was posted.
			if !services[r.PathValue("service")] {
				s.writeError(w, r, unknownService(r.PathValue("service")))
				return
			}
			svc, flow = r.PathValue("service"), r.PathValue("flow")
		}
		if err := s.refuseScope(r, svc); err != nil {
			s.writeError(w, r, err)
			return
		}
		req, err := decode(w, r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		var final Response
		call := Call{ID: requestID(r.Context()), Service: svc, Flow: flow, Request: req, Principal: principalFrom(r.Context())}
		err = s.serve(r.Context(), call, func(resp Response, complete bool) {
			if complete {
				final = resp
			}
		})
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, final)
	}
}

// bodyRequest decodes a service request from the JSON body.
func (s *Server) bodyRequest(w http.ResponseWriter, r *http.Request) (Request, error) {
	var req Request
	err := s.decodeBody(w, r, &req)
	return req, err
}

// triplesRequest reads GET /triples' query.
func triplesRequest(_ http.ResponseWriter, r *http.Request) (Request, error) {
	q := r.URL.Query()
	req := Request{Collection: q.Get("collection"), S: q.Get("s"), P: q.Get("p"), O: q.Get("o")}
	if q.Has("limit") {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil {
			return req, invalid(ReasonWrongType, "limit", "limit must be an integer")
		}
		req.Limit = n
	}
	return req, nil
}

func (s *Server) submitCorpus(w http.ResponseWriter, r *http.Request) {
	if s.b.Jobs == nil {
		s.writeError(w, r, unavailable("jobs"))
		return
	}
	var spec crawler.Spec
	if err := s.decodeBody(w, r, &spec); err != nil {
		s.writeError(w, r, err)
		return
	}
	job, err := s.submit(r.Context(), spec)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/jobs/"+job.ID)
	writeJSON(w, http.StatusAccepted, JobResponse{Job: job})
}

// submit checks spec for the caller of ctx (the rules of every
// transport: collection and urls required, no empty url, max_pages and
// max_depth within int32, a collection the caller may use) and submits it.
func (s *Server) submit(ctx context.Context, spec crawler.Spec) (crawler.JobStatus, error) {
	if spec.Collection == "" || len(spec.URLs) == 0 {
		return crawler.JobStatus{}, invalid(ReasonMissingField, "urls", "collection and urls are required")
	}
	if spec.MaxPages > math.MaxInt32 || spec.MaxDepth > math.MaxInt32 {
		return crawler.JobStatus{}, invalid(ReasonUnknownValue, "max_pages", "max_pages and max_depth must be at most %d", math.MaxInt32)
	}
	if slices.Contains(spec.URLs, "") {
		return crawler.JobStatus{}, invalid(ReasonUnknownValue, "urls", "urls must not be empty strings")
	}
	if _, err := principalFrom(ctx).collection(spec.Collection); err != nil {
		return crawler.JobStatus{}, err
	}
	return s.b.Jobs.Submit(ctx, spec)
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	if s.b.Jobs == nil {
		s.writeError(w, r, unavailable("jobs"))
		return
	}
	job, err := s.job(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, job)
}

// job returns job id when the caller may use its collection; ENOTFOUND
// otherwise, as for an unknown id, so a restricted key learns nothing of
// other collections' jobs (their URLs, counters or existence).
func (s *Server) job(ctx context.Context, id string) (crawler.JobStatus, error) {
	job, err := s.b.Jobs.Get(ctx, id)
	if err != nil {
		return job, err
	}
	if !principalFrom(ctx).mayUse(job.Spec.Collection) {
		return crawler.JobStatus{}, kgagent.Errorf(kgagent.ENOTFOUND, "no job %q", id)
	}
	return job, nil
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	if s.b.Jobs == nil {
		s.writeError(w, r, unavailable("jobs"))
		return
	}
	all, err := s.b.Jobs.List(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p := principalFrom(r.Context())
	jobs := []crawler.JobStatus{}
	for _, j := range all {
		if p.mayUse(j.Spec.Collection) {
			jobs = append(jobs, j)
		}
	}
	writeJSON(w, http.StatusOK, JobList{Jobs: jobs})
}

// collections returns the collections the Principal may see.
func (s *Server) collections(ctx context.Context) ([]corpus.CollectionInfo, error) {
	if s.b.Search == nil {
		return nil, unavailable("search")
	}
	all, err := s.b.Search.Collections(ctx)
	if err != nil {
		return nil, err
	}
	p := principalFrom(ctx)
	out := []corpus.CollectionInfo{}
	for _, c := range all {
		if _, err := p.collection(c.Name); err == nil {
			out = append(out, c)
		}
	}
	return out, nil
}

func (s *Server) listCollections(w http.ResponseWriter, r *http.Request) {
	cs, err := s.collections(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, CollectionList{Collections: cs})
}

func (s *Server) getCollection(w http.ResponseWriter, r *http.Request) {
	if err := kgagent.ValidateCollection(r.PathValue("name")); err != nil {
		s.writeError(w, r, err)
		return
	}
	cs, err := s.collections(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	name := r.PathValue("name")
	for _, c := range cs {
		if c.Name == name {
			writeJSON(w, http.StatusOK, c)
			return
		}
	}
	s.writeError(w, r, kgagent.Errorf(kgagent.ENOTFOUND, "no collection %q", name))
}

func (s *Server) deleteCollection(w http.ResponseWriter, r *http.Request) {
	if s.b.Search == nil {
		s.writeError(w, r, unavailable("search"))
		return
	}
	name := r.PathValue("name")
	if _, err := principalFrom(r.Context()).collection(name); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.b.Search.DeleteCollection(r.Context(), name); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Sessions.

func (s *Server) sessionStore() (agent.SessionStore, error) {
	if s.b.Sessions == nil {
		return nil, unavailable("sessions")
	}
	return s.b.Sessions, nil
}

// ownSession returns session id when the Principal owns it or is an admin
// (ENOTFOUND otherwise, so ids of others' sessions are not revealed).
func (s *Server) ownSession(ctx context.Context, id string) (agent.Session, error) {
	st, err := s.sessionStore()
	if err != nil {
		return agent.Session{}, err
	}
	sess, err := st.GetSession(ctx, id)
	if err != nil {
		return sess, err
	}
	if p := principalFrom(ctx); !p.has(ScopeAdmin) && sess.UserID != p.owner() {
		return agent.Session{}, kgagent.Errorf(kgagent.ENOTFOUND, "no session %q", id)
	}
	return sess, nil
}

// checkSession fails with ENOTFOUND when a request names a session the
// Principal does not own, so no one continues another's conversation.
func (s *Server) checkSession(ctx context.Context, id string) error {
	if id == "" || s.b.Sessions == nil {
		return nil
	}
	_, err := s.ownSession(ctx, id)
	return err
}

// SessionInput is the body of POST /api/v1/sessions.
type SessionInput struct {
	Agent string `json:"agent,omitempty"`
	Title string `json:"title,omitempty"`
}

func (s *Server) newSession(ctx context.Context, in SessionInput) (agent.Session, error) {
	st, err := s.sessionStore()
	if err != nil {
		return agent.Session{}, err
	}
	if len(in.Title) > 1000 || len(in.Agent) > 200 {
		return agent.Session{}, invalid(ReasonUnknownValue, "title", "title or agent too long")
	}
	if in.Agent != "" && s.b.Registry != nil {
		agents, err := s.b.Registry.ListAgents(ctx)
		if err != nil {
			return agent.Session{}, err
		}
		if !slices.ContainsFunc(agents, func(a AgentInfo) bool { return a.Name == in.Agent }) {
			return agent.Session{}, kgagent.Errorf(kgagent.ENOTFOUND, "agent %q is not registered", in.Agent)
		}
	}
	return st.CreateSession(ctx, agent.Session{ID: newID(), UserID: principalFrom(ctx).owner(), Agent: in.Agent, Title: in.Title, CreatedAt: time.Now().UTC()})
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var in SessionInput
	if err := s.decodeBody(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	sess, err := s.newSession(r.Context(), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, sess)
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	st, err := s.sessionStore()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list, err := st.ListSessions(r.Context(), principalFrom(r.Context()).owner())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if list == nil {
		list = []agent.Session{}
	}
	writeJSON(w, http.StatusOK, SessionList{Sessions: list})
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	sess, err := s.ownSession(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sess)
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	if _, err := s.ownSession(r.Context(), r.PathValue("id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.b.Sessions.DeleteSession(r.Context(), r.PathValue("id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) sessionMessages(ctx context.Context, id string) ([]agent.SessionMessage, error) {
	if _, err := s.ownSession(ctx, id); err != nil {
		return nil, err
	}
	ms, err := s.b.Sessions.Messages(ctx, id)
	if ms == nil && err == nil {
		ms = []agent.SessionMessage{}
	}
	return ms, err
}

func (s *Server) listMessages(w http.ResponseWriter, r *http.Request) {
	ms, err := s.sessionMessages(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, MessageList{Messages: ms})
}

// MessageInput is the body of POST /api/v1/sessions/{id}/messages.
type MessageInput struct {
	Text       string `json:"text"`
	Collection string `json:"collection,omitempty"`
}

// postToSession stores the user's message, asks the session's agent, stores
// and returns the agent's message.
func (s *Server) postToSession(ctx context.Context, sessionID string, in MessageInput) (agent.SessionMessage, error) {
	sess, err := s.ownSession(ctx, sessionID)
	if err != nil {
		return agent.SessionMessage{}, err
	}
	if strings.TrimSpace(in.Text) == "" {
		return agent.SessionMessage{}, invalid(ReasonMissingField, "text", "text is required")
	}
	p := principalFrom(ctx)
	id := newID()
	req := Request{Question: in.Text, Agent: sess.Agent, Collection: in.Collection, SessionID: sessionID}
	var m agent.SessionMessage
	err = s.call(ctx, p, admission{id: id, scope: ScopeAsk, service: ServiceAgent, req: &req, charge: true, slot: true}, func(ctx context.Context) error {
		if _, err := s.b.Sessions.AppendMessage(ctx, agent.SessionMessage{ID: newID(), SessionID: sessionID, Role: "user", Text: in.Text, CreatedAt: time.Now().UTC()}); err != nil {
			return err
		}
		var events []kgagent.Event
		ans, err := s.b.Asker.Ask(ctx, Call{ID: id, Request: req, Caller: s.callerOf(p)}.agentRequest(),
			func(ev kgagent.Event) {
				if !ev.Delta && len(events) < 200 {
					events = append(events, ev)
				}
			})
		s.metrics.observeAnswer(ans)
		if err != nil {
			return err
		}
		m, err = s.b.Sessions.AppendMessage(ctx, agent.SessionMessage{ID: newID(), SessionID: sessionID, Role: "agent", Agent: ans.Agent, Text: ans.Answer, Sources: ans.Sources, Events: events, CreatedAt: time.Now().UTC()})
		return err
	})
	return m, err
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) {
	var in MessageInput
	if err := s.decodeBody(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	m, err := s.postToSession(r.Context(), r.PathValue("id"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, m)
}
