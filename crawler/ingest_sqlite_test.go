package crawler_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/crawler/sqlite"
	"github.com/kgagent/kgagent/knowledge"
)

// TestIngestStateSurvivesRestart runs an ingestion, closes everything, and
// runs it again in a "new process" (new store handle, new Ingester): every
// page must be answered by a conditional request and nothing re-indexed.
func TestIngestStateSurvivesRestart(t *testing.T) {
	var conditional, notModified atomic.Int32
	fs := http.FileServer(http.Dir(filepath.Join("..", "testdata", "site")))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-Modified-Since") != "" {
			conditional.Add(1)
		}
		rec := &status{ResponseWriter: w}
		fs.ServeHTTP(rec, r)
		if rec.code == http.StatusNotModified {
			notModified.Add(1)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	spec := crawler.Spec{Collection: "lumen", URLs: []string{srv.URL + "/*"}}
	run := func() crawler.Report {
		store, err := sqlite.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		rep, err := crawler.NewIngester(crawler.IngesterConfig{Crawler: crawler.Config{AllowPrivate: true}, Knowledge: knowledge.NewWriter(nil, nil, store)}).Run(context.Background(), spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	first := run()
	if first.Counters.Indexed < 30 || conditional.Load() != 0 {
		t.Fatalf("first run %+v, %d conditional requests", first.Counters, conditional.Load())
	}
	second := run()
	if second.Counters.Indexed != 0 || second.Counters.Unchanged != first.Counters.Indexed {
		t.Errorf("second run %+v", second.Counters)
	}
	if int64(notModified.Load()) != second.Counters.Unchanged {
		t.Errorf("%d 304s for %d unchanged pages", notModified.Load(), second.Counters.Unchanged)
	}
}

type status struct {
	http.ResponseWriter
	code int
}

func (s *status) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}
