package crawler

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
)

// collect runs a crawl and returns its pages by URL.
type collected struct {
	mu    sync.Mutex
	pages map[string]Page
	order []string
}

func (c *collected) add(p Page) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pages == nil {
		c.pages = map[string]Page{}
	}
	if _, dup := c.pages[p.URL]; dup {
		panic("two outcomes for " + p.URL)
	}
	c.pages[p.URL] = p
	c.order = append(c.order, p.URL)
}

func (c *collected) by(o Outcome) []string {
	var out []string
	for u, p := range c.pages {
		if p.Outcome == o {
			out = append(out, u)
		}
	}
	sort.Strings(out)
	return out
}

func testConfig() Config {
	return Config{AllowPrivate: true, RetryBaseDelay: 5 * time.Millisecond, RequestTimeout: 5 * time.Second}
}

func runCrawl(t *testing.T, cfg Config, spec Spec, opts CrawlOptions) (*collected, CrawlResult) {
	t.Helper()
	var c collected
	opts.OnPage = c.add
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := New(cfg).Crawl(ctx, spec, opts)
	if err != nil {
		t.Fatalf("crawl: %v", err)
	}
	return &c, res
}

func siteServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Join("..", "testdata", "site"))))
	t.Cleanup(srv.Close)
	return srv
}

func TestCrawlSite(t *testing.T) {
	srv := siteServer(t)
	got, res := runCrawl(t, testConfig(), Spec{Collection: "lumen", URLs: []string{srv.URL + "/*"}}, CrawlOptions{})
	if res.Truncated {
		t.Errorf("truncated: %s", res.Reason)
	}
	fetched := got.by(Fetched)
	if len(fetched) < 30 {
		t.Errorf("fetched %d pages: %v", len(fetched), fetched)
	}
	for _, p := range []string{"/", "/faq.html", "/guides/migration.html", "/notes/release-process.md", "/notes/LICENSE.txt", "/api/python/client.html"} {
		if got.pages[srv.URL+p].Outcome != Fetched {
			t.Errorf("%s: %+v", p, got.pages[srv.URL+p])
		}
	}
	if p := got.pages[srv.URL+"/private/internal-roadmap.html"]; p.Outcome != Excluded {
		t.Errorf("private page: %+v", p)
	}
	if p := got.pages[srv.URL+"/downloads/lumen-datasheet.pdf"]; p.Outcome != Skipped || p.Err.Code != kgagent.EUNSUPPORTED {
		t.Errorf("pdf: %+v", p)
	}
	if f := got.by(Failed); len(f) > 0 {
		t.Errorf("failed: %v", f)
	}
	for _, u := range fetched {
		d := got.pages[u].Doc
		if d.Collection != "lumen" || d.LastModified == "" || d.URL != u {
			t.Errorf("%s: collection %q last-modified %q url %q", u, d.Collection, d.LastModified, d.URL)
		}
		for _, s := range d.Sections {
			for _, b := range s.Blocks {
				if strings.Contains(b.Text, "Nightjar") {
					t.Errorf("private text leaked via %s", u)
				}
			}
		}
	}
	if md := got.pages[srv.URL+"/notes/release-process.md"].Doc; md.ContentType != MediaMarkdown {
		t.Errorf("markdown page content type %q", md.ContentType)
	}
}
