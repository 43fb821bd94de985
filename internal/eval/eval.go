// Package eval scores kgagent on question sets (`kgagent eval`, the load
// benchmarks): retrieval — the gold page among the top k distinct pages of
// a search, and its reciprocal rank — and, when asked, the agent's answers:
// the same figures for their sources, whether an answer names what
// must_contain says or the gold items of a list question, whether its
// citations are valid, and how often it abstains on answerable and on
// unanswerable questions. cmd/kgagent wires the real services in; the
// scoring itself is here, with its tests.
package eval

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/agent/cite"
	"github.com/kgagent/kgagent/agent/extractive"
	"github.com/kgagent/kgagent/corpus"
)

// Question is one line of a question set (bench/pydocs_questions.jsonl
// format). A question without gold_page is one the docs cannot answer: the
// agent should abstain.
type Question struct {
	ID          string `json:"id"`
	Question    string `json:"question"`
	GoldPage    string `json:"gold_page"`
	MustContain string `json:"must_contain"`
	// GoldItems are the names (or values) a list, relation, attribute or
	// comparison answer must name (bench/graph_pydocs.jsonl): scored as
	// item coverage, all items named, and the first source holding them.
	GoldItems []string `json:"gold_items,omitempty"`
}

// Summary is the score of one question set.
type Summary struct {
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
	AnswerLeads         float64 `json:"answer_leads,omitempty"`    // must_contain in the answer's first sentence (the answer leads with it), over the same questions
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

// Options configure a run.
type Options struct {
	Collection string      // the collection searched and asked
	BaseURL    string      // prefix that turns gold_page into a URL
	K          int         // how many distinct pages count as retrieved; must be positive
	Answers    bool        // also ask the agent
	SearchMode corpus.Mode // the search mode scored; "" is hybrid
	Misses     io.Writer   // where questions answered badly are printed; nil: not printed
}

// Services are what a run searches, asks and times.
type Services struct {
	// Search runs the searches (corpus.Service, knowledge.Service).
	Search interface {
		Search(ctx context.Context, req corpus.SearchRequest) ([]corpus.Hit, error)
	}
	// Asker answers the questions when Options.Answers is set
	// (agent.Manager).
	Asker interface {
		Ask(ctx context.Context, req agent.Request, emit agent.Emit) (kgagent.Answer, error)
	}
	// Graph, when set, is timed on the questions with gold items: its
	// structured answer alone (graphrag.Service).
	Graph interface {
		Structured(ctx context.Context, question, collection string) (*kgagent.EvidenceList, error)
	}
}

// pageRank is the 1-based rank of the gold page among the distinct pages
// of urls (0: absent). A directory URL ("…/api/http/") is its index page:
// the docs link "api/http/index.html" and a server (Go's http.FileServer,
// the demo's) redirects it to the directory, which is the URL indexed. The
// site's own index.html matches only as the full URL: as a path suffix it
// would match every directory.
func pageRank(urls []string, gold, goldPage string) int {
	suffix := "/" + goldPage
	if goldPage == "index.html" {
		suffix = ""
	}
	seen := map[string]bool{}
	for _, u := range urls {
		if i := strings.IndexByte(u, '#'); i >= 0 {
			u = u[:i]
		}
		if seen[u] {
			continue
		}
		seen[u] = true
		if strings.HasSuffix(u, "/") {
			u += "index.html"
		}
		if u == gold || suffix != "" && strings.HasSuffix(u, suffix) {
			return len(seen)
		}
	}
	return 0
}

// citationsValid reports whether every [n] of the answer names one of its
// n sources.
func citationsValid(ans kgagent.Answer) bool {
	for _, n := range cite.Numbers(ans.Answer) {
		if n < 1 || n > len(ans.Sources) {
			return false
		}
	}
	return true
}

// miss prints a question the agent did not answer well (Options.Misses).
func (o Options) miss(q Question, ans kgagent.Answer, ok bool, why string) {
	if ok || o.Misses == nil {
		return
	}
	fmt.Fprintf(o.Misses, "--- %s (%s): %s\n%s\n", q.ID, why, q.Question, ans.Answer)
	for i, s := range ans.Sources {
		fmt.Fprintf(o.Misses, "  [%d] %s\n", i+1, s.URL)
	}
}

// Print writes sum as `kgagent eval` prints it; answers: the run asked the
// agent.
func Print(w io.Writer, sum Summary, answers bool) {
	fmt.Fprintf(w, "%s: %d questions (%d answerable, %d unanswerable)\n", sum.File, sum.Questions, sum.Answerable, sum.Unanswerable)
	if sum.Answerable > 0 {
		fmt.Fprintf(w, "  /api/v1/search  recall@%d %.3f  MRR %.3f  p50 %.2f ms p99 %.2f ms\n",
			sum.K, sum.RecallAtK, sum.MRR, sum.SearchP50Ms, sum.SearchP99Ms)
	}
	if !answers {
		return
	}
	if sum.Answerable > 0 {
		fmt.Fprintf(w, "  /api/v1/agent   recall@%d %.3f  MRR %.3f  names the answer %.3f (first sentence %.3f)  abstains %.3f  p50 %.2f ms p99 %.2f ms\n",
			sum.K, sum.AgentRecallAtK, sum.AgentMRR, sum.AnswerContains, sum.AnswerLeads, sum.AbstainAnswerable, sum.AnswerP50Ms, sum.AnswerP99Ms)
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

// FirstSentence returns the answer's first sentence: the text up to the
// first '.', '?', '!' or line break that ends a sentence (followed by
// white space or the end, outside `code`), so that a dotted name such as
// os.path.basename or `str.split()`. does not end it early.
func FirstSentence(s string) string {
	code := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '`':
			code = !code
		case c == '\n':
			return s[:i]
		case code:
		case c == '.' || c == '?' || c == '!':
			if i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n' || s[i+1] == '\t' {
				return s[:i+1]
			}
		}
	}
	return s
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

// Run scores the questions qs with svc. Errors: Options.K not positive,
// or the first search, answer or graph error, naming the question.
func Run(ctx context.Context, svc Services, o Options, qs []Question) (Summary, error) {
	if o.K <= 0 {
		return Summary{}, fmt.Errorf("k must be positive")
	}
	coll := o.Collection
	sum := Summary{Questions: len(qs), K: o.K}
	var searchLat, answerLat []time.Duration
	var contains, leads, must, valid, abstainA, abstainU int
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
			hits, err := svc.Search.Search(ctx, corpus.SearchRequest{Query: q.Question, Collection: coll, K: 50, Mode: mode})
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
		ans, err := svc.Asker.Ask(ctx, agent.Request{Question: q.Question, Collection: coll}, func(kgagent.Event) {})
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
			if strings.Contains(FirstSentence(ans.Answer), q.MustContain) {
				leads++
			}
		} else if q.MustContain != "" {
			ok = false
		}
		urls := make([]string, len(ans.Sources))
		for i, s := range ans.Sources {
			urls[i] = s.URL
		}
		rank := pageRank(urls, gold, q.GoldPage)
		if len(q.GoldItems) > 0 && svc.Graph != nil {
			// Best of three: the graph's own cost, not a shared
			// machine's load at one instant.
			var best time.Duration
			for i := range 3 {
				t0 := time.Now()
				l, err := svc.Graph.Structured(ctx, q.Question, coll)
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
			sum.AnswerLeads = float64(leads) / float64(must)
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
	sum.SearchP50Ms, sum.SearchP99Ms = PercentileMs(searchLat, 0.50), PercentileMs(searchLat, 0.99)
	if o.Answers {
		sum.CitationsValid = float64(valid) / float64(len(qs))
		sum.AnswerP50Ms, sum.AnswerP99Ms = PercentileMs(answerLat, 0.50), PercentileMs(answerLat, 0.99)
		sum.GraphP50Ms, sum.GraphP99Ms = PercentileMs(graphLat, 0.50), PercentileMs(graphLat, 0.99)
	}
	return sum, nil
}

// ReadQuestions reads a question set: JSON lines, blank lines skipped.
// Errors name the file and line of a bad line or a line without a
// question, or say the file has none.
func ReadQuestions(file string) ([]Question, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var qs []Question
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var q Question
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

// PercentileMs is the p-quantile (0..1) of d in milliseconds; 0 for none.
func PercentileMs(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p * float64(len(s)-1))
	return float64(s[i].Microseconds()) / 1000
}
