package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus/sqlite"
)

// TestDump: one JSON line per chunk of the collection asked, in write
// order, with a compressed body as plain text and headings as a list
// (empty, not null, for a chunk without them).
func TestDump(t *testing.T) {
	dir := t.TempDir()
	x, err := sqlite.Open(sqlite.Config{Path: filepath.Join(dir, "index.db")})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("Lumen stores its settings in lumen.toml. ", 30)
	put := func(coll, url string, cs ...kgagent.Chunk) {
		var vs [][]float32
		for i := range cs {
			cs[i].Collection, cs[i].DocURL, cs[i].Ordinal = coll, url, i
			cs[i].ID = strings.Repeat("ab", 16) + string(rune('0'+i)) + string(rune('0'+len(url)%10))
			vs = append(vs, []float32{1})
		}
		if err := x.ReplaceDocument(context.Background(), coll, url, cs, vs); err != nil {
			t.Fatal(err)
		}
	}
	put("c", "http://h/b.html", kgagent.Chunk{URL: "http://h/b.html", Title: "B", Text: long},
		kgagent.Chunk{URL: "http://h/b.html#x", Title: "B", HeadingPath: []string{"B", "X"}, Anchor: "x", Text: "x"})
	put("d", "http://h/d.html", kgagent.Chunk{URL: "http://h/d.html", Title: "D", Text: "d"})
	put("c", "http://h/a.html", kgagent.Chunk{URL: "http://h/a.html", Title: "A", Text: "a"})
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := dump(&buf, dir, "c")
	if err != nil || n != 3 {
		t.Fatalf("dump: %d %v", n, err)
	}
	want := []line{
		{DocURL: "http://h/b.html", URL: "http://h/b.html", Title: "B", Headings: []string{}, Text: long},
		{DocURL: "http://h/b.html", URL: "http://h/b.html#x", Title: "B", Headings: []string{"B", "X"}, Text: "x"},
		{DocURL: "http://h/a.html", URL: "http://h/a.html", Title: "A", Headings: []string{}, Text: "a"},
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, l := range lines {
		if !strings.Contains(l, `"headings":[`) {
			t.Errorf("line %d: headings not a list: %s", i, l)
		}
		var got line
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Fatal(err)
		}
		if got.DocURL != want[i].DocURL || got.URL != want[i].URL || got.Title != want[i].Title || got.Text != want[i].Text ||
			strings.Join(got.Headings, "/") != strings.Join(want[i].Headings, "/") {
			t.Errorf("line %d: %+v, want %+v", i, got, want[i])
		}
	}
	if n, err := dump(&buf, t.TempDir(), "c"); err == nil {
		t.Errorf("a data dir without index.db: %d chunks, no error", n)
	}
}
