// Package llmtest is the conformance suite every llm.LLM passes: the
// built-in model (extractive.Model) and the OpenAI-compatible client
// (package openai, against the scripted server of openai/openaitest).
// Call Run from a test in the implementation's package, in the manner of
// testing/fstest.
//
// The contract it checks, beyond the LLM and Stream doc comments:
//   - A question gets a stream of pieces with some text, then io.EOF, and
//     io.EOF again on every later Recv; Close returns nil, twice too.
//   - A request without messages is EINVALID.
//   - A context canceled before Complete ends the call with CANCELED, from
//     Complete or from the stream's first Recv.
//   - Concurrent completions on one LLM all finish.
package llmtest

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/llm"
)

// NewFunc returns the LLM under test, fresh for each call. It must answer
// any request of one user message with some text.
type NewFunc func(t *testing.T) llm.LLM

// Run runs the suite on the LLMs newLLM returns.
func Run(t *testing.T, newLLM NewFunc) {
	t.Run("StreamEndsWithEOF", func(t *testing.T) { testStream(t, newLLM(t)) })
	t.Run("NoMessagesInvalid", func(t *testing.T) { testNoMessages(t, newLLM(t)) })
	t.Run("CanceledContext", func(t *testing.T) { testCanceled(t, newLLM(t)) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, newLLM(t)) })
}

func question() llm.CompletionRequest {
	return llm.CompletionRequest{Messages: []llm.ChatMessage{{Role: "user", Content: "Q: How do I install the tool?"}}}
}

// drain reads st to its end and returns the text.
func drain(st llm.Stream) (string, error) {
	var b strings.Builder
	for range 1 << 16 {
		d, err := st.Recv()
		if err != nil {
			return b.String(), err
		}
		b.WriteString(d.Text)
	}
	return b.String(), errors.New("stream did not end after 65536 pieces")
}

func testStream(t *testing.T, model llm.LLM) {
	st, err := model.Complete(context.Background(), question())
	if err != nil {
		t.Fatal(err)
	}
	text, err := drain(st)
	if err != io.EOF {
		t.Fatalf("stream ended with %v, want io.EOF", err)
	}
	if strings.TrimSpace(text) == "" {
		t.Error("stream had no text")
	}
	for i := range 2 {
		if _, err := st.Recv(); err != io.EOF {
			t.Errorf("Recv %d after the end: %v, want io.EOF", i+1, err)
		}
	}
	if err := st.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func testNoMessages(t *testing.T, model llm.LLM) {
	st, err := model.Complete(context.Background(), llm.CompletionRequest{})
	if err == nil {
		_, err = drain(st)
		st.Close()
	}
	if kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("request without messages: %v, want INVALID_ARGUMENT", err)
	}
}

func testCanceled(t *testing.T, model llm.LLM) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st, err := model.Complete(ctx, question())
	if err == nil {
		_, err = st.Recv()
		st.Close()
	}
	if kgagent.ErrorCode(err) != kgagent.ECANCELED {
		t.Errorf("canceled context: %v, want CANCELED", err)
	}
}

func testConcurrent(t *testing.T, model llm.LLM) {
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := model.Complete(context.Background(), question())
			if err != nil {
				t.Error(err)
				return
			}
			defer st.Close()
			if text, err := drain(st); err != io.EOF || strings.TrimSpace(text) == "" {
				t.Errorf("concurrent completion: %q %v", text, err)
			}
		}()
	}
	wg.Wait()
}
