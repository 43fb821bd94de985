package graphbench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kgagent/kgagent/corpus"
	corpussqlite "github.com/kgagent/kgagent/corpus/sqlite"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/sqlite"
)

// BenchmarkRetrieve measures Retrieve on a graph TestPyDocsGraph built and
// kept in KGAGENT_GRAPHBENCH_DIR:
//
//	KGAGENT_GRAPHBENCH_DIR=/tmp/graph KGAGENT_PYDOCS=/usr/share/doc/python3.11/html go test ./graphrag/graphbench -run PyDocs
//	KGAGENT_GRAPHBENCH_DIR=/tmp/graph go test ./graphrag/graphbench -run XXX -bench Retrieve
func BenchmarkRetrieve(b *testing.B) {
	dir := os.Getenv("KGAGENT_GRAPHBENCH_DIR")
	if _, err := os.Stat(filepath.Join(dir, sqlite.FileName)); dir == "" || err != nil {
		b.Skip("set KGAGENT_GRAPHBENCH_DIR to a directory TestPyDocsGraph built")
	}
	store, err := sqlite.OpenDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	ix, err := corpussqlite.Open(corpussqlite.Config{Path: filepath.Join(dir, "index.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	for _, tc := range []struct {
		name string
		cfg  graphrag.Config
	}{
		{"names", graphrag.Config{Store: store}},
		{"names+entity-index", graphrag.Config{Store: store, Embedder: corpus.NewLexical(corpus.LexicalConfig{}), Index: ix}},
	} {
		svc, err := graphrag.New(tc.cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				q := handQuestions[i%len(handQuestions)]
				i++
				if _, err := svc.Retrieve(b.Context(), q.q, "pydocs"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
