package openai_test

import (
	"testing"

	"github.com/kgagent/kgagent/agent/llmtest"
	"github.com/kgagent/kgagent/llm"
	"github.com/kgagent/kgagent/openai"
	"github.com/kgagent/kgagent/openai/openaitest"
)

// TestClientConformance runs the LLM suite on the OpenAI-compatible client
// against the scripted server, which answers every request with one reply.
func TestClientConformance(t *testing.T) {
	llmtest.Run(t, func(t *testing.T) llm.LLM {
		srv := openaitest.New(t)
		srv.SetDefault(openaitest.Reply("A: Install it with pip install example-cli."))
		c, err := openai.New(openai.Config{BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		return c
	})
}
