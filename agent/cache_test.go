package agent

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/llm"
)

// cacheRig is a manager with the answer cache on, a clock the test moves, a
// generation it bumps, and an agent whose func counts its calls.
type cacheRig struct {
	m     *Manager
	now   time.Time
	gen   atomic.Uint64
	calls atomic.Int64
	mu    sync.Mutex
}

func newCacheRig(t *testing.T, size int, ttl time.Duration, cacheable bool) *cacheRig {
	t.Helper()
	rig := &cacheRig{now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	lookup := Func{Name: "lookup", Description: "looks up", Cacheable: cacheable, Handler: func(ctx context.Context, c FuncCall) (FuncResult, error) {
		rig.calls.Add(1)
		n := c.Cite(kgagent.Source{URL: "http://docs/config#port", Title: "Config"})
		return FuncResult{Message: kgagent.Message{Text: fmt.Sprintf("[%d] Config (http://docs/config#port)\nThe port is 8086.", n)}}, nil
	}}
	rig.m = newManager(t, Config{Model: ModelConfig{LLM: &alternate{}}, Cache: CacheConfig{Size: size, TTL: ttl, Generation: rig.gen.Load}, Now: func() time.Time { rig.mu.Lock(); defer rig.mu.Unlock(); return rig.now }}, AgentConfig{Name: "docs", BasePrompt: "You answer.", FewShots: SplitFewShots("Q: x\nAsk Func[lookup]: x\nFunc[lookup] says: y\nA: y\n"), Funcs: []Func{lookup}})
	return rig
}

func (rig *cacheRig) advance(d time.Duration) {
	rig.mu.Lock()
	rig.now = rig.now.Add(d)
	rig.mu.Unlock()
}

// alternate answers the first call of every run with the func call and the
// second with the answer: a run is two LLM calls whatever came before.
type alternate struct{ n atomic.Int64 }

func (a *alternate) Complete(ctx context.Context, req llm.CompletionRequest) (llm.Stream, error) {
	out := "Ask Func[lookup]: port"
	if last := req.Messages[len(req.Messages)-1]; last.Role == "user" && len(last.Content) > 5 && last.Content[:5] == "Func[" {
		out = "A: The port is 8086 [1]."
	}
	a.n.Add(1)
	return &scriptStream{ctx: ctx, parts: []string{out}}, nil
}

func (rig *cacheRig) ask(t *testing.T, req Request) (kgagent.Answer, []kgagent.Event) {
	t.Helper()
	var evs events
	if req.Agent == "" {
		req.Agent = "docs"
	}
	ans, err := rig.m.Ask(context.Background(), req, evs.emit)
	if err != nil {
		t.Fatal(err)
	}
	return ans, evs.all()
}

func TestAnswerCacheReplaysTheSameAnswer(t *testing.T) {
	rig := newCacheRig(t, 8, time.Minute, true)
	first, ev1 := rig.ask(t, Request{ID: "r1", Question: "Which port?"})
	second, ev2 := rig.ask(t, Request{ID: "r2", Question: "  Which   port? "})
	if got := rig.calls.Load(); got != 1 {
		t.Fatalf("func called %d times, want 1 (second answer from the cache)", got)
	}
	if first.Answer != second.Answer || len(second.Sources) != 1 || second.Sources[0].URL != first.Sources[0].URL {
		t.Fatalf("cached answer differs: %+v vs %+v", first, second)
	}
	if second.RequestID != "r2" || second.Usage != (kgagent.Usage{}) || second.Iterations != 0 {
		t.Errorf("cached answer has request id %q, usage %+v, iterations %d", second.RequestID, second.Usage, second.Iterations)
	}
	if len(ev1) != len(ev2) {
		t.Fatalf("replayed %d events, the answer streamed %d", len(ev2), len(ev1))
	}
	checkSeq(t, ev2, "r2")
	for i := range ev1 {
		if ev1[i].Kind != ev2[i].Kind || ev1[i].Text != ev2[i].Text {
			t.Errorf("event %d: %s %q replayed as %s %q", i, ev1[i].Kind, ev1[i].Text, ev2[i].Kind, ev2[i].Text)
		}
	}
	if st := rig.m.CacheStats(); st.Hits != 1 || st.Misses != 1 || st.Entries != 1 {
		t.Errorf("stats %+v, want 1 hit, 1 miss, 1 entry", st)
	}
}

func TestAnswerCacheMisses(t *testing.T) {
	tests := []struct {
		name   string
		change func(rig *cacheRig) Request // what happens before the second ask
	}{
		{"generation changed", func(rig *cacheRig) Request { rig.gen.Add(1); return Request{Question: "Which port?"} }},
		{"older than the TTL", func(rig *cacheRig) Request { rig.advance(2 * time.Minute); return Request{Question: "Which port?"} }},
		{"other question", func(rig *cacheRig) Request { return Request{Question: "Which host?"} }},
		{"other collection", func(rig *cacheRig) Request { return Request{Question: "Which port?", Collection: "other"} }},
		{"with a session", func(rig *cacheRig) Request { return Request{Question: "Which port?", SessionID: "s1"} }},
		{"with embeds", func(rig *cacheRig) Request {
			return Request{Question: "Which port?", Embeds: map[string]kgagent.Embed{"a": {ContentType: "text/plain", URI: "data:,x"}}}
		}},
		{"agent registered", func(rig *cacheRig) Request {
			a, err := NewCodeShotAgent(AgentConfig{Name: "other", BasePrompt: "Other."})
			if err != nil {
				panic(err)
			}
			if err := rig.m.Register(a); err != nil {
				panic(err)
			}
			return Request{Question: "Which port?"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rig := newCacheRig(t, 8, time.Minute, true)
			rig.ask(t, Request{Question: "Which port?"})
			rig.ask(t, tt.change(rig))
			if got := rig.calls.Load(); got != 2 {
				t.Fatalf("func called %d times, want 2 (no cache hit)", got)
			}
		})
	}
}

func TestAnswerCacheKeepsOnlyCacheableRuns(t *testing.T) {
	rig := newCacheRig(t, 8, time.Minute, false) // the func depends on more than the stores
	rig.ask(t, Request{Question: "Which port?"})
	rig.ask(t, Request{Question: "Which port?"})
	if got := rig.calls.Load(); got != 2 {
		t.Fatalf("func called %d times, want 2: a run that called an uncacheable func is not kept", got)
	}
	if st := rig.m.CacheStats(); st.Entries != 0 {
		t.Errorf("cache holds %d entries", st.Entries)
	}
}

func TestAnswerCacheEvictsLeastRecentlyUsed(t *testing.T) {
	rig := newCacheRig(t, 2, 0, true)
	rig.ask(t, Request{Question: "q1"})
	rig.ask(t, Request{Question: "q2"})
	rig.ask(t, Request{Question: "q1"}) // hit: q1 is now the most recent
	rig.ask(t, Request{Question: "q3"}) // evicts q2
	if got := rig.calls.Load(); got != 3 {
		t.Fatalf("func called %d times, want 3", got)
	}
	rig.ask(t, Request{Question: "q1"}) // still there
	if got := rig.calls.Load(); got != 3 {
		t.Fatalf("q1 was evicted (func called %d times)", got)
	}
	rig.ask(t, Request{Question: "q2"}) // was evicted
	if got := rig.calls.Load(); got != 4 {
		t.Fatalf("q2 was not evicted (func called %d times)", got)
	}
	if st := rig.m.CacheStats(); st.Entries != 2 {
		t.Errorf("cache holds %d entries, want 2", st.Entries)
	}
}

func TestAnswerCacheOffByDefault(t *testing.T) {
	rig := newCacheRig(t, 0, time.Minute, true)
	rig.ask(t, Request{Question: "Which port?"})
	rig.ask(t, Request{Question: "Which port?"})
	if got := rig.calls.Load(); got != 2 {
		t.Fatalf("func called %d times, want 2 with the cache off", got)
	}
	if st := rig.m.CacheStats(); st != (CacheStats{}) {
		t.Errorf("stats %+v with the cache off", st)
	}
}

func TestAnswerCacheDoesNotKeepErrors(t *testing.T) {
	rig := newCacheRig(t, 8, time.Minute, true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := rig.m.Ask(ctx, Request{Agent: "docs", Question: "Which port?"}, nil); err == nil {
		t.Fatal("a canceled ask succeeded")
	}
	if st := rig.m.CacheStats(); st.Entries != 0 {
		t.Errorf("a failed run was cached (%d entries)", st.Entries)
	}
}

func TestAnswerCacheConcurrent(t *testing.T) {
	rig := newCacheRig(t, 4, time.Minute, true)
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ans, err := rig.m.Ask(context.Background(), Request{Agent: "docs", Question: fmt.Sprintf("q%d", i%6)}, nil)
			if err != nil || ans.Answer == "" {
				t.Errorf("ask: %v %q", err, ans.Answer)
			}
		}()
	}
	wg.Wait()
	if st := rig.m.CacheStats(); st.Entries > 4 || st.Hits+st.Misses != 32 {
		t.Errorf("stats %+v: at most 4 entries and 32 lookups", st)
	}
}

// A run that panics (here the caller's emit, on the final answer) is not
// cached: the same question asked again runs again instead of replaying an
// unfinished answer.
func TestAnswerCacheDoesNotKeepPanics(t *testing.T) {
	rig := newCacheRig(t, 8, time.Minute, true)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the emit's panic did not reach the caller")
			}
		}()
		_, _ = rig.m.Ask(context.Background(), Request{Agent: "docs", Question: "Which port?"}, func(ev kgagent.Event) {
			if ev.Kind == kgagent.EventAnswer {
				panic("client gone")
			}
		})
	}()
	if st := rig.m.CacheStats(); st.Entries != 0 {
		t.Errorf("a run that panicked was cached (%d entries)", st.Entries)
	}
}

// TestCachedAnswerOwnsItsStrings: a cached answer holds copies of its
// strings, not substrings of the buffers its run made (the graph name index
// copies an expansion's triples into one buffer a call; a cached answer
// citing one of them kept the whole buffer alive).
func TestCachedAnswerOwnsItsStrings(t *testing.T) {
	buf := strings.Repeat("https://docs.example/a.html title heading snippet answer text ", 2000)
	sub := func(i, n int) string { return buf[i : i+n] }
	src := kgagent.Source{URL: sub(0, 20), Title: sub(21, 5), HeadingPath: []string{sub(27, 7)}, Snippet: sub(35, 7)}
	c := newAnswerCache(4, 0, 0)
	e := &cached{key: cacheKey{question: "q"}, ans: kgagent.Answer{Answer: sub(43, 6), Sources: []kgagent.Source{src}},
		events: []kgagent.Event{{Kind: kgagent.EventAnswer, Text: sub(43, 6), Sources: []kgagent.Source{src}, Error: &kgagent.Error{Message: sub(50, 4)}}}}
	c.put(e)
	got, ok := c.get(cacheKey{question: "q"}, time.Now())
	if !ok {
		t.Fatal("entry not cached")
	}
	lo := uintptr(unsafe.Pointer(unsafe.StringData(buf)))
	hi := lo + uintptr(len(buf))
	check := func(what, s string) {
		if p := uintptr(unsafe.Pointer(unsafe.StringData(s))); s != "" && p >= lo && p < hi {
			t.Errorf("cached %s %q points into the run's buffer", what, s)
		}
	}
	checkSources := func(ss []kgagent.Source) {
		for _, s := range ss {
			check("source URL", s.URL)
			check("source title", s.Title)
			check("source snippet", s.Snippet)
			for _, h := range s.HeadingPath {
				check("heading", h)
			}
		}
	}
	check("answer", got.ans.Answer)
	checkSources(got.ans.Sources)
	for _, ev := range got.events {
		check("event text", ev.Text)
		check("error message", ev.Error.Message)
		checkSources(ev.Sources)
	}
	if got.ans.Answer != sub(43, 6) || got.ans.Sources[0].URL != src.URL || got.events[0].Error.Message != sub(50, 4) {
		t.Errorf("cached entry changed: %+v", got)
	}
}

// degradedLLM asks the lookup func, then answers with a step marked
// Degraded (as the built-in answerer marks an answer its model calls
// could not help write).
type degradedLLM struct{}

func (degradedLLM) Complete(ctx context.Context, req llm.CompletionRequest) (llm.Stream, error) {
	step := llm.Step{Kind: llm.StepFunc, Name: "lookup", Input: "port"}
	if last := req.Messages[len(req.Messages)-1]; last.Role == "user" && strings.HasPrefix(last.Content, "Func[") {
		step = llm.Step{Kind: llm.StepAnswer, Answer: "I found no section that answers this.", Degraded: true}
	}
	return &stepStream{text: step.Line(), step: step}, nil
}

type stepStream struct {
	text string
	step llm.Step
	done bool
}

func (s *stepStream) Recv() (llm.Delta, error) {
	if s.done {
		return llm.Delta{}, io.EOF
	}
	s.done = true
	return llm.Delta{Text: s.text, Steps: []llm.Step{s.step}}, nil
}

func (s *stepStream) Close() error { return nil }

// TestAnswerCacheDoesNotKeepDegradedAnswers: an answer written around a
// passing failure (llm.Step.Degraded: the answerer's embeddings timed out)
// is given but not kept, so the question asked again is answered afresh.
// Before, the cache kept such an abstention for its whole TTL.
func TestAnswerCacheDoesNotKeepDegradedAnswers(t *testing.T) {
	rig := newCacheRig(t, 8, time.Minute, true)
	rig.m.cfg.Model.LLM = degradedLLM{}
	for i := 0; i < 2; i++ {
		if ans, _ := rig.ask(t, Request{Question: "Which port?"}); ans.Answer != "I found no section that answers this." {
			t.Fatalf("answer = %q", ans.Answer)
		}
	}
	if got := rig.calls.Load(); got != 2 {
		t.Errorf("func called %d times, want 2: a degraded answer is not kept", got)
	}
	if st := rig.m.CacheStats(); st.Entries != 0 {
		t.Errorf("cache holds %d entries, want 0", st.Entries)
	}
}

// TestAnswerCacheBoundedByBytes: the cache holds at most MaxBytes of
// answers and events (before, only Size entries: 4,096 answers of ~30 KB on
// the OpenJDK docs grew serve's heap by ~120 MB), evicting the least
// recently used; its count follows replacements and expiries, and an
// answer bigger than the whole budget is not kept.
func TestAnswerCacheBoundedByBytes(t *testing.T) {
	const text = 10_000
	// random letters: the cache's compression finds no repeats in them,
	// so an entry holds about its text's bytes
	rng := rand.New(rand.NewPCG(1, 2))
	noise := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a' + byte(rng.IntN(26))
		}
		return string(b)
	}
	entry := func(q string, n int) *cached {
		return &cached{key: cacheKey{question: q}, at: time.Unix(100, 0),
			ans:    kgagent.Answer{Answer: noise(n), Sources: []kgagent.Source{{URL: "https://x/" + q, Snippet: noise(n)}}},
			events: []kgagent.Event{{Text: noise(n)}}}
	}
	c := newAnswerCache(100, 5*3*text, time.Minute)
	for i := range 20 {
		c.put(entry(fmt.Sprint("q", i), text))
		if c.bytes > c.maxBytes {
			t.Fatalf("after %d answers the cache holds %d bytes, over %d", i+1, c.bytes, c.maxBytes)
		}
	}
	if n := c.len(); n < 3 || n > 4 {
		t.Errorf("%d answers of %d bytes kept in %d bytes", n, 3*text, c.maxBytes)
	}
	if _, ok := c.get(cacheKey{question: "q19"}, time.Unix(101, 0)); !ok {
		t.Error("the most recent answer was evicted")
	}
	if _, ok := c.get(cacheKey{question: "q0"}, time.Unix(101, 0)); ok {
		t.Error("the oldest answer is still kept")
	}
	sum := func() int {
		n := 0
		for el := c.lru.Front(); el != nil; el = el.Next() {
			n += el.Value.(*cached).size
		}
		return n
	}
	c.put(entry("q19", 10)) // replaced by a small one
	if c.bytes != sum() {
		t.Errorf("after a replacement the count is %d bytes, the entries hold %d", c.bytes, sum())
	}
	if _, ok := c.get(cacheKey{question: "q19"}, time.Unix(1000, 0)); ok { // expired
		t.Error("an expired answer was served")
	}
	if c.bytes != sum() {
		t.Errorf("after an expiry the count is %d bytes, the entries hold %d", c.bytes, sum())
	}
	kept := c.len()
	c.put(entry("huge", c.maxBytes))
	if _, ok := c.get(cacheKey{question: "huge"}, time.Unix(101, 0)); ok || c.bytes > c.maxBytes {
		t.Errorf("an answer over the budget was kept (%d bytes held)", c.bytes)
	}
	if n := c.len(); n != kept || kept == 0 {
		t.Errorf("an answer over the budget left %d of the %d answers kept", n, kept)
	}
	if d := newAnswerCache(1, 0, 0); d.maxBytes != defaultCacheBytes {
		t.Errorf("default budget %d, want %d", d.maxBytes, defaultCacheBytes)
	}
}
