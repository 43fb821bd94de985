package agent

import (
	"testing"

	"github.com/kgagent/kgagent/agent/extractive"
	"github.com/kgagent/kgagent/llm"
)

// TestBuiltinModelSettings (issue 22 item 8: cmd only wires): the built-in
// model's own settings are Config's, whatever a caller sets (cmd used to
// override them for it): whole observations, the text protocol, no
// search-first, no attribution. Another LLM keeps what was set.
func TestBuiltinModelSettings(t *testing.T) {
	set := func(m llm.LLM) Config {
		return Config{
			Model: ModelConfig{LLM: m, ObservationTokens: 800, Protocol: llm.ProtocolJSON},
			Loop:  LoopConfig{SearchFirst: true, AttributeCitations: true},
		}.withDefaults()
	}
	for name, m := range map[string]llm.LLM{"nil": nil, "extractive": extractive.NewModel(extractive.ModelConfig{})} {
		c := set(m)
		if c.Model.ObservationTokens != 0 || c.Model.Protocol != llm.ProtocolText || c.Loop.SearchFirst || c.Loop.AttributeCitations {
			t.Errorf("built-in model (%s LLM): %+v %+v", name, c.Model, c.Loop)
		}
	}
	c := set(script("A: x"))
	if c.Model.ObservationTokens != 800 || c.Model.Protocol != llm.ProtocolJSON || !c.Loop.SearchFirst || !c.Loop.AttributeCitations {
		t.Errorf("another LLM: %+v %+v", c.Model, c.Loop)
	}
}
