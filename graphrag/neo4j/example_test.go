package neo4j_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/neo4j"
)

// Open a store on a Neo4j server, replace one page's triples and expand from
// an entity. (Compiled, not run: it needs a server; see deploy/neo4j.)
func ExampleOpen() {
	ctx := context.Background()
	store, err := neo4j.Open(ctx, neo4j.Config{
		URL:      "neo4j+s://graph.example.com", // TLS; bolt://127.0.0.1:7687 by default
		User:     "neo4j",
		Password: os.Getenv("NEO4J_PASSWORD"),
		Database: "kgagent",
	})
	if kgagent.ErrorCode(err) == kgagent.EUNAVAILABLE {
		log.Fatalf("graph store down: %v", err)
	} else if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	doc := "https://docs.python.org/3/library/json.html"
	err = store.ReplaceDocument(ctx, "python", doc, []kgagent.Triple{{
		Collection: "python",
		Subject:    graphrag.NewEntity("json", graphrag.TypeModule),
		Predicate:  graphrag.PredDefines,
		Object:     graphrag.NewEntity("json.dumps", graphrag.TypeFunction),
		DocURL:     doc,
		SourceURL:  doc + "#json.dumps",
	}})
	if err != nil {
		log.Fatal(err)
	}
	facts, err := store.Expand(ctx, "python", []string{"json"}, graphrag.ExpandLimits{Hops: 2})
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range facts {
		fmt.Println(t.Subject.Name, t.Predicate, t.Object.Name, t.SourceURL)
	}
}
