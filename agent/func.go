package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/kgagent/kgagent"
)

// Func is a function an agent can ask for with `Ask Func[name]: input`.
// Commands of Forge-style components are Funcs too: when Parameters is set
// the input must be a JSON object that the schema accepts, checked before the
// call.
type Func struct {
	Name        string      // ^\w+$, unique within an agent
	Description string      // shown to the LLM in the prompt
	Parameters  *Schema     // optional JSON schema of the input object
	Handler     FuncHandler // required
	// Cacheable says the func's result depends only on its input and the
	// stored knowledge (Config.Cache.Generation), not on the time, the caller or
	// anything outside: an answer is kept in the answer cache only when
	// every func it called is cacheable.
	Cacheable bool
}

// FuncHandler runs a func. Return a *kgagent.Error to give the caller a
// status, code and details; any other error is reported as internal.
type FuncHandler func(ctx context.Context, call FuncCall) (FuncResult, error)

// FuncResult is what a func returns: the reply message and, optionally, the
// sources it drew on, so that the final answer can cite them.
type FuncResult struct {
	Message kgagent.Message
	Sources []kgagent.Source
	// Evidence is what a search func found, structured, with the same
	// citation numbers as Message's text; nil for other funcs.
	Evidence *kgagent.Evidence
}

// FuncCall is one invocation of a func.
type FuncCall struct {
	RequestID   string
	Agent       string          // the agent the func belongs to
	Func        string          // the func's name
	Query       kgagent.Message // the input text, with the request's embeds
	Args        map[string]any  // the decoded input when the func has Parameters
	Caller      Caller
	UserStorage UserStorage  // nil when none is configured
	OAuth       OAuthHandler // nil when the agent has no OAuth
	Collection  string       // the corpus collection of the run
	TimeZone    string       // the caller's IANA time zone, when known
	Corpora     []Corpus     // the agent's corpora

	cite func(kgagent.Source) int
}

// Cite registers src with the run and returns its citation number (1-based,
// stable across the run, shared by equal URLs). Outside a run it returns 0;
// use Citer to number sources either way.
func (c FuncCall) Cite(src kgagent.Source) int {
	if c.cite == nil {
		return 0
	}
	return c.cite(src)
}

// Citer returns the run's citation numbering, or outside a run (the
// agent-protocol endpoint) a fresh numbering local to this call.
func (c FuncCall) Citer() func(kgagent.Source) int {
	if c.cite != nil {
		return c.cite
	}
	seen := map[string]int{}
	return func(s kgagent.Source) int {
		if n, ok := seen[s.URL]; ok {
			return n
		}
		seen[s.URL] = len(seen) + 1
		return len(seen)
	}
}

// Storage returns the caller's user storage bound to this agent and user.
// Its methods fail with EUserStorageNeedsUser for anonymous callers.
func (c FuncCall) Storage() BoundStorage {
	return BoundStorage{s: c.UserStorage, agent: c.Agent, user: c.Caller.UserID, anon: c.Caller.Anonymous || c.Caller.UserID == ""}
}

// BoundStorage is a UserStorage bound to one agent and user, the shape of the
// reference SDK's user_storage parameter.
type BoundStorage struct {
	s     UserStorage
	agent string
	user  string
	anon  bool
}

func (b BoundStorage) check() error {
	if b.anon {
		return kgagent.Errorf(kgagent.EUserStorageNeedsUser, "user storage requires a signed-in user")
	}
	if b.s == nil {
		return kgagent.Errorf(kgagent.EUNAVAILABLE, "no user storage is configured")
	}
	return nil
}

// Get returns the value of key.
func (b BoundStorage) Get(ctx context.Context, key string) (any, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	return b.s.Get(ctx, b.agent, b.user, key)
}

// Set stores value under key.
func (b BoundStorage) Set(ctx context.Context, key string, value any) error {
	if err := b.check(); err != nil {
		return err
	}
	return b.s.Set(ctx, b.agent, b.user, key, value)
}

// Delete removes key.
func (b BoundStorage) Delete(ctx context.Context, key string) error {
	if err := b.check(); err != nil {
		return err
	}
	return b.s.Delete(ctx, b.agent, b.user, key)
}

// Keys lists the user's keys.
func (b BoundStorage) Keys(ctx context.Context) ([]string, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	return b.s.Keys(ctx, b.agent, b.user)
}

// MessageFunc adapts a func that returns a plain message.
func MessageFunc(fn func(ctx context.Context, call FuncCall) (kgagent.Message, error)) FuncHandler {
	return func(ctx context.Context, call FuncCall) (FuncResult, error) {
		m, err := fn(ctx, call)
		return FuncResult{Message: m}, err
	}
}

// TextFunc adapts a func from input text to output text, the simplest shape
// of the reference SDK (`def f(query) -> str`).
func TextFunc(fn func(ctx context.Context, text string) (string, error)) FuncHandler {
	return func(ctx context.Context, call FuncCall) (FuncResult, error) {
		s, err := fn(ctx, call.Query.Text)
		return FuncResult{Message: kgagent.Message{Text: s}}, err
	}
}

// NotDefined is the error of an unknown func, as the reference SDK words it.
func NotDefined(name string, available []string) *kgagent.Error {
	if available == nil {
		available = []string{}
	}
	return &kgagent.Error{
		Code:    kgagent.EFuncNotDefined,
		Message: fmt.Sprintf("I'm sorry, Func[%s] is not defined.", name),
		Details: map[string]any{"func_name": name, "available_funcs": available},
	}
}

// invoke runs f with a timeout, validating its arguments first and turning a
// panic into EAgentUnhandled.
func invoke(ctx context.Context, f Func, call FuncCall, timeout time.Duration) (res FuncResult, err error) {
	if f.Parameters != nil {
		var args map[string]any
		if jerr := json.Unmarshal([]byte(call.Query.Text), &args); jerr != nil || args == nil {
			return res, kgagent.Errorf(kgagent.EINVALID, "Func[%s] takes a JSON object of arguments", f.Name)
		}
		if verr := f.Parameters.Validate(args); verr != nil {
			return res, kgagent.WrapError(kgagent.EINVALID, verr, "Func[%s]: bad arguments: %v", f.Name, verr)
		}
		call.Args = args
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			err = &kgagent.Error{
				Code:    kgagent.EAgentUnhandled,
				Message: fmt.Sprintf("Func[%s] failed with an unhandled exception", f.Name),
				Err:     fmt.Errorf("panic: %v\n%s", p, debug.Stack()),
			}
		}
	}()
	res, err = f.Handler(ctx, call)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil && kgagent.ErrorCode(err) == kgagent.EINTERNAL {
		err = kgagent.WrapError(kgagent.EAgentUnhandled, err, "Func[%s] failed: %v", f.Name, err)
	}
	return res, err
}
