package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/crawler"
)

// runWorker consumes ingestion jobs and answers NATS requests until ctx ends.
func runWorker(ctx context.Context, cfg Config, stdout, stderr io.Writer) error {
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
	// An ingest is a bounded job: the collector may run half as often
	// (GOGC=200) unless the user set GOGC. Python docs: 64 -> 70 pages/s,
	// peak RSS 250 -> 315 MB.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(200))
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
	var progress func(crawler.Counters)
	if isTerminal(stderr) && !o.JSON {
		p := crawler.NewProgress(stderr, "ingesting "+spec.Collection)
		progress = p.Update
		defer p.Finish()
	}
	rep, err := a.ingester(true).Run(ctx, spec, progress)
	if err != nil {
		return err
	}
	if o.JSON {
		return json.NewEncoder(stdout).Encode(rep.Summary())
	}
	s := rep.Summary()
	fmt.Fprintf(stdout, "pages %d (unchanged %d), chunks %d, triples %d, failed %d, %.1fs\n", s.Pages, s.Unchanged, s.Chunks, s.Triples, s.Failed, s.Seconds)
	for _, e := range rep.Errors {
		fmt.Fprintf(stdout, "  failed %s: %s %s\n", e.URL, e.Code, e.Reason)
	}
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
	s = strings.ReplaceAll(s, "\n", " ⏎ ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// evalQuestion is one line of a question set (bench/pydocs_questions.jsonl format).
type evalQuestion struct {
	ID          string `json:"id"`
	Question    string `json:"question"`
	GoldPage    string `json:"gold_page"`
	MustContain string `json:"must_contain"`
}

// evalSummary is what eval prints.
type evalSummary struct {
	Questions       int     `json:"questions"`
	K               int     `json:"k"`
	RecallAtK       float64 `json:"recall_at_k"`
	MRR             float64 `json:"mrr"`
	SearchP50Ms     float64 `json:"search_p50_ms"`
	SearchP99Ms     float64 `json:"search_p99_ms"`
	AnswerContains  float64 `json:"answer_contains,omitempty"`
	AnswerCitesGold float64 `json:"answer_cites_gold,omitempty"`
	AnswerP50Ms     float64 `json:"answer_p50_ms,omitempty"`
	AnswerP99Ms     float64 `json:"answer_p99_ms,omitempty"`
}

// runEval scores retrieval (gold page among the top k distinct pages, MRR)
// and, with --answers, the agent's answers on a question set.
func runEval(ctx context.Context, cfg Config, o evalOptions, file string, stdout, stderr io.Writer) error {
	qs, err := readQuestions(file)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	a, err := openApp(ctx, cfg, "eval", log, false)
	if err != nil {
		return err
	}
	defer a.Close()
	coll := o.Collection
	if coll == "" {
		coll = cfg.Collection
	}
	if o.K <= 0 {
		return fmt.Errorf("--k must be positive")
	}
	sum := evalSummary{Questions: len(qs), K: o.K}
	var searchLat, answerLat []time.Duration
	var contains, cites int
	for _, q := range qs {
		gold := o.BaseURL + q.GoldPage
		t0 := time.Now()
		hits, err := a.svc.corpus.Search(ctx, corpus.SearchRequest{Query: q.Question, Collection: coll, K: 50, Mode: corpus.ModeHybrid})
		searchLat = append(searchLat, time.Since(t0))
		if err != nil {
			return fmt.Errorf("search %q: %w", q.ID, err)
		}
		rank := 0
		seen := map[string]bool{}
		for _, h := range hits {
			if seen[h.DocURL] {
				continue
			}
			seen[h.DocURL] = true
			if h.DocURL == gold || strings.HasSuffix(h.DocURL, "/"+q.GoldPage) {
				rank = len(seen)
				break
			}
		}
		if rank > 0 && rank <= o.K {
			sum.RecallAtK++
		}
		if rank > 0 {
			sum.MRR += 1 / float64(rank)
		}
		if o.Answers {
			t0 := time.Now()
			ans, err := a.svc.agents.Ask(ctx, agent.Request{Question: q.Question, Collection: coll}, func(kgagent.Event) {})
			answerLat = append(answerLat, time.Since(t0))
			if err != nil {
				return fmt.Errorf("ask %q: %w", q.ID, err)
			}
			if q.MustContain != "" && strings.Contains(ans.Answer, q.MustContain) {
				contains++
			}
			for _, s := range ans.Sources {
				if strings.HasPrefix(s.URL, gold) {
					cites++
					break
				}
			}
		}
	}
	n := float64(len(qs))
	sum.RecallAtK /= n
	sum.MRR /= n
	sum.SearchP50Ms, sum.SearchP99Ms = percentileMs(searchLat, 0.50), percentileMs(searchLat, 0.99)
	if o.Answers {
		sum.AnswerContains = float64(contains) / n
		sum.AnswerCitesGold = float64(cites) / n
		sum.AnswerP50Ms, sum.AnswerP99Ms = percentileMs(answerLat, 0.50), percentileMs(answerLat, 0.99)
	}
	if o.JSON {
		return json.NewEncoder(stdout).Encode(sum)
	}
	fmt.Fprintf(stdout, "questions %d  recall@%d %.3f  MRR %.3f  search p50 %.2f ms p99 %.2f ms\n",
		sum.Questions, sum.K, sum.RecallAtK, sum.MRR, sum.SearchP50Ms, sum.SearchP99Ms)
	if o.Answers {
		fmt.Fprintf(stdout, "answers: contain the expected name %.3f, cite the gold page %.3f, p50 %.2f ms p99 %.2f ms\n",
			sum.AnswerContains, sum.AnswerCitesGold, sum.AnswerP50Ms, sum.AnswerP99Ms)
	}
	return nil
}

func readQuestions(file string) ([]evalQuestion, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var qs []evalQuestion
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var q evalQuestion
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, line, err)
		}
		if q.Question == "" || q.GoldPage == "" {
			return nil, fmt.Errorf("%s:%d: question and gold_page are required", file, line)
		}
		qs = append(qs, q)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("%s: no questions", file)
	}
	return qs, nil
}

func percentileMs(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p * float64(len(s)-1))
	return float64(s[i].Microseconds()) / 1000
}
