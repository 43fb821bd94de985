package oauth

import (
	"context"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
)

// CallbackFuncName is the func the provider's redirect reaches (seed 001).
const CallbackFuncName = "_oauth"

// CallbackFunc returns the `_oauth` func to register on the agent: it
// completes the caller's authorization from the redirect URL, query string
// or JSON in the query text (see Handler.HandleCallback).
func (p *Provider) CallbackFunc() agent.Func {
	return agent.Func{
		Name:        CallbackFuncName,
		Description: "completes the OAuth authorization of " + p.agent + " (called by the provider's redirect)",
		Handler: agent.MessageFunc(func(ctx context.Context, call agent.FuncCall) (kgagent.Message, error) {
			user := call.Caller.UserID
			if call.Caller.Anonymous {
				user = ""
			}
			return p.Handler(user).HandleCallback(ctx, call.Query)
		}),
	}
}

// Providers holds the OAuth set-up of each agent that has one, by agent name.
type Providers map[string]*Provider

// For returns the handler of caller for agentName, or nil (a nil interface)
// when the agent has no OAuth. Its signature is that of agent.Config.OAuth.
func (ps Providers) For(agentName string, caller agent.Caller) agent.OAuthHandler {
	p, ok := ps[agentName]
	if !ok || p == nil {
		return nil
	}
	user := caller.UserID
	if caller.Anonymous {
		user = ""
	}
	return p.Handler(user)
}
