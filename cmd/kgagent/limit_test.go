package main

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
)

type countingAsker struct {
	running, peak atomic.Int64
}

func (c *countingAsker) Ask(ctx context.Context, req agent.Request, emit agent.Emit) (kgagent.Answer, error) {
	n := c.running.Add(1)
	for {
		p := c.peak.Load()
		if n <= p || c.peak.CompareAndSwap(p, n) {
			break
		}
	}
	time.Sleep(5 * time.Millisecond)
	c.running.Add(-1)
	return kgagent.Answer{Answer: req.Question}, nil
}

func TestLimitedAskerBoundsConcurrency(t *testing.T) {
	c := &countingAsker{}
	l := newLimitedAsker(c, 3)
	var wg sync.WaitGroup
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if a, err := l.Ask(context.Background(), agent.Request{Question: "q"}, nil); err != nil || a.Answer != "q" {
				t.Errorf("ask: %v %v", a, err)
			}
		}()
	}
	wg.Wait()
	if p := c.peak.Load(); p > 3 || p < 1 {
		t.Fatalf("peak concurrency %d, want 1..3", p)
	}
}

func TestLimitedAskerHonoursContext(t *testing.T) {
	block, holding := make(chan struct{}), make(chan struct{})
	l := newLimitedAsker(askerFunc(func(ctx context.Context) { close(holding); <-block }), 1)
	go l.Ask(context.Background(), agent.Request{}, nil)
	<-holding // the one slot is taken: the next Ask can only wait for it
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := l.Ask(ctx, agent.Request{}, nil)
	close(block)
	if kgagent.ErrorCode(err) != kgagent.ETIMEOUT {
		t.Fatalf("got %v, want TIMEOUT while waiting for a slot", err)
	}
}

type askerFunc func(ctx context.Context)

func (f askerFunc) Ask(ctx context.Context, req agent.Request, emit agent.Emit) (kgagent.Answer, error) {
	f(ctx)
	return kgagent.Answer{}, nil
}
