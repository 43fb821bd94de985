package gateway

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"go.yaml.in/yaml/v3"
)

// The Fixie agent protocol (seeds 000, 001; DESIGN.md "Fixie agent
// protocol") for every agent:
//
//	GET  /agents/{name}/        handshake: YAML (application/yaml), JSON on Accept: application/json
//	POST /agents/{name}/{func}  {"message":{"text","embeds"}} -> {"message":{"text","embeds":{}},"error":null}
//
// Errors keep the same shape, with "error" set to {"code","message","details"}
// and the message text saying what went wrong: unknown func 404
// ERR_FUNC_NOT_DEFINED (details func_name, available_funcs), unhandled error
// or panic 500 ERR_AGENT_UNHANDLED_EXCEPTION, malformed body 422, missing or
// bad bearer token 403 when auth is on (JWTs when JWT is configured, API keys
// with the ask scope otherwise).

var nameRe = regexp.MustCompile(`^\w{1,128}$`)

// FuncRequest is the body of POST /agents/{name}/{func}.
type FuncRequest struct {
	Message *kgagent.Message `json:"message"`
}

// FuncResponse is what POST /agents/{name}/{func} returns.
type FuncResponse struct {
	Message kgagent.Message `json:"message"`
	Error   *kgagent.Error  `json:"error"`
}

// DecodeFuncRequest decodes and checks a func call body: a message with
// text, and embeds whose uris are http(s) URLs or base64 data URIs. Errors are
// EINVALID with a reason detail.
func DecodeFuncRequest(data []byte) (kgagent.Message, error) {
	var req FuncRequest
	if err := decodeJSON(data, &req); err != nil {
		return kgagent.Message{}, err
	}
	if req.Message == nil {
		return kgagent.Message{}, invalid(ReasonMissingField, "message", "message is required")
	}
	for key, e := range req.Message.Embeds {
		if err := checkEmbedURI(key, e.URI); err != nil {
			return kgagent.Message{}, err
		}
	}
	return *req.Message, nil
}

// checkEmbedURI accepts an http(s) URL or a base64 data URI (seed 001).
func checkEmbedURI(key, uri string) error {
	switch {
	case strings.HasPrefix(uri, "http://"), strings.HasPrefix(uri, "https://"):
		return nil
	case strings.HasPrefix(uri, "data:"):
		if _, err := kgagent.DecodeDataURI(uri); err != nil {
			return invalid(ReasonUnknownValue, "embeds."+key, "embed %q: %s", key, kgagent.ErrorMessage(err))
		}
		return nil
	}
	return invalid(ReasonUnknownValue, "embeds."+key, "embed %q: uri must be an http(s) URL or a data URI", key)
}

func (s *Server) fixieRoutes() {
	s.handle("GET", "/agents/{name}/{$}", scopePublic, s.fixieHandshake)
	s.handle("GET", "/agents/{name}", scopePublic, s.fixieHandshake)
	s.handle("POST", "/agents/{name}/{func}", scopePublic, s.fixieCall)
}

// fixiePrincipal authenticates a protocol request: 403 (EFORBIDDEN) on a
// missing or bad token when auth is on (JWTs when JWT is configured, API
// keys with the ask scope otherwise).
func (s *Server) fixiePrincipal(r *http.Request) (*Principal, error) {
	tok := ""
	if h := r.Header.Get("Authorization"); h != "" {
		t, ok := strings.CutPrefix(h, "Bearer ")
		if !ok {
			return nil, kgagent.Errorf(kgagent.EFORBIDDEN, "Authorization must be a Bearer token")
		}
		tok = strings.TrimSpace(t)
	}
	remote := remoteHost(r)
	if !s.auth.enabled {
		p := &Principal{open: true, caller: agent.Caller{Anonymous: true}, remote: remote}
		if tok != "" && s.auth.jwt == nil {
			p.caller.Token = tok
		}
		return p, nil
	}
	if tok == "" {
		return nil, kgagent.Errorf(kgagent.EFORBIDDEN, "a bearer token is required")
	}
	if s.auth.jwt != nil {
		c, err := s.auth.jwt.verify(r.Context(), tok)
		if err != nil {
			return nil, &kgagent.Error{Code: kgagent.EFORBIDDEN, Message: "invalid token", Err: err}
		}
		return &Principal{caller: c, scopes: []Scope{ScopeAsk}, remote: remote}, nil
	}
	p, err := s.auth.authenticate(r.Context(), tok, remote)
	if err != nil || !p.has(ScopeAsk) {
		return nil, kgagent.Errorf(kgagent.EFORBIDDEN, "invalid API key")
	}
	return p, nil // API keys are never forwarded to remote agents
}

func wantsJSON(r *http.Request) bool {
	a := r.Header.Get("Accept")
	return strings.Contains(a, "application/json") && !strings.Contains(a, "application/yaml")
}

func (s *Server) fixieHandshake(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if _, err := s.fixiePrincipal(r); err != nil {
		s.writeFixieError(w, r, http.StatusForbidden, err)
		return
	}
	if s.b.Agents == nil {
		s.writeError(w, r, unavailable("agent"))
		return
	}
	if !nameRe.MatchString(name) {
		s.writeError(w, r, kgagent.Errorf(kgagent.ENOTFOUND, "no agent %q", name))
		return
	}
	hs, err := s.b.Agents.Handshake(name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if hs.FewShots == nil {
		hs.FewShots = []string{}
	}
	if hs.Corpora == nil {
		hs.Corpora = []agent.Corpus{}
	}
	if hs.Type == "" {
		hs.Type = "code_shot"
	}
	if wantsJSON(r) {
		writeJSON(w, http.StatusOK, hs)
		return
	}
	data, err := yaml.Marshal(hs)
	if err != nil {
		s.writeError(w, r, kgagent.WrapError(kgagent.EINTERNAL, err, "cannot encode handshake"))
		return
	}
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(data)
}

// writeFixieError writes a protocol error through writeErrorAs: status (or
// the code's status when 0), the error's text as the message text, and the
// error itself.
func (s *Server) writeFixieError(w http.ResponseWriter, r *http.Request, status int, err error) {
	s.writeErrorAs(w, r, status, err, func(e *kgagent.Error) any {
		return FuncResponse{Message: kgagent.Message{Text: e.Message}, Error: e}
	})
}

func (s *Server) fixieCall(w http.ResponseWriter, r *http.Request) {
	name, fn := r.PathValue("name"), r.PathValue("func")
	p, err := s.fixiePrincipal(r)
	if err != nil {
		s.writeFixieError(w, r, http.StatusForbidden, err)
		return
	}
	if s.b.Agents == nil {
		s.writeFixieError(w, r, 0, unavailable("agent"))
		return
	}
	data, err := s.readJSONBody(w, r)
	if err != nil {
		s.writeFixieError(w, r, 0, err)
		return
	}
	msg, err := DecodeFuncRequest(data)
	if err != nil {
		s.writeFixieError(w, r, http.StatusUnprocessableEntity, err)
		return
	}
	if !nameRe.MatchString(name) {
		s.writeFixieError(w, r, 0, kgagent.Errorf(kgagent.ENOTFOUND, "no agent %q", name))
		return
	}
	if !nameRe.MatchString(fn) {
		e := kgagent.Errorf(kgagent.EFuncNotDefined, "I'm sorry, Func[%s] is not defined.", fn)
		e.Details = map[string]any{"func_name": fn, "available_funcs": []string{}}
		s.writeFixieError(w, r, 0, e)
		return
	}
	if err := kgagent.CheckQuestionSize("message text", msg.Text); err != nil {
		s.writeFixieError(w, r, 0, err)
		return
	}
	// The agent's funcs read its collection: a key restricted to other
	// collections may not call them (403), as it may not ask there.
	if col, err := s.b.Agents.FuncCollection(name); err != nil {
		s.writeFixieError(w, r, 0, err)
		return
	} else if _, err := p.collection(col); err != nil {
		s.writeFixieError(w, r, http.StatusForbidden, err)
		return
	}
	var out kgagent.Message
	err = s.call(r.Context(), p, admission{id: requestID(r.Context()), scope: ScopeAsk, service: serviceFunc, charge: true}, func(ctx context.Context) error {
		var err error
		out, err = s.b.Agents.CallFunc(ctx, name, fn, msg, s.callerOf(p))
		return err
	})
	if err != nil {
		switch kgagent.ErrorCode(err) {
		case kgagent.EFuncNotDefined:
			e := toError(err)
			if e.Details == nil {
				e.Details = map[string]any{}
			}
			if _, ok := e.Details["func_name"]; !ok {
				e.Details["func_name"] = fn
			}
			if _, ok := e.Details["available_funcs"]; !ok {
				e.Details["available_funcs"] = []string{}
			}
			e.Message = fmt.Sprintf("I'm sorry, Func[%s] is not defined.", fn)
			err = e
		case kgagent.ENOTFOUND, kgagent.EINVALID, kgagent.EFORBIDDEN, kgagent.ERATELIMIT, kgagent.ETIMEOUT,
			kgagent.ECANCELED, kgagent.EUNAVAILABLE, kgagent.EUserStorageNeedsUser, kgagent.EUserStorageNotFound, kgagent.EAgentUnhandled:
		default:
			err = &kgagent.Error{Code: kgagent.EAgentUnhandled, Message: "The agent failed to handle the request.", Err: err}
		}
		s.writeFixieError(w, r, 0, err)
		return
	}
	writeJSON(w, http.StatusOK, FuncResponse{Message: out})
}
