package sqlitefile_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	agentsqlite "github.com/kgagent/kgagent/agent/sqlite"
	corpussqlite "github.com/kgagent/kgagent/corpus/sqlite"
	crawlersqlite "github.com/kgagent/kgagent/crawler/sqlite"
	graphsqlite "github.com/kgagent/kgagent/graphrag/sqlite"
)

// TestStoresOpenInsideTheirDir: each SQLite store of a data dir whose
// name holds '#' or '?' opens its own file inside it. Before, all four
// opened one file named after the dir's name up to the '#' beside it,
// so the graph store found the index's format ("graph.db is format 6")
// and the stores' tables mixed in a file outside the data dir.
func TestStoresOpenInsideTheirDir(t *testing.T) {
	for _, name := range []string{"docs#2", "what?x=1"} {
		parent := t.TempDir()
		dir := filepath.Join(parent, name)
		open := map[string]func(path string) (io.Closer, error){
			"index.db": func(p string) (io.Closer, error) { return corpussqlite.Open(corpussqlite.Config{Path: p}) },
			"graph.db": func(p string) (io.Closer, error) { return graphsqlite.Open(p) },
			"crawl.db": func(p string) (io.Closer, error) { return crawlersqlite.Open(p) },
			"agent.db": func(p string) (io.Closer, error) { return agentsqlite.Open(p) },
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, file := range []string{"index.db", "graph.db", "crawl.db", "agent.db"} {
			c, err := open[file](filepath.Join(dir, file))
			if err != nil {
				t.Fatalf("%s in %q: %v", file, name, err)
			}
			defer c.Close()
			if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
				t.Errorf("%s in %q is not in the data dir: %v", file, name, err)
			}
		}
		if ents, _ := os.ReadDir(parent); len(ents) != 1 {
			t.Errorf("%q: files created beside the data dir: %d entries", name, len(ents))
		}
	}
}
