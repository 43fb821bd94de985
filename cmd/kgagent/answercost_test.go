package main

import (
	"context"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
)

// TestAnswerCost measures what one answer costs the service in process, with
// no transport: the full wiring of an ingested data dir (corpus, graph,
// built-in model), answers asked at a fixed concurrency. It reports answers
// per second, CPU milliseconds and heap bytes per answer. It is a benchmark
// gated like TestLoadRealStack:
//
//	KGAGENT_BENCH_DATA=/tmp/pydocs-data go test ./cmd/kgagent -run AnswerCost -v
//
// KGAGENT_BENCH_CONC sets the concurrency (default 4), KGAGENT_BENCH_N the
// answers (default 3000), KGAGENT_BENCH_PROFILE a CPU profile path and
// KGAGENT_BENCH_MEMPROFILE an allocation profile path; the answer cache is
// off unless KGAGENT_BENCH_CACHE gives its size.
func TestAnswerCost(t *testing.T) {
	data, coll, qs := benchInputs(t)
	cfg := defaultConfig()
	cfg.DataDir = data
	// Every answer is computed: the answer cache is off unless asked for.
	cfg.AnswerCacheSize = envInt("KGAGENT_BENCH_CACHE", 0)
	ctx := context.Background()
	a, err := openApp(ctx, cfg, "eval", newLogger(cfg, io.Discard), false)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ask := func(i int) {
		if _, err := a.svc.agents.Ask(ctx, agent.Request{Question: qs[i%len(qs)].Question, Collection: coll}, func(kgagent.Event) {}); err != nil {
			t.Error(err)
		}
	}
	for i := range len(qs) { // warm up: loads the in-memory index and graph
		ask(i)
	}
	n, conc := envInt("KGAGENT_BENCH_N", 3000), envInt("KGAGENT_BENCH_CONC", 4)
	if p := os.Getenv("KGAGENT_BENCH_PROFILE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := cpuTime()
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				ask(i)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&ms1)
	if p := os.Getenv("KGAGENT_BENCH_MEMPROFILE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	var live runtime.MemStats
	runtime.ReadMemStats(&live)
	t.Logf("live heap after the run %d MB", live.HeapAlloc>>20)
	t.Logf("%d answers at concurrency %d in %.2fs = %.0f answers/s; %.2f CPU-ms/answer; %.0f KB allocated/answer; %d GCs",
		n, conc, el.Seconds(), float64(n)/el.Seconds(), float64(cpu.Microseconds())/1000/float64(n),
		float64(ms1.TotalAlloc-ms0.TotalAlloc)/1024/float64(n), ms1.NumGC-ms0.NumGC)
}

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
