package crawler

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
)

// hits counts requests per path.
type hits struct {
	mu sync.Mutex
	m  map[string]int
}

func (h *hits) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		if h.m == nil {
			h.m = map[string]int{}
		}
		h.m[r.URL.Path]++
		h.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (h *hits) get(p string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[p]
}

func (h *hits) any(prefix string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for p := range h.m {
		if strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	return out
}

func htmlPage(title, body string) string {
	return "<!doctype html><html><head><title>" + title + "</title></head><body><main><h1 id=\"top\">" + title + "</h1>" + body + "</main></body></html>"
}

func TestCrawlExcludes(t *testing.T) {
	var h hits
	srv := httptest.NewServer(h.wrap(http.FileServer(http.Dir(filepath.Join("..", "testdata", "site")))))
	defer srv.Close()
	got, _ := runCrawl(t, testConfig(), Spec{URLs: []string{srv.URL + "/*"}, Exclude: []string{"*/cli/*", "*.pdf", "*/api/python/*"}}, CrawlOptions{})
	for _, prefix := range []string{"/cli/", "/downloads/", "/api/python/", "/private/"} {
		if p := h.any(prefix); len(p) > 0 {
			t.Errorf("server got excluded requests %v", p)
		}
	}
	for u := range got.pages {
		if strings.Contains(u, "/cli/") || strings.HasSuffix(u, ".pdf") {
			t.Errorf("excluded URL has an outcome: %s", u)
		}
	}
	if got.pages[srv.URL+"/faq.html"].Outcome != Fetched {
		t.Errorf("faq not fetched")
	}
}

func TestCrawlExactURLDoesNotFollow(t *testing.T) {
	srv := siteServer(t)
	got, _ := runCrawl(t, testConfig(), Spec{URLs: []string{srv.URL + "/faq.html", srv.URL + "/glossary.html"}}, CrawlOptions{})
	if len(got.pages) != 2 || got.pages[srv.URL+"/faq.html"].Outcome != Fetched || got.pages[srv.URL+"/glossary.html"].Outcome != Fetched {
		t.Fatalf("pages = %v", got.order)
	}
}

func TestCrawlMaxPagesAndDepth(t *testing.T) {
	srv := siteServer(t)
	got, res := runCrawl(t, testConfig(), Spec{URLs: []string{srv.URL + "/*"}, MaxPages: 5}, CrawlOptions{})
	if len(got.pages) != 5 || !res.Truncated || res.Queued != 5 {
		t.Errorf("max pages 5: %d pages, result %+v", len(got.pages), res)
	}
	// Depth 1 from a page that is not in the sitemap: only it and its links.
	got, _ = runCrawl(t, testConfig(), Spec{URLs: []string{srv.URL + "/guides/*"}, MaxDepth: 1}, CrawlOptions{})
	for u, p := range got.pages {
		if p.Depth > 1 {
			t.Errorf("%s at depth %d", u, p.Depth)
		}
	}
	if got.pages[srv.URL+"/guides/downsampling.html"].Outcome != Fetched {
		t.Errorf("depth-1 page missing: %v", got.order)
	}
}

func TestCrawlRedirects(t *testing.T) {
	var otherHits hits
	other := httptest.NewServer(otherHits.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, htmlPage("Other", "<p>outside</p>"))
	})))
	defer other.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/docs/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, htmlPage("Index", `<p>links</p><a href="old">old</a><a href="away">away</a><a href="out">out</a><a href="loop">loop</a>`))
	})
	mux.HandleFunc("/docs/old", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/docs/new", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/docs/new", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, htmlPage("New", "<p>moved here</p>")) })
	mux.HandleFunc("/docs/away", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, other.URL+"/x", http.StatusFound) })
	mux.HandleFunc("/docs/out", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/blog/x", http.StatusFound) })
	mux.HandleFunc("/docs/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/docs/loop?x=1", http.StatusFound) })
	mux.HandleFunc("/blog/x", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, htmlPage("Blog", "<p>blog</p>")) })
	var h hits
	srv := httptest.NewServer(h.wrap(mux))
	defer srv.Close()
	got, _ := runCrawl(t, testConfig(), Spec{URLs: []string{srv.URL + "/docs/*"}}, CrawlOptions{})
	if p := got.pages[srv.URL+"/docs/new"]; p.Outcome != Fetched || p.From != srv.URL+"/docs/old" {
		t.Errorf("redirect inside: %+v", p)
	}
	for _, u := range []string{"/docs/away", "/docs/out"} {
		if p := got.pages[srv.URL+u]; p.Outcome != Skipped || p.Err == nil || p.Err.Code != kgagent.EFORBIDDEN {
			t.Errorf("%s: %+v", u, p)
		}
	}
	if n := otherHits.get("/x"); n != 0 {
		t.Errorf("other host was requested %d times", n)
	}
	if n := h.get("/blog/x"); n != 0 {
		t.Errorf("out-of-prefix page was requested")
	}
	if p := got.pages[srv.URL+"/docs/loop"]; p.Outcome != Failed {
		t.Errorf("redirect loop: %+v", p)
	}
}

func TestCrawlRetries(t *testing.T) {
	type step struct {
		status     int
		retryAfter string
	}
	tests := []struct {
		name     string
		steps    []step // then 200
		always   bool   // the last step repeats forever
		want     Outcome
		wantCode string
		wantHits int
		minWait  time.Duration
	}{
		{"429 then ok honours Retry-After", []step{{429, "1"}}, false, Fetched, "", 2, time.Second},
		{"503 twice then ok", []step{{503, ""}, {503, ""}}, false, Fetched, "", 3, 0},
		{"502 then ok", []step{{502, ""}}, false, Fetched, "", 2, 0},
		{"500 always fails after retries", []step{{500, ""}}, true, Failed, kgagent.EUNAVAILABLE, 4, 0},
		{"429 with a long Retry-After fails at once", []step{{429, "3600"}}, true, Failed, kgagent.ERATELIMIT, 1, 0},
		{"403 is not retried", []step{{403, ""}}, true, Failed, kgagent.EFORBIDDEN, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			n := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/robots.txt" {
					http.NotFound(w, r)
					return
				}
				mu.Lock()
				i := n
				n++
				mu.Unlock()
				if i < len(tt.steps) || tt.always {
					s := tt.steps[min(i, len(tt.steps)-1)]
					if s.retryAfter != "" {
						w.Header().Set("Retry-After", s.retryAfter)
					}
					w.WriteHeader(s.status)
					return
				}
				fmt.Fprint(w, htmlPage("OK", "<p>finally</p>"))
			}))
			defer srv.Close()
			start := time.Now()
			got, _ := runCrawl(t, testConfig(), Spec{URLs: []string{srv.URL + "/page"}}, CrawlOptions{})
			p := got.pages[srv.URL+"/page"]
			if p.Outcome != tt.want || (tt.wantCode != "" && (p.Err == nil || p.Err.Code != tt.wantCode)) {
				t.Fatalf("page = %+v %+v", p, p.Err)
			}
			mu.Lock()
			defer mu.Unlock()
			if n != tt.wantHits {
				t.Errorf("server hits = %d, want %d", n, tt.wantHits)
			}
			if el := time.Since(start); el < tt.minWait {
				t.Errorf("took %s, Retry-After asked for %s", el, tt.minWait)
			}
		})
	}
}

func TestCrawlTimeoutRetried(t *testing.T) {
	var mu sync.Mutex
	n := 0
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		if first {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		fmt.Fprint(w, htmlPage("Slow", "<p>eventually</p>"))
	}))
	defer srv.Close()
	defer close(release)
	cfg := testConfig()
	cfg.RequestTimeout = time.Second // generous: the box may be loaded
	got, _ := runCrawl(t, cfg, Spec{URLs: []string{srv.URL + "/slow"}}, CrawlOptions{})
	if p := got.pages[srv.URL+"/slow"]; p.Outcome != Fetched {
		t.Fatalf("slow page: %+v %+v", p, p.Err)
	}
}

func TestCrawlTraps(t *testing.T) {
	mux := http.NewServeMux()
	// Every page links one level deeper with the same segment, and to the
	// next day of an endless calendar, and to a URL with many parameters.
	mux.HandleFunc("/t/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, htmlPage("Trap "+r.URL.Path, `<p>`+r.URL.String()+`</p><a href="x/">deeper</a><a href="/t/p?a=1&b=2&c=3&d=4&e=5&f=6&g=7&h=8&i=9&j=10&k=11">params</a>`))
	})
	var h hits
	srv := httptest.NewServer(h.wrap(mux))
	defer srv.Close()
	got, res := runCrawl(t, testConfig(), Spec{URLs: []string{srv.URL + "/t/*"}}, CrawlOptions{})
	if res.Truncated {
		t.Errorf("trap crawl truncated: %+v", res)
	}
	var trapped []string
	for u, p := range got.pages {
		if p.Outcome == Skipped && p.Err != nil && strings.HasPrefix(p.Err.Reason, "crawler trap guard") {
			trapped = append(trapped, u)
		}
	}
	if len(trapped) != 2 {
		t.Errorf("trapped = %v", trapped)
	}
	if n := h.get("/t/x/x/x/x/"); n != 0 {
		t.Errorf("4th repetition requested")
	}
	if h.get("/t/x/x/x/") != 1 {
		t.Errorf("3rd repetition not requested")
	}

	// An endless calendar is bounded by the page limit.
	cal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var d int
		fmt.Sscanf(r.URL.Query().Get("d"), "%d", &d)
		fmt.Fprint(w, htmlPage(fmt.Sprint("Day ", d), fmt.Sprintf(`<p>day %d</p><a href="/cal?d=%d">next</a>`, d, d+1)))
	}))
	defer cal.Close()
	got, res = runCrawl(t, testConfig(), Spec{URLs: []string{cal.URL + "/*"}, MaxPages: 25}, CrawlOptions{})
	if !res.Truncated || len(got.by(Fetched)) != 25 {
		t.Errorf("calendar: %d fetched, %+v", len(got.by(Fetched)), res)
	}
}

func TestCrawlByteBudget(t *testing.T) {
	srv := siteServer(t)
	cfg := testConfig()
	cfg.MaxTotalBytes = 20000
	cfg.Parallelism = 1
	got, res := runCrawl(t, cfg, Spec{URLs: []string{srv.URL + "/*"}}, CrawlOptions{})
	if n := len(got.by(Fetched)); !res.Truncated || !strings.HasPrefix(res.Reason, "byte budget") || n > 10 || n == 0 {
		t.Errorf("budget: %d pages fetched, %+v", n, res)
	}
}

func TestCrawlBadInput(t *testing.T) {
	huge := strings.Repeat("<p>all work and no play</p>\n", 50000) // ~1.4 MB
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, htmlPage("OK", "<p>fine</p>")) })
	mux.HandleFunc("/garbage", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("\x00\x01\x02\x03\xff\xfe\xfd garbage \x00"))
	})
	mux.HandleFunc("/latin", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<p>caf\xe9 cr\xe8me</p>"))
	})
	mux.HandleFunc("/huge-chunked", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		for i := 0; i < len(huge); i += 4096 {
			w.Write([]byte(huge[i:min(i+4096, len(huge))]))
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/huge-length", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Length", fmt.Sprint(len(huge)))
		fmt.Fprint(w, huge)
	})
	mux.HandleFunc("/image", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	cfg := testConfig()
	cfg.MaxBodyBytes = 256 << 10
	spec := Spec{URLs: []string{
		srv.URL + "/ok", srv.URL + "/garbage", srv.URL + "/latin", srv.URL + "/huge-chunked", srv.URL + "/huge-length", srv.URL + "/image",
		"http://[::1", "ftp://example.com/x", srv.URL + "/a*b*", "http://127.0.0.1:1/unreachable", "not a url",
	}}
	got, _ := runCrawl(t, cfg, spec, CrawlOptions{})
	tests := []struct {
		url  string
		want Outcome
		code string
	}{
		{srv.URL + "/ok", Fetched, ""},
		{srv.URL + "/garbage", Failed, kgagent.EINVALID},
		{srv.URL + "/latin", Failed, kgagent.EINVALID},
		{srv.URL + "/huge-chunked", Failed, kgagent.ETOOLARGE},
		{srv.URL + "/huge-length", Failed, kgagent.ETOOLARGE},
		{srv.URL + "/image", Skipped, kgagent.EUNSUPPORTED},
		{"http://[::1", Failed, kgagent.EINVALID},
		{"ftp://example.com/x", Failed, kgagent.EINVALID},
		{srv.URL + "/a*b*", Failed, kgagent.EINVALID},
		{"http://127.0.0.1:1/unreachable", Failed, kgagent.EUNAVAILABLE},
		{"not a url", Failed, kgagent.EINVALID},
	}
	for _, tt := range tests {
		p, ok := got.pages[tt.url]
		if !ok {
			t.Errorf("%s: no outcome (have %v)", tt.url, got.order)
			continue
		}
		if p.Outcome != tt.want || (tt.code != "" && (p.Err == nil || p.Err.Code != tt.code)) {
			t.Errorf("%s: %s %+v, want %s %s", tt.url, p.Outcome, p.Err, tt.want, tt.code)
		}
		if p.Err != nil && p.Err.Reason == "" {
			t.Errorf("%s: empty reason", tt.url)
		}
	}
}

func TestCrawlRefusesPrivateAddresses(t *testing.T) {
	var h hits
	srv := httptest.NewServer(h.wrap(http.FileServer(http.Dir(filepath.Join("..", "testdata", "site")))))
	defer srv.Close()
	port := srv.URL[strings.LastIndexByte(srv.URL, ':'):]
	cfg := testConfig()
	cfg.AllowPrivate = false
	cfg.MaxRetries = -1
	// localhost resolves to loopback: the check happens at dial time, after
	// DNS, so a name (or a rebinding DNS answer) does not get through.
	spec := Spec{URLs: []string{srv.URL + "/*", "http://localhost" + port + "/faq.html"}}
	got, _ := runCrawl(t, cfg, spec, CrawlOptions{})
	for _, u := range []string{srv.URL + "/", "http://localhost" + port + "/faq.html"} {
		if p := got.pages[u]; p.Outcome != Failed || p.Err.Code != kgagent.EFORBIDDEN {
			t.Errorf("%s: %+v %+v", u, p, p.Err)
		}
	}
	if len(h.m) != 0 {
		t.Errorf("server was reached: %v", h.m)
	}
}

func TestCrawlBearerToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/robots.txt" || r.URL.Path == "/sitemap.xml" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, htmlPage("Private docs "+r.URL.Path, `<p>members only</p><a href="/b">b</a>`))
	}))
	defer srv.Close()
	got, _ := runCrawl(t, testConfig(), Spec{URLs: []string{srv.URL + "/*"}, BearerToken: "s3cret"}, CrawlOptions{})
	if len(got.by(Fetched)) != 2 {
		t.Errorf("with token: %v", got.order)
	}
	got, _ = runCrawl(t, testConfig(), Spec{URLs: []string{srv.URL + "/a"}}, CrawlOptions{})
	if p := got.pages[srv.URL+"/a"]; p.Outcome != Failed || p.Err.Code != kgagent.EUNAUTH {
		t.Errorf("without token: %+v", p)
	}
}

func TestCrawlContentHashDedupe(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/d/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, htmlPage("Home", `<p>home</p><a href="/d/one">1</a><a href="/d/copy">2</a>`))
	})
	same := func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, htmlPage("Same", "<p>identical</p>")) }
	mux.HandleFunc("/d/one", same)
	mux.HandleFunc("/d/copy", same)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	got, _ := runCrawl(t, testConfig(), Spec{URLs: []string{srv.URL + "/d/*"}}, CrawlOptions{})
	a, b := got.pages[srv.URL+"/d/one"], got.pages[srv.URL+"/d/copy"]
	if (a.Outcome == Fetched) == (b.Outcome == Fetched) {
		t.Fatalf("exactly one of two identical pages must be fetched: %s %s", a.Outcome, b.Outcome)
	}
	dup := a
	if a.Outcome == Fetched {
		dup = b
	}
	if dup.Outcome != Skipped || dup.Err.Code != kgagent.ECONFLICT || !strings.HasPrefix(dup.Err.Reason, "same content as") {
		t.Errorf("duplicate: %+v", dup.Err)
	}
	// A page known from an earlier crawl keeps owning its hash.
	hash := a.Doc.ContentHash + b.Doc.ContentHash
	for range 3 {
		got, _ = runCrawl(t, testConfig(), Spec{URLs: []string{srv.URL + "/d/*"}}, CrawlOptions{
			Recheck: []string{srv.URL + "/d/copy"},
			Known: func(u string) (Known, bool) {
				if u == srv.URL+"/d/copy" {
					return Known{ContentHash: hash}, true
				}
				return Known{}, false
			},
		})
		if got.pages[srv.URL+"/d/copy"].Outcome != Fetched || got.pages[srv.URL+"/d/one"].Outcome != Skipped {
			t.Fatalf("known owner lost its hash: copy %s, one %s", got.pages[srv.URL+"/d/copy"].Outcome, got.pages[srv.URL+"/d/one"].Outcome)
		}
	}
}

func TestCrawlCanceled(t *testing.T) {
	srv := siteServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	_, err := New(testConfig()).Crawl(ctx, Spec{URLs: []string{srv.URL + "/*"}}, CrawlOptions{OnPage: func(Page) {
		if n.Add(1) == 3 {
			cancel()
		}
	}})
	if kgagent.ErrorCode(err) != kgagent.ECANCELED {
		t.Fatalf("err = %v", err)
	}
}

func TestCrawlMalformedExclude(t *testing.T) {
	_, err := New(testConfig()).Crawl(context.Background(), Spec{URLs: []string{"http://h/*"}, Exclude: []string{"  "}}, CrawlOptions{})
	if kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Fatalf("err = %v", err)
	}
}

func TestCrawlPerHostLimits(t *testing.T) {
	tests := []struct {
		parallelism int
		delay       time.Duration
		minElapsed  time.Duration
	}{
		{1, 60 * time.Millisecond, 6 * 60 * time.Millisecond},
		{2, 0, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("parallelism %d delay %s", tt.parallelism, tt.delay), func(t *testing.T) {
			var inFlight, peak atomic.Int32
			var badUA atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !strings.Contains(r.UserAgent(), "kgagent") {
					badUA.Add(1)
				}
				if r.URL.Path == "/robots.txt" || r.URL.Path == "/sitemap.xml" {
					http.NotFound(w, r)
					return
				}
				n := inFlight.Add(1)
				defer inFlight.Add(-1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(20 * time.Millisecond)
				var links strings.Builder
				for i := range 8 {
					fmt.Fprintf(&links, `<a href="/p%d">%d</a>`, i, i)
				}
				fmt.Fprint(w, htmlPage("Page "+r.URL.Path, "<p>"+r.URL.Path+"</p>"+links.String()))
			}))
			defer srv.Close()
			cfg := testConfig()
			cfg.Parallelism, cfg.Delay = tt.parallelism, tt.delay
			start := time.Now()
			got, _ := runCrawl(t, cfg, Spec{URLs: []string{srv.URL + "/*"}}, CrawlOptions{})
			if n := len(got.by(Fetched)); n != 9 {
				t.Fatalf("fetched %d pages", n)
			}
			if p := peak.Load(); p > int32(tt.parallelism) {
				t.Errorf("%d concurrent requests to one host, limit %d", p, tt.parallelism)
			}
			if el := time.Since(start); el < tt.minElapsed {
				t.Errorf("took %s, delay needs at least %s", el, tt.minElapsed)
			}
			if badUA.Load() != 0 {
				t.Errorf("%d requests without the kgagent user agent", badUA.Load())
			}
		})
	}
}

// TestCrawlSitemapThenLinks is the huge corpus's crawl in small: a sitemap
// feeds the frontier many pages before the pages reached only by links, and
// a Spec whose page limit is above the Config's must reach them all. The
// byte budget is the Config's per page of its MaxPages: a higher Spec limit
// gets the same budget per page, not the Config's total (which cut such a
// crawl short, silently, once the sitemap's pages had spent it).
func TestCrawlSitemapThenLinks(t *testing.T) {
	const mapped, linked = 150, 60
	filler := strings.Repeat("<p>filler text of a generated page</p>", 100) // ~4 KB a page
	mux := http.NewServeMux()
	mux.HandleFunc("/sitemap.xml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
		for i := range mapped {
			fmt.Fprintf(w, "<url><loc>s/%d.html</loc></url>", i)
		}
		fmt.Fprint(w, "</urlset>")
	})
	mux.HandleFunc("/s/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, htmlPage("Mapped "+r.URL.Path, "<p>"+r.URL.Path+"</p>"+filler))
	})
	mux.HandleFunc("/l/", func(w http.ResponseWriter, r *http.Request) {
		var i int
		fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/l/"), "%d", &i)
		next := ""
		if i+1 < linked {
			next = fmt.Sprintf(`<a href="/l/%d.html">next</a>`, i+1)
		}
		fmt.Fprint(w, htmlPage("Linked "+r.URL.Path, "<p>"+r.URL.Path+"</p>"+next+filler))
	})
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, htmlPage("Home", `<a href="/l/0.html">the linked pages</a>`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	cfg := testConfig()
	cfg.MaxPages = 20
	cfg.MaxTotalBytes = 20 * 8 << 10 // 8 KiB a page of the Config's 20: ~40 of these pages
	// Without ScaleBudget (a server's crawler) a remote caller's page
	// limit does not raise the bytes fetched.
	got, res := runCrawl(t, cfg, Spec{URLs: []string{srv.URL + "/*"}, MaxPages: 1000}, CrawlOptions{})
	if n := len(got.by(Fetched)); !res.Truncated || !strings.HasPrefix(res.Reason, "byte budget") || n >= mapped {
		t.Errorf("unscaled budget, page limit 1000: %d fetched, %+v", n, res)
	}
	cfg.ScaleBudget = true
	got, res = runCrawl(t, cfg, Spec{URLs: []string{srv.URL + "/*"}, MaxPages: 1000}, CrawlOptions{})
	if res.Truncated {
		t.Errorf("truncated: %s", res.Reason)
	}
	var s, l int
	for _, u := range got.by(Fetched) {
		switch {
		case strings.Contains(u, "/s/"):
			s++
		case strings.Contains(u, "/l/"):
			l++
		}
	}
	if s != mapped || l != linked {
		t.Errorf("fetched %d of %d sitemap pages and %d of %d linked pages (%+v)", s, mapped, l, linked, res)
	}

	// The budget still bounds a crawl: the Config's own page limit, or a
	// lower one, keeps the Config's total.
	got, res = runCrawl(t, cfg, Spec{URLs: []string{srv.URL + "/*"}, MaxPages: 15}, CrawlOptions{})
	if n := len(got.by(Fetched)); res.Truncated && !strings.HasPrefix(res.Reason, "max pages") || n != 15 {
		t.Errorf("page limit 15: %d fetched, %+v", n, res)
	}
	cfg.MaxPages = 1000
	got, res = runCrawl(t, cfg, Spec{URLs: []string{srv.URL + "/*"}}, CrawlOptions{})
	if n := len(got.by(Fetched)); !res.Truncated || !strings.HasPrefix(res.Reason, "byte budget") || n >= mapped {
		t.Errorf("Config's budget: %d fetched, %+v", n, res)
	}
}
