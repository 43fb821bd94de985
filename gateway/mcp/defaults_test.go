package mcp

import (
	"testing"

	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/graphrag"
)

// TestToolBoundsAreShared (issue 22 item 4): the search and graph tools'
// defaults and bounds are the services' exported ones, which REST, the
// websocket, NATS and GraphQL admit too, so no transport drifts (the graph
// limit was 1000 here and 10000 on REST).
func TestToolBoundsAreShared(t *testing.T) {
	if defaultK != corpus.DefaultK || defaultGraphLimit != graphrag.DefaultFindLimit || maxGraphLimit != graphrag.MaxFindLimit {
		t.Errorf("MCP k %d, graph limit %d..%d; corpus.DefaultK %d, graphrag %d..%d",
			defaultK, defaultGraphLimit, maxGraphLimit, corpus.DefaultK, graphrag.DefaultFindLimit, graphrag.MaxFindLimit)
	}
}
