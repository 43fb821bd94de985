package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nats-io/nats.go"

	"github.com/kgagent/kgagent/internal/eval"
)

// TestLoadRealStack is the load benchmark of the gateway over the real
// stack: the kgagent binary serving an ingested collection, driven over
// REST, websocket and NATS from this process. It is a benchmark, not a
// test: it runs only when KGAGENT_BENCH_DATA names a data dir that holds the
// collection (see deploy/bench.sh), and prints its figures.
//
//	KGAGENT_BENCH_DATA=/tmp/pydocs-data go test ./cmd/kgagent -run LoadRealStack -v -timeout 20m
func TestLoadRealStack(t *testing.T) {
	data, coll, qs := benchInputs(t)
	bin := buildBinary(t)
	cmd := exec.Command(bin, "serve", "--data-dir", data, "--addr", "127.0.0.1:0", "--nats-listen", "127.0.0.1:-1", "--log-level", "error", "--collection", coll, "--daily-query-limit", "100000000")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	var base, natsURL string
	for (base == "" || natsURL == "") && sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "chat page: "); ok {
			base = strings.TrimSuffix(v, "/")
		}
		if v, ok := strings.CutPrefix(line, "NATS: "); ok {
			natsURL, _, _ = strings.Cut(v, " ")
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	question := func(i int) string {
		b, _ := json.Marshal(map[string]string{"question": qs[i%len(qs)].Question, "collection": coll})
		return string(b)
	}

	// Warm up: the first questions load the in-memory index and graph copy.
	for i := 0; i < envInt("KGAGENT_BENCH_WARMUP", 200); i++ {
		resp, err := http.Post(base+"/api/v1/agent", "application/json", strings.NewReader(question(i)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	// REST at concurrency 16.
	n := envInt("KGAGENT_BENCH_REST_N", 2000)
	var lat []time.Duration
	var mu sync.Mutex
	var next, failed atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				resp, err := client.Post(base+"/api/v1/agent", "application/json", strings.NewReader(question(i)))
				if err != nil || resp.StatusCode != 200 {
					failed.Add(1)
					if resp != nil {
						resp.Body.Close()
					}
					continue
				}
				var a struct {
					Answer string `json:"answer"`
				}
				_ = json.NewDecoder(resp.Body).Decode(&a)
				resp.Body.Close()
				d := time.Since(t0)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	t.Logf("REST c16: %d answers in %.1fs = %.0f answers/s, p50 %.1f ms, p99 %.1f ms, failed %d",
		len(lat), el.Seconds(), float64(len(lat))/el.Seconds(), eval.PercentileMs(lat, 0.5), eval.PercentileMs(lat, 0.99), failed.Load())

	// 1000 concurrent websocket clients, each streaming one answer.
	clients := envInt("KGAGENT_BENCH_WS_CLIENTS", 1000)
	u := "ws" + strings.TrimPrefix(base, "http") + "/api/v1/socket"
	lat = lat[:0]
	var completed, wsFailed atomic.Int64
	var frames atomic.Int64
	startWS := make(chan struct{})
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			d := websocket.Dialer{HandshakeTimeout: 30 * time.Second}
			conn, _, err := d.Dial(u, nil)
			if err != nil {
				wsFailed.Add(1)
				return
			}
			defer conn.Close()
			<-startWS
			id := "c" + strconv.Itoa(c)
			req := fmt.Sprintf(`{"id":%q,"service":"agent","request":%s}`, id, question(c))
			t0 := time.Now()
			if err := conn.WriteMessage(websocket.TextMessage, []byte(req)); err != nil {
				wsFailed.Add(1)
				return
			}
			_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
			for {
				var f struct {
					Complete bool `json:"complete"`
					Error    any  `json:"error"`
				}
				if err := conn.ReadJSON(&f); err != nil {
					wsFailed.Add(1)
					return
				}
				frames.Add(1)
				if f.Complete {
					if f.Error != nil {
						wsFailed.Add(1)
						return
					}
					completed.Add(1)
					mu.Lock()
					lat = append(lat, time.Since(t0))
					mu.Unlock()
					return
				}
			}
		}(c)
	}
	time.Sleep(2 * time.Second) // let the dials finish before the questions start
	start = time.Now()
	close(startWS)
	wg.Wait()
	el = time.Since(start)
	t.Logf("websocket: %d clients, %d completed in %.1fs = %.0f answers/s, %d failed, %d frames, p50 %.1f ms, p99 %.1f ms",
		clients, completed.Load(), el.Seconds(), float64(completed.Load())/el.Seconds(), wsFailed.Load(), frames.Load(), eval.PercentileMs(lat, 0.5), eval.PercentileMs(lat, 0.99))

	// NATS: requests on kgagent.request.agent, responses streamed to inboxes.
	if u, err := natsURLOf(data); err == nil {
		natsURL = u // the printed URL has no credentials
	}
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nn := envInt("KGAGENT_BENCH_NATS_N", 2000)
	next.Store(0)
	lat = lat[:0]
	var natsDone, natsFailed atomic.Int64
	start = time.Now()
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inbox := nats.NewInbox()
			sub, err := nc.SubscribeSync(inbox)
			if err != nil {
				natsFailed.Add(1)
				return
			}
			defer sub.Unsubscribe()
			for {
				i := int(next.Add(1)) - 1
				if i >= nn {
					return
				}
				t0 := time.Now()
				if err := nc.PublishRequest("kgagent.request.agent", inbox, []byte(question(i))); err != nil {
					natsFailed.Add(1)
					continue
				}
				for {
					m, err := sub.NextMsg(30 * time.Second)
					if err != nil {
						natsFailed.Add(1)
						break
					}
					var f struct {
						Complete bool `json:"complete"`
					}
					_ = json.Unmarshal(m.Data, &f)
					if f.Complete {
						natsDone.Add(1)
						d := time.Since(t0)
						mu.Lock()
						lat = append(lat, d)
						mu.Unlock()
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	el = time.Since(start)
	t.Logf("NATS c32: %d answers in %.1fs = %.0f answers/s, p50 %.1f ms, p99 %.1f ms, failed %d",
		natsDone.Load(), el.Seconds(), float64(natsDone.Load())/el.Seconds(), eval.PercentileMs(lat, 0.5), eval.PercentileMs(lat, 0.99), natsFailed.Load())
	t.Logf("server peak RSS %d MB (VmHWM of the serve process)", peakRSSMB(cmd.Process.Pid))
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
		return v
	}
	return def
}

// peakRSSMB reads a process's peak resident set size from /proc.
func peakRSSMB(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.Atoi(f[0])
				return kb / 1024
			}
		}
	}
	return -1
}

// benchInputs returns the data dir, collection and questions of a benchmark
// over an ingested collection (KGAGENT_BENCH_DATA, KGAGENT_BENCH_COLLECTION,
// KGAGENT_BENCH_QUESTIONS), skipping it when no data dir is set.
func benchInputs(t *testing.T) (data, collection string, qs []eval.Question) {
	t.Helper()
	data = os.Getenv("KGAGENT_BENCH_DATA")
	if data == "" {
		t.Skip("benchmark: set KGAGENT_BENCH_DATA to a data dir with an ingested collection")
	}
	qs, err := eval.ReadQuestions(envOr("KGAGENT_BENCH_QUESTIONS", "../../bench/pydocs_questions.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return data, envOr("KGAGENT_BENCH_COLLECTION", "pydocs"), qs
}
