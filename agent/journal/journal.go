// Package journal keeps an agent run's model outputs so that the run can be
// repeated with the same outputs (a request continued on another replica).
// The agent's loop opens each model call through Open; the gateway's
// durable streams implement Journal.
package journal

import (
	"context"
	"errors"
	"io"

	"github.com/kgagent/kgagent/llm"
)

// Journal keeps the model's outputs of one run so that the run can be
// repeated with the same outputs: the gateway gives one to a request whose
// stream another replica may continue (the replica running it died), and
// that replica runs the request again with the journal, so that a model
// that samples gives the same steps, and the same events, as before. Calls
// are numbered from 0 in the order the run makes them; a run repeated with
// the same outputs makes the same calls. Funcs are not journaled: they run
// again (the built-in ones read the corpus and graph).
type Journal interface {
	// Output returns the recorded output of call n, if there is one.
	Output(n int) ([]llm.Delta, bool)
	// Record keeps the output of call n (the deltas the run read), once
	// the call ended without error or time-out; it is called before the
	// run emits any event that follows from that output (answer deltas
	// streamed while the call runs come before it).
	Record(n int, out []llm.Delta)
}

// Open starts call n of a run with journal j: a recorded output is
// replayed; otherwise model is asked, and its output recorded when the call
// ends well.
func Open(ctx context.Context, j Journal, n int, model llm.LLM, creq llm.CompletionRequest) (llm.Stream, error) {
	if out, ok := j.Output(n); ok {
		return &replayed{out: out}, nil
	}
	s, err := model.Complete(ctx, creq)
	if err != nil {
		return nil, err
	}
	return &recording{Stream: s, ctx: ctx, j: j, n: n}, nil
}

// replayed streams a recorded output.
type replayed struct {
	out []llm.Delta
	i   int
}

func (s *replayed) Recv() (llm.Delta, error) {
	if s.i >= len(s.out) {
		return llm.Delta{}, io.EOF
	}
	s.i++
	return s.out[s.i-1], nil
}

func (s *replayed) Close() error { return nil }

// recording keeps the deltas read from a model's stream and records them
// at Close, unless the stream failed or the call's context ended.
type recording struct {
	llm.Stream
	ctx    context.Context
	j      Journal
	n      int
	out    []llm.Delta
	failed bool
}

func (s *recording) Recv() (llm.Delta, error) {
	d, err := s.Stream.Recv()
	if d.Text != "" || d.Usage != nil || d.FinishReason != "" || len(d.Steps) > 0 {
		s.out = append(s.out, d)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		s.failed = true
	}
	return d, err
}

func (s *recording) Close() error {
	if !s.failed && s.ctx.Err() == nil {
		s.j.Record(s.n, s.out)
	}
	return s.Stream.Close()
}
