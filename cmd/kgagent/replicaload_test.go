package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kgagent/kgagent/internal/natscluster"
	"github.com/kgagent/kgagent/internal/poll"
)

// startReplica starts `kgagent serve --demo` as a separate process on the
// given NATS URL and waits until it serves the ingested demo site.
func startReplica(t *testing.T, name, natsURL string, extra ...string) (*proc, string) {
	t.Helper()
	args := append([]string{"serve", "--demo", "--demo-site-dir", siteDir, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0",
		"--nats-url", natsURL, "--job-secret", testJobSecret, "--daily-query-limit", "100000000", "--shutdown-timeout", "5s"}, extra...)
	p := startProc(t, name, nil, args...)
	var base string
	poll.Until(t, 60*time.Second, func() error {
		out := p.out.String()
		var ok bool
		if base, ok = chatPageURL(out); !ok || !strings.Contains(out, "demo site ingested") {
			return fmt.Errorf("%s is not serving the ingested demo yet: %s", name, tail(out, 2000))
		}
		return nil
	})
	return p, base
}

// loadStats is what a load run across replicas saw.
type loadStats struct {
	Sent, Answered, Errors, Hung int
	Recover                      time.Duration // from the fault to the last failed request (0: none failed)
	P50, P99                     time.Duration // latency of answered requests
	Seconds                      float64
}

func (s loadStats) String() string {
	return fmt.Sprintf("%d requests in %.1fs: %d answered, %d errors, %d hung; last error %s after the fault; answered p50 %s p99 %s",
		s.Sent, s.Seconds, s.Answered, s.Errors, s.Hung, s.Recover.Round(time.Millisecond), s.P50.Round(time.Microsecond), s.P99.Round(time.Microsecond))
}

// replicaLoad asks questions over REST for d with conc clients, spreading
// them round-robin over the replicas that are up, as a load balancer with
// health checks does: a replica whose connection fails is taken out until
// its /readyz answers 200 again (checked every 250 ms). fault runs after
// d/3. A request is hung when it has no answer after hangAfter. Requests
// are not retried: every failure counts.
func replicaLoad(t *testing.T, bases []string, d time.Duration, conc int, hangAfter time.Duration, fault func()) loadStats {
	t.Helper()
	questions := []string{
		"What is the default HTTP port of the Lumen server?",
		"How do I create an API token?",
		"What is the default retention period?",
		"How do I install Lumen on Linux?",
	}
	up := make([]atomic.Bool, len(bases))
	for i := range up {
		up[i].Store(true)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // health checks
		for ctx.Err() == nil {
			for i, b := range bases {
				if up[i].Load() {
					continue
				}
				cctx, c := context.WithTimeout(ctx, time.Second)
				req, _ := http.NewRequestWithContext(cctx, "GET", b+"/readyz", nil)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
					up[i].Store(resp.StatusCode == 200)
				}
				c()
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	var (
		mu        sync.Mutex
		st        loadStats
		lat       []time.Duration
		lastErr   time.Time
		faultAt   time.Time
		rr        atomic.Int64
		requestID atomic.Int64
	)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc}}
	start := time.Now()
	end := start.Add(d)
	faulted := make(chan struct{}) // closed when fault has returned
	go func() {
		defer close(faulted)
		time.Sleep(d / 3)
		mu.Lock()
		faultAt = time.Now()
		mu.Unlock()
		fault()
	}()
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				i := -1
				for range len(bases) {
					j := int(rr.Add(1)) % len(bases)
					if up[j].Load() {
						i = j
						break
					}
				}
				if i < 0 {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				n := requestID.Add(1)
				// Each question is new (numbered), so each is answered
				// afresh rather than from the answer cache.
				q := questions[n%int64(len(questions))] + " (" + strconv.FormatInt(n, 10) + ")"
				body := `{"question":` + strconv.Quote(q) + `}`
				rctx, c := context.WithTimeout(context.Background(), hangAfter)
				req, _ := http.NewRequestWithContext(rctx, "POST", bases[i]+"/api/v1/agent", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				t0 := time.Now()
				resp, err := client.Do(req)
				ok := false
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					ok = resp.StatusCode == 200
				}
				el := time.Since(t0)
				c()
				mu.Lock()
				st.Sent++
				switch {
				case ok:
					st.Answered++
					lat = append(lat, el)
				case rctx.Err() != nil && el >= hangAfter:
					st.Hung++
					lastErr = time.Now()
				default:
					st.Errors++
					lastErr = time.Now()
				}
				mu.Unlock()
				if err != nil {
					up[i].Store(false)
				}
			}
		}()
	}
	wg.Wait()
	// What fault changed (a killed node, a stopped replica) is read by
	// the test's cleanup: wait for it, so that happens before.
	<-faulted
	st.Seconds = time.Since(start).Seconds()
	if !lastErr.IsZero() && !faultAt.IsZero() {
		st.Recover = lastErr.Sub(faultAt)
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		st.P50, st.P99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	return st
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// loadTests keeps the two load fault tests apart: each saturates the
// machine's cores for seconds, and with both at once (and Neo4j starting
// beside them) the three-node cluster of TestFaultNATSNodeKilledUnderLoad
// was seen not to answer for its job stream for 30 s after the node kill.
var loadTests sync.Mutex

// TestFaultServeReplicaKilledUnderLoad is the load benchmark across two
// replicas with one killed mid-run: two `kgagent serve --demo` processes on
// one NATS server answer questions over REST from 8 clients behind a
// round-robin balancer with health checks; a third of the way through, one
// replica is killed with SIGKILL. Every request is answered or fails fast
// (none hangs), the survivor answers the rest, and the failures stop within
// 2 s of the kill. KGAGENT_BENCH_REPLICA_LOAD=30s runs it longer and
// prints the figures the README quotes.
func TestFaultServeReplicaKilledUnderLoad(t *testing.T) {
	t.Parallel()     // its own processes and ports: the fault tests run side by side
	loadTests.Lock() // but not beside the other load test
	defer loadTests.Unlock()
	ns := startJetStream(t)
	a, baseA := startReplica(t, "serve-a", ns.ClientURL())
	_, baseB := startReplica(t, "serve-b", ns.ClientURL())
	d := envDuration("KGAGENT_BENCH_REPLICA_LOAD", 6*time.Second)
	st := replicaLoad(t, []string{baseA, baseB}, d, 8, 10*time.Second, func() { a.kill9(t) })
	t.Logf("two replicas, one killed after %s: %s", d/3, st)
	if st.Hung != 0 {
		t.Errorf("%d requests hung", st.Hung)
	}
	if st.Answered < st.Sent/2 || st.Errors > 8*2 {
		t.Errorf("too few answered or too many errors: %s", st)
	}
	if st.Recover > 2*time.Second {
		t.Errorf("requests still failed %s after the kill", st.Recover)
	}
}

// natsLoad asks questions over NATS (kgagent.request.agent, streamed frames
// until complete) with conc clients until ctx ends; a request without its
// final frame after timeout counts as timed out.
func natsLoad(ctx context.Context, t *testing.T, url string, conc int, timeout time.Duration) (sent, answered, errs, timedOut *atomic.Int64) {
	sent, answered, errs, timedOut = new(atomic.Int64), new(atomic.Int64), new(atomic.Int64), new(atomic.Int64)
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	for w := range conc {
		go func() {
			for n := 0; ctx.Err() == nil; n++ {
				inbox := nats.NewInbox()
				sub, err := nc.SubscribeSync(inbox)
				if err != nil {
					errs.Add(1)
					time.Sleep(50 * time.Millisecond)
					continue
				}
				sent.Add(1)
				q := fmt.Sprintf(`{"question":"What is the default retention period? (%d-%d)"}`, w, n)
				if err := nc.PublishRequest("kgagent.request.agent", inbox, []byte(q)); err != nil {
					errs.Add(1)
					_ = sub.Unsubscribe()
					continue
				}
				deadline := time.Now().Add(timeout)
				for {
					msg, err := sub.NextMsg(time.Until(deadline))
					if err != nil {
						timedOut.Add(1)
						break
					}
					if strings.Contains(string(msg.Data), `"error"`) {
						errs.Add(1)
						break
					}
					if strings.Contains(string(msg.Data), `"complete":true`) {
						answered.Add(1)
						break
					}
				}
				_ = sub.Unsubscribe()
			}
		}()
	}
	return
}

// TestFaultNATSNodeKilledUnderLoad: two serve replicas on a three-node NATS
// cluster of real nats-server processes (each given a different node; they
// learn the others from the cluster), under question load over REST and
// over NATS; the node replica A is connected to is killed with SIGKILL.
// No REST request hangs, NATS questions keep being answered, and an
// ingestion job submitted after the kill succeeds.
func TestFaultNATSNodeKilledUnderLoad(t *testing.T) {
	t.Parallel()     // its own processes and ports: the fault tests run side by side
	loadTests.Lock() // but not beside the other load test
	defer loadTests.Unlock()
	c := natscluster.Start(t, 3)
	_, baseA := startReplica(t, "serve-a", c.URL(0), "--allow-private-ingest")
	_, baseB := startReplica(t, "serve-b", c.URL(1), "--allow-private-ingest")
	ctx, cancel := context.WithCancel(context.Background())
	sent, answered, errs, timedOut := natsLoad(ctx, t, c.URL(2), 4, 10*time.Second)
	d := envDuration("KGAGENT_BENCH_NATS_LOAD", 6*time.Second)
	st := replicaLoad(t, []string{baseA, baseB}, d, 8, 10*time.Second, func() { c.Kill(0) })
	natsBefore := answered.Load()
	// NATS questions still get answered after the kill.
	poll.Until(t, 20*time.Second, func() error {
		if answered.Load() < natsBefore+5 {
			return fmt.Errorf("NATS questions answered: %d, want %d", answered.Load(), natsBefore+5)
		}
		return nil
	})
	cancel()
	t.Logf("REST over both replicas, NATS node killed after %s: %s", d/3, st)
	t.Logf("NATS questions: %d sent, %d answered, %d errors, %d timed out (10 s)", sent.Load(), answered.Load(), errs.Load(), timedOut.Load())
	if st.Hung != 0 || st.Answered < st.Sent*9/10 {
		t.Errorf("REST under a NATS node kill: %s", st)
	}
	if timedOut.Load() > 4 {
		t.Errorf("%d NATS questions timed out, more than were in flight at the kill", timedOut.Load())
	}
	// The job queue is replicated on all three nodes.
	nc, err := nats.Connect(c.URL(2))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	for _, name := range []string{"KGAGENT_JOBS", "KV_kgagent_jobs"} {
		// The stream's info may time out while it elects a new leader.
		poll.Until(t, 30*time.Second, func() error {
			info, err := js.Stream(context.Background(), name)
			if err != nil {
				return fmt.Errorf("stream %s: %v", name, err)
			}
			if r := info.CachedInfo().Config.Replicas; r != 3 {
				t.Fatalf("stream %s has %d replicas, want 3", name, r)
			}
			return nil
		})
	}
	site := slowSite(t, 0)
	body := `{"collection":"after-kill","urls":["` + site.URL + `/faq.html"]}`
	// While the job stream elects a new leader a submission may get 503
	// UNAVAILABLE (an answer, not a hang); a client retries.
	var m map[string]any
	unavailable := 0
	poll.Until(t, 20*time.Second, func() error {
		var code int
		code, m = postJSON(t, baseB+"/api/v1/corpora", body)
		if code == http.StatusServiceUnavailable {
			unavailable++
		}
		if code != http.StatusAccepted {
			return fmt.Errorf("job submitted after the NATS node kill: %d %v", code, m)
		}
		return nil
	})
	t.Logf("job accepted after %d answers of 503", unavailable)
	j, _ := m["job"].(map[string]any)
	id, _ := j["id"].(string)
	if st := waitJob(t, baseB, id); st["state"] != "succeeded" {
		t.Errorf("job submitted after the NATS node kill: %v", st)
	}
}
