package crawler

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/knowledge"
)

// heavyPage is a page whose parsed tree is ~20 times its bytes (a short
// element per word), of about size bytes.
func heavyPage(i, size int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html><html><head><title>Heavy %d</title></head><body><main><h1>Heavy page %d</h1>", i, i)
	for k := 0; b.Len() < size; k++ {
		fmt.Fprintf(&b, "<div><p><b>w%d</b> <i>x</i> <a href=\"#k%d\">y</a></p></div>\n", k, k%50)
	}
	b.WriteString("</main></body></html>")
	return b.String()
}

// heavySite serves an index linking n heavy pages of size bytes and a few
// small ones.
func heavySite(t *testing.T, n, size int) (*httptest.Server, map[string]string) {
	pages := map[string]string{}
	var index strings.Builder
	index.WriteString("<!DOCTYPE html><html><head><title>Index</title></head><body><main><h1>Index</h1>")
	for i := range n {
		pages[fmt.Sprintf("/heavy%d.html", i)] = heavyPage(i, size)
		fmt.Fprintf(&index, "<p><a href=\"heavy%d.html\">heavy %d</a> <a href=\"small%d.html\">small %d</a></p>", i, i, i, i)
		pages[fmt.Sprintf("/small%d.html", i)] = fmt.Sprintf("<!DOCTYPE html><html><head><title>Small %d</title></head><body><main><h1>Small %d</h1><p>A small page.</p></main></body></html>", i, i)
	}
	index.WriteString("</main></body></html>")
	pages["/"] = index.String()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(p))
	}))
	t.Cleanup(srv.Close)
	return srv, pages
}

// peakLiveHeap samples the live heap (as of the last collection) until
// stop is closed and returns the most seen.
func peakLiveHeap(stop <-chan struct{}) func() uint64 {
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	}()
	return func() uint64 { <-done; return peak.Load() }
}

// TestInFlightBytes: heavy pages crawled by eight workers at once, with a
// slow OnPage (a writer), hold at most Config.InFlightBytes past their
// fetch, and the live heap stays within what one heavy page at a time
// costs; without the bound the pages are held together. The Documents
// are Extract's.
func TestInFlightBytes(t *testing.T) {
	const heavy, size = 6, 200 << 10
	srv, pages := heavySite(t, heavy, size)
	// one heavy page's extraction: the live heap it adds
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	fp := parseFastParser([]byte(pages["/heavy0.html"]), true)
	runtime.GC()
	runtime.ReadMemStats(&m1)
	fp.release()
	onePage := int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
	if onePage < 10*size {
		t.Fatalf("a heavy page's tree is %d bytes, want over %d", onePage, 10*size)
	}
	crawl := func(limit int64) (peakHeld, peakHeap int64) {
		cfg := testConfig()
		cfg.Parallelism = 8
		cfg.InFlightBytes = limit
		defer debug.SetGCPercent(debug.SetGCPercent(10))
		runtime.GC()
		base := metrics.Sample{Name: "/gc/heap/live:bytes"}
		ms := []metrics.Sample{base}
		metrics.Read(ms)
		stop := make(chan struct{})
		peak := peakLiveHeap(stop)
		var mu sync.Mutex
		docs := map[string]kgagent.Document{}
		c := New(cfg)
		var cr *crawl
		crawlStarted = func(x *crawl) { cr = x }
		defer func() { crawlStarted = nil }()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		scope, seeds, bad, err := NewScope([]string{srv.URL + "/*"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.crawlParsed(ctx, Spec{URLs: []string{srv.URL + "/*"}}, scope, seeds, bad, CrawlOptions{
			OnPage: func(p Page) {
				if p.Outcome != Fetched {
					t.Errorf("%s: %s %+v", p.URL, p.Outcome, p.Err)
					return
				}
				time.Sleep(20 * time.Millisecond) // a writer
				mu.Lock()
				docs[p.URL] = p.Doc
				mu.Unlock()
			},
		})
		close(stop)
		if err != nil {
			t.Fatal(err)
		}
		for u, d := range docs {
			want, err := Extract(u, "text/html; charset=utf-8", []byte(pages[strings.TrimPrefix(u, srv.URL)]))
			if err != nil {
				t.Fatal(err)
			}
			d.ETag, d.LastModified, d.FetchedAt, d.Collection = want.ETag, want.LastModified, want.FetchedAt, want.Collection
			if !reflect.DeepEqual(d, want) {
				t.Errorf("%s: the crawl's Document is not Extract's", u)
			}
		}
		if len(docs) != 2*heavy+1 { // the index, the heavy and the small pages
			t.Errorf("%d pages fetched, want %d", len(docs), 2*heavy+1)
		}
		if u := cr.budget.used.Load(); u != 0 {
			t.Errorf("%d bytes still held after the crawl", u)
		}
		return cr.budget.peak.Load(), int64(peak()) - int64(ms[0].Value.Uint64())
	}
	held, heap := crawl(size + size/2)
	heldOff, heapOff := crawl(1 << 30)
	t.Logf("one heavy page's tree %d bytes; bound %d: held at most %d, live heap +%d; no bound: held %d, live heap +%d", onePage, size+size/2, held, heap, heldOff, heapOff)
	if held > size+size/2 {
		t.Errorf("held %d bytes at once, over the bound of %d", held, size+size/2)
	}
	if heldOff < 3*size {
		t.Errorf("without the bound the crawl held at most %d bytes at once: the pages did not overlap, the test shows nothing", heldOff)
	}
	if !raceOn && heap > 2*onePage+onePage/2 {
		t.Errorf("the live heap grew by %d bytes during the bounded crawl, over 2.5 heavy pages' trees (%d)", heap, 2*onePage+onePage/2)
	}
}

// TestIngesterReleasesHolds: an ingestion's pages hold the crawl's bytes
// until written, and all are given back by the end.
func TestIngesterReleasesHolds(t *testing.T) {
	srv, _ := heavySite(t, 4, 64<<10)
	var cr *crawl
	cfg := testConfig()
	cfg.InFlightBytes = 100 << 10
	in := NewIngester(IngesterConfig{Crawler: cfg, Knowledge: knowledge.NewWriter(nil, nil, nil)})
	crawlStarted = func(x *crawl) { cr = x }
	defer func() { crawlStarted = nil }()
	rep, err := in.Run(t.Context(), Spec{URLs: []string{srv.URL + "/*"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Counters.Indexed != 9 {
		t.Fatalf("indexed %d pages, want 9: %+v", rep.Counters.Indexed, rep)
	}
	if u, p := cr.budget.used.Load(), cr.budget.peak.Load(); u != 0 || p > 100<<10 || p == 0 {
		t.Errorf("after the run %d bytes held, at most %d at once (bound %d)", u, p, 100<<10)
	}
}
