package crawler

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/knowledge"
)

// modalSite serves /docs/ (linking every page) and the pages named in its
// modes, each answering as its mode says: ok, 404, 410, 500, noindex (a
// page that asks not to be indexed), moved (a 301 to /docs/new). cancel,
// when set, is called on the first page request (a crawl canceled midway).
type modalSite struct {
	mu     sync.Mutex
	pages  []string
	modes  map[string]string
	cancel func()
}

func newModalSite(pages ...string) *modalSite {
	m := &modalSite{pages: pages, modes: map[string]string{}}
	for _, p := range pages {
		m.modes[p] = "ok"
	}
	m.modes["/docs/"] = "ok"
	return m
}

func (m *modalSite) set(modes map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p := range m.modes {
		m.modes[p] = "ok"
	}
	for p, md := range modes {
		m.modes[p] = md
	}
}

func (m *modalSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/robots.txt" {
		http.NotFound(w, r)
		return
	}
	m.mu.Lock()
	mode, ok := m.modes[r.URL.Path]
	cancel := m.cancel
	m.cancel = nil
	var links strings.Builder
	for _, p := range m.pages {
		fmt.Fprintf(&links, `<a href="%s">%s</a> `, p, p)
	}
	m.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if r.URL.Path == "/docs/new" {
		ok, mode = true, "ok"
	}
	switch {
	case !ok || mode == "404":
		http.NotFound(w, r)
		return
	case mode == "410":
		http.Error(w, "gone", http.StatusGone)
		return
	case mode == "500":
		http.Error(w, "down", http.StatusInternalServerError)
		return
	case mode == "moved":
		http.Redirect(w, r, "/docs/new", http.StatusMovedPermanently)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	head := ""
	if mode == "noindex" {
		head = `<meta name="robots" content="noindex">`
	}
	body := "<p>the page " + r.URL.Path + " says something of its own</p>"
	if r.URL.Path == "/docs/" {
		body += links.String()
	}
	fmt.Fprintf(w, "<!doctype html><html><head><title>%s</title>%s</head><body><main><h1>%s</h1>%s</main></body></html>", r.URL.Path, head, r.URL.Path, body)
}

// removalCase is one crawl outcome over a collection that a complete crawl
// of the spec docs/* filled with /docs/ and /docs/a../docs/e.
type removalCase struct {
	name     string
	modes    map[string]string // how pages answer on the crawl under test
	spec     func(base string) Spec
	refuse   bool // the crawler refuses loopback (the FORBIDDEN of a REST or MCP ingest)
	cancel   bool // the crawl is canceled on its first page request
	deadline bool // the crawl runs past its deadline
	twice    bool // run the spec under test once before (so it is a spec that crawled completely)
	removed  []string
	reason   string // in Report.KeptReason; "" means no pages kept
}

var removalPages = []string{"/docs/a", "/docs/b", "/docs/c", "/docs/d", "/docs/e"}

func fullSpec(base string) Spec { return Spec{Collection: "c", URLs: []string{base + "/docs/*"}} }

var removalCases = []removalCase{
	{name: "complete crawl of the same spec", modes: map[string]string{"/docs/c": "404", "/docs/d": "noindex", "/docs/e": "moved"},
		spec: fullSpec, removed: []string{"/docs/c", "/docs/d", "/docs/e"}},
	{name: "every page fails", modes: map[string]string{"/docs/": "500", "/docs/a": "500", "/docs/b": "500", "/docs/c": "500", "/docs/d": "500", "/docs/e": "500"},
		spec: fullSpec, reason: "6 pages failed"},
	{name: "every page refused (loopback)", refuse: true, modes: map[string]string{"/docs/c": "404", "/docs/d": "noindex"},
		spec: fullSpec, reason: "pages failed"},
	{name: "the issue's case: one refused URL", refuse: true,
		spec:   func(base string) Spec { return Spec{Collection: "c", URLs: []string{base + "/docs/a"}} },
		reason: "5 pages outside this spec's URLs"},
	{name: "partial failure", modes: map[string]string{"/docs/b": "500", "/docs/d": "noindex", "/docs/e": "moved"},
		spec: fullSpec, reason: "1 page failed"},
	{name: "404 and 410 go even when others fail", modes: map[string]string{"/docs/b": "500", "/docs/c": "404", "/docs/e": "410", "/docs/d": "noindex"},
		spec: fullSpec, removed: []string{"/docs/c", "/docs/e"}, reason: "1 page failed"},
	{name: "cut short by max_pages", modes: map[string]string{"/docs/d": "noindex"},
		spec: func(base string) Spec { s := fullSpec(base); s.MaxPages = 2; return s }, reason: "stopped early (max pages (2) reached)"},
	{name: "canceled", cancel: true, modes: map[string]string{"/docs/d": "noindex"},
		spec: fullSpec, reason: "canceled"},
	{name: "past its deadline", deadline: true, modes: map[string]string{"/docs/d": "noindex"},
		spec: fullSpec, reason: "canceled"},
	{name: "narrower spec", modes: map[string]string{"/docs/d": "noindex"},
		spec: func(base string) Spec {
			return Spec{Collection: "c", URLs: []string{base + "/docs/", base + "/docs/a"}}
		},
		reason: "4 pages outside this spec's URLs"},
	{name: "narrower spec, twice", twice: true, modes: map[string]string{"/docs/d": "noindex"},
		spec: func(base string) Spec {
			return Spec{Collection: "c", URLs: []string{base + "/docs/", base + "/docs/a"}}
		},
		reason: "4 pages outside this spec's URLs"},
	{name: "different spec (a new exclude)", modes: map[string]string{"/docs/d": "noindex"},
		spec:   func(base string) Spec { s := fullSpec(base); s.Exclude = []string{"*/e"}; return s },
		reason: "first complete crawl of this spec"},
	{name: "different spec, twice: now the same spec", twice: true, modes: map[string]string{"/docs/d": "noindex"},
		spec: func(base string) Spec { s := fullSpec(base); s.Exclude = []string{"*/e"}; return s }, removed: []string{"/docs/d", "/docs/e"}},
	{name: "different spec 404", modes: map[string]string{"/docs/c": "404", "/docs/d": "noindex"},
		spec:    func(base string) Spec { s := fullSpec(base); s.MaxDepth = 3; return s },
		removed: []string{"/docs/c"}, reason: "first complete crawl of this spec"},
}

// TestIngestRemovesOnlyWhatIsGone runs each crawl outcome over a collection
// a complete crawl filled, and checks exactly which pages it removed from
// the corpus, the graph and the page states, and that it says why it kept
// the rest.
func TestIngestRemovesOnlyWhatIsGone(t *testing.T) {
	for _, tc := range removalCases {
		t.Run(tc.name, func(t *testing.T) {
			site := newModalSite(removalPages...)
			srv := httptest.NewServer(site)
			defer srv.Close()
			idx, states := newFakeIndex(), knowledge.NewMemoryStates()
			cfg := testConfig()
			cfg.MaxRetries = -1
			in := NewIngester(IngesterConfig{Crawler: cfg, Knowledge: knowledge.NewWriter(idx, fakeGraph{idx}, states)})
			if rep, err := in.Run(context.Background(), fullSpec(srv.URL), nil); err != nil || rep.Counters.Indexed != 6 {
				t.Fatalf("first crawl: %+v %v", rep.Counters, err)
			}
			rep, err := runRemovalCase(t, srv.URL, site, in, states, idx, tc)
			got := removedPaths(srv.URL, idx, states)
			if strings.Join(got, " ") != strings.Join(tc.removed, " ") {
				t.Fatalf("removed %v, want %v (counters %+v, errors %v, kept reason %q, err %v)", got, tc.removed, rep.Counters, rep.Errors, rep.KeptReason, err)
			}
			if rep.Counters.Removed != int64(len(tc.removed)) {
				t.Errorf("counters.removed = %d, want %d", rep.Counters.Removed, len(tc.removed))
			}
			if tc.reason == "" {
				if rep.Counters.Kept != 0 || rep.KeptReason != "" {
					t.Errorf("kept %d (%q), want none", rep.Counters.Kept, rep.KeptReason)
				}
			} else if rep.Counters.Kept == 0 || !strings.Contains(rep.KeptReason, tc.reason) {
				t.Errorf("kept %d, reason %q; want some kept and a reason with %q", rep.Counters.Kept, rep.KeptReason, tc.reason)
			}
		})
	}
}

// runRemovalCase runs tc's crawl (twice when tc.twice) after the first one.
func runRemovalCase(t *testing.T, base string, site *modalSite, in *Ingester, states *knowledge.MemoryStates, idx *fakeIndex, tc removalCase) (Report, error) {
	t.Helper()
	site.set(tc.modes)
	if tc.refuse {
		cfg := testConfig()
		cfg.AllowPrivate, cfg.MaxRetries = false, -1
		in = NewIngester(IngesterConfig{Crawler: cfg, Knowledge: knowledge.NewWriter(idx, fakeGraph{idx}, states)})
	}
	spec := tc.spec(base)
	if tc.twice {
		if _, err := in.Run(context.Background(), spec, nil); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch {
	case tc.cancel:
		site.mu.Lock()
		site.cancel = cancel
		site.mu.Unlock()
	case tc.deadline:
		var c2 context.CancelFunc
		ctx, c2 = context.WithDeadline(ctx, time.Now().Add(-time.Second))
		defer c2()
	}
	return in.Run(ctx, spec, nil)
}

// removedPaths lists the site's pages (of /docs/ and removalPages) that
// are no longer in the corpus, and checks that the graph and the page
// states agree with the corpus.
func removedPaths(base string, idx *fakeIndex, states *knowledge.MemoryStates) []string {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	st, _ := states.ListPages(context.Background(), "c")
	inStates := map[string]bool{}
	for _, s := range st {
		inStates[s.URL] = true
	}
	var out []string
	for _, p := range append([]string{"/docs/"}, removalPages...) {
		_, doc := idx.docs["c|"+base+p]
		_, tr := idx.triples["c|"+base+p]
		if !doc || !tr || !inStates[base+p] {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// FuzzIngestRemovesOnlyWhatIsGone drives an ingestion over a collection a
// complete crawl filled with arbitrary page answers, spec variants, limits
// and cancellation, and checks the rule: a page that answered 404 or 410 is
// gone; any other removal needs a complete crawl with no failures of a spec
// that crawled completely before, of a page under that spec's URLs that
// the crawl did not confirm; nothing else is ever removed.
func FuzzIngestRemovesOnlyWhatIsGone(f *testing.F) {
	f.Add([]byte{0, 0, 1, 2, 3, 4}, uint8(0), uint8(0), false)
	f.Add([]byte{3, 3, 3, 3, 3, 3}, uint8(0), uint8(0), false)
	f.Add([]byte{0, 3, 1, 4, 5, 0}, uint8(1), uint8(0), false)
	f.Add([]byte{0, 0, 0, 4, 0, 0}, uint8(2), uint8(2), false)
	f.Add([]byte{0, 0, 4, 4, 0, 0}, uint8(3), uint8(0), true)
	f.Add([]byte{0, 1, 0, 4, 0, 5}, uint8(4), uint8(0), false)
	site := newModalSite(removalPages...)
	srv := httptest.NewServer(site)
	defer srv.Close()
	f.Fuzz(func(t *testing.T, answers []byte, variant, maxPages uint8, cancel bool) {
		checkRemovalRule(t, site, srv.URL, answers, variant, maxPages, cancel)
	})
}

// checkRemovalRule is one input of FuzzIngestRemovesOnlyWhatIsGone.
func checkRemovalRule(t *testing.T, site *modalSite, base string, answers []byte, variant, maxPages uint8, cancel bool) {
	modes := []string{"ok", "404", "410", "500", "noindex", "moved"}
	all := append([]string{"/docs/"}, removalPages...)
	srv := struct{ URL string }{base}
	{
		site.set(nil)
		idx, states := newFakeIndex(), knowledge.NewMemoryStates()
		cfg := testConfig()
		cfg.MaxRetries = -1
		in := NewIngester(IngesterConfig{Crawler: cfg, Knowledge: knowledge.NewWriter(idx, fakeGraph{idx}, states)})
		if rep, err := in.Run(context.Background(), fullSpec(srv.URL), nil); err != nil || rep.Counters.Indexed != 6 {
			t.Fatalf("first crawl: %+v %v", rep.Counters, err)
		}
		m := map[string]string{}
		for i, p := range all {
			if i < len(answers) {
				m[p] = modes[int(answers[i])%len(modes)]
			}
		}
		spec := fullSpec(srv.URL)
		sameSpec := true
		switch variant % 5 {
		case 1: // narrower: only /docs/ and /docs/a
			spec.URLs, sameSpec = []string{srv.URL + "/docs/", srv.URL + "/docs/a"}, false
		case 2:
			spec.Exclude, sameSpec = []string{"*/b"}, false
		case 3:
			spec.MaxDepth, sameSpec = 1, false
		case 4: // another host's spec into the same collection
			spec.URLs, sameSpec = []string{strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/docs/*"}, false
		}
		spec.MaxPages = int(maxPages % 8)
		tc := removalCase{modes: m, spec: func(string) Spec { return spec }, cancel: cancel}
		rep, err := runRemovalCase(t, srv.URL, site, in, states, idx, tc)
		removed := removedPaths(srv.URL, idx, states)
		scope, _, _, _ := NewScope(spec.URLs, spec.Exclude)
		complete := err == nil && !rep.Truncated && rep.Counters.Failed == 0
		for _, p := range removed {
			switch md := m[p]; {
			case md == "404" || md == "410":
			case !scope.Covers(srv.URL + p):
				t.Fatalf("removed %s outside the spec's URLs %v (modes %v)", p, spec.URLs, m)
			case !complete || !sameSpec:
				t.Fatalf("removed %s (%s) after a crawl that was not a complete crawl of the same spec: err %v, counters %+v, truncated %v, modes %v, spec %+v",
					p, md, err, rep.Counters, rep.Truncated, m, spec)
			case md == "ok" || md == "":
				if !slices.Contains(spec.Exclude, "*/"+p[len("/docs/"):]) {
					t.Fatalf("removed %s that answered 200 (modes %v, spec %+v)", p, m, spec)
				}
			}
		}
		if int64(len(removed)) != rep.Counters.Removed {
			t.Fatalf("removed %v but counters.removed = %d", removed, rep.Counters.Removed)
		}
		if rep.Counters.Kept > 0 && rep.KeptReason == "" {
			t.Fatalf("kept %d pages without a reason", rep.Counters.Kept)
		}
		if kgagent.ErrorCode(err) != "" && kgagent.ErrorCode(err) != kgagent.ECANCELED {
			t.Fatalf("run error %v", err)
		}
	}
}

// TestInterruptedRemovalIsRedone: a removal that stopped part way (the
// page's triples removed, its chunks not: the index was down) leaves a page
// state that matches no content, so when the page is back with the same
// content the next crawl writes it whole, instead of counting it unchanged
// with its triples gone (which it did while Remove kept the old state).
func TestInterruptedRemovalIsRedone(t *testing.T) {
	ctx := context.Background()
	s := newSite(map[string]string{
		"/docs/":  htmlPage("Home", `<p>home</p><a href="/docs/a">a</a>`),
		"/docs/a": htmlPage("A", "<p>alpha, a page that goes and comes back</p>"),
	})
	srv := httptest.NewServer(s)
	defer srv.Close()
	idx, states := newFakeIndex(), knowledge.NewMemoryStates()
	in := NewIngester(IngesterConfig{Crawler: testConfig(), Knowledge: knowledge.NewWriter(idx, fakeGraph{idx}, states)})
	spec := Spec{Collection: "c", URLs: []string{srv.URL + "/docs/*"}}
	if rep, err := in.Run(ctx, spec, nil); err != nil || rep.Counters.Indexed != 2 {
		t.Fatalf("first crawl: %+v %v", rep.Counters, err)
	}
	a := srv.URL + "/docs/a"
	s.mu.Lock()
	content := s.pages["/docs/a"]
	s.mu.Unlock()
	s.del("/docs/a")
	idx.delErr = kgagent.Errorf(kgagent.EUNAVAILABLE, "index down (injected)")
	rep, err := in.Run(ctx, spec, nil)
	if err != nil || rep.Counters.Failed != 1 || rep.Counters.Removed != 0 {
		t.Fatalf("crawl with the removal failing: %+v %v", rep.Counters, err)
	}
	idx.mu.Lock()
	_, triples := idx.triples["c|"+a]
	idx.mu.Unlock()
	if triples {
		t.Fatal("the failed removal kept the triples; the test needs them gone")
	}
	idx.delErr = nil
	s.set("/docs/a", content)
	rep, err = in.Run(ctx, spec, nil)
	if err != nil || rep.Counters.Indexed != 1 {
		t.Fatalf("the page is back: %+v %v; want it indexed again", rep.Counters, err)
	}
	idx.mu.Lock()
	_, triples = idx.triples["c|"+a]
	_, doc := idx.docs["c|"+a]
	idx.mu.Unlock()
	if !triples || !doc {
		t.Errorf("the page is back but the stores hold triples %v, document %v", triples, doc)
	}
}
