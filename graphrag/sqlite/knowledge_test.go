package sqlite_test

import (
	"path/filepath"
	"testing"

	corpussqlite "github.com/kgagent/kgagent/corpus/sqlite"
	"github.com/kgagent/kgagent/knowledge/knowledgetest"
)

// TestKnowledgeConformance deletes a collection through the knowledge
// service over the embedded stores and checks that no row is left.
func TestKnowledgeConformance(t *testing.T) {
	knowledgetest.Run(t, func(t *testing.T) knowledgetest.Stores {
		idx, err := corpussqlite.Open(corpussqlite.Config{Path: filepath.Join(t.TempDir(), "index.db")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { idx.Close() })
		return knowledgetest.Stores{Index: idx, Graph: open(t)}
	})
}
