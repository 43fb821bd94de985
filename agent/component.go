package agent

import (
	"context"
	"strings"

	"github.com/kgagent/kgagent/llm"

	"github.com/kgagent/kgagent"
)

// Component is a unit of agent behaviour after AutoGPT Forge's components
// (seed 003). A component implements any of the protocol interfaces below;
// the manager calls them at the matching point of each run, in dependency
// order. A component's error is reported as an error event and the run goes
// on without it.
type Component interface {
	// ComponentName identifies the component in RunAfter lists and events.
	ComponentName() string
}

// Enabler is implemented by components that can be switched off; disabled
// components are skipped.
type Enabler interface {
	Enabled() bool
}

// Dependent is implemented by components that must run after others (named
// by ComponentName). Unknown names are ignored; a cycle is an error.
type Dependent interface {
	RunAfter() []string
}

// RunInfo describes the run a component hook is called for.
type RunInfo struct {
	RequestID string
	Agent     string
	Question  string
	Caller    Caller
	Iteration int
}

// Directives are constraints, resources and best practices for the prompt.
type Directives struct {
	Constraints   []string
	Resources     []string
	BestPractices []string
}

// DirectiveProvider adds constraints, resources and best practices to the
// prompt. Order-independent.
type DirectiveProvider interface {
	Directives(ctx context.Context, run RunInfo) (Directives, error)
}

// CommandProvider provides funcs (Forge's commands, with JSON-schema
// parameters) the agent can ask for. Order-independent.
type CommandProvider interface {
	Commands() []Func
}

// MessageProvider adds chat messages to the prompt, after the system prompt
// and before the conversation.
type MessageProvider interface {
	Messages(ctx context.Context, run RunInfo) ([]llm.ChatMessage, error)
}

// AfterParse is called with each parsed LLM output; it may change the step.
type AfterParse interface {
	AfterParse(ctx context.Context, run RunInfo, step *llm.Step) error
}

// ExecutionFailure is called when a func or agent call fails.
type ExecutionFailure interface {
	ExecutionFailure(ctx context.Context, run RunInfo, step llm.Step, err error) error
}

// AfterExecute is called after a func or agent call succeeds; it may change
// the result.
type AfterExecute interface {
	AfterExecute(ctx context.Context, run RunInfo, step llm.Step, res *FuncResult) error
}

// OrderComponents drops disabled components and orders the rest so that each
// runs after the components it names in RunAfter, keeping the given order
// otherwise. A dependency cycle is an EINVALID error.
func OrderComponents(cs []Component) ([]Component, error) {
	var enabled []Component
	idx := map[string]int{}
	for _, c := range cs {
		if e, ok := c.(Enabler); ok && !e.Enabled() {
			continue
		}
		idx[c.ComponentName()] = len(enabled)
		enabled = append(enabled, c)
	}
	const (
		unseen = iota
		visiting
		done
	)
	state := make([]int, len(enabled))
	out := make([]Component, 0, len(enabled))
	var visit func(i int, path []string) error
	visit = func(i int, path []string) error {
		switch state[i] {
		case done:
			return nil
		case visiting:
			return kgagent.Errorf(kgagent.EINVALID, "component dependency cycle: %s", strings.Join(append(path, enabled[i].ComponentName()), " -> "))
		}
		state[i] = visiting
		if d, ok := enabled[i].(Dependent); ok {
			for _, name := range d.RunAfter() {
				if j, ok := idx[name]; ok {
					if err := visit(j, append(path, enabled[i].ComponentName())); err != nil {
						return err
					}
				}
			}
		}
		state[i] = done
		out = append(out, enabled[i])
		return nil
	}
	for i := range enabled {
		if err := visit(i, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}
