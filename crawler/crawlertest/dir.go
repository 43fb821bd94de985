package crawlertest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/crawler"
)

// ExtractDir extracts every HTML page under root (skipping folders whose
// name starts with "_", such as Sphinx's _static) with crawler.Extract, as
// if the site were served at base, into collection. Benchmarks use it to
// load a docs tree without a crawl; pages that fail to extract are logged
// and skipped.
func ExtractDir(t testing.TB, root, base, collection string) []kgagent.Document {
	t.Helper()
	var docs []kgagent.Document
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), "_") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".html") {
			return nil
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		doc, err := crawler.Extract(base+filepath.ToSlash(rel), "text/html; charset=utf-8", body)
		if err != nil {
			t.Logf("skip %s: %v", rel, err)
			return nil
		}
		doc.Collection = collection
		docs = append(docs, doc)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}
