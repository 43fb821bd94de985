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
	"github.com/kgagent/kgagent/agent/extractive"
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
	// (ingest_memory_limit, 400 MiB by default, unless GOMEMLIMIT is set)
	// so a large crawl collects sooner rather than grow. Python docs,
	// alternating, load ~6: 7.4-7.6 -> 7.1-7.2 CPU-s, peak RSS 235-260 ->
	// 305-405 MB (GOGC=200 before: 64 -> 70 pages/s against the default
	// 100). The limit holds whatever GOGC says.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(cfg.IngestMemoryLimit))
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
	rep, err := snapshotRunner{r: a.ingester(true), a: a}.Run(ctx, spec, progress)
	if err != nil {
		return err
	}
	if o.JSON {
		return json.NewEncoder(stdout).Encode(rep.Summary())
	}
	s := rep.Summary()
	fmt.Fprintf(stdout, "pages %d (unchanged %d), chunks %d, triples %d, failed %d, removed %d, kept %d, %.1fs\n", s.Pages, s.Unchanged, s.Chunks, s.Triples, s.Failed, s.Removed, s.Kept, s.Seconds)
	if s.KeptReason != "" {
		fmt.Fprintf(stdout, "  %s\n", s.KeptReason)
	}
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

// evalQuestion is one line of a question set (bench/pydocs_questions.jsonl
// format). A question without gold_page is one the docs cannot answer: the
// agent should abstain.
type evalQuestion struct {
	ID          string `json:"id"`
	Question    string `json:"question"`
	GoldPage    string `json:"gold_page"`
	MustContain string `json:"must_contain"`
	// GoldItems are the names (or values) a list, relation, attribute or
	// comparison answer must name (bench/graph_pydocs.jsonl): scored as
	// item coverage, all items named, and the first source holding them.
	GoldItems []string `json:"gold_items,omitempty"`
}

// evalSummary is what eval prints for one question set.
type evalSummary struct {
	File         string  `json:"file"`
	Questions    int     `json:"questions"`
	Answerable   int     `json:"answerable"`
	Unanswerable int     `json:"unanswerable"`
	K            int     `json:"k"`
	RecallAtK    float64 `json:"recall_at_k"` // /api/v1/search (hybrid): gold page among the top k distinct pages
	MRR          float64 `json:"mrr"`
	SearchP50Ms  float64 `json:"search_p50_ms"`
	SearchP99Ms  float64 `json:"search_p99_ms"`
	// With --answers: the agent's answers (/api/v1/agent).
	AgentRecallAtK      float64 `json:"agent_recall_at_k,omitempty"` // gold page among the answer's first k distinct source pages
	AgentMRR            float64 `json:"agent_mrr,omitempty"`
	AnswerContains      float64 `json:"answer_contains,omitempty"` // must_contain in the answer (names the module), over the questions that have one
	CitationsValid      float64 `json:"citations_valid,omitempty"` // every [n] names a listed source
	AbstainAnswerable   float64 `json:"abstain_answerable"`        // answerable questions the agent abstained on
	AbstainUnanswerable float64 `json:"abstain_unanswerable"`      // unanswerable questions it abstained on
	AnswerP50Ms         float64 `json:"answer_p50_ms,omitempty"`
	AnswerP99Ms         float64 `json:"answer_p99_ms,omitempty"`
	// With --answers, over the questions with gold_items.
	ItemQuestions    int     `json:"item_questions,omitempty"`
	ItemCoverage     float64 `json:"item_coverage,omitempty"`      // mean share of gold items the answer names
	AllItemsNamed    float64 `json:"all_items_named,omitempty"`    // share of answers naming every gold item
	FirstSourceHolds float64 `json:"first_source_holds,omitempty"` // share whose first source is on the gold page
	// The graph's structured answer alone (graphrag.Service.Structured),
	// timed on the same questions, best of three runs each.
	GraphAnswers int     `json:"graph_answers,omitempty"` // questions it answered
	GraphP50Ms   float64 `json:"graph_p50_ms,omitempty"`
	GraphP99Ms   float64 `json:"graph_p99_ms,omitempty"`
}

// pageRank is the 1-based rank of the gold page among the distinct pages
// of urls (0: absent).
func pageRank(urls []string, gold, goldPage string) int {
	seen := map[string]bool{}
	for _, u := range urls {
		if i := strings.IndexByte(u, '#'); i >= 0 {
			u = u[:i]
		}
		if seen[u] {
			continue
		}
		seen[u] = true
		if u == gold || strings.HasSuffix(u, "/"+goldPage) {
			return len(seen)
		}
	}
	return 0
}

// citationsValid reports whether every [n] of the answer names one of its
// n sources.
func citationsValid(ans kgagent.Answer) bool {
	for _, n := range agent.Citations(ans.Answer) {
		if n < 1 || n > len(ans.Sources) {
			return false
		}
	}
	return true
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
	sets := make([][]evalQuestion, len(files))
	for i, f := range files {
		qs, err := readQuestions(f)
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
	coll := o.Collection
	if coll == "" {
		coll = cfg.Collection
	}
	for i, qs := range sets {
		sum, err := evalSet(ctx, a, o, coll, qs)
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
		printEval(stdout, sum, o.Answers)
	}
	return nil
}

// miss prints a question the agent did not answer well (--misses).
func (o evalOptions) miss(q evalQuestion, ans kgagent.Answer, ok bool, why string) {
	if ok || o.Misses == nil {
		return
	}
	fmt.Fprintf(o.Misses, "--- %s (%s): %s\n%s\n", q.ID, why, q.Question, ans.Answer)
	for i, s := range ans.Sources {
		fmt.Fprintf(o.Misses, "  [%d] %s\n", i+1, s.URL)
	}
}

func printEval(w io.Writer, sum evalSummary, answers bool) {
	fmt.Fprintf(w, "%s: %d questions (%d answerable, %d unanswerable)\n", sum.File, sum.Questions, sum.Answerable, sum.Unanswerable)
	if sum.Answerable > 0 {
		fmt.Fprintf(w, "  /api/v1/search  recall@%d %.3f  MRR %.3f  p50 %.2f ms p99 %.2f ms\n",
			sum.K, sum.RecallAtK, sum.MRR, sum.SearchP50Ms, sum.SearchP99Ms)
	}
	if !answers {
		return
	}
	if sum.Answerable > 0 {
		fmt.Fprintf(w, "  /api/v1/agent   recall@%d %.3f  MRR %.3f  names the answer %.3f  abstains %.3f  p50 %.2f ms p99 %.2f ms\n",
			sum.K, sum.AgentRecallAtK, sum.AgentMRR, sum.AnswerContains, sum.AbstainAnswerable, sum.AnswerP50Ms, sum.AnswerP99Ms)
	}
	if sum.Unanswerable > 0 {
		fmt.Fprintf(w, "  /api/v1/agent   unanswerable: abstains %.3f\n", sum.AbstainUnanswerable)
	}
	if sum.ItemQuestions > 0 {
		fmt.Fprintf(w, "  items (%d questions): coverage %.3f  all items named %.3f  first source holds the answer %.3f\n",
			sum.ItemQuestions, sum.ItemCoverage, sum.AllItemsNamed, sum.FirstSourceHolds)
		fmt.Fprintf(w, "  graph answers %d of %d  p50 %.2f ms p99 %.2f ms\n", sum.GraphAnswers, sum.ItemQuestions, sum.GraphP50Ms, sum.GraphP99Ms)
	}
	fmt.Fprintf(w, "  citations valid %.3f\n", sum.CitationsValid)
}

// namedItems counts the gold items an answer names: a dotted name
// (shutil.copyfile) counts when its last part (copyfile) appears as a whole
// word, any other item (a value such as 0o777 or 'Set-Cookie:') when it
// appears as written.
func namedItems(answer string, items []string) int {
	n := 0
	for _, it := range items {
		if dottedIdent(it) {
			if i := strings.LastIndexByte(it, '.'); i >= 0 {
				it = it[i+1:]
			}
			if containsWord(answer, it) {
				n++
			}
		} else if strings.Contains(answer, it) {
			n++
		}
	}
	return n
}

// dottedIdent reports whether s is an identifier or a dotted name.
func dottedIdent(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !wordByte(c) && c != '.' {
			return false
		}
	}
	return true
}

func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// containsWord reports whether w occurs in s with no word byte either side.
func containsWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(w)
		if (j == 0 || !wordByte(s[j-1])) && (end == len(s) || !wordByte(s[end])) {
			return true
		}
		i = j + 1
	}
}

func evalSet(ctx context.Context, a *app, o evalOptions, coll string, qs []evalQuestion) (evalSummary, error) {
	sum := evalSummary{Questions: len(qs), K: o.K}
	var searchLat, answerLat []time.Duration
	var contains, must, valid, abstainA, abstainU int
	var coverage float64
	var allNamed, firstHolds int
	var graphLat []time.Duration
	for _, q := range qs {
		answerable := q.GoldPage != ""
		gold := o.BaseURL + q.GoldPage
		if answerable {
			sum.Answerable++
			t0 := time.Now()
			mode := corpus.Mode(o.SearchMode)
			if mode == "" {
				mode = corpus.ModeHybrid
			}
			hits, err := a.svc.knowledge.Search(ctx, corpus.SearchRequest{Query: q.Question, Collection: coll, K: 50, Mode: mode})
			searchLat = append(searchLat, time.Since(t0))
			if err != nil {
				return sum, fmt.Errorf("search %q: %w", q.ID, err)
			}
			urls := make([]string, len(hits))
			for i, h := range hits {
				urls[i] = h.DocURL
			}
			if rank := pageRank(urls, gold, q.GoldPage); rank > 0 {
				if rank <= o.K {
					sum.RecallAtK++
				}
				sum.MRR += 1 / float64(rank)
			}
		} else {
			sum.Unanswerable++
		}
		if !o.Answers {
			continue
		}
		t0 := time.Now()
		ans, err := a.svc.agents.Ask(ctx, agent.Request{Question: q.Question, Collection: coll}, func(kgagent.Event) {})
		answerLat = append(answerLat, time.Since(t0))
		if err != nil {
			return sum, fmt.Errorf("ask %q: %w", q.ID, err)
		}
		ok := citationsValid(ans)
		if ok {
			valid++
		}
		abstained := extractive.Abstained(ans.Answer)
		if !answerable {
			if abstained {
				abstainU++
			} else {
				ok = false
			}
			o.miss(q, ans, ok, "answered an unanswerable question")
			continue
		}
		if abstained {
			abstainA++
			ok = false
		}
		if q.MustContain != "" {
			must++
		}
		if q.MustContain != "" && strings.Contains(ans.Answer, q.MustContain) {
			contains++
		} else if q.MustContain != "" {
			ok = false
		}
		urls := make([]string, len(ans.Sources))
		for i, s := range ans.Sources {
			urls[i] = s.URL
		}
		rank := pageRank(urls, gold, q.GoldPage)
		if len(q.GoldItems) > 0 && a.svc.graph != nil {
			// Best of three: the graph's own cost, not a shared
			// machine's load at one instant.
			var best time.Duration
			for i := range 3 {
				t0 := time.Now()
				l, err := a.svc.graph.Structured(ctx, q.Question, coll)
				if d := time.Since(t0); i == 0 || d < best {
					best = d
				}
				if err != nil {
					return sum, fmt.Errorf("graph answer %q: %w", q.ID, err)
				}
				if l != nil && i == 0 {
					sum.GraphAnswers++
				}
			}
			graphLat = append(graphLat, best)
		}
		if len(q.GoldItems) > 0 {
			sum.ItemQuestions++
			n := namedItems(ans.Answer, q.GoldItems)
			coverage += float64(n) / float64(len(q.GoldItems))
			if n == len(q.GoldItems) {
				allNamed++
			} else {
				ok = false
			}
			if rank == 1 {
				firstHolds++
			}
		}
		if rank > 0 {
			if rank <= o.K {
				sum.AgentRecallAtK++
			}
			sum.AgentMRR += 1 / float64(rank)
		}
		o.miss(q, ans, ok && rank == 1, fmt.Sprintf("gold page at rank %d", rank))
	}
	if n := float64(sum.Answerable); n > 0 {
		sum.RecallAtK /= n
		sum.MRR /= n
		sum.AgentRecallAtK /= n
		sum.AgentMRR /= n
		if must > 0 {
			sum.AnswerContains = float64(contains) / float64(must)
		}
		sum.AbstainAnswerable = float64(abstainA) / n
	}
	if n := float64(sum.Unanswerable); n > 0 {
		sum.AbstainUnanswerable = float64(abstainU) / n
	}
	if n := float64(sum.ItemQuestions); n > 0 {
		sum.ItemCoverage = coverage / n
		sum.AllItemsNamed = float64(allNamed) / n
		sum.FirstSourceHolds = float64(firstHolds) / n
	}
	sum.SearchP50Ms, sum.SearchP99Ms = percentileMs(searchLat, 0.50), percentileMs(searchLat, 0.99)
	if o.Answers {
		sum.CitationsValid = float64(valid) / float64(len(qs))
		sum.AnswerP50Ms, sum.AnswerP99Ms = percentileMs(answerLat, 0.50), percentileMs(answerLat, 0.99)
		sum.GraphP50Ms, sum.GraphP99Ms = percentileMs(graphLat, 0.50), percentileMs(graphLat, 0.99)
	}
	return sum, nil
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
		if q.Question == "" {
			return nil, fmt.Errorf("%s:%d: question is required", file, line)
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
