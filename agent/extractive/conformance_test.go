package extractive_test

import (
	"testing"

	"github.com/kgagent/kgagent/agent/extractive"
	"github.com/kgagent/kgagent/agent/llmtest"
	"github.com/kgagent/kgagent/llm"
)

// TestExtractiveConformance runs the LLM suite on the built-in model.
func TestExtractiveConformance(t *testing.T) {
	llmtest.Run(t, func(t *testing.T) llm.LLM { return extractive.NewModel(extractive.ModelConfig{}) })
}
