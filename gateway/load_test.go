package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// The load test drives the gateway with a fake fast agent, the way clients
// do: REST at concurrency 16, 1000 concurrent websocket clients streaming one
// answer each. NATS throughput is in gateway/natsapi. It is not a timed test:
// run it with
//
//	KGAGENT_LOAD=1 go test -run TestLoad -v ./gateway/
//
// and read the figures it logs.

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

func rssMB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")), "%f", &kb)
			return kb / 1024
		}
	}
	return 0
}

func TestLoad(t *testing.T) {
	if os.Getenv("KGAGENT_LOAD") != "1" {
		t.Skip("set KGAGENT_LOAD=1 to run the load test")
	}
	f := newFixture(t, Config{})
	t.Run("rest-c16", func(t *testing.T) {
		const conc, total = 16, 4000
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc}}
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		jobs := make(chan int)
		start := time.Now()
		for w := 0; w < conc; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range jobs {
					t0 := time.Now()
					resp, err := client.Post(f.ts.URL+"/api/v1/agent", "application/json", strings.NewReader(`{"question":"What is the GIL?"}`))
					if err != nil {
						t.Error(err)
						return
					}
					var m map[string]any
					_ = json.NewDecoder(resp.Body).Decode(&m)
					resp.Body.Close()
					if resp.StatusCode != 200 || m["answer"] == nil {
						t.Errorf("status %d", resp.StatusCode)
					}
					d := time.Since(t0)
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
				}
			}()
		}
		for i := 0; i < total; i++ {
			jobs <- i
		}
		close(jobs)
		wg.Wait()
		el := time.Since(start)
		t.Logf("REST c=16: %d answers in %v: %.0f answers/s, p50 %v, p99 %v", total, el.Round(time.Millisecond), float64(total)/el.Seconds(), percentile(lat, 0.5), percentile(lat, 0.99))
	})
	t.Run("websocket-1000", func(t *testing.T) {
		const clients = 1000
		u := "ws" + strings.TrimPrefix(f.ts.URL, "http") + "/api/v1/socket"
		conns := make([]*websocket.Conn, clients)
		for i := range conns {
			c, _, err := websocket.DefaultDialer.Dial(u, nil)
			if err != nil {
				t.Fatalf("dial %d: %v", i, err)
			}
			conns[i] = c
			defer c.Close()
		}
		lat := make([]time.Duration, clients)
		var wg sync.WaitGroup
		var failed sync.Map
		start := time.Now()
		for i, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t0 := time.Now()
				id := fmt.Sprintf("load-%d", i)
				if err := c.WriteMessage(websocket.TextMessage, []byte(`{"id":"`+id+`","service":"agent","request":{"question":"q"}}`)); err != nil {
					failed.Store(i, err)
					return
				}
				for {
					_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
					_, data, err := c.ReadMessage()
					if err != nil {
						failed.Store(i, err)
						return
					}
					var fr Frame
					_ = json.Unmarshal(data, &fr)
					if fr.Complete {
						if fr.Error != nil {
							failed.Store(i, fr.Error.Message)
						}
						lat[i] = time.Since(t0)
						return
					}
				}
			}()
		}
		wg.Wait()
		el := time.Since(start)
		n := 0
		failed.Range(func(k, v any) bool { n++; t.Errorf("client %v: %v", k, v); return n < 5 })
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		t.Logf("websocket: %d clients, each one streamed answer: all done in %v, p50 %v, p99 %v; process peak RSS %.0f MB (clients and server together), heap in use %.0f MB",
			clients, el.Round(time.Millisecond), percentile(lat, 0.5), percentile(lat, 0.99), rssMB(), float64(ms.HeapInuse)/(1<<20))
	})
}

// BenchmarkRESTAgent measures one POST /api/v1/agent over loopback with the
// fake agent, run in parallel (go test -bench RESTAgent -cpu 16).
func BenchmarkRESTAgent(b *testing.B) {
	f := newFixture(b, Config{})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(f.ts.URL+"/api/v1/agent", "application/json", strings.NewReader(`{"question":"What is the GIL?"}`))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
			}
		}
	})
}

// BenchmarkSocketAnswer measures one streamed answer on a kept websocket.
func BenchmarkSocketAnswer(b *testing.B) {
	f := newFixture(b, Config{})
	c := dialSocket(b, f.ts.URL, "")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprintf("b%d", i)
		send(b, c, `{"id":"`+id+`","service":"agent","request":{"question":"q"}}`)
		readUntilComplete(b, c, id)
	}
}
