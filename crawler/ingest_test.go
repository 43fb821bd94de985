package crawler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/knowledge"
)

// site is a mutable web site that answers conditional requests.
type site struct {
	mu        sync.Mutex
	pages     map[string]string // path -> HTML
	mod       map[string]time.Time
	noETag    map[string]bool
	requests  int
	notMod    int
	condition int
}

func newSite(pages map[string]string) *site {
	s := &site{pages: map[string]string{}, mod: map[string]time.Time{}, noETag: map[string]bool{}}
	for p, c := range pages {
		s.set(p, c)
	}
	return s
}

func (s *site) set(p, content string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages[p] = content
	s.mod[p] = time.Now().Add(-time.Hour).Add(time.Duration(len(s.mod)) * time.Second).Truncate(time.Second)
}

func (s *site) del(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pages, p)
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	content, ok := s.pages[r.URL.Path]
	mod := s.mod[r.URL.Path]
	noETag := s.noETag[r.URL.Path]
	s.requests++
	if r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Modified-Since") != "" {
		s.condition++
	}
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if noETag {
		fmt.Fprint(w, content) // no validators at all
		return
	}
	sum := sha256.Sum256([]byte(content))
	w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:8])+`"`)
	rec := &statusRecorder{ResponseWriter: w}
	http.ServeContent(rec, r, r.URL.Path, mod, strings.NewReader(content))
	if rec.status == http.StatusNotModified {
		s.mu.Lock()
		s.notMod++
		s.mu.Unlock()
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// fakeIndex is a knowledge.Documents and (through fakeGraph) a
// knowledge.Triples that records what it holds.
type fakeIndex struct {
	mu       sync.Mutex
	docs     map[string]kgagent.Document // collection|url
	triples  map[string]int
	indexed  []string
	failURL  string
	graphErr error
	delErr   error // DeleteDocument fails with it
}

func newFakeIndex() *fakeIndex {
	return &fakeIndex{docs: map[string]kgagent.Document{}, triples: map[string]int{}}
}

func (f *fakeIndex) IndexDocument(_ context.Context, doc kgagent.Document) ([]kgagent.Chunk, error) {
	if doc.URL == f.failURL {
		return nil, kgagent.Errorf(kgagent.EUNAVAILABLE, "index is down")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.docs[doc.Collection+"|"+doc.URL] = doc
	f.indexed = append(f.indexed, doc.URL)
	chunks := make([]kgagent.Chunk, len(doc.Sections))
	for i, s := range doc.Sections {
		chunks[i] = kgagent.Chunk{Collection: doc.Collection, DocURL: doc.URL, Anchor: s.Anchor, Ordinal: i}
	}
	return chunks, nil
}

func (f *fakeIndex) DeleteDocument(_ context.Context, collection, url string) error {
	if f.delErr != nil {
		return f.delErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.docs, collection+"|"+url)
	return nil
}

func (f *fakeIndex) urls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for k := range f.docs {
		out = append(out, k[strings.IndexByte(k, '|')+1:])
	}
	sort.Strings(out)
	return out
}

func (f *fakeIndex) takeIndexed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.indexed
	f.indexed = nil
	sort.Strings(out)
	return out
}

type fakeGraph struct{ f *fakeIndex }

func (g fakeGraph) IndexDocument(_ context.Context, doc kgagent.Document, chunks []kgagent.Chunk) (int, error) {
	if g.f.graphErr != nil {
		return 0, g.f.graphErr
	}
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	g.f.triples[doc.Collection+"|"+doc.URL] = 2 * len(chunks)
	return 2 * len(chunks), nil
}

func (g fakeGraph) DeleteDocument(_ context.Context, collection, url string) error {
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	delete(g.f.triples, collection+"|"+url)
	return nil
}

func TestIngestIncremental(t *testing.T) {
	link := `<a href="/docs/a">a</a><a href="/docs/b">b</a><a href="/docs/c">c</a><a href="/docs/d">d</a><a href="/docs/e">e</a>`
	s := newSite(map[string]string{
		"/docs/":  htmlPage("Home", "<p>home</p>"+link),
		"/docs/a": htmlPage("A", "<p>alpha</p>"),
		"/docs/b": htmlPage("B", "<p>beta</p>"),
		"/docs/c": htmlPage("C", "<p>gamma</p>"),
		"/docs/d": htmlPage("D", "<p>delta</p>"),
		"/docs/e": htmlPage("E", "<p>epsilon, served without validators</p>"),
	})
	s.noETag["/docs/e"] = true
	srv := httptest.NewServer(s)
	defer srv.Close()
	idx := newFakeIndex()
	states := knowledge.NewMemoryStates()
	in := NewIngester(IngesterConfig{Crawler: testConfig(), Knowledge: knowledge.NewWriter(idx, fakeGraph{idx}, states)})
	spec := Spec{Collection: "docs", URLs: []string{srv.URL + "/docs/*"}}
	ctx := context.Background()

	var progressCalls int
	rep, err := in.Run(ctx, spec, func(Counters) { progressCalls++ })
	if err != nil {
		t.Fatal(err)
	}
	sum := rep.Summary()
	if sum.Pages != 6 || rep.Counters.Indexed != 6 || sum.Failed != 0 || sum.Chunks != 6 || sum.Triples != 12 || progressCalls < 6 {
		t.Fatalf("first run: %+v %+v progress %d errors %v", sum, rep.Counters, progressCalls, rep.Errors)
	}
	if len(idx.takeIndexed()) != 6 {
		t.Fatal("not all pages indexed")
	}

	// Second run, nothing changed: conditional requests, nothing re-indexed.
	s.mu.Lock()
	s.condition, s.notMod = 0, 0
	s.mu.Unlock()
	rep, err = in.Run(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := idx.takeIndexed(); len(got) != 0 {
		t.Errorf("unchanged run re-indexed %v", got)
	}
	if rep.Counters.Unchanged != 6 || rep.Summary().Pages != 6 || rep.Counters.Indexed != 0 {
		t.Errorf("unchanged run: %+v", rep.Counters)
	}
	s.mu.Lock()
	if s.condition < 5 || s.notMod != 5 {
		t.Errorf("conditional requests %d, 304s %d; want >= 5 and 5", s.condition, s.notMod)
	}
	s.mu.Unlock()

	// Third run: b changed, c deleted (404), d excluded now, a new page f.
	// c answered 404 and goes at once; d is only excluded by a spec that has
	// never crawled the collection completely, so it is kept and said so.
	s.set("/docs/b", htmlPage("B", "<p>beta, second edition</p>"))
	s.del("/docs/c")
	s.set("/docs/", htmlPage("Home", "<p>home v2</p>"+link+`<a href="/docs/f">f</a>`))
	s.set("/docs/f", htmlPage("F", "<p>phi</p>"))
	spec.Exclude = []string{"*/d"}
	rep, err = in.Run(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(idx.takeIndexed(), " "), strings.Join([]string{srv.URL + "/docs/", srv.URL + "/docs/b", srv.URL + "/docs/f"}, " "); got != want {
		t.Errorf("re-indexed %s, want %s", got, want)
	}
	want := []string{srv.URL + "/docs/", srv.URL + "/docs/a", srv.URL + "/docs/b", srv.URL + "/docs/d", srv.URL + "/docs/e", srv.URL + "/docs/f"}
	if got := idx.urls(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("index holds %v, want %v", got, want)
	}
	idx.mu.Lock()
	if len(idx.triples) != 6 || idx.triples["docs|"+srv.URL+"/docs/c"] != 0 {
		t.Errorf("graph holds %v", idx.triples)
	}
	idx.mu.Unlock()
	if rep.Counters.Removed != 1 || rep.Counters.Kept != 1 || rep.Counters.Indexed != 3 || rep.Counters.Unchanged != 2 || rep.Counters.Failed != 0 {
		t.Errorf("third run counters %+v errors %v", rep.Counters, rep.Errors)
	}
	if !strings.Contains(rep.KeptReason, "first complete crawl of this spec") {
		t.Errorf("kept reason %q", rep.KeptReason)
	}
	// Fourth run, the same spec again and complete: d is removed now.
	rep, err = in.Run(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{srv.URL + "/docs/", srv.URL + "/docs/a", srv.URL + "/docs/b", srv.URL + "/docs/e", srv.URL + "/docs/f"}
	if got := idx.urls(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("index holds %v, want %v", got, want)
	}
	if rep.Counters.Removed != 1 || rep.Counters.Kept != 0 || rep.KeptReason != "" {
		t.Errorf("fourth run counters %+v kept reason %q", rep.Counters, rep.KeptReason)
	}
	st, _ := states.ListPages(ctx, "docs")
	if len(st) != 5 {
		t.Errorf("state holds %d pages", len(st))
	}
}

func TestIngestIndexFailureKeepsState(t *testing.T) {
	s := newSite(map[string]string{
		"/":  htmlPage("Home", `<p>home</p><a href="/x">x</a>`),
		"/x": htmlPage("X", "<p>x</p>"),
	})
	srv := httptest.NewServer(s)
	defer srv.Close()
	idx := newFakeIndex()
	idx.failURL = srv.URL + "/x"
	states := knowledge.NewMemoryStates()
	in := NewIngester(IngesterConfig{Crawler: testConfig(), Knowledge: knowledge.NewWriter(idx, fakeGraph{idx}, states)})
	spec := Spec{Collection: "c", URLs: []string{srv.URL + "/*"}}
	rep, err := in.Run(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Counters.Failed != 1 || len(rep.Errors) != 1 || rep.Errors[0].URL != srv.URL+"/x" || rep.Errors[0].Code != kgagent.EUNAVAILABLE {
		t.Fatalf("report %+v", rep)
	}
	st, _ := states.ListPages(context.Background(), "c")
	if len(st) != 1 {
		t.Fatalf("state of a failed page was saved: %+v", st)
	}
	// The next run retries the failed page (no state, so no conditional request).
	idx.failURL = ""
	rep, err = in.Run(context.Background(), spec, nil)
	if err != nil || rep.Counters.Indexed != 1 || rep.Counters.Unchanged != 1 {
		t.Fatalf("retry run: %+v %v", rep.Counters, err)
	}

	// A graph failure after the corpus indexed the page also leaves no state.
	idx.graphErr = errors.New("boom")
	s.set("/x", htmlPage("X", "<p>x changed</p>"))
	rep, _ = in.Run(context.Background(), spec, nil)
	if rep.Counters.Failed != 1 || rep.Errors[0].Code != kgagent.EINTERNAL {
		t.Fatalf("graph failure: %+v", rep)
	}
	st, _ = states.ListPages(context.Background(), "c")
	for _, p := range st {
		if p.URL == srv.URL+"/x" && p.ContentHash == "" {
			t.Error("empty hash saved")
		}
	}
}

func TestIngestDefaultsAndBadSpec(t *testing.T) {
	in := NewIngester(IngesterConfig{Crawler: testConfig()})
	if _, err := in.Run(context.Background(), Spec{}, nil); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("empty spec: %v", err)
	}
	if _, err := in.Run(context.Background(), Spec{URLs: []string{"http://h/*"}, Exclude: []string{""}}, nil); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("bad exclude: %v", err)
	}
	// Only malformed URLs: the run goes on, reports them, and deletes nothing.
	states := knowledge.NewMemoryStates()
	_ = states.PutPage(context.Background(), knowledge.PageState{Collection: kgagent.DefaultCollection, URL: "http://h/kept", ContentHash: "x"})
	in = NewIngester(IngesterConfig{Crawler: testConfig(), Knowledge: knowledge.NewWriter(nil, nil, states)})
	rep, err := in.Run(context.Background(), Spec{URLs: []string{"http://h/a*b*", "::"}}, nil)
	if err != nil || rep.Counters.Failed != 2 || len(rep.Errors) != 2 {
		t.Fatalf("malformed URLs: %+v %v", rep, err)
	}
	// `ingest --json` prints the Summary: it names each failed page with
	// its code and reason, not only the count.
	raw, err := json.Marshal(rep.Summary())
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Failed int64 `json:"failed"`
		Errors []struct{ URL, Code, Reason string }
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Failed != 2 || len(sum.Errors) != 2 {
		t.Fatalf("summary %s: want the 2 failed pages listed", raw)
	}
	for _, e := range sum.Errors {
		if e.URL == "" || e.Code != kgagent.EINVALID || e.Reason == "" {
			t.Errorf("summary error %+v: want url, code INVALID and a reason", e)
		}
	}
	if st, _ := states.ListPages(context.Background(), kgagent.DefaultCollection); len(st) != 1 {
		t.Errorf("state lost: %+v", st)
	}
}

func TestIngestSiteSummary(t *testing.T) {
	srv := siteServer(t)
	in := NewIngester(IngesterConfig{Crawler: testConfig()})
	rep, err := in.Run(context.Background(), Spec{Collection: "lumen", URLs: []string{srv.URL + "/*"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := rep.Summary()
	if sum.Pages < 30 || sum.Failed != 0 || rep.Counters.Skipped < 2 {
		t.Errorf("summary %+v counters %+v skips %v", sum, rep.Counters, rep.Skips)
	}
	rep2, err := in.Run(context.Background(), Spec{Collection: "lumen", URLs: []string{srv.URL + "/*"}}, nil)
	if err != nil || rep2.Counters.Unchanged != sum.Pages || rep2.Counters.Indexed != 0 {
		t.Errorf("second run %+v %v", rep2.Counters, err)
	}

	if sum.Truncated || sum.Reason != "" {
		t.Errorf("whole site: summary says truncated: %+v", sum)
	}
	// `ingest --json` says when the crawl stopped early, and why, even
	// when it kept nothing it could have removed.
	rep3, err := NewIngester(IngesterConfig{Crawler: testConfig()}).Run(context.Background(), Spec{URLs: []string{srv.URL + "/*"}, MaxPages: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(rep3.Summary())
	if err != nil {
		t.Fatal(err)
	}
	var trunc struct {
		Pages     int64  `json:"pages"`
		Truncated bool   `json:"truncated"`
		Reason    string `json:"reason"`
	}
	if err := json.Unmarshal(raw, &trunc); err != nil {
		t.Fatal(err)
	}
	if trunc.Pages > 3 || !trunc.Truncated || !strings.HasPrefix(trunc.Reason, "max pages (3)") {
		t.Errorf("max pages 3: summary %s", raw)
	}
}

func TestIngestRobotsOutageKeepsPages(t *testing.T) {
	s := newSite(map[string]string{
		"/":  htmlPage("Home", `<p>home</p><a href="/x">x</a>`),
		"/x": htmlPage("X", "<p>x</p>"),
	})
	var robotsStatus atomic.Int32
	robotsStatus.Store(http.StatusNotFound)
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(robotsStatus.Load()))
	})
	mux.Handle("/", s)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	idx := newFakeIndex()
	in := NewIngester(IngesterConfig{Crawler: testConfig(), Knowledge: knowledge.NewWriter(idx, fakeGraph{idx}, nil)})
	spec := Spec{Collection: "c", URLs: []string{srv.URL + "/*"}}
	if rep, err := in.Run(context.Background(), spec, nil); err != nil || rep.Counters.Indexed != 2 {
		t.Fatalf("first run: %+v %v", rep.Counters, err)
	}
	robotsStatus.Store(http.StatusServiceUnavailable)
	rep, err := in.Run(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Counters.Removed != 0 || rep.Counters.Failed != 2 || len(idx.urls()) != 2 {
		t.Fatalf("robots outage: %+v, index %v", rep.Counters, idx.urls())
	}
	if e := rep.Errors[0]; e.Code != kgagent.EUNAVAILABLE || !strings.Contains(e.Reason, "robots.txt unavailable (HTTP 503)") {
		t.Errorf("error %+v", e)
	}
	// Robots now forbids /x for real: it is removed.
	robotsStatus.Store(http.StatusOK)
	mux2 := http.NewServeMux()
	mux2.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "User-agent: *\nDisallow: /x\n") })
	mux2.Handle("/", s)
	srv.Config.Handler = mux2
	rep, err = in.Run(context.Background(), spec, nil)
	if err != nil || rep.Counters.Removed != 1 || strings.Join(idx.urls(), " ") != srv.URL+"/" {
		t.Fatalf("robots disallow: %+v %v index %v", rep.Counters, err, idx.urls())
	}
}

func TestCrawlFiftyMegabytePage(t *testing.T) {
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/big" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		chunk := []byte(strings.Repeat("<p>lorem ipsum dolor sit amet</p>\n", 1000))
		for sent.Load() < 50<<20 {
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	cfg := testConfig() // default MaxBodyBytes: 10 MiB
	got, _ := runCrawl(t, cfg, Spec{URLs: []string{srv.URL + "/big"}}, CrawlOptions{})
	p := got.pages[srv.URL+"/big"]
	if p.Outcome != Failed || p.Err.Code != kgagent.ETOOLARGE {
		t.Fatalf("50 MB page: %+v %+v", p, p.Err)
	}
	if n := sent.Load(); n >= 50<<20 {
		t.Errorf("the crawler read the whole 50 MB (%d bytes sent)", n)
	}
}

// slowIndex counts concurrent IndexDocument calls.
type slowIndex struct {
	fakeIndex
	in, peak atomic.Int32
}

func (s *slowIndex) IndexDocument(ctx context.Context, doc kgagent.Document) ([]kgagent.Chunk, error) {
	n := s.in.Add(1)
	defer s.in.Add(-1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	time.Sleep(5 * time.Millisecond)
	return nil, nil
}

func TestIngestIndexConcurrency(t *testing.T) {
	srv := siteServer(t)
	for _, limit := range []int{1, 2} {
		idx := &slowIndex{}
		in := NewIngester(IngesterConfig{Crawler: testConfig(), Knowledge: knowledge.NewWriter(idx, nil, nil), IndexConcurrency: limit})
		rep, err := in.Run(context.Background(), Spec{URLs: []string{srv.URL + "/*"}}, nil)
		if err != nil || rep.Counters.Indexed < 30 {
			t.Fatalf("run: %+v %v", rep.Counters, err)
		}
		if p := idx.peak.Load(); p > int32(limit) {
			t.Errorf("limit %d: %d concurrent IndexDocument calls", limit, p)
		}
	}
}

func TestIngestMovedPage(t *testing.T) {
	s := newSite(map[string]string{
		"/":    htmlPage("Home", `<p>home</p><a href="/old">old</a>`),
		"/old": htmlPage("Old", "<p>the page</p>"),
	})
	moved := false
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		m := moved
		mu.Unlock()
		if m && r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusMovedPermanently)
			return
		}
		s.ServeHTTP(w, r)
	}))
	defer srv.Close()
	idx := newFakeIndex()
	in := NewIngester(IngesterConfig{Crawler: testConfig(), Knowledge: knowledge.NewWriter(idx, fakeGraph{idx}, nil)})
	spec := Spec{Collection: "c", URLs: []string{srv.URL + "/*"}}
	if _, err := in.Run(context.Background(), spec, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	moved = true
	mu.Unlock()
	s.set("/new", htmlPage("New", "<p>the page, moved</p>"))
	rep, err := in.Run(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(idx.urls(), " "), srv.URL+"/ "+srv.URL+"/new"; got != want {
		t.Errorf("index holds %s, want %s (counters %+v)", got, want, rep.Counters)
	}
	if rep.Counters.Removed != 1 {
		t.Errorf("removed %d", rep.Counters.Removed)
	}
}

// TestIngestForget: a site that moved leaves no page of its old address in
// the corpus, the graph or the page state; other sites' pages stay.
func TestIngestForget(t *testing.T) {
	pages := map[string]string{
		"/":  htmlPage("Home", `<p>home</p><a href="/x">x</a>`),
		"/x": htmlPage("X", "<p>x</p>"),
	}
	old, other := httptest.NewServer(newSite(pages)), httptest.NewServer(newSite(pages))
	defer old.Close()
	defer other.Close()
	idx := newFakeIndex()
	states := knowledge.NewMemoryStates()
	in := NewIngester(IngesterConfig{Crawler: testConfig(), Knowledge: knowledge.NewWriter(idx, fakeGraph{idx}, states)})
	ctx := context.Background()
	for _, u := range []string{old.URL, other.URL} {
		if _, err := in.Run(ctx, Spec{Collection: "docs", URLs: []string{u + "/*"}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := in.Forget(ctx, "docs", ""); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("empty prefix: %v, want INVALID_ARGUMENT", err)
	}
	n, err := in.Forget(ctx, "docs", old.URL+"/")
	if err != nil || n != 2 {
		t.Fatalf("Forget: %d, %v; want 2 pages", n, err)
	}
	want := other.URL + "/ " + other.URL + "/x"
	if got := strings.Join(idx.urls(), " "); got != want {
		t.Errorf("index holds %s, want %s", got, want)
	}
	idx.mu.Lock()
	if len(idx.triples) != 2 || idx.triples["docs|"+old.URL+"/x"] != 0 {
		t.Errorf("graph holds %v", idx.triples)
	}
	idx.mu.Unlock()
	st, _ := states.ListPages(ctx, "docs")
	if len(st) != 2 || !strings.HasPrefix(st[0].URL, other.URL) || !strings.HasPrefix(st[1].URL, other.URL) {
		t.Errorf("page state holds %v", st)
	}
	if n, err := in.Forget(ctx, "docs", old.URL+"/"); err != nil || n != 0 {
		t.Errorf("second Forget: %d, %v; want 0", n, err)
	}
}

// TestIngestKeepsNoWrittenStates: a run holds the page states it started
// with, not one for every page it writes (with each page's links, they
// grew a 100,000-page ingest's heap by ~100 MB).
func TestIngestKeepsNoWrittenStates(t *testing.T) {
	srv := siteServer(t)
	var held []int
	runWritten = func(r *run) {
		var links int
		for _, st := range r.known {
			links += len(st.Links)
		}
		held = append(held, len(r.known), links)
	}
	defer func() { runWritten = nil }()
	in := NewIngester(IngesterConfig{Crawler: testConfig()})
	rep, err := in.Run(context.Background(), Spec{URLs: []string{srv.URL + "/*"}}, nil)
	if err != nil || rep.Counters.Indexed < 30 {
		t.Fatalf("first run %+v %v", rep.Counters, err)
	}
	if held[0] != 0 || held[1] != 0 {
		t.Errorf("first run: holds %d page states with %d links after writing %d pages, want none", held[0], held[1], rep.Counters.Indexed)
	}
	// A second run starts from the states the first wrote, and they still
	// answer for the pages it re-checks.
	rep2, err := in.Run(context.Background(), Spec{URLs: []string{srv.URL + "/*"}}, nil)
	if err != nil || rep2.Counters.Unchanged != rep.Counters.Indexed || rep2.Counters.Indexed != 0 {
		t.Errorf("second run %+v %v", rep2.Counters, err)
	}
	if held[2] != int(rep.Counters.Indexed) {
		t.Errorf("second run: holds %d page states, want the %d it started with", held[2], rep.Counters.Indexed)
	}
}
