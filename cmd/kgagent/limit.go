package main

import (
	"context"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
)

// asker is what the gateway asks; *agent.Manager implements it.
type asker interface {
	Ask(ctx context.Context, req agent.Request, emit agent.Emit) (kgagent.Answer, error)
}

// limitedAsker bounds how many questions run at once. Answering is CPU
// work: running a thousand at once (a thousand websocket clients) only
// multiplies the memory each run holds and the time every one of them
// takes. Excess questions wait their turn, or give up with their context.
type limitedAsker struct {
	next asker
	sem  chan struct{}
}

func newLimitedAsker(next asker, n int) *limitedAsker {
	if n < 1 {
		n = 1
	}
	return &limitedAsker{next: next, sem: make(chan struct{}, n)}
}

// Ask waits for a slot, then asks.
func (l *limitedAsker) Ask(ctx context.Context, req agent.Request, emit agent.Emit) (kgagent.Answer, error) {
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return kgagent.Answer{}, kgagent.WrapError(kgagent.ErrorCode(ctx.Err()), ctx.Err(), "gave up waiting for a free answer slot")
	}
	defer func() { <-l.sem }()
	return l.next.Ask(ctx, req, emit)
}
