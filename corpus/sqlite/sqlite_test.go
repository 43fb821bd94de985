package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/corpustest"
)

func TestConformanceFile(t *testing.T) {
	corpustest.Run(t, func(t *testing.T) corpus.Index {
		x, err := Open(Config{Path: filepath.Join(t.TempDir(), "corpus.db")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		return x
	})
}

func TestConformanceMemory(t *testing.T) {
	corpustest.Run(t, func(t *testing.T) corpus.Index {
		x, err := Open(Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		return x
	})
}
