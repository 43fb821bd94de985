package crawler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/crawler/sqlite"
	"github.com/kgagent/kgagent/knowledge"
)

// Example wires an ingestion the way `kgagent ingest` does: page state in
// the data dir, a progress bar on stderr (silent when it is not a terminal)
// and the JSON summary on stdout. The corpus and graphrag services go in
// Docs and Graph; left nil here, documents are extracted and dropped.
func Example() {
	site := httptest.NewServer(http.FileServer(http.Dir(filepath.Join("..", "testdata", "site"))))
	defer site.Close()
	dataDir, _ := os.MkdirTemp("", "kgagent")
	defer os.RemoveAll(dataDir)

	states, err := sqlite.Open(dataDir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer states.Close()
	in := crawler.NewIngester(crawler.IngesterConfig{
		Crawler:   crawler.Config{AllowPrivate: true},    // the CLI crawls from the user's machine
		Knowledge: knowledge.NewWriter(nil, nil, states), // documents dropped, page state kept
	})
	spec := crawler.Spec{Collection: "lumen", URLs: []string{site.URL + "/*"}, Exclude: []string{"*/cli/*"}}
	for run := 1; run <= 2; run++ {
		bar := crawler.NewProgress(os.Stderr, "ingest")
		rep, err := in.Run(context.Background(), spec, bar.Update)
		bar.Finish()
		if err != nil {
			fmt.Println(err)
			return
		}
		sum := rep.Summary()
		sum.Seconds = 0 // varies
		b, _ := json.Marshal(sum)
		fmt.Println(string(b))
	}
	// Output:
	// {"pages":29,"chunks":0,"triples":0,"unchanged":0,"failed":0,"removed":0,"kept":0,"seconds":0}
	// {"pages":29,"chunks":0,"triples":0,"unchanged":29,"failed":0,"removed":0,"kept":0,"seconds":0}
}
