package graphbench

import (
	"os"
	"testing"

	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/crawler/crawlertest"
	"github.com/kgagent/kgagent/graphrag"
)

// TestPyDocsExtractUnique checks, over every Python docs page, that the
// built-in extractor emits no two triples with Dedupe's key, which lets
// Service.IndexDocument skip Dedupe for it.
func TestPyDocsExtractUnique(t *testing.T) {
	root := os.Getenv("KGAGENT_PYDOCS")
	if root == "" {
		t.Skip("set KGAGENT_PYDOCS")
	}
	for _, d := range crawlertest.ExtractDir(t, root, pydocsBase, "pydocs") {
		ts, err := graphrag.BuiltinExtractor{}.Extract(t.Context(), d, corpus.ChunkDocument(d, corpus.ChunkConfig{}))
		if err != nil {
			t.Fatal(err)
		}
		if u := graphrag.Dedupe(ts); len(u) != len(ts) {
			t.Errorf("%s: %d triples, %d after Dedupe", d.URL, len(ts), len(u))
		}
	}
}
