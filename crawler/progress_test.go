package crawler

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProgressSilentWhenNotATerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	for _, w := range []interface{ Write([]byte) (int, error) }{f, &buf} {
		p := NewProgress(w, "ingest")
		p.Update(Counters{Queued: 10, Done: 5, Indexed: 5})
		p.Finish()
	}
	if fi, _ := f.Stat(); fi.Size() != 0 || buf.Len() != 0 {
		t.Errorf("progress wrote to a non-terminal: file %d bytes, buffer %q", fi.Size(), buf.String())
	}
}

func TestProgressBarDraws(t *testing.T) {
	var buf bytes.Buffer
	p := &Progress{bar: newBar(&buf, "ingest", 0)}
	p.Update(Counters{Queued: 10, Done: 5, Indexed: 2, Unchanged: 3, Chunks: 42})
	if out := buf.String(); !strings.Contains(out, "5/10") || !strings.Contains(out, "chunks 42") {
		t.Errorf("bar output %q", out)
	}
	p.Finish()
}
