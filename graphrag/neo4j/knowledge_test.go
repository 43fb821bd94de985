package neo4j

import (
	"path/filepath"
	"testing"

	corpussqlite "github.com/kgagent/kgagent/corpus/sqlite"
	"github.com/kgagent/kgagent/knowledge/knowledgetest"
)

// TestKnowledgeConformance deletes a collection through the knowledge
// service with its graph in the real Neo4j and checks that no row is left
// in any store.
func TestKnowledgeConformance(t *testing.T) {
	s := realStore(t)
	knowledgetest.Run(t, func(t *testing.T) knowledgetest.Stores {
		idx, err := corpussqlite.Open(corpussqlite.Config{Path: filepath.Join(t.TempDir(), "index.db")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { idx.Close() })
		return knowledgetest.Stores{Index: idx, Graph: s}
	})
}
