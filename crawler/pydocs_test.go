package crawler

import (
	"context"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
)

// pyDocsDir is the Python HTML docs directory of the benchmark:
// $KGAGENT_PYDOCS_DIR, else Debian's python3.11-doc location.
func pyDocsDir(tb testing.TB, require bool) string {
	dir := os.Getenv("KGAGENT_PYDOCS_DIR")
	if dir == "" && !require {
		dir = "/usr/share/doc/python3.11/html"
	}
	if dir == "" {
		tb.Skip("set KGAGENT_PYDOCS_DIR to the Python HTML docs (e.g. /usr/share/doc/python3.11/html) to run")
	}
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("no Python docs at %s", dir)
	}
	return dir
}

// cpuTime is the user+system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSS is the process's peak resident set size in bytes (Linux VmHWM).
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestPyDocsCrawl crawls and extracts the Python docs served on loopback
// (no-op indexers), twice: the second run must be answered by conditional
// requests. Run: KGAGENT_PYDOCS_DIR=/usr/share/doc/python3.11/html go test
// -run TestPyDocsCrawl -v ./crawler/
func TestPyDocsCrawl(t *testing.T) {
	dir := pyDocsDir(t, true)
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	in := NewIngester(IngesterConfig{Crawler: Config{AllowPrivate: true}})
	spec := Spec{Collection: "pydocs", URLs: []string{srv.URL + "/*"}}
	ctx := context.Background()

	start, cpu0 := time.Now(), cpuTime()
	rep, err := in.Run(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, cpu := time.Since(start), cpuTime()-cpu0
	sum := rep.Summary()
	t.Logf("first crawl: %+v in %s: %.0f pages/s, %d skipped, %.1f MB fetched; CPU %s (%.1f ms/page, server side included)",
		sum, first.Round(time.Millisecond), float64(sum.Pages)/first.Seconds(), rep.Counters.Skipped,
		float64(rep.Counters.Bytes)/1e6, cpu.Round(time.Millisecond), float64(cpu.Milliseconds())/float64(max(sum.Pages, 1)))
	for _, sk := range rep.Skips[:min(len(rep.Skips), 10)] {
		t.Logf("skipped %s: %s %s", sk.URL, sk.Code, sk.Reason)
	}
	if sum.Pages < 500 || sum.Failed != 0 {
		t.Errorf("pages %d (want >= 500), failed %d (want 0): %v", sum.Pages, sum.Failed, rep.Errors)
	}

	start = time.Now()
	rep2, err := in.Run(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	second := time.Since(start)
	t.Logf("unchanged re-crawl: %+v in %s (%.1fx faster); peak RSS %d MB", rep2.Summary(), second.Round(time.Millisecond),
		first.Seconds()/second.Seconds(), peakRSS()>>20)
	if rep2.Counters.Unchanged != sum.Pages || rep2.Counters.Indexed != 0 {
		t.Errorf("re-crawl: %+v", rep2.Counters)
	}
}

// BenchmarkCrawlPyDocs measures crawl + extract of the Python docs (no-op
// indexers, fresh state each iteration): go test -run XXX -bench CrawlPyDocs
// -benchtime 3x ./crawler/
func BenchmarkCrawlPyDocs(b *testing.B) {
	dir := pyDocsDir(b, false)
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	spec := Spec{Collection: "pydocs", URLs: []string{srv.URL + "/*"}}
	var pages int64
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		in := NewIngester(IngesterConfig{Crawler: Config{AllowPrivate: true}})
		rep, err := in.Run(context.Background(), spec, nil)
		if err != nil {
			b.Fatal(err)
		}
		pages += rep.Summary().Pages
	}
	b.ReportMetric(float64(pages)/b.Elapsed().Seconds(), "pages/s")
	b.ReportMetric(float64(peakRSS())/(1<<20), "peak-RSS-MB")
	// Server side (the in-process file server) included.
	b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
}

// BenchmarkExtractPyDocsAll measures Extract alone over every page of the
// Python docs, read into memory first: go test -run XXX -bench
// ExtractPyDocsAll -count 6 ./crawler/
func BenchmarkExtractPyDocsAll(b *testing.B) {
	dir := pyDocsDir(b, false)
	type page struct {
		url  string
		body []byte
	}
	var pages []page
	var size int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".html") {
			return err
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		pages = append(pages, page{url: "http://127.0.0.1:8080/" + filepath.ToSlash(rel), body: body})
		size += int64(len(body))
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		for _, p := range pages {
			if _, err := Extract(p.url, "text/html; charset=utf-8", p.body); err != nil && kgagent.ErrorCode(err) != kgagent.EINVALID {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(pages)*b.N)/b.Elapsed().Seconds(), "pages/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
}
