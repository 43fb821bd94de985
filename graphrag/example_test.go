package graphrag_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/sqlite"
)

// A Service over the embedded store: index a crawled page, then ask the
// graph. cmd/kgagent wires the same pieces, adding the entity index
// (Config.Embedder and Config.Index).
func Example() {
	dir, _ := os.MkdirTemp("", "graph")
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(filepath.Join(dir, "graph.db"))
	if err != nil {
		panic(err)
	}
	defer store.Close()
	svc, err := graphrag.New(graphrag.Config{Store: store})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	page := "https://docs.python.org/3/glossary.html"
	doc := kgagent.Document{Collection: "py", URL: page, Title: "Glossary", Sections: []kgagent.Section{{
		Anchor: "term-gil", Heading: "GIL", Blocks: []kgagent.Block{{Kind: kgagent.BlockDefList, Terms: []kgagent.Definition{
			{Term: "global interpreter lock", Definition: "The mechanism used by the CPython interpreter to assure that only one thread executes Python bytecode at a time."},
		}}},
	}}}
	if _, err := svc.IndexDocument(ctx, doc, nil); err != nil {
		panic(err)
	}
	ans, err := svc.Answer(ctx, "What is the global interpreter lock?", "py")
	if err != nil {
		panic(err)
	}
	fmt.Println(ans.Facts[0].Text)
	fmt.Println(ans.Sources[0].URL)
	// Output:
	// global interpreter lock: The mechanism used by the CPython interpreter to assure that only one thread executes Python bytecode at a time.
	// https://docs.python.org/3/glossary.html#term-gil
}
