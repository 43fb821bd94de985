package openai

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/llm"
)

// stream is the llm.Stream of one completion.
type stream struct {
	ctx    context.Context
	cancel context.CancelFunc
	body   io.ReadCloser
	sse    *SSEReader // nil for a non-streamed answer
	stops  []string
	st     *structured // nil for the text protocol

	pending string         // text held back: it may begin a stop sequence
	stopped bool           // a stop sequence was seen
	done    bool           // no more input will be read
	usage   *kgagent.Usage // the latest usage the server reported
	reason  string         // the finish reason the server reported
	queued  *llm.Delta     // the last piece, waiting to be returned
	err     error          // sticky error
	once    sync.Once
}

// Recv returns the next piece of text; the last piece carries the usage when
// the server reported it. It returns io.EOF after the last piece.
func (s *stream) Recv() (llm.Delta, error) {
	for {
		if s.err != nil {
			return llm.Delta{}, s.err
		}
		if s.queued != nil {
			d := *s.queued
			s.queued = nil
			if d.Text != "" || d.Usage != nil || d.FinishReason != "" {
				return d, nil
			}
		}
		if s.done {
			s.release()
			return llm.Delta{}, io.EOF
		}
		ev, err := s.sse.Next()
		if err == io.EOF || (err == nil && strings.TrimSpace(ev.Data) == "[DONE]") {
			s.finish()
			continue
		}
		if err != nil {
			if s.ctx.Err() != nil {
				return s.fail(ctxError(llmServer, s.ctx))
			}
			if kgagent.ErrorCode(err) == kgagent.ETOOLARGE {
				return s.fail(err)
			}
			return s.fail(kgagent.WrapError(kgagent.EUNAVAILABLE, err, "LLM stream interrupted"))
		}
		var calls *[]ToolCall
		if s.st != nil {
			calls = &s.st.calls
		}
		text, err := parseChunk(ev.Data, &s.usage, &s.reason, calls)
		if err != nil {
			return s.fail(err)
		}
		if text == "" {
			continue
		}
		if s.st != nil {
			s.st.content.WriteString(text) // judged whole at the end
			continue
		}
		out, stopped := s.feed(text)
		if stopped {
			// The model wrote a stop sequence the server did not honour:
			// end here and stop the server generating more.
			s.finish()
			s.release()
		}
		if out != "" {
			return llm.Delta{Text: out}, nil
		}
	}
}

// parseChunk decodes one event's data and returns the text of its first
// choice, updating *usage and *reason when the chunk reports them.
func parseChunk(data string, usage **kgagent.Usage, reason *string, calls *[]ToolCall) (string, error) {
	var ch ChatChunk
	if err := json.Unmarshal([]byte(data), &ch); err != nil {
		return "", kgagent.WrapError(kgagent.EUNAVAILABLE, err, "LLM server sent a malformed stream chunk")
	}
	if ch.Error != nil {
		return "", streamError(ch.Error)
	}
	if ch.Usage != nil {
		*usage = toUsage(ch.Usage)
	}
	var b strings.Builder
	for _, c := range ch.Choices {
		if c.Index != 0 {
			continue
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			*reason = *c.FinishReason
		}
		if calls != nil {
			for _, tc := range c.Delta.ToolCalls {
				*calls = mergeToolCall(*calls, tc)
			}
			if c.Message != nil {
				for _, tc := range c.Message.ToolCalls {
					*calls = mergeToolCall(*calls, tc)
				}
			}
		}
		b.WriteString(c.Delta.Content)
		b.WriteString(c.Text)
		if c.Message != nil {
			b.WriteString(c.Message.Content)
		}
	}
	return b.String(), nil
}

// finish ends the input: the held-back text (no stop sequence followed it)
// and the usage make the last piece.
func (s *stream) finish() {
	if s.done {
		return
	}
	s.done = true
	text := ""
	if !s.stopped {
		text = s.pending
	}
	s.pending = ""
	reason := s.reason
	if s.stopped {
		reason = "stop"
	}
	d := &llm.Delta{Text: text, Usage: s.usage, FinishReason: reason}
	if s.st != nil {
		d.Text, d.Steps = s.st.result()
	}
	s.queued = d
}

// feed adds text and returns what can be passed on: everything before the
// earliest stop sequence (stopped is then true), or everything but a tail
// that may be the start of one.
func (s *stream) feed(text string) (out string, stopped bool) {
	s.pending += text
	if len(s.stops) == 0 {
		out, s.pending = s.pending, ""
		return out, false
	}
	cut := -1
	for _, st := range s.stops {
		if i := strings.Index(s.pending, st); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut >= 0 {
		out = s.pending[:cut]
		s.pending = ""
		s.stopped = true
		return out, true
	}
	hold := 0
	for _, st := range s.stops {
		for k := min(len(st)-1, len(s.pending)); k > hold; k-- {
			if strings.HasSuffix(s.pending, st[:k]) {
				hold = k
				break
			}
		}
	}
	out = s.pending[:len(s.pending)-hold]
	s.pending = s.pending[len(s.pending)-hold:]
	return out, false
}

func (s *stream) fail(err error) (llm.Delta, error) {
	s.err = err
	s.release()
	return llm.Delta{}, err
}

// release closes the connection and frees the timeout.
func (s *stream) release() {
	s.once.Do(func() {
		s.cancel()
		_ = s.body.Close()
	})
}

// Close ends the stream, closing the connection if it is still open. It may
// be called more than once.
func (s *stream) Close() error {
	s.release()
	return nil
}
