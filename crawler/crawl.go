package crawler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/glob"
	"github.com/gocolly/colly/v2"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/httpstatus"
	"github.com/kgagent/kgagent/internal/text"
)

// DefaultUserAgent names kgagent to the sites it crawls.
const DefaultUserAgent = "kgagent/1.0 (+https://github.com/kgagent/kgagent; docs crawler)"

// Config tunes a Crawler. The zero value works: the defaults are given with
// each field.
type Config struct {
	UserAgent      string        // DefaultUserAgent
	Parallelism    int           // concurrent requests per host; 4
	Delay          time.Duration // pause per host slot after each request; 0
	RequestTimeout time.Duration // per request, headers and body; 30s
	MaxRetries     int           // retries of timeouts, 5xx and 429; 3 (negative: none)
	RetryBaseDelay time.Duration // first backoff, doubled each retry, with jitter; 500ms
	MaxRetryAfter  time.Duration // a longer Retry-After fails the page with RATE_LIMITED; 60s
	MaxBodyBytes   int64         // larger pages fail with TOO_LARGE; 10 MiB
	// MaxTotalBytes is the byte budget of a crawl of MaxPages pages; 2 GiB.
	// With ScaleBudget, a Spec with a higher page limit gets as many bytes
	// a page: MaxTotalBytes × Spec.MaxPages / MaxPages, so that raising
	// the page limit is not cut short by the budget; a lower one keeps it
	// all.
	MaxTotalBytes int64
	MaxPages      int // when the Spec sets none; 10000
	// ScaleBudget scales MaxTotalBytes to a Spec's higher page limit (see
	// MaxTotalBytes). The CLI sets it: its user chose the limit for their
	// own machine. A server leaves it off, so that a remote caller's
	// max_pages cannot raise the bytes the server fetches past
	// MaxTotalBytes.
	ScaleBudget bool
	// InFlightBytes bounds the bytes of the pages a crawl holds at once
	// past their fetch: a page's body while it is extracted (the parsed
	// tree and the extractor's buffers cost a few times its bytes), then
	// twice its text's bytes (at most its body's) until OnPage is done
	// with it (for an Ingester: until the page is written). A page larger
	// than the bound waits until it has it all. Bodies being read are not
	// counted: at most one a worker, each at most MaxBodyBytes.
	// DefaultInFlightBytes (12.5 MiB; InFlightBytesWithin gives it for
	// another memory bound).
	InFlightBytes int64
	// AllowPrivate permits loopback, private and link-local addresses. The
	// CLI sets it (the user crawls from their own machine); server-side
	// ingestion requested over the API leaves it off.
	AllowPrivate bool
	// AllowedPrivateHosts may be fetched although private (host names, IP
	// addresses or CIDR prefixes; see netguard).
	AllowedPrivateHosts []string
}

func (c Config) withDefaults() Config {
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	if c.Parallelism <= 0 {
		c.Parallelism = 4
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = 3
	}
	if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	if c.RetryBaseDelay <= 0 {
		c.RetryBaseDelay = 500 * time.Millisecond
	}
	if c.MaxRetryAfter <= 0 {
		c.MaxRetryAfter = 60 * time.Second
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 10 << 20
	}
	if c.MaxTotalBytes <= 0 {
		c.MaxTotalBytes = 2 << 30
	}
	if c.InFlightBytes <= 0 {
		c.InFlightBytes = DefaultInFlightBytes
	}
	if c.MaxPages <= 0 {
		c.MaxPages = 10000
	}
	return c
}

// Crawler fetches the pages of a Spec. It is safe for concurrent use; each
// Crawl has its own collector, transport and frontier.
type Crawler struct {
	cfg Config
}

// New returns a Crawler with cfg's defaults filled in.
func New(cfg Config) *Crawler { return &Crawler{cfg: cfg.withDefaults()} }

// Config returns the effective configuration.
func (c *Crawler) Config() Config { return c.cfg }

// Outcome is what became of one URL.
type Outcome string

// Outcomes of a URL.
const (
	Fetched     Outcome = "fetched"      // 2xx text page, extracted: Page.Doc is set
	NotModified Outcome = "not_modified" // 304 to a conditional request
	Gone        Outcome = "gone"         // 404 or 410: the page no longer exists
	Excluded    Outcome = "excluded"     // robots.txt forbids it now
	Skipped     Outcome = "skipped"      // not text, a duplicate, a trap, a redirect out of the corpus
	Failed      Outcome = "failed"       // an error; Page.Err says which
)

// Page is the outcome of one URL of a crawl.
type Page struct {
	URL     string // normalised URL (after redirects inside the corpus)
	From    string // the URL requested, when a redirect moved it
	Outcome Outcome
	Status  int
	Doc     kgagent.Document // when Fetched
	Bytes   int64
	Err     *PageError // the reason when Skipped, Excluded or Failed
	Depth   int
	Links   []string // normalised links of a Fetched page that the crawl may follow

	hold *hold // the page's share of Config.InFlightBytes (Fetched pages)
}

// Known is the state of a page from an earlier crawl.
type Known struct {
	ETag         string
	LastModified string
	ContentHash  string
	Links        []string // followed again when the page answers 304
}

// CrawlOptions are the hooks of one crawl. OnPage is called from the crawl's
// workers concurrently, once per URL that was queued or refused; it may block
// (the crawl slows down, nothing is lost).
type CrawlOptions struct {
	Known    func(url string) (Known, bool) // earlier state, for conditional requests and hash dedupe
	Recheck  []string                       // URLs known from earlier crawls, re-requested (conditionally)
	OnQueued func(url string)
	OnPage   func(Page)

	// keepsHolds: OnPage releases each page's hold on the crawl's
	// InFlightBytes itself, when done with the page (the Ingester, once
	// it is written); otherwise the crawl releases it as OnPage returns.
	keepsHolds bool
}

// CrawlResult sums up a crawl.
type CrawlResult struct {
	Queued    int64
	Truncated bool   // the crawl stopped early: max pages, byte budget or cancellation
	Reason    string // why it was truncated
}

type visit struct {
	url      string
	depth    int
	attempt  int
	reported atomic.Bool
	abort    *PageError // set when OnResponseHeaders aborted the transfer
}

// crawl is the state of one Crawl call.
type crawl struct {
	cfg       Config
	ctx       context.Context
	spec      Spec
	scope     *Scope
	opts      CrawlOptions
	maxPages  int
	maxBytes  int64 // the byte budget: Config.MaxTotalBytes, scaled to maxPages with Config.ScaleBudget
	col       *colly.Collector
	transport *http.Transport
	aux       *http.Client // robots.txt and sitemaps
	front     *frontier
	budget    *byteBudget // Config.InFlightBytes

	robotsBody map[string][]byte    // scheme://host -> robots.txt, when it answered 200
	robotsDown map[string]PageError // host -> why its robots.txt could not be read (5xx, unreachable)

	mu        sync.Mutex
	seen      map[string]bool
	hashes    map[string]string // content hash -> URL that owns it
	norm      normCache         // NormalizeURL of the links found on pages
	queued    int64
	truncated string
	bytes     atomic.Int64
}

// Crawl fetches the pages of spec and reports each through opts.OnPage. A
// URL of spec that is malformed comes back as a Failed page; a malformed
// exclude pattern fails the whole crawl with EINVALID before anything is
// fetched. Glob URLs (trailing *) follow links and the site's sitemaps
// (robots.txt Sitemap lines and /sitemap.xml, sitemap indexes included)
// under their prefix. The crawl returns when every queued URL has an
// outcome, or early when ctx is done (ECANCELED).
func (c *Crawler) Crawl(ctx context.Context, spec Spec, opts CrawlOptions) (CrawlResult, error) {
	scope, seeds, bad, err := NewScope(spec.URLs, spec.Exclude)
	if err != nil {
		return CrawlResult{}, err
	}
	return c.crawlParsed(ctx, spec, scope, seeds, bad, opts)
}

// crawlParsed is Crawl over spec as NewScope parsed it (an ingestion parses its
// spec once and hands the parse here).
func (c *Crawler) crawlParsed(ctx context.Context, spec Spec, scope *Scope, seeds []Seed, bad []PageError, opts CrawlOptions) (CrawlResult, error) {
	if opts.OnPage == nil {
		opts.OnPage = func(Page) {}
	}
	if opts.Known == nil {
		opts.Known = func(string) (Known, bool) { return Known{}, false }
	}
	cr := &crawl{
		cfg: c.cfg, ctx: ctx, spec: spec, scope: scope, opts: opts,
		maxPages: c.cfg.MaxPages,
		seen:     map[string]bool{},
		hashes:   map[string]string{},
		front:    newFrontier(),
		budget:   newByteBudget(c.cfg.InFlightBytes),
	}
	if spec.MaxPages > 0 {
		cr.maxPages = spec.MaxPages
	}
	cr.maxBytes = c.cfg.MaxTotalBytes
	if c.cfg.ScaleBudget {
		cr.maxBytes = scaledBudget(c.cfg.MaxTotalBytes, c.cfg.MaxPages, cr.maxPages)
	}
	for i := range bad {
		opts.OnPage(Page{URL: bad[i].URL, Outcome: Failed, Err: &bad[i]})
	}
	if err := cr.setup(); err != nil {
		return CrawlResult{}, err
	}
	if crawlStarted != nil {
		crawlStarted(cr)
	}
	cr.readRobots(seeds)
	for _, s := range seeds {
		cr.enqueue(s.URL, 0, true)
	}
	for _, u := range opts.Recheck {
		if n, err := NormalizeURL(u); err == nil && scope.Contains(n) {
			// A page keeps owning its content hash across crawls, so that
			// which of two identical URLs is indexed does not flip-flop.
			if k, ok := opts.Known(n); ok && k.ContentHash != "" {
				if _, taken := cr.hashes[k.ContentHash]; !taken {
					cr.hashes[k.ContentHash] = n
				}
			}
			cr.enqueue(n, 0, false)
		}
	}
	workers := c.cfg.Parallelism * max(len(scope.hosts), 1)
	workers = min(workers, 32)
	var wg sync.WaitGroup
	wg.Add(1)
	cr.front.hold() // before any worker can see an empty, idle frontier
	go func() {     // sitemaps feed the frontier while workers drain it
		defer wg.Done()
		defer cr.front.release()
		cr.sitemaps(seeds)
	}()
	for range workers {
		wg.Add(1)
		go func() { // a worker: one visit at a time until the frontier is closed
			defer wg.Done()
			for {
				v, ok := cr.front.pop()
				if !ok {
					return
				}
				cr.fetch(v)
				cr.front.done()
			}
		}()
	}
	stop := context.AfterFunc(ctx, cr.front.close)
	defer stop()
	wg.Wait()
	cr.transport.CloseIdleConnections()
	cr.aux.CloseIdleConnections()
	res := CrawlResult{Queued: cr.queued, Truncated: cr.truncated != "", Reason: cr.truncated}
	if err := ctx.Err(); err != nil {
		res.Truncated, res.Reason = true, "canceled"
		return res, kgagent.WrapError(kgagent.ECANCELED, err, "crawl canceled")
	}
	return res, nil
}

// scaledBudget is the byte budget of a crawl of maxPages pages when budget
// is that of cfgPages pages: budget × maxPages / cfgPages when maxPages is
// the higher, else budget (saturating at MaxInt64).
func scaledBudget(budget int64, cfgPages, maxPages int) int64 {
	if maxPages <= cfgPages || cfgPages <= 0 {
		return budget
	}
	per := budget / int64(cfgPages)
	if per > math.MaxInt64/int64(maxPages) {
		return math.MaxInt64
	}
	return max(budget, per*int64(maxPages))
}

func (cr *crawl) setup() error {
	cfg := cr.cfg
	col := colly.NewCollector(
		colly.UserAgent(cfg.UserAgent),
		colly.MaxBodySize(int(cfg.MaxBodyBytes+1)),
		colly.AllowURLRevisit(), // the frontier dedupes normalised URLs itself
		colly.StdlibContext(cr.ctx),
	)
	col.IgnoreRobotsTxt = false // colly ignores robots.txt by default
	cr.transport = newTransport(cfg, cfg.Parallelism)
	col.WithTransport(cr.transport)
	col.SetRequestTimeout(cfg.RequestTimeout)
	var rules []*colly.LimitRule
	for h := range cr.scope.hosts {
		rules = append(rules, &colly.LimitRule{DomainGlob: glob.QuoteMeta(h), Parallelism: cfg.Parallelism, Delay: cfg.Delay})
	}
	rules = append(rules, &colly.LimitRule{DomainGlob: "*", Parallelism: cfg.Parallelism, Delay: cfg.Delay})
	if err := col.Limits(rules); err != nil {
		return kgagent.WrapError(kgagent.EINTERNAL, err, "crawler limits")
	}
	col.SetRedirectHandler(cr.redirect)
	col.OnResponseHeaders(cr.onHeaders)
	col.OnResponse(cr.onResponse)
	col.OnError(cr.onError)
	cr.col = col
	return nil
}

// crawlStarted, when set (by the tests), sees each crawl as it starts.
var crawlStarted func(*crawl)

// errRedirectOut marks a redirect that leaves the corpus.
type errRedirectOut struct{ to string }

func (e errRedirectOut) Error() string { return "redirect out of the corpus to " + e.to }

func (cr *crawl) redirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return kgagent.Errorf(kgagent.EUNAVAILABLE, "more than 10 redirects")
	}
	to, err := NormalizeURL(req.URL.String())
	if err != nil {
		return errRedirectOut{to: text.Truncate(req.URL.String(), 300)}
	}
	from, _ := NormalizeURL(via[0].URL.String())
	if !cr.scope.redirectAllowed(from, to) || trapReason(to) != "" {
		return errRedirectOut{to: to}
	}
	if !cr.scope.hostAllowed(req.URL.Host) {
		req.Header.Del("Authorization")
	}
	return nil
}

// enqueue adds a normalised URL to the frontier unless it was seen, is out
// of scope, too deep, over the page limit, or a trap. Seeds are always
// reported; links found on pages are dropped silently when out of scope.
func (cr *crawl) enqueue(u string, depth int, seed bool) {
	if !seed && !cr.scope.Contains(u) {
		return
	}
	if cr.spec.MaxDepth > 0 && depth > cr.spec.MaxDepth {
		return
	}
	cr.mu.Lock()
	if cr.seen[u] {
		cr.mu.Unlock()
		return
	}
	cr.seen[u] = true
	if cr.queued >= int64(cr.maxPages) {
		if cr.truncated == "" {
			cr.truncated = fmt.Sprintf("max pages (%d) reached", cr.maxPages)
		}
		cr.mu.Unlock()
		return
	}
	if cr.truncated != "" && strings.HasPrefix(cr.truncated, "byte budget") {
		cr.mu.Unlock()
		return
	}
	cr.queued++
	cr.mu.Unlock()
	if cr.opts.OnQueued != nil {
		cr.opts.OnQueued(u)
	}
	if r := trapReason(u); r != "" {
		cr.opts.OnPage(Page{URL: u, Outcome: Skipped, Depth: depth, Err: &PageError{URL: u, Code: kgagent.EINVALID, Reason: "crawler trap guard: " + r}})
		return
	}
	if seed && cr.scope.Excluded(u) {
		cr.opts.OnPage(Page{URL: u, Outcome: Skipped, Depth: depth, Err: &PageError{URL: u, Code: kgagent.EINVALID, Reason: "URL matches an exclude pattern"}})
		return
	}
	cr.front.push(&visit{url: u, depth: depth})
}

func (cr *crawl) fetch(v *visit) {
	if cr.ctx.Err() != nil {
		cr.report(v, Page{URL: v.url, Outcome: Failed, Err: &PageError{URL: v.url, Code: kgagent.ECANCELED, Reason: "crawl canceled"}})
		return
	}
	hdr := http.Header{}
	hdr.Set("User-Agent", cr.cfg.UserAgent)
	hdr.Set("Accept", "text/html,application/xhtml+xml,text/markdown,text/plain;q=0.9,*/*;q=0.1")
	if cr.spec.BearerToken != "" {
		if pu, err := url.Parse(v.url); err == nil && cr.scope.hostAllowed(pu.Host) {
			hdr.Set("Authorization", "Bearer "+cr.spec.BearerToken)
		}
	}
	if k, ok := cr.opts.Known(v.url); ok {
		if k.ETag != "" {
			hdr.Set("If-None-Match", k.ETag)
		}
		if k.LastModified != "" {
			hdr.Set("If-Modified-Since", k.LastModified)
		}
	}
	if pe, down := cr.robotsDownFor(v.url); down {
		// A robots.txt that answers 5xx disallows the whole host for now
		// (RFC 9309), an unreachable one means the host is down: either is
		// a failure to report, never a reason to drop pages from the index.
		pe.URL = v.url
		cr.report(v, Page{URL: v.url, Outcome: Failed, Err: &pe})
		return
	}
	if cr.bytes.Load() > cr.maxBytes {
		// Over the byte budget: the page is left alone, neither fetched nor
		// reported, so that nothing is removed because of it.
		v.reported.Store(true)
		return
	}
	cctx := colly.NewContext()
	cctx.Put("visit", v)
	err := cr.col.Request(http.MethodGet, v.url, nil, cctx, hdr)
	if v.reported.Load() {
		return
	}
	switch {
	case errors.Is(err, colly.ErrRobotsTxtBlocked):
		cr.report(v, Page{URL: v.url, Outcome: Excluded, Err: &PageError{URL: v.url, Code: kgagent.EFORBIDDEN, Reason: "disallowed by robots.txt"}})
	case err != nil:
		code, reason := classify(err)
		cr.report(v, Page{URL: v.url, Outcome: Failed, Err: &PageError{URL: v.url, Code: code, Reason: reason}})
	default:
		cr.report(v, Page{URL: v.url, Outcome: Failed, Err: &PageError{URL: v.url, Code: kgagent.EINTERNAL, Reason: "no response was processed"}})
	}
}

// report hands one outcome per visit to OnPage.
func (cr *crawl) report(v *visit, p Page) {
	if !v.reported.CompareAndSwap(false, true) {
		return
	}
	p.Depth = v.depth
	if p.Err != nil && p.Err.URL == "" {
		p.Err.URL = p.URL
	}
	cr.opts.OnPage(p)
	if !cr.opts.keepsHolds {
		p.hold.release()
	}
}

func visitOf(ctx *colly.Context) *visit {
	v, _ := ctx.GetAny("visit").(*visit)
	return v
}

func (cr *crawl) onHeaders(r *colly.Response) {
	v := visitOf(r.Ctx)
	if v == nil || r.StatusCode < 200 || r.StatusCode >= 300 {
		return
	}
	if n, err := strconv.ParseInt(r.Headers.Get("Content-Length"), 10, 64); err == nil && n > cr.cfg.MaxBodyBytes {
		v.abort = &PageError{Code: kgagent.ETOOLARGE, Reason: fmt.Sprintf("page of %d bytes is over the limit of %d", n, cr.cfg.MaxBodyBytes)}
		r.Request.Abort()
		return
	}
	if ct := r.Headers.Get("Content-Type"); ct != "" {
		if mt := MediaType(ct, nil); !IsTextMedia(mt) {
			v.abort = &PageError{Code: kgagent.EUNSUPPORTED, Reason: fmt.Sprintf("content type %s is not HTML, plain text or Markdown", mt)}
			r.Request.Abort()
		}
	}
}

func (cr *crawl) onResponse(r *colly.Response) {
	v := visitOf(r.Ctx)
	if v == nil {
		return
	}
	final, err := NormalizeURL(r.Request.URL.String())
	if err != nil {
		final = v.url
	}
	page := Page{URL: final, Status: r.StatusCode, Bytes: int64(len(r.Body))}
	if final != v.url {
		page.From = v.url
		cr.mu.Lock()
		dup := cr.seen[final]
		cr.seen[final] = true
		cr.mu.Unlock()
		if dup {
			page.URL, page.From = v.url, ""
			page.Outcome, page.Err = Skipped, &PageError{Code: kgagent.ECONFLICT, Reason: "redirects to " + final + ", crawled already"}
			cr.report(v, page)
			return
		}
	}
	if total := cr.bytes.Add(page.Bytes); total > cr.maxBytes {
		cr.mu.Lock()
		if cr.truncated == "" {
			cr.truncated = fmt.Sprintf("byte budget (%d bytes) spent", cr.maxBytes)
		}
		cr.mu.Unlock()
	}
	if int64(len(r.Body)) > cr.cfg.MaxBodyBytes {
		page.Outcome, page.Err = Failed, &PageError{Code: kgagent.ETOOLARGE, Reason: fmt.Sprintf("page is over the limit of %d bytes", cr.cfg.MaxBodyBytes)}
		cr.report(v, page)
		return
	}
	// The page's share of the bytes in flight, before it is parsed: its
	// tree and the extractor's buffers are what a large page costs.
	h, err := cr.budget.acquire(cr.ctx, int64(len(r.Body)))
	if err != nil {
		page.Outcome, page.Err = Failed, &PageError{Code: kgagent.ECANCELED, Reason: "crawl canceled"}
		cr.report(v, page)
		return
	}
	doc, err := Extract(final, r.Headers.Get("Content-Type"), r.Body)
	if err != nil {
		h.release()
		page.Outcome = Failed
		if c := kgagent.ErrorCode(err); c == kgagent.EUNSUPPORTED || c == kgagent.EFORBIDDEN {
			page.Outcome = Skipped // not text, or meta robots noindex
		}
		page.Err = &PageError{Code: kgagent.ErrorCode(err), Reason: kgagent.ErrorMessage(err)}
		cr.report(v, page)
		return
	}
	doc.Collection = cr.spec.Collection
	doc.ETag = r.Headers.Get("ETag")
	doc.LastModified = r.Headers.Get("Last-Modified")
	doc.FetchedAt = time.Now().UTC()
	// Follow links under the glob prefixes, before the dedupe: a duplicate
	// page may still link to pages not seen yet.
	linked := map[string]bool{}
	for _, l := range doc.Links {
		if n, ok := cr.norm.normalize(l.URL); ok && !linked[n] && cr.scope.Follows(n) {
			linked[n] = true
			page.Links = append(page.Links, n)
			cr.enqueue(n, v.depth+1, false)
		}
	}
	if owner := cr.claimHash(doc.ContentHash, final); owner != final {
		h.release()
		page.Outcome, page.Err = Skipped, &PageError{Code: kgagent.ECONFLICT, Reason: "same content as " + owner}
		cr.report(v, page)
		return
	}
	h.shrink(2 * textBytes(doc)) // the Document is what is left of the page
	page.Outcome, page.Doc, page.hold = Fetched, doc, h
	cr.report(v, page)
}

// textBytes is the size of a Document's text: its blocks' and headings'.
func textBytes(doc kgagent.Document) int64 {
	n := len(doc.Title)
	for _, s := range doc.Sections {
		n += len(s.Heading)
		for _, b := range s.Blocks {
			n += len(b.Text)
		}
	}
	return int64(n)
}

// claimHash returns the URL that owns a content hash: the first page of this
// crawl with it, or a page that had it in an earlier crawl and is still in
// the corpus.
func (cr *crawl) claimHash(hash, u string) string {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	if owner, ok := cr.hashes[hash]; ok {
		return owner
	}
	cr.hashes[hash] = u
	return u
}

func (cr *crawl) onError(r *colly.Response, err error) {
	v := visitOf(r.Ctx)
	if v == nil {
		return
	}
	u := v.url
	page := Page{URL: u, Status: r.StatusCode}
	switch {
	case v.abort != nil:
		page.Outcome, page.Err = Failed, v.abort
		if v.abort.Code == kgagent.EUNSUPPORTED {
			page.Outcome = Skipped
		}
	case r.StatusCode == http.StatusNotModified:
		page.Outcome = NotModified
		// The body is not sent again: follow the links it had last time.
		if k, ok := cr.opts.Known(u); ok {
			for _, l := range k.Links {
				if cr.scope.Follows(l) {
					cr.enqueue(l, v.depth+1, false)
				}
			}
		}
	case r.StatusCode == http.StatusNotFound || r.StatusCode == http.StatusGone:
		page.Outcome, page.Err = Gone, &PageError{Code: kgagent.ENOTFOUND, Reason: fmt.Sprintf("HTTP %d", r.StatusCode)}
	default:
		var out errRedirectOut
		if errors.As(err, &out) {
			page.Outcome, page.Err = Skipped, &PageError{Code: kgagent.EFORBIDDEN, Reason: out.Error()}
			break
		}
		if retryable(r.StatusCode, err) && cr.ctx.Err() == nil {
			if v.attempt < cr.cfg.MaxRetries {
				wait, ok := cr.backoff(v.attempt, r)
				if !ok {
					page.Outcome, page.Err = Failed, &PageError{Code: kgagent.ERATELIMIT, Reason: fmt.Sprintf("HTTP %d with Retry-After over %s", r.StatusCode, cr.cfg.MaxRetryAfter)}
					break
				}
				v.attempt++
				t := time.NewTimer(wait)
				select {
				case <-t.C:
					_ = r.Request.Retry() // reports through the callbacks again
					return
				case <-cr.ctx.Done():
					t.Stop()
				}
			}
		}
		code, reason := classify(err)
		if r.StatusCode >= 300 {
			code, reason = statusCode(r.StatusCode), fmt.Sprintf("HTTP %d", r.StatusCode)
		}
		if v.attempt > 0 {
			reason += fmt.Sprintf(" (after %d retries)", v.attempt)
		}
		page.Outcome, page.Err = Failed, &PageError{Code: code, Reason: reason}
	}
	cr.report(v, page)
}

// retryable reports whether a failure is worth another try: 429, 5xx that
// may pass, timeouts and broken connections.
func retryable(status int, err error) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	if status != 0 || err == nil {
		return false
	}
	var ke *kgagent.Error
	if errors.As(err, &ke) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) ||
		strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "EOF")
}

// backoff is how long to wait before retry attempt+1: the Retry-After of a
// 429 or 503 when given (false when over MaxRetryAfter), else exponential
// with jitter.
func (cr *crawl) backoff(attempt int, r *colly.Response) (time.Duration, bool) {
	if r.Headers != nil {
		if d, ok := httpstatus.RetryAfter(*r.Headers, time.Now()); ok {
			if d > cr.cfg.MaxRetryAfter {
				return 0, false
			}
			return d, true
		}
	}
	d := cr.cfg.RetryBaseDelay << attempt
	return d/2 + rand.N(d/2+1), true
}

// statusCode is the code of a page's HTTP error status; one without a
// code of its own (a 3xx, a 409) is UNAVAILABLE: the page could not be had.
func statusCode(status int) string {
	if c := httpstatus.Code(status); c != "" {
		return c
	}
	return kgagent.EUNAVAILABLE
}

// classify turns a transport error into a stable code and a reason that is
// safe to show.
func classify(err error) (string, string) {
	var ke *kgagent.Error
	if errors.As(err, &ke) {
		return ke.Code, ke.Message
	}
	var ne net.Error
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.Is(err, context.Canceled):
		return kgagent.ECANCELED, "crawl canceled"
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return kgagent.ETIMEOUT, "request timed out"
	case errors.As(err, &dnsErr):
		return kgagent.EUNAVAILABLE, "host not found: " + dnsErr.Name
	case errors.As(err, &opErr):
		return kgagent.EUNAVAILABLE, "host unreachable: " + opErr.Err.Error()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return kgagent.EUNAVAILABLE, "fetch failed: " + ue.Err.Error()
	}
	return kgagent.EUNAVAILABLE, "fetch failed: " + err.Error()
}

// frontier is the crawl's queue of visits. pop blocks while the queue is
// empty and some worker (or a hold) may still add to it.
type frontier struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  []*visit
	active int
	closed bool
}

func newFrontier() *frontier {
	f := &frontier{}
	f.cond = sync.NewCond(&f.mu)
	return f
}

func (f *frontier) push(v *visit) {
	f.mu.Lock()
	if !f.closed {
		f.items = append(f.items, v)
	}
	f.mu.Unlock()
	f.cond.Signal()
}

func (f *frontier) pop() (*visit, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.items) == 0 && f.active > 0 && !f.closed {
		f.cond.Wait()
	}
	if f.closed || len(f.items) == 0 {
		f.cond.Broadcast()
		return nil, false
	}
	v := f.items[0]
	f.items[0] = nil
	f.items = f.items[1:]
	f.active++
	return v, true
}

func (f *frontier) done() {
	f.mu.Lock()
	f.active--
	f.mu.Unlock()
	f.cond.Broadcast()
}

// hold keeps pop waiting (as an active worker would) while a producer that
// is not a worker, such as the sitemap reader, may still push.
func (f *frontier) hold() {
	f.mu.Lock()
	f.active++
	f.mu.Unlock()
}

func (f *frontier) release() { f.done() }

func (f *frontier) close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.cond.Broadcast()
}
