package crawler

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
)

func TestNormalizeURL(t *testing.T) {
	tests := []struct{ in, want, code string }{
		{"HTTP://Example.COM:80/a/./b/../c#frag", "http://example.com/a/c", ""},
		{"https://example.com:443", "https://example.com/", ""},
		{"https://example.com:8443/x/", "https://example.com:8443/x/", ""},
		{"http://h/p?b=2&a=1&a=0", "http://h/p?a=1&a=0&b=2", ""},
		{"http://h/p?", "http://h/p", ""},
		{"http://h/p?utm_source=x&b=1&UTM_medium=y", "http://h/p?b=1", ""},
		{"http://h/p?utm_source=x", "http://h/p", ""},
		{"http://h//a//b/", "http://h/a/b/", ""},
		{"http://h/%7Euser/a%2Fb", "http://h/~user/a%2Fb", ""},
		{"http://[::1]:80/x", "http://[::1]/x", ""},
		{"  http://h/x  ", "http://h/x", ""},
		{"ftp://h/x", "", kgagent.EINVALID},
		{"/relative", "", kgagent.EINVALID},
		{"http://user:pw@h/x", "", kgagent.EINVALID},
		{"http://h/%zz", "", kgagent.EINVALID},
		{"", "", kgagent.EINVALID},
		{"http://h/" + strings.Repeat("a", 3000), "", kgagent.EINVALID},
	}
	for _, tt := range tests {
		got, err := NormalizeURL(tt.in)
		if got != tt.want || kgagent.ErrorCode(err) != tt.code {
			t.Errorf("NormalizeURL(%q) = %q, %v; want %q, %q", tt.in, got, err, tt.want, tt.code)
		}
	}
}

func TestScope(t *testing.T) {
	s, seeds, bad, err := NewScope(
		[]string{"http://h/docs/*", "http://h:80/one.html", "https://other/api/v2*", "http://x/a*b", "nope"},
		[]string{"*/private/*", "*.pdf", "http://h/docs/old?"},
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(seeds) != 3 || len(bad) != 2 || bad[0].Code != kgagent.EINVALID {
		t.Fatalf("seeds %+v bad %+v", seeds, bad)
	}
	tests := []struct {
		url              string
		contains, follow bool
	}{
		{"http://h/docs/", true, true},
		{"http://h/docs/a/b.html", true, true},
		{"http://h/docs/private/x", false, false},
		{"http://h/docs/manual.pdf", false, false},
		{"http://h/docs/old1", false, false},
		{"http://h/docs/old12", true, true},
		{"http://h/one.html", true, false},
		{"http://h/two.html", false, false},
		{"https://other/api/v2.1/x", true, true},
		{"https://other/api/v1/x", false, false},
		{"http://h/doc", false, false},
	}
	for _, tt := range tests {
		if got := s.Contains(tt.url); got != tt.contains {
			t.Errorf("Contains(%s) = %v", tt.url, got)
		}
		if got := s.Follows(tt.url); got != tt.follow {
			t.Errorf("Follows(%s) = %v", tt.url, got)
		}
	}
	if !s.redirectAllowed("http://h/one.html", "http://h/one.html/") || s.redirectAllowed("http://h/one.html", "http://h/two.html") {
		t.Error("exact-page redirect rule")
	}
	if _, _, _, err := NewScope(nil, nil); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("empty scope: %v", err)
	}
}

func TestTrapReason(t *testing.T) {
	tests := []struct{ url, want string }{
		{"http://h/a/b/c", ""},
		{"http://h/x/x/x/", ""},
		{"http://h/x/x/x/x/", "path segment repeated"},
		{"http://h/" + strings.Repeat("s/", 40), "path too deep"},
		{"http://h/p?a=1&b=2&c=3&d=4&e=5&f=6&g=7&h=8&i=9&j=10", ""},
		{"http://h/p?a=1&b=2&c=3&d=4&e=5&f=6&g=7&h=8&i=9&j=10&k=11", "too many query parameters"},
	}
	for _, tt := range tests {
		if got := trapReason(tt.url); got != tt.want {
			t.Errorf("trapReason(%s) = %q, want %q", tt.url, got, tt.want)
		}
	}
}

func TestSitemapIndexAbsoluteAndGzip(t *testing.T) {
	var srvURL string
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "User-agent: kgagent\nDisallow: /docs/secret\n\nSitemap: %s/maps/index.xml\n", srvURL)
	})
	mux.HandleFunc("/maps/index.xml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>%s/maps/a.xml.gz</loc></sitemap><sitemap><loc>nested.xml</loc></sitemap></sitemapindex>`, srvURL)
	})
	mux.HandleFunc("/maps/a.xml.gz", func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		fmt.Fprintf(zw, `<urlset><url><loc>%s/docs/from-gz</loc></url><url><loc>%s/elsewhere</loc></url><url><loc>%s/docs/secret</loc></url></urlset>`, srvURL, srvURL, srvURL)
		zw.Close()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(buf.Bytes())
	})
	mux.HandleFunc("/maps/nested.xml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<urlset><url><loc>/docs/from-nested</loc></url><url><loc>not a url at all</loc></url></urlset>`)
	})
	mux.HandleFunc("/docs/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, htmlPage("Page "+r.URL.Path, "<p>text of "+r.URL.Path+"</p>"))
	})
	var h hits
	srv := httptest.NewServer(h.wrap(mux))
	defer srv.Close()
	srvURL = srv.URL
	got, _ := runCrawl(t, testConfig(), Spec{URLs: []string{srv.URL + "/docs/*"}}, CrawlOptions{})
	for _, p := range []string{"/docs/from-gz", "/docs/from-nested"} {
		if got.pages[srv.URL+p].Outcome != Fetched {
			t.Errorf("%s: %+v (have %v)", p, got.pages[srv.URL+p], got.order)
		}
	}
	if p := got.pages[srv.URL+"/docs/secret"]; p.Outcome != Excluded {
		t.Errorf("robots-disallowed page: %+v", p)
	}
	if h.get("/docs/secret") != 0 || h.get("/elsewhere") != 0 {
		t.Error("disallowed or out-of-scope page requested")
	}
}

func FuzzNormalizeURL(f *testing.F) {
	for _, s := range []string{"http://h/a/../b?z=1&a=2#f", "HTTPS://H:443//x/./y/", "http://[::1]:80/", "http://h/%2F%7e", "http://h/p?&&a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		n, err := NormalizeURL(in)
		if err != nil {
			if kgagent.ErrorCode(err) != kgagent.EINVALID {
				t.Fatalf("error code %v", err)
			}
			return
		}
		n2, err := NormalizeURL(n)
		if err != nil || n2 != n {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", in, n, n2, err)
		}
	})
}

func FuzzParseSitemap(f *testing.F) {
	f.Add([]byte(`<sitemapindex><sitemap><loc>a.xml</loc></sitemap></sitemapindex>`))
	f.Add([]byte(`<urlset><url><loc> http://h/x </loc></url><url><loc></loc></url></urlset>`))
	f.Add([]byte(`<urlset><url><loc>http://h/&amp;<!-- c --></loc>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_, locs := parseSitemap(body)
		for _, l := range locs {
			if l == "" || l != strings.TrimSpace(l) || len(l) > maxURLLength+4096 {
				t.Fatalf("bad loc %q", l)
			}
		}
	})
}

var normCacheCases = []string{
	"http://h.example/a/b.html#x", "http://h.example/a/b.html", "http://h.example/a/b.html#", "HTTP://H.example:80/a/./b#f",
	"http://h.example/a#%zz", "http://h.example/a#%41", "http://h.example/a #f", " http://h.example/a", "http://h.example/a#f ",
	"http://h.example/ü#x", "mailto:x@y#z", "http://h.example/a?b=1&a=2#f", "http://h.example/a%zz#f", "http://u@h.example/#f",
	"http://h.example/a#b#c", "#f", "", "http://h.example/" + strings.Repeat("a", maxURLLength-30) + "#" + strings.Repeat("f", 40),
}

// TestNormCache checks the memo against NormalizeURL, twice per URL so that
// the second answer comes from the cache.
func TestNormCache(t *testing.T) {
	var c normCache
	for range 2 {
		for _, raw := range normCacheCases {
			want, err := NormalizeURL(raw)
			if got, ok := c.normalize(raw); ok != (err == nil) || (ok && got != want) {
				t.Errorf("normalize(%q) = %q, %v; NormalizeURL: %q, %v", raw, got, ok, want, err)
			}
		}
	}
	if len(c.m) == 0 {
		t.Error("nothing was cached")
	}
}

func FuzzNormCache(f *testing.F) {
	for _, raw := range normCacheCases {
		f.Add(raw, "http://h.example/a#g")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		var c normCache
		for _, raw := range []string{a, b, a, b} {
			want, err := NormalizeURL(raw)
			if got, ok := c.normalize(raw); ok != (err == nil) || (ok && got != want) {
				t.Fatalf("normalize(%q) = %q, %v; NormalizeURL: %q, %v", raw, got, ok, want, err)
			}
		}
	})
}
