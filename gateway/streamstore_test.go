package gateway_test

import (
	"testing"
	"time"

	"github.com/kgagent/kgagent/gateway"
	"github.com/kgagent/kgagent/gateway/streamstoretest"
)

// TestMemStreamsConformance runs the StreamStore suite on the in-memory
// store (n replicas of one process share the one store).
func TestMemStreamsConformance(t *testing.T) {
	streamstoretest.Run(t, func(t *testing.T, n int) []gateway.StreamStore {
		s := gateway.NewMemStreams(time.Minute, 100, 100, 1<<20)
		ss := make([]gateway.StreamStore, n)
		for i := range ss {
			ss[i] = s
		}
		return ss
	})
}
