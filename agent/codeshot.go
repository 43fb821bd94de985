package agent

import (
	"sort"
	"strings"
	"sync"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/llm"
)

// LLMSettings choose the model of an agent (reference SDK's LlmSettings).
// Zero values mean the manager's defaults.
type LLMSettings struct {
	Model       string  `json:"model,omitempty" yaml:"model,omitempty"`
	Temperature float64 `json:"temperature,omitempty" yaml:"temperature,omitempty"`
	MaxTokens   int     `json:"max_tokens,omitempty" yaml:"max_tokens,omitempty"`
}

// AgentConfig describes a CodeShotAgent.
type AgentConfig struct {
	Name        string // ^\w+$, required
	Description string
	BasePrompt  string
	// FewShots holds one stanza per element; split a single few-shot string
	// with SplitFewShots.
	FewShots       []string
	Corpora        []Corpus
	Collection     string // corpus collection searched by fixie_query_corpus; empty: the request's, else "default"
	Conversational bool
	LLM            LLMSettings
	Funcs          []Func
	Components     []Component
	// Remote is the base URL of the agent when it runs elsewhere and is
	// reached over the agent protocol; informational.
	Remote string
}

// CodeShotAgent is a base prompt, validated few-shot stanzas, registered
// funcs, optional corpora and components. It is safe for concurrent use.
type CodeShotAgent struct {
	cfg     AgentConfig
	stanzas []llm.Stanza

	mu    sync.RWMutex
	funcs map[string]Func
}

// NewCodeShotAgent validates cfg: the name, each func (name ^\w+$, unique,
// with a handler) and every few-shot stanza against the reference SDK's
// rules, where a Func must be one of cfg.Funcs, a component command or a
// fixie_ built-in. Violations are EINVALID errors naming the stanza and rule.
func NewCodeShotAgent(cfg AgentConfig) (*CodeShotAgent, error) {
	if !ValidName(cfg.Name) {
		return nil, kgagent.Errorf(kgagent.EINVALID, "agent name %q must match ^\\w+$", cfg.Name)
	}
	a := &CodeShotAgent{cfg: cfg, funcs: map[string]Func{}}
	a.cfg.BasePrompt = strings.TrimSpace(StripLines(cfg.BasePrompt))
	for _, f := range cfg.Funcs {
		if err := a.addFunc(f); err != nil {
			return nil, err
		}
	}
	for _, c := range cfg.Components {
		if cp, ok := c.(CommandProvider); ok {
			for _, f := range cp.Commands() {
				if _, dup := a.funcs[f.Name]; !dup {
					if err := a.addFunc(f); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	st, err := ParseFewShots(cfg.FewShots, cfg.Conversational, func(n string) bool { _, ok := a.funcs[n]; return ok })
	if err != nil {
		if ke, ok := err.(*kgagent.Error); ok {
			ke.Message = "agent " + cfg.Name + ": " + ke.Message
			ke.Details["agent"] = cfg.Name
		}
		return nil, err
	}
	a.stanzas = st
	a.cfg.FewShots = make([]string, len(st))
	for i, s := range st {
		a.cfg.FewShots[i] = s.Text
	}
	return a, nil
}

func (a *CodeShotAgent) addFunc(f Func) error {
	if !ValidName(f.Name) {
		return kgagent.Errorf(kgagent.EINVALID, "agent %s: func name %q must match ^\\w+$", a.cfg.Name, f.Name)
	}
	if f.Handler == nil {
		return kgagent.Errorf(kgagent.EINVALID, "agent %s: func %s has no handler", a.cfg.Name, f.Name)
	}
	if _, dup := a.funcs[f.Name]; dup {
		return kgagent.Errorf(kgagent.ECONFLICT, "agent %s: func %s is registered twice", a.cfg.Name, f.Name)
	}
	a.funcs[f.Name] = f
	return nil
}

// RegisterFunc adds a func after construction (EINVALID for a bad name or
// no handler, ECONFLICT for a name taken).
func (a *CodeShotAgent) RegisterFunc(f Func) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.addFunc(f)
}

// Func returns the registered func name.
func (a *CodeShotAgent) Func(name string) (Func, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	f, ok := a.funcs[name]
	return f, ok
}

// FuncNames lists the registered funcs, sorted.
func (a *CodeShotAgent) FuncNames() []string {
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make([]string, 0, len(a.funcs))
	for n := range a.funcs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Name returns the agent's name.
func (a *CodeShotAgent) Name() string { return a.cfg.Name }

// Config returns the agent's configuration (few-shots stripped and split).
func (a *CodeShotAgent) Config() AgentConfig { return a.cfg }

// Stanzas returns the validated few-shot stanzas.
func (a *CodeShotAgent) Stanzas() []llm.Stanza { return a.stanzas }

// Handshake returns what GET / of the agent protocol serves.
func (a *CodeShotAgent) Handshake() Handshake {
	fs := append([]string{}, a.cfg.FewShots...)
	corp := append([]Corpus{}, a.cfg.Corpora...)
	return Handshake{
		BasePrompt:     a.cfg.BasePrompt,
		FewShots:       fs,
		Corpora:        corp,
		Conversational: a.cfg.Conversational,
		Type:           "code_shot",
	}
}
