package crawler_test

import (
	"testing"

	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/crawler/crawlertest"
)

func TestMemoryStatesConformance(t *testing.T) {
	crawlertest.TestPageStateStore(t, func(t *testing.T) crawler.PageStateStore { return crawler.NewMemoryStates() })
	crawlertest.TestSpecLog(t, func(t *testing.T) crawler.PageStateStore { return crawler.NewMemoryStates() })
}
