package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/kgagent/kgagent"
)

// The OpenAI-compatible API, so existing chat UIs and SDKs can use each
// agent as a model: GET /v1/models lists "kgagent" (the router) and every
// agent of the registry, GET /v1/models/{id} returns one; POST
// /v1/chat/completions answers the last user message with that agent, as
// one JSON completion or, with "stream": true, as SSE chunks ending with
// "data: [DONE]". Citations are appended to the content as a Markdown list
// and also given in the extra field "sources".
//
// Every request parameter is honoured or refused: tools, tool_choice
// (other than "none" and "auto"), functions, function_call, n > 1, stop and
// logprobs are 400 with the OpenAI error shape (param, code
// "unsupported_parameter"); response_format json_object and json_schema
// return the answer object as JSON (a json_schema that object cannot
// satisfy is refused before the agent runs); max_tokens and
// max_completion_tokens cut the content (4 bytes a token, finish_reason
// "length"); stream_options.include_usage adds the usage chunk. Errors of
// these routes carry OpenAI's fields (message, type, param, code) beside
// kgagent's details.

// RouterModel is the model name that lets the router choose the agent.
const RouterModel = "kgagent"

func (s *Server) openAIRoutes() {
	s.handle("GET", "/v1/models", ScopeAsk, s.listModels)
	s.handle("GET", "/v1/models/{id}", ScopeAsk, s.getModel)
	s.handle("POST", "/v1/chat/completions", scopeAtAdmission, s.chatCompletions)
}

func (s *Server) models(r *http.Request) ([]string, error) {
	names := []string{RouterModel}
	if s.b.Registry != nil {
		agents, err := s.b.Registry.ListAgents(r.Context())
		if err != nil {
			return nil, err
		}
		for _, a := range agents {
			names = append(names, a.Name)
		}
	}
	return names, nil
}

func modelObject(id string) Model {
	return Model{ID: id, Object: "model", OwnedBy: "kgagent"}
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	names, err := s.models(r)
	if err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	data := make([]Model, 0, len(names))
	for _, n := range names {
		data = append(data, modelObject(n))
	}
	writeJSON(w, http.StatusOK, ModelList{Data: data, Object: "list"})
}

// checkModel returns ENOTFOUND unless id is a model of /v1/models.
func (s *Server) checkModel(r *http.Request, id string) error {
	names, err := s.models(r)
	if err != nil {
		return err
	}
	if !slices.Contains(names, id) {
		e := kgagent.Errorf(kgagent.ENOTFOUND, "no model %q (GET /v1/models lists them)", id)
		e.Details = map[string]any{"field": "model"}
		return e
	}
	return nil
}

func (s *Server) getModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.checkModel(r, id); err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, modelObject(id))
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	if err := s.refuseScope(r, ServiceAgent); err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	data, err := s.readJSONBody(w, r)
	if err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	req, question, err := DecodeChatCompletion(data)
	if err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	opts, err := chatOptionsOf(req)
	if err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	model := req.Model
	if model == "" {
		model = RouterModel
	}
	// An unknown model is 404 before anything is charged or streamed.
	if err := s.checkModel(r, model); err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	agentName := model
	if model == RouterModel {
		agentName = ""
	}
	p := principalFrom(r.Context())
	areq := Request{Question: question, Agent: agentName, Collection: req.Collection}
	rid := requestID(r.Context())
	id := "chatcmpl-" + rid
	created := time.Now().Unix()
	// content returns the whole content of ans as the options want it,
	// and the finish reason.
	content := func(ans kgagent.Answer) (string, string, error) {
		text := ans.Answer + citations(ans.Sources)
		if opts.json {
			var err error
			if text, err = opts.answerJSON(ans); err != nil {
				return "", "", kgagent.WrapError(kgagent.EINTERNAL, err, "the answer does not fit the response_format json_schema")
			}
		}
		text, cut := opts.cut(text)
		if cut {
			return text, "length", nil
		}
		return text, "stop", nil
	}
	var mu sync.Mutex
	open := true     // the stream takes writes
	started := false // the event stream's header is written: errors go in the stream
	// write sends one chunk of the stream; usage is on the last one of a
	// stream that asked for it.
	rc := http.NewResponseController(w)
	write := func(c ChatChunk, usage *ChatUsage) {
		var v any = c
		if opts.includeUsage {
			v = chatChunkUsage{c, usage}
		}
		b, _ := json.Marshal(v)
		if !open {
			return
		}
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		_ = rc.Flush()
	}
	// head is every chunk's header; chunk adds a choice to it.
	head := ChatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model}
	chunk := func(delta ChatText, finish *string) ChatChunk {
		c := head
		c.Choices = []ChatChoice{{Index: 0, Delta: &delta, FinishReason: finish}}
		return c
	}
	err = s.call(r.Context(), p, admission{id: rid, scope: ScopeAsk, service: ServiceAgent, req: &areq, charge: true, slot: true}, func(ctx context.Context) error {
		ask := Call{ID: rid, Request: areq, Caller: s.callerOf(p)}.agentRequest()
		if !req.Stream {
			ans, err := s.b.Asker.Ask(ctx, ask, func(kgagent.Event) {})
			s.metrics.observeAnswer(ans)
			if err != nil {
				return err
			}
			text, finish, err := content(ans)
			if err != nil {
				return err
			}
			writeJSON(w, http.StatusOK, ChatCompletion{
				ID: id, Object: "chat.completion", Created: created, Model: model,
				Choices: []ChatChoice{{Index: 0, Message: &ChatText{Role: "assistant", Content: &text}, FinishReason: &finish}},
				Usage:   chatUsage(ans.Usage, req, text),
				Sources: nonNil(ans.Sources),
			})
			return nil
		}

		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Accel-Buffering", "no")
		sent := 0          // content bytes sent so far
		streamed := false  // answer deltas were sent
		truncated := false // max_tokens cut them
		mu.Lock()
		started = true
		write(chunk(ChatText{Role: "assistant", Content: Text("")}, nil), nil)
		mu.Unlock()
		ans, err := s.b.Asker.Ask(ctx, ask, func(ev kgagent.Event) {
			if ev.Kind != kgagent.EventAnswer || !ev.Delta || opts.json {
				return // JSON content is sent whole at the end
			}
			mu.Lock()
			defer mu.Unlock()
			streamed = true
			text := ev.Text
			if opts.maxBytes > 0 {
				cut := true
				if sent < opts.maxBytes {
					text, cut = (&chatOptions{maxBytes: opts.maxBytes - sent}).cut(text)
				}
				truncated = truncated || cut
				if sent >= opts.maxBytes {
					return
				}
			}
			if text == "" {
				return
			}
			sent += len(text)
			write(chunk(ChatText{Content: &text}, nil), nil)
		})
		s.metrics.observeAnswer(ans)
		if err != nil {
			return err
		}
		text, finish, err := content(ans)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		// What the deltas did not carry: the whole content when none came,
		// else the citations after the answer, within max_tokens.
		rest := text
		if streamed {
			rest, finish = citations(ans.Sources), "stop"
			if opts.maxBytes > 0 {
				cut := truncated
				if !cut {
					rest, cut = (&chatOptions{maxBytes: opts.maxBytes - sent}).cut(rest)
				} else {
					rest = ""
				}
				if cut {
					finish = "length"
				}
			}
		}
		if rest != "" {
			write(chunk(ChatText{Content: &rest}, nil), nil)
		}
		last := chunk(ChatText{}, &finish)
		last.Sources = nonNil(ans.Sources)
		write(last, nil)
		if opts.includeUsage {
			u, c := chatUsage(ans.Usage, req, text), head
			c.Choices = []ChatChoice{} // the usage chunk has no choice
			write(c, &u)
		}
		_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
		_ = rc.Flush()
		open = false
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if err == nil || !open {
		open = false
		return
	}
	open = false
	if !started {
		s.writeOpenAIError(w, r, err)
		return
	}
	// The stream is under way (a panic included): the error is its last
	// event.
	o := openAIErrorOf(err)
	b, _ := json.Marshal(openAIErrorBody{o})
	_, _ = fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
}

func nonNil(s []kgagent.Source) []kgagent.Source {
	if s == nil {
		return []kgagent.Source{}
	}
	return s
}
