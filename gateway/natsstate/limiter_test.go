package natsstate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kgagent/kgagent/gateway"
	"github.com/kgagent/kgagent/gateway/limitertest"
	"github.com/kgagent/kgagent/internal/natscluster"
)

func startNATS(t *testing.T) *server.Server { return natscluster.StartServer(t) }

func connect(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// TestLimiterConformance runs the Limiter suite: each case gets its own
// NATS server, and n limiters on n connections to it (n replicas).
func TestLimiterConformance(t *testing.T) {
	limitertest.Run(t, func(t *testing.T, n int) []gateway.Limiter {
		s := startNATS(t)
		ls := make([]gateway.Limiter, n)
		for i := range ls {
			l, err := NewLimiter(context.Background(), connect(t, s.ClientURL()), LimiterConfig{})
			if err != nil {
				t.Fatal(err)
			}
			ls[i] = l
		}
		return ls
	})
}

// TestLimitOnCluster runs the exactness check on the three-node cluster make
// test starts, with the replicas on different nodes.
func TestLimitOnCluster(t *testing.T) {
	urls := natscluster.Shared(t)
	var ls []gateway.Limiter
	bucket := "kgagent_limits_test_" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "_")
	for i := range 2 {
		nc := connect(t, urls[i])
		l, err := NewLimiter(context.Background(), nc, LimiterConfig{Bucket: bucket})
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	t.Cleanup(func() {
		nc, err := nats.Connect(urls[0])
		if err != nil {
			return
		}
		defer nc.Close()
		if js, err := jetstream.New(nc); err == nil {
			_ = js.DeleteKeyValue(context.Background(), bucket)
		}
	})
	if got := limitertest.TakeConcurrently(t, ls, 60, "2026-11-24", []gateway.Bucket{{Key: "key:k", Limit: 25}}); got != 25 {
		t.Errorf("%d of 60 requests allowed on the cluster, want exactly 25", got)
	}
}
