package natsapi

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent/gateway"
	"github.com/nats-io/nats.go"
)

// TestLoadNATS measures answers per second over a real in-process NATS
// server with a fake fast agent: 32 concurrent requesters, each request
// streamed to completion. Run with KGAGENT_LOAD=1 go test -run TestLoadNATS -v.
func TestLoadNATS(t *testing.T) {
	if os.Getenv("KGAGENT_LOAD") != "1" {
		t.Skip("set KGAGENT_LOAD=1 to run the load test")
	}
	ns := startNATS(t)
	startWorker(t, ns, &asker{})
	nc := connect(t, ns)
	const conc, total = 32, 5000
	// One wildcard inbox subscription for all replies, routed by the last
	// token, as nats.go's own request mux does.
	prefix := nats.NewInbox()
	var mu sync.Mutex
	waiting := map[string]chan struct{}{}
	_, err := nc.Subscribe(prefix+".*", func(m *nats.Msg) {
		var f gateway.Frame
		_ = json.Unmarshal(m.Data, &f)
		if !f.Complete {
			return
		}
		mu.Lock()
		ch := waiting[m.Subject]
		delete(waiting, m.Subject)
		mu.Unlock()
		if ch != nil {
			close(ch)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				reply := fmt.Sprintf("%s.%d", prefix, i)
				done := make(chan struct{})
				mu.Lock()
				waiting[reply] = done
				mu.Unlock()
				_ = nc.PublishRequest("kgagent.request.agent", reply, []byte(fmt.Sprintf(`{"question":"q%d"}`, i)))
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Errorf("request %d: no complete frame", i)
				}
			}
		}()
	}
	for i := 0; i < total; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	el := time.Since(start)
	t.Logf("NATS: %d streamed answers (3 frames each) in %v: %.0f answers/s with %d concurrent requesters", total, el.Round(time.Millisecond), float64(total)/el.Seconds(), conc)
}
