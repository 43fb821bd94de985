// Command chunkdump prints the chunks of one collection of a kgagent data
// dir, as the service indexed them, one JSON line per chunk in the order
// they were written: {"doc_url", "url", "title", "headings", "text"}.
// It reads DATA_DIR/index.db read-only through corpus/sqlite, which
// unpacks what the store keeps compressed (bodies, chunk URLs, ids), so
// tools outside Go get the plain text: bench/bm25s_eval.py, the bm25s
// baseline of make bench, reads its output. It exits 1 when the collection
// has no chunks.
//
//	chunkdump DATA_DIR COLLECTION > chunks.jsonl
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus/sqlite"
)

// line is one chunk of the output.
type line struct {
	DocURL   string   `json:"doc_url"`
	URL      string   `json:"url"`
	Title    string   `json:"title"`
	Headings []string `json:"headings"`
	Text     string   `json:"text"`
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: chunkdump DATA_DIR COLLECTION")
		os.Exit(2)
	}
	n, err := dump(os.Stdout, os.Args[1], os.Args[2])
	if err == nil && n == 0 {
		err = fmt.Errorf("collection %q of %s has no chunks", os.Args[2], os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chunkdump:", err)
		os.Exit(1)
	}
}

// dump writes the chunks of collection in dataDir to w and returns how many.
func dump(w io.Writer, dataDir, collection string) (int, error) {
	out := bufio.NewWriter(w)
	enc := json.NewEncoder(out)
	n := 0
	err := sqlite.ReadChunks(context.Background(), filepath.Join(dataDir, "index.db"), collection, func(c kgagent.Chunk) error {
		n++
		h := c.HeadingPath
		if h == nil {
			h = []string{}
		}
		return enc.Encode(line{DocURL: c.DocURL, URL: c.URL, Title: c.Title, Headings: h, Text: c.Text})
	})
	if err != nil {
		return n, err
	}
	return n, out.Flush()
}
