package crawler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/knowledge"
)

// SpecLog remembers, per collection, the corpus specs (by specKey) that
// have crawled it completely: nothing failed, nothing was cut short. An
// ingestion infers that a page is gone from its absence only on a complete
// crawl of a spec already in the log (see Ingester). CompleteSpecs of an
// unknown collection is empty, not an error; AddCompleteSpec of a key
// already there is not an error; the page state's DeleteCollection forgets
// the collection's specs too. knowledge.MemoryStates and crawler/sqlite
// implement it.
type SpecLog interface {
	CompleteSpecs(ctx context.Context, collection string) ([]string, error)
	AddCompleteSpec(ctx context.Context, collection, key string) error
}

// specKey identifies a corpus spec for SpecLog: its URLs (seeds, as
// NewScope parsed them, sorted), exclude patterns (sorted) and max_depth.
// The collection, the bearer token and max_pages are not part of it: they
// do not change which pages a complete crawl reaches.
func specKey(spec Spec, seeds []Seed) string {
	var urls []string
	for _, sd := range seeds {
		if sd.Glob {
			urls = append(urls, sd.URL+"*")
		} else {
			urls = append(urls, sd.URL)
		}
	}
	var ex []string
	for _, e := range spec.Exclude {
		ex = append(ex, strings.TrimSpace(e))
	}
	slices.Sort(urls)
	slices.Sort(ex)
	b, _ := json.Marshal(struct {
		URLs     []string `json:"u"`
		Exclude  []string `json:"x"`
		MaxDepth int      `json:"d"`
	}{slices.Compact(urls), slices.Compact(ex), spec.MaxDepth})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// maxReported caps the PageErrors a Report keeps (the counters keep totals).
const maxReported = 200

// IngesterConfig wires an Ingester. The zero value works: it crawls with the
// default Crawler configuration and drops the documents, with the page state
// in memory (useful for benchmarks and dry runs only).
type IngesterConfig struct {
	Crawler Config
	// Knowledge writes the pages, in its order across the corpus, the graph
	// and the page state (knowledge.Service.Writer; knowledge.NewWriter
	// over other stores). nil: knowledge.NewWriter(nil, nil, nil).
	Knowledge *knowledge.Writer
	// Specs keeps the complete specs. nil: the Knowledge's page state when
	// it is a SpecLog (knowledge.MemoryStates and crawler/sqlite are), else
	// memory, so the first run after a start removes nothing by absence.
	Specs SpecLog
	// IndexConcurrency caps the pages being written at once (corpus then
	// graph, per page); 0 leaves it to the crawl's workers (Parallelism per
	// host). Lower it when indexing is CPU-bound and the crawl is not.
	IndexConcurrency int
	// WriteQueue is how many pages may have their write (knowledge.Writer.Put:
	// chunks, triple extraction and writes, then the page state) in flight
	// while the crawl worker that fetched them goes on to the next page; 0
	// means DefaultWriteQueue, negative writes in the crawl worker. The
	// corpus and graph stores each have a single writer: with the writes off
	// the crawl workers more pages wait for each store together, so their
	// writes share transactions (see corpus/sqlite and graphrag/sqlite).
	WriteQueue int
	// AfterRun, when set, is called as a Run that crawled ends (also one
	// that failed or was canceled part way: it may have written pages; ctx
	// tells which), with the run's collection, for what derives from the
	// stores (cmd/kgagent writes the search snapshots).
	AfterRun func(ctx context.Context, collection string)
}

// DefaultWriteQueue is IngesterConfig.WriteQueue's default.
const DefaultWriteQueue = 64

// Ingester runs ingestion of Specs: crawl, index new and changed pages into
// the corpus and the graph, skip unchanged ones, and remove pages only when
// the crawl positively knows they are gone. It is safe for concurrent use.
//
// A page is removed from the collection when, and only when:
//   - it answered 404 or 410 (removed at once), or
//   - it is under the spec's URLs and a complete crawl (no page failed,
//     nothing cut short by max_pages, the byte budget, a deadline or
//     cancellation) of a spec that has crawled the collection completely
//     before (SpecLog) did not confirm it: it redirected elsewhere, robots.txt
//     or a noindex now refuse it, it became a duplicate or not text, an
//     exclude pattern covers it, or nothing reached it.
//
// Any other run removes nothing it merely did not see, and its Report says
// how many such pages it kept and why (Counters.Kept, KeptReason). Pages
// outside the spec's URLs (another spec feeding the same collection, or a
// wider spec of before) are never removed by it.
type Ingester struct {
	crawler *Crawler
	k       *knowledge.Writer
	specs   SpecLog
	slots   chan struct{} // nil: no cap on concurrent indexing
	after   func(ctx context.Context, collection string)
	wqueue  int // pages whose write may be in flight; 0: inline
}

// NewIngester returns an Ingester for cfg.
func NewIngester(cfg IngesterConfig) *Ingester {
	in := &Ingester{crawler: New(cfg.Crawler), k: cfg.Knowledge, specs: cfg.Specs, after: cfg.AfterRun}
	if in.k == nil {
		in.k = knowledge.NewWriter(nil, nil, nil)
	}
	if in.specs == nil {
		if sl, ok := in.k.States().(SpecLog); ok {
			in.specs = sl
		} else {
			in.specs = knowledge.NewMemoryStates() // not kept across processes: the first run after a start removes nothing by absence
		}
	}
	if cfg.IndexConcurrency > 0 {
		in.slots = make(chan struct{}, cfg.IndexConcurrency)
	}
	switch {
	case cfg.WriteQueue == 0:
		in.wqueue = DefaultWriteQueue
	case cfg.WriteQueue > 0:
		in.wqueue = cfg.WriteQueue
	}
	return in
}

// Report is the result of one ingestion run.
type Report struct {
	Counters  Counters    `json:"counters"`
	Errors    []PageError `json:"errors,omitempty"`  // failed pages, capped
	Skips     []PageError `json:"skipped,omitempty"` // skipped pages with their reason, capped
	Seconds   float64     `json:"seconds"`
	Truncated bool        `json:"truncated,omitempty"`
	Reason    string      `json:"reason,omitempty"`
	// KeptReason says why the Counters.Kept pages that this run did not
	// confirm were kept rather than removed ("" when it kept none).
	KeptReason string `json:"kept_reason,omitempty"`
}

// Summary is the one JSON object `kgagent ingest --json` prints.
type Summary struct {
	Pages     int64 `json:"pages"` // pages in the corpus after the run: indexed + unchanged
	Chunks    int64 `json:"chunks"`
	Triples   int64 `json:"triples"`
	Unchanged int64 `json:"unchanged"`
	Failed    int64 `json:"failed"`
	Removed   int64 `json:"removed"` // pages removed from the collection (see Ingester)
	Kept      int64 `json:"kept"`    // pages this run did not confirm but kept, for KeptReason
	// KeptReason says why the kept pages were not removed.
	KeptReason string `json:"kept_reason,omitempty"`
	// Truncated says the crawl stopped before it had reached every page
	// in scope, and Reason why: the page limit, the byte budget (see
	// Config.MaxTotalBytes) or cancellation.
	Truncated bool    `json:"truncated,omitempty"`
	Reason    string  `json:"reason,omitempty"`
	Seconds   float64 `json:"seconds"`
	// Errors names the failed pages with their code and reason (the first
	// maxReported; Failed has the total), so a user sees which pages
	// failed and why, not only how many.
	Errors []PageError `json:"errors,omitempty"`
}

// Summary condenses the report.
func (r Report) Summary() Summary {
	return Summary{
		Pages: r.Counters.Indexed + r.Counters.Unchanged, Chunks: r.Counters.Chunks, Triples: r.Counters.Triples,
		Unchanged: r.Counters.Unchanged, Failed: r.Counters.Failed, Removed: r.Counters.Removed,
		Kept: r.Counters.Kept, KeptReason: r.KeptReason, Truncated: r.Truncated, Reason: r.Reason,
		Seconds: r.Seconds, Errors: r.Errors,
	}
}

// run is the state of one Run.
type run struct {
	in       *Ingester
	ctx      context.Context
	spec     Spec
	progress func(Counters)

	mu    sync.Mutex
	c     Counters
	errs  []PageError
	skips []PageError
	known map[string]knowledge.PageState
	seeds map[string]bool
	// confirmed holds the pages this run saw answer as part of the corpus
	// (indexed, unchanged, 304); why holds, for known pages it saw leave
	// the corpus, the reason they would be removed on a complete crawl.
	confirmed map[string]bool
	why       map[string]string

	wsem chan struct{}  // page writes in flight off the crawl workers (nil: inline)
	wwg  sync.WaitGroup // page writes not finished
}

// Run ingests spec and returns its report. progress, when not nil, gets the
// counters after every page (serialised, never concurrently) and once at the
// end. Per-page problems are counted and listed, never returned: Run returns
// an error only for a spec it cannot start (EINVALID: a malformed exclude
// pattern, no URLs), an unusable state store (EUNAVAILABLE) or
// cancellation (ECANCELED, with the partial report). Pages are written
// through the knowledge.Writer, whose order (corpus, graph, then page state)
// makes a crash between the steps re-do the page on the next run and never
// lose it.
func (in *Ingester) Run(ctx context.Context, spec Spec, progress func(Counters)) (Report, error) {
	start := time.Now()
	if spec.Collection == "" {
		spec.Collection = kgagent.DefaultCollection
	}
	r := &run{in: in, ctx: ctx, spec: spec, progress: progress, known: map[string]knowledge.PageState{}, seeds: map[string]bool{},
		confirmed: map[string]bool{}, why: map[string]string{}}
	if in.wqueue > 0 {
		r.wsem = make(chan struct{}, in.wqueue)
	}
	scope, seeds, bad, err := NewScope(spec.URLs, spec.Exclude) // the run's one parse of the spec
	if err != nil {
		return Report{}, err
	}
	for _, s := range seeds {
		r.seeds[s.URL] = true
	}
	states, err := in.k.States().ListPages(ctx, spec.Collection)
	if err != nil {
		return Report{}, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "reading page state")
	}
	var recheck []string
	for _, st := range states {
		r.known[st.URL] = st
		if scope.Contains(st.URL) {
			recheck = append(recheck, st.URL)
		}
	}
	res, crawlErr := in.crawler.crawlParsed(ctx, spec, scope, seeds, bad, CrawlOptions{
		Known: func(u string) (Known, bool) {
			r.mu.Lock()
			st, ok := r.known[u]
			r.mu.Unlock()
			return Known{ETag: st.ETag, LastModified: st.LastModified, ContentHash: st.ContentHash, Links: st.Links}, ok
		},
		Recheck:    recheck,
		OnQueued:   func(string) { r.update(func(c *Counters) { c.Queued++ }) },
		OnPage:     r.page,
		keepsHolds: true,
	})
	r.wwg.Wait() // every page's write is done
	if runWritten != nil {
		runWritten(r)
	}
	if in.after != nil {
		defer in.after(ctx, spec.Collection)
	}
	if crawlErr != nil && kgagent.ErrorCode(crawlErr) == kgagent.EINVALID {
		return Report{}, crawlErr
	}
	keptReason := r.settle(scope, specKey(spec, seeds), states, res, crawlErr)
	r.mu.Lock()
	rep := Report{Counters: r.c, Errors: r.errs, Skips: r.skips, Seconds: time.Since(start).Seconds(), Truncated: res.Truncated, Reason: res.Reason, KeptReason: keptReason}
	r.mu.Unlock()
	if progress != nil {
		progress(rep.Counters)
	}
	if crawlErr != nil {
		return rep, crawlErr
	}
	return rep, nil
}

// Forget removes every page of collection whose URL starts with prefix from
// the graph, the corpus and the page state, as a run removes a page that is
// gone, and returns how many it removed. It is for a site that moved (the
// demo site on a new address): its old URLs would only be dead links. A
// failure stops at the page that failed and leaves its state behind, so a
// later call tries it again.
func (in *Ingester) Forget(ctx context.Context, collection, prefix string) (int, error) {
	if collection == "" {
		collection = kgagent.DefaultCollection
	}
	if prefix == "" {
		return 0, kgagent.Errorf(kgagent.EINVALID, "forget: empty URL prefix")
	}
	states, err := in.k.States().ListPages(ctx, collection)
	if err != nil {
		return 0, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "reading page state")
	}
	r := &run{in: in, ctx: ctx, spec: Spec{Collection: collection}, known: map[string]knowledge.PageState{}}
	for _, st := range states {
		if !strings.HasPrefix(st.URL, prefix) {
			continue
		}
		r.remove(st.URL, "the site moved")
		if len(r.errs) > 0 {
			e := r.errs[0]
			return int(r.c.Removed), kgagent.Errorf(e.Code, "%s: %s", e.URL, e.Reason)
		}
	}
	return int(r.c.Removed), nil
}

// runWritten, when set (by the tests), sees each run once its pages are
// written, before it settles.
var runWritten func(*run)

// settle decides, once the crawl is over, what becomes of the known pages
// this run did not confirm (see Ingester for the rule): it removes them
// when the crawl was complete and its spec had crawled the collection
// completely before, and otherwise counts them kept. It records a complete
// crawl's spec (key) in the SpecLog and returns why pages were kept.
func (r *run) settle(scope *Scope, key string, states []knowledge.PageState, res CrawlResult, crawlErr error) string {
	r.mu.Lock()
	failed := r.c.Failed
	var outside int64
	var pending []string
	for _, st := range states {
		if _, still := r.known[st.URL]; !still || r.confirmed[st.URL] {
			continue // removed (404/410) or confirmed by this run
		}
		if !scope.Covers(st.URL) {
			outside++
			continue
		}
		pending = append(pending, st.URL)
	}
	r.mu.Unlock()
	var why string
	switch {
	case crawlErr != nil || r.ctx.Err() != nil:
		why = "the crawl was canceled before it ended"
	case res.Truncated:
		why = "the crawl stopped early (" + res.Reason + ")"
	case failed > 0:
		why = fmt.Sprintf("%d %s failed, and a crawl with failures removes only pages that answered 404 or 410", failed, plural(failed, "page", "pages"))
	default:
		done, err := r.in.specs.CompleteSpecs(r.ctx, r.spec.Collection)
		switch {
		case err != nil:
			why = "the record of complete crawls could not be read: " + kgagent.ErrorMessage(err)
		case !slices.Contains(done, key):
			why = "this is the first complete crawl of this spec (URLs, excludes, max_depth) into the collection; " +
				"the next complete crawl of the same spec removes the pages it still does not reach"
			_ = r.in.specs.AddCompleteSpec(r.ctx, r.spec.Collection, key) // not recorded: the next run removes nothing, safely
		default:
			for _, u := range pending {
				reason := r.why[u]
				if reason == "" {
					reason = "not reached by a complete crawl"
				}
				r.remove(u, reason)
			}
			pending = nil
		}
	}
	kept := outside + int64(len(pending))
	r.update(func(c *Counters) { c.Kept = kept })
	var parts []string
	if outside > 0 {
		parts = append(parts, fmt.Sprintf("%d %s outside this spec's URLs (a crawl never removes pages outside its URLs)", outside, plural(outside, "page", "pages")))
	}
	if n := int64(len(pending)); n > 0 {
		parts = append(parts, fmt.Sprintf("%d %s this crawl did not confirm, because %s", n, plural(n, "page", "pages"), why))
	}
	if len(parts) == 0 {
		return ""
	}
	return "kept " + strings.Join(parts, "; ")
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (r *run) confirm(u string) {
	r.mu.Lock()
	r.confirmed[u] = true
	r.mu.Unlock()
}

// leaving notes why a known page would be removed by a complete crawl.
func (r *run) leaving(u, why string) {
	r.mu.Lock()
	if _, ok := r.known[u]; ok && !r.confirmed[u] {
		r.why[u] = why
	}
	r.mu.Unlock()
}

func (r *run) update(f func(*Counters)) {
	r.mu.Lock()
	f(&r.c)
	c := r.c
	if r.progress != nil {
		r.progress(c)
	}
	r.mu.Unlock()
}

func (r *run) fail(pe PageError) {
	r.update(func(c *Counters) {
		c.Failed++
		if len(r.errs) < maxReported {
			r.errs = append(r.errs, pe)
		}
	})
}

func (r *run) skip(pe *PageError) {
	r.update(func(c *Counters) {
		c.Skipped++
		if pe != nil && len(r.skips) < maxReported {
			r.skips = append(r.skips, *pe)
		}
	})
}

func (r *run) knownState(u string) (knowledge.PageState, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.known[u]
	return st, ok
}

// page handles the outcome of one URL (called concurrently by the crawl).
// The page's hold on the crawl's InFlightBytes is released once it is
// written (or at once when nothing is written).
func (r *run) page(p Page) {
	async := false // a write in the background counts the page done and releases its hold when it ends
	defer func() {
		if !async {
			p.hold.release()
			r.update(func(c *Counters) { c.Done++ })
		}
	}()
	ctx := r.ctx
	switch p.Outcome {
	case Fetched:
		r.update(func(c *Counters) { c.Fetched++; c.Bytes += p.Bytes })
		async = r.indexPage(ctx, p)
	case NotModified:
		r.update(func(c *Counters) { c.Unchanged++ })
		if st, ok := r.knownState(p.URL); ok {
			r.confirm(p.URL)
			st.LastSeen = time.Now().UTC()
			_ = r.in.k.Touch(ctx, st)
		}
	case Gone:
		if _, ok := r.knownState(p.URL); ok {
			r.remove(p.URL, "gone: "+p.Err.Reason) // the one removal that needs no complete crawl
			return
		}
		if r.seeds[p.URL] {
			r.fail(*p.Err)
			return
		}
		r.skip(&PageError{URL: p.URL, Code: p.Err.Code, Reason: p.Err.Reason + " (broken link)"})
	case Skipped, Excluded:
		r.skip(p.Err)
		why := "no longer part of the corpus"
		if p.Err != nil {
			why += ": " + p.Err.Reason
		}
		r.leaving(p.URL, why)
	case Failed:
		pe := PageError{URL: p.URL, Code: kgagent.EINTERNAL, Reason: "failed"}
		if p.Err != nil {
			pe = *p.Err
		}
		r.fail(pe)
	}
}

// indexPage writes a fetched page through the knowledge.Writer: its state
// alone when its content is unchanged, else the whole page (Put), which
// runs off the crawl worker when the write queue is on. It reports whether
// it left the write running in the background (which then counts the page
// done).
func (r *run) indexPage(ctx context.Context, p Page) bool {
	doc := p.Doc
	if p.From != "" {
		r.leaving(p.From, "moved to "+p.URL)
	}
	st, known := r.knownState(p.URL)
	now := time.Now().UTC()
	if known && st.ContentHash == doc.ContentHash {
		r.confirm(p.URL)
		r.update(func(c *Counters) { c.Unchanged++ })
		st.ETag, st.LastModified, st.LastSeen, st.Links = doc.ETag, doc.LastModified, now, p.Links
		if err := r.in.k.Touch(ctx, st); err != nil {
			r.fail(pageError(p.URL, err, ""))
		}
		return false
	}
	release := func() {}
	if r.in.slots != nil {
		select {
		case r.in.slots <- struct{}{}:
			release = func() { <-r.in.slots }
		case <-ctx.Done():
			r.fail(PageError{URL: p.URL, Code: kgagent.ECANCELED, Reason: "canceled before indexing"})
			return false
		}
	}
	st = knowledge.PageState{Collection: doc.Collection, URL: doc.URL, ETag: doc.ETag, LastModified: doc.LastModified, ContentHash: doc.ContentHash, LastSeen: now, Links: p.Links}
	put := func() {
		defer release()
		chunks, triples, err := r.in.k.Put(ctx, doc, st)
		if err != nil {
			r.fail(pageError(p.URL, err, ""))
			return
		}
		// Not kept in known: a written page is confirmed, which is all
		// the rest of the run asks of it, and its state (its links: ~1 KB
		// a page) held for every page written grew the ingest's heap by
		// ~100 MB at 100,000 pages.
		r.confirm(p.URL)
		r.update(func(c *Counters) {
			c.Indexed++
			c.Chunks += int64(chunks)
			c.Triples += int64(triples)
		})
	}
	if r.wsem == nil {
		put()
		return false
	}
	select {
	case r.wsem <- struct{}{}:
	case <-ctx.Done():
		release()
		r.fail(PageError{URL: p.URL, Code: kgagent.ECANCELED, Reason: "canceled before indexing"})
		return false
	}
	r.wwg.Add(1)
	go func() {
		defer r.wwg.Done()
		defer func() { <-r.wsem }()
		defer r.update(func(c *Counters) { c.Done++ })
		defer p.hold.release()
		put()
	}()
	return true
}

// remove removes a page from the collection through the knowledge.Writer
// (which leaves its state behind on a failure, so the next run tries
// again).
func (r *run) remove(u, why string) {
	if err := r.in.k.Remove(r.ctx, r.spec.Collection, u); err != nil {
		r.fail(pageError(u, err, why))
		return
	}
	r.mu.Lock()
	delete(r.known, u)
	r.mu.Unlock()
	r.update(func(c *Counters) { c.Removed++ })
}

// pageError is a failed write of page u, with why the page was being
// written (when it says more than the error).
func pageError(u string, err error, why string) PageError {
	reason := kgagent.ErrorMessage(err)
	if why != "" {
		reason += " (" + why + ")"
	}
	return PageError{URL: u, Code: kgagent.ErrorCode(err), Reason: reason}
}
