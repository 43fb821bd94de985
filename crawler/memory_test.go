package crawler_test

import (
	"testing"

	"github.com/kgagent/kgagent/crawler/crawlertest"
	"github.com/kgagent/kgagent/knowledge"
)

func TestMemoryStatesConformance(t *testing.T) {
	crawlertest.TestPageStateStore(t, func(t *testing.T) knowledge.PageStates { return knowledge.NewMemoryStates() })
	crawlertest.TestSpecLog(t, func(t *testing.T) knowledge.PageStates { return knowledge.NewMemoryStates() })
}
