package natsstate

import (
	"context"
	"fmt"
	"testing"

	"github.com/kgagent/kgagent/gateway"
	"github.com/kgagent/kgagent/internal/natscluster"
)

// BenchmarkAppend is the cost of one frame of a stream on its replica:
// stored in JetStream (an acknowledged, fenced publish) before the local
// client gets it. On the in-process server, and on a three-node cluster
// (R3) when KGAGENT_TEST_NATS_SERVER names a nats-server.
func BenchmarkAppend(b *testing.B) {
	b.Run("server", func(b *testing.B) { benchmarkAppend(b, natscluster.StartServer(b).ClientURL()) })
	b.Run("cluster", func(b *testing.B) { benchmarkAppend(b, natscluster.Start(b, 3).URL(0)) })
}

func benchmarkAppend(b *testing.B, url string) {
	ss, err := NewStreams(context.Background(), connect(b, url), StreamsConfig{SecretKey: testKey})
	if err != nil {
		b.Fatal(err)
	}
	frame := gateway.Frame{ID: "q", Response: gateway.Response{Answer: gateway.Text("a token or two "), Delta: true}}
	var st gateway.Stream
	for i := 0; b.Loop(); i++ {
		if i%1000 == 0 { // a stream of 1000 frames at most
			if st, err = ss.Start(context.Background(), fmt.Sprintf("o:u\x00q%d", i), "tok"); err != nil {
				b.Fatal(err)
			}
			_ = st.Attach(1, 0, func([]byte) bool { return true })
		}
		st.Append(frame)
	}
}
