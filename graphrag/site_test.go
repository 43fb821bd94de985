package graphrag_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/graphrag"
)

// TestSampleSite indexes the sample docs site (testdata/site) the way the
// crawler's pipeline does, then checks what GET /api/v1/triples and
// POST /api/v1/graph-rag would return.
func TestSampleSite(t *testing.T) {
	const root = "../testdata/site"
	const host = "http://lumen.test/"
	svc := newService(t, graphrag.Config{Embedder: corpus.NewLexical(corpus.LexicalConfig{}), Index: newIndex(t)})
	ctx := t.Context()
	anchors := map[string]map[string]bool{}
	pages := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".html") {
			return err
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		doc, err := crawler.Extract(host+filepath.ToSlash(rel), "text/html; charset=utf-8", body)
		if err != nil {
			return err
		}
		doc.Collection = "lumen"
		if _, err := svc.IndexDocument(ctx, doc, corpus.ChunkDocument(doc, corpus.ChunkConfig{})); err != nil {
			return err
		}
		as := map[string]bool{}
		for _, s := range doc.Sections {
			as[s.Anchor] = true
		}
		anchors[doc.URL] = as
		pages++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pages < 10 {
		t.Fatalf("only %d pages", pages)
	}
	all, err := svc.Find(ctx, graphrag.Pattern{Collection: "lumen", Limit: 1000})
	if err != nil || len(all) == 0 {
		t.Fatalf("Find: %d triples, %v", len(all), err)
	}
	for _, tr := range all {
		page, anchor, _ := strings.Cut(tr.SourceURL, "#")
		if page != tr.DocURL || !anchors[page][anchor] {
			t.Errorf("triple %s %s %s: source %q is not a section of %q", tr.Subject.ID, tr.Predicate, tr.Object.ID, tr.SourceURL, tr.DocURL)
			break
		}
	}
	ans, err := svc.Answer(ctx, "What is a series?", "lumen")
	if err != nil {
		t.Fatal(err)
	}
	var def *graphrag.Fact
	for i, f := range ans.Facts {
		if f.Triple.Subject.ID == "series" && f.Triple.Predicate == graphrag.PredIsDefinedAs {
			def = &ans.Facts[i]
			break
		}
	}
	if def == nil || !strings.Contains(def.Triple.Literal, "share a measurement and a tag set") || !strings.HasPrefix(def.SourceURL, host+"glossary.html") {
		t.Fatalf("definition of series not found: %+v", ans.Facts)
	}
	if !strings.Contains(ans.Answer, "share a measurement and a tag set") {
		t.Errorf("answer lacks the definition: %q", ans.Answer)
	}
	var found bool
	for _, s := range ans.Sources {
		found = found || s.URL == def.SourceURL
	}
	if !found {
		t.Errorf("sources %+v lack %s", ans.Sources, def.SourceURL)
	}
}
