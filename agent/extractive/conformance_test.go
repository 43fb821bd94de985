package extractive_test

import (
	"testing"

	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/agent/extractive"
	"github.com/kgagent/kgagent/agent/llmtest"
)

// TestExtractiveConformance runs the LLM suite on the built-in model.
func TestExtractiveConformance(t *testing.T) {
	llmtest.Run(t, func(t *testing.T) agent.LLM { return extractive.NewModel(extractive.ModelConfig{}) })
}
