package corpus

import "context"

// pauseKey is the context key of a pause func (WithPause).
type pauseKey struct{}

// WithPause returns ctx carrying pause, for background work that should
// give way to requests (the semantic pass): an embedder running a long
// computation under ctx calls Pause between its steps (MiniLM: before each
// layer of a forward pass), and pause returns when the work may go on (no
// request in flight for a moment, or a bound has passed, or its context
// ended). Pausing changes when the work is done, never its result.
func WithPause(ctx context.Context, pause func(context.Context)) context.Context {
	if pause == nil {
		return ctx
	}
	return context.WithValue(ctx, pauseKey{}, pause)
}

// Pause calls ctx's pause func (WithPause), if it has one.
func Pause(ctx context.Context) {
	if p, ok := ctx.Value(pauseKey{}).(func(context.Context)); ok {
		p(ctx)
	}
}

// Pausable reports whether ctx carries a pause func.
func Pausable(ctx context.Context) bool {
	_, ok := ctx.Value(pauseKey{}).(func(context.Context))
	return ok
}
