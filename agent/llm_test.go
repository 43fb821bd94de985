package agent_test

import (
	"testing"

	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/agent/llmtest"
)

// TestExtractiveConformance runs the LLM suite on the built-in model.
func TestExtractiveConformance(t *testing.T) {
	llmtest.Run(t, func(t *testing.T) agent.LLM { return agent.NewExtractive(agent.ExtractiveConfig{}) })
}
