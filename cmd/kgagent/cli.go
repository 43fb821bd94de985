package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/internal/eval"
	"github.com/kgagent/kgagent/internal/text"
)

// runWorker consumes ingestion jobs and answers NATS requests until ctx ends.
func runWorker(ctx context.Context, cfg Config, stdout, stderr io.Writer) error {
	defer limitServeMemory(cfg)()
	log := newLogger(cfg, stderr)
	a, err := openApp(ctx, cfg, "worker", log, true)
	if err != nil {
		return err
	}
	defer a.Close()
	failed, err := a.startBackground(ctx)
	if err != nil {
		return err
	}
	go a.warmUp(ctx) // the first NATS question then finds the search copies loaded
	fmt.Fprintf(stdout, "kgagent worker on NATS %s\n", a.bus.URL())
	log.Info("worker running", "nats", a.bus.URL())
	select {
	case <-ctx.Done():
		return nil
	case err := <-failed:
		return err
	}
}

// runIngest crawls and indexes the given URLs in this process. The CLI may
// fetch loopback and private addresses: the user runs it on their machine.
func runIngest(ctx context.Context, cfg Config, o ingestOptions, args []string, stdout, stderr io.Writer) error {
	// An ingest is a bounded job: the collector may run a quarter as often
	// (GOGC=400) unless the user set GOGC, with a soft limit on Go's memory
	// (ingest_memory_limit, 400 MiB by default, less nonGoReserve; unless
	// GOMEMLIMIT is set) so a large crawl collects sooner rather than grow. Python docs,
	// alternating, load ~6: 7.4-7.6 -> 7.1-7.2 CPU-s, peak RSS 235-260 ->
	// 305-405 MB (GOGC=200 before: 64 -> 70 pages/s against the default
	// 100). The limit holds whatever GOGC says.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(goMemoryLimit(cfg.IngestMemoryLimit)))
	}
	if !o.Semantic {
		cfg.SemanticSearch = "off" // serve embeds in the background; ingest stays lexical and fast
	} else if cfg.SemanticWorkers == 0 {
		cfg.SemanticWorkers = runtime.GOMAXPROCS(0) // no queries to leave a core to
	}
	log := newLogger(cfg, stderr)
	a, err := openApp(ctx, cfg, "ingest", log, false)
	if err != nil {
		return err
	}
	defer a.Close()
	spec := crawler.Spec{Collection: o.Collection, URLs: args, Exclude: o.Exclude, MaxPages: o.MaxPages, BearerToken: o.BearerToken}
	if spec.Collection == "" {
		spec.Collection = cfg.Collection
	}
	progress := a.keepCopies(ctx, spec.Collection)
	if isTerminal(stderr) && !o.JSON {
		p := crawler.NewProgress(stderr, "ingesting "+spec.Collection)
		crawled := progress
		progress = func(c crawler.Counters) { crawled(c); p.Update(c) }
		defer p.Finish()
	}
	rep, err := a.ingester(true, true).Run(ctx, spec, progress)
	if err != nil {
		return err
	}
	if o.JSON {
		if err := json.NewEncoder(stdout).Encode(rep.Summary()); err != nil {
			return err
		}
		return semanticPass(ctx, a, io.Discard)
	}
	s := rep.Summary()
	fmt.Fprintf(stdout, "pages %d (unchanged %d), chunks %d, triples %d, failed %d, removed %d, kept %d, %.1fs\n", s.Pages, s.Unchanged, s.Chunks, s.Triples, s.Failed, s.Removed, s.Kept, s.Seconds)
	if s.Truncated {
		fmt.Fprintf(stdout, "  the crawl stopped early: %s\n", s.Reason)
	}
	if s.KeptReason != "" {
		fmt.Fprintf(stdout, "  %s\n", s.KeptReason)
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(stdout, "  failed %s: %s %s\n", e.URL, e.Code, e.Reason)
	}
	return semanticPass(ctx, a, stdout)
}

// limitServeMemory sets Go's soft memory limit of a long-running command
// (serve, worker, mcp) from serve_memory_limit, unless GOMEMLIMIT is set
// or the setting is 0, and has the collector run once the heap has grown
// by serveGCPercent since the last collection, unless GOGC is set; the
// func it returns restores both.
func limitServeMemory(cfg Config) (restore func()) {
	restoreGC := func() {}
	if os.Getenv("GOGC") == "" {
		prev := debug.SetGCPercent(serveGCPercent)
		restoreGC = func() { debug.SetGCPercent(prev) }
	}
	if cfg.ServeMemoryLimit == 0 || os.Getenv("GOMEMLIMIT") != "" {
		return restoreGC
	}
	prev := debug.SetMemoryLimit(goMemoryLimit(cfg.ServeMemoryLimit))
	return func() { debug.SetMemoryLimit(prev); restoreGC() }
}

// serveGCPercent is the collector's GOGC in serve, worker and mcp. A served
// data dir's heap is mostly what it loaded once (search copies, the name
// index, the semantic model), held in few large pointer-free arrays that
// a collection need not scan; Go's default 100 let the heap grow to twice
// that between collections, and the growth allowed is what the resident
// set carries above the live heap. OpenJDK API docs (live heap ~240 MB),
// 1,000 searches and answers (bench/serve_measure.py): RSS at the end 329
// MB at 15 and 323-325 MB at 12 against 351-352 MB at 25. A request now
// allocates ~0.8 MB (1.3 MB when 25 was chosen), so at 12 the collector
// runs ~1.6 times as often as it did then (41 against 26 collections, 0.9
// against 0.6 CPU-s over the run: ~0.3 ms a request, within the run-to-run
// spread of serve's CPU a request); see the README's serve paragraph.
const serveGCPercent = 12

// nonGoReserve is the part of ingest_memory_limit left to memory Go's
// collector neither counts nor frees: SQLite's page caches, statement
// journals and sorters (allocated by modernc's C library, outside the Go
// heap) and the mapped executable. Measured on the OpenJDK API docs (3,000
// pages, GOMEMLIMIT=280MiB): RssAnon 398 MB, RssFile 31 MB, i.e. ~100 MB
// anonymous memory beyond the Go limit, plus the executable.
const nonGoReserve = 136 << 20

// goMemoryLimit is the soft limit on Go's memory that keeps an ingest's
// whole resident set near limit.
func goMemoryLimit(limit int64) int64 {
	return max(limit-nonGoReserve, 48<<20)
}

// semanticPass runs ingest --semantic's pass over every chunk that lacks a
// semantic vector, then says how many have one.
func semanticPass(ctx context.Context, a *app, stdout io.Writer) error {
	p := a.svc.semPass
	if p == nil {
		return nil
	}
	start := time.Now()
	if err := p.Run(ctx, true); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s := p.Stats()
	fmt.Fprintf(stdout, "semantic vectors: %d of %d chunks (%d embedded now), %.1fs\n", s.Done, s.Total, s.Embedded, time.Since(start).Seconds())
	return nil
}

// runAsk answers one question and prints the answer with its sources.
func runAsk(ctx context.Context, cfg Config, o askOptions, args []string, stdout, stderr io.Writer) error {
	log := newLogger(cfg, stderr)
	a, err := openApp(ctx, cfg, "ask", log, false)
	if err != nil {
		return err
	}
	defer a.Close()
	req := agent.Request{Question: strings.Join(args, " "), Agent: o.Agent, Collection: o.Collection}
	emit := func(kgagent.Event) {}
	if o.Events {
		emit = func(e kgagent.Event) {
			if !e.Delta {
				fmt.Fprintf(stderr, "[%s] %s\n", e.Kind, oneLine(e.Text))
			}
		}
	}
	ans, err := a.svc.agents.Ask(ctx, req, emit)
	if err != nil {
		return err
	}
	if o.JSON {
		return json.NewEncoder(stdout).Encode(ans)
	}
	fmt.Fprintln(stdout, ans.Answer)
	for i, s := range ans.Sources {
		fmt.Fprintf(stdout, "[%d] %s %s\n", i+1, s.Title, s.URL)
	}
	return nil
}

func oneLine(s string) string {
	return text.Truncate(strings.ReplaceAll(s, "\n", " ⏎ "), 300)
}

// runEval scores retrieval (gold page among the top k distinct pages, MRR)
// and, with --answers, the agent's answers on each question set: the same
// figures for its sources, whether the answer names what must_contain
// says, whether its citations are valid, and how often it abstains on
// answerable and on unanswerable questions.
func runEval(ctx context.Context, cfg Config, o evalOptions, files []string, stdout, stderr io.Writer) error {
	if o.K <= 0 {
		return fmt.Errorf("--k must be positive")
	}
	sets := make([][]eval.Question, len(files))
	for i, f := range files {
		qs, err := eval.ReadQuestions(f)
		if err != nil {
			return err
		}
		sets[i] = qs
	}
	log := newLogger(cfg, stderr)
	a, err := openApp(ctx, cfg, "eval", log, false)
	if err != nil {
		return err
	}
	defer a.Close()
	eo := eval.Options{Collection: o.Collection, BaseURL: o.BaseURL, K: o.K, Answers: o.Answers, SearchMode: corpus.Mode(o.SearchMode), Misses: o.Misses}
	if eo.Collection == "" {
		eo.Collection = cfg.Collection
	}
	svc := eval.Services{Search: a.svc.knowledge, Asker: a.svc.agents}
	if a.svc.graph != nil {
		svc.Graph = a.svc.graph
	}
	for i, qs := range sets {
		sum, err := eval.Run(ctx, svc, eo, qs)
		if err != nil {
			return err
		}
		sum.File = files[i]
		if o.JSON {
			if err := json.NewEncoder(stdout).Encode(sum); err != nil {
				return err
			}
			continue
		}
		eval.Print(stdout, sum, o.Answers)
	}
	return nil
}
