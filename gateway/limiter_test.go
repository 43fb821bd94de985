package gateway_test

import (
	"testing"

	"github.com/kgagent/kgagent/gateway"
	"github.com/kgagent/kgagent/gateway/limitertest"
)

// TestMemLimiterConformance runs the Limiter suite on the in-memory limiter
// (n replicas of one process share the one limiter).
func TestMemLimiterConformance(t *testing.T) {
	limitertest.Run(t, func(t *testing.T, n int) []gateway.Limiter {
		l := gateway.NewMemLimiter()
		ls := make([]gateway.Limiter, n)
		for i := range ls {
			ls[i] = l
		}
		return ls
	})
}
