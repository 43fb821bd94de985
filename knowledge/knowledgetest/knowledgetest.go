// Package knowledgetest checks the knowledge service's promise over real
// stores: a collection put through it and deleted through it leaves no row
// in any store (corpus index, graph, entity index, page state, embeds),
// while another collection stays whole. The conformance tests of the index
// and graph adapters run it with their store.
package knowledgetest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/corpustest"
	"github.com/kgagent/kgagent/corpus/embeds"
	crawlersqlite "github.com/kgagent/kgagent/crawler/sqlite"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/knowledge"
)

// Stores are the stores one run of the suite uses.
type Stores struct {
	Index corpus.Index   // vectors use corpustest.Embedder (corpustest.Dim)
	Graph graphrag.Store // triples
}

// Run runs the suite; open returns fresh (or shared, isolated by
// collection name) stores for a subtest.
func Run(t *testing.T, open func(t *testing.T) Stores) {
	t.Run("DeleteCollectionLeavesNoRow", func(t *testing.T) { testDelete(t, open(t)) })
	t.Run("DeleteRetriesFailedStore", func(t *testing.T) { testRetry(t, open(t)) })
}

// env is a knowledge service over the stores with real page state and
// embed stores in a temporary directory.
type env struct {
	k      *knowledge.Service
	cs     *corpus.Service
	graph  *graphrag.Service
	store  graphrag.Store
	states *crawlersqlite.Store
	blobs  *embeds.Store
}

func newEnv(t *testing.T, st Stores, wrap func(knowledge.Graph) knowledge.Graph) *env {
	t.Helper()
	dir := t.TempDir()
	cs, err := corpus.NewService(corpus.ServiceConfig{Index: st.Index, Embedder: corpustest.Embedder})
	if err != nil {
		t.Fatal(err)
	}
	g, err := graphrag.New(graphrag.Config{Store: st.Graph, Embedder: corpustest.Embedder, Index: st.Index, Entities: cs})
	if err != nil {
		t.Fatal(err)
	}
	states, err := crawlersqlite.Open(filepath.Join(dir, "crawl.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { states.Close() })
	blobs, err := embeds.Open(embeds.Config{Dir: filepath.Join(dir, "embeds")})
	if err != nil {
		t.Fatal(err)
	}
	var kg knowledge.Graph = g
	if wrap != nil {
		kg = wrap(g)
	}
	k, err := knowledge.New(knowledge.Config{Corpus: cs, Graph: kg, States: states, Blobs: blobs})
	if err != nil {
		t.Fatal(err)
	}
	return &env{k: k, cs: cs, graph: g, store: st.Graph, states: states, blobs: blobs}
}

// collection returns a collection name unique to this run.
func collection(base string) string {
	return base + strings.ReplaceAll(time.Now().Format("150405.000000000"), ".", "")
}

func doc(coll, path, title, text string) kgagent.Document {
	u := "https://docs.example.com/" + path
	return kgagent.Document{
		Collection: coll, URL: u, CanonicalURL: u, Title: title, ContentType: "text/html",
		Sections: []kgagent.Section{{Anchor: "intro", Heading: title, Level: 1, HeadingPath: []string{title}, Blocks: []kgagent.Block{
			{Kind: kgagent.BlockParagraph, Text: text},
			{Kind: kgagent.BlockCode, Text: "lumen backup restore --from latest"},
		}}},
	}
}

// fill puts two documents (with their page state) and an embed into coll.
func (e *env) fill(t *testing.T, coll string) {
	t.Helper()
	ctx := t.Context()
	for _, d := range []kgagent.Document{
		doc(coll, "backup.html", "Backups", "The lumen backup command creates snapshots. Lumen Server is a database. The backup restore command restores a snapshot."),
		doc(coll, "config.html", "Configuration", "The Lumen Server listens on port 7070 by default. The config file is lumen.toml."),
	} {
		chunks, triples, err := e.k.Writer().Put(ctx, d, knowledge.PageState{ContentHash: "h", LastSeen: time.Now()})
		if err != nil {
			t.Fatalf("Put(%s): %v", d.URL, err)
		}
		if chunks == 0 || triples == 0 {
			t.Fatalf("Put(%s): %d chunks, %d triples; the suite needs both", d.URL, chunks, triples)
		}
	}
	if _, err := e.blobs.PutIn(ctx, coll, "text/plain", strings.NewReader("notes about lumen")); err != nil {
		t.Fatal(err)
	}
}

// rows counts what each store still holds of coll.
func (e *env) rows(t *testing.T, coll string) map[string]int {
	t.Helper()
	ctx := t.Context()
	out := map[string]int{}
	for _, c := range []string{coll, coll + e.graph.Config().EntitySuffix} {
		for _, mode := range []corpus.Mode{corpus.ModeKeyword, corpus.ModeDense} {
			hits, err := e.cs.Search(ctx, corpus.SearchRequest{Query: "lumen backup server port configuration snapshot", Collection: c, K: 100, Mode: mode})
			if kgagent.ErrorCode(err) == kgagent.ENOTFOUND {
				continue
			}
			if err != nil {
				t.Fatalf("search %s (%s): %v", c, mode, err)
			}
			out["index:"+c] = max(out["index:"+c], len(hits))
		}
	}
	cols, err := e.cs.Collections(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ci := range cols {
		if ci.Name == coll || ci.Name == coll+e.graph.Config().EntitySuffix {
			out["collections:"+ci.Name] = ci.Chunks + 1
		}
	}
	ts, err := e.store.Find(ctx, graphrag.Pattern{Collection: coll, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out["graph"] = len(ts)
	ents, err := e.store.Entities(ctx, coll, []string{"lumen", "backup", "server"}, 100)
	if err != nil {
		t.Fatal(err)
	}
	out["entities"] = len(ents)
	pages, err := e.states.ListPages(ctx, coll)
	if err != nil {
		t.Fatal(err)
	}
	out["page_state"] = len(pages)
	bl, err := e.blobs.List(coll)
	if err != nil {
		t.Fatal(err)
	}
	out["embeds"] = len(bl)
	for k, v := range out {
		if v == 0 {
			delete(out, k)
		}
	}
	return out
}

func testDelete(t *testing.T, st Stores) {
	e := newEnv(t, st, nil)
	a, b := collection("kta"), collection("ktb")
	e.fill(t, a)
	e.fill(t, b)
	before := e.rows(t, a)
	for _, want := range []string{"index:" + a, "index:" + a + e.graph.Config().EntitySuffix, "graph", "entities", "page_state", "embeds"} {
		if before[want] == 0 {
			t.Fatalf("before the delete %s holds nothing of %s (%v): the suite checks nothing", want, a, before)
		}
	}
	listed, err := e.k.Collections(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, ci := range listed {
		if strings.HasSuffix(ci.Name, e.graph.Config().EntitySuffix) {
			t.Errorf("Collections lists the internal collection %s", ci.Name)
		}
	}
	if err := e.k.DeleteCollection(t.Context(), a+e.graph.Config().EntitySuffix); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("deleting an internal collection: %v, want EINVALID", err)
	}
	if err := e.k.DeleteCollection(t.Context(), a); err != nil {
		t.Fatalf("DeleteCollection: %v", err)
	}
	if left := e.rows(t, a); len(left) > 0 {
		t.Errorf("after DeleteCollection(%s) the stores still hold %v", a, left)
	}
	if got := e.rows(t, b); len(got) != len(before) {
		t.Errorf("the other collection lost rows: %v, want as many stores as %v", got, before)
	}
	if p := e.k.Pending(); len(p) != 0 {
		t.Errorf("pending deletes after a clean delete: %v", p)
	}
}

// flakyGraph fails DeleteCollection while fail is set.
type flakyGraph struct {
	knowledge.Graph
	fail *bool
}

func (f flakyGraph) DeleteCollection(ctx context.Context, c string) error {
	if *f.fail {
		return kgagent.Errorf(kgagent.EUNAVAILABLE, "graph store unreachable (injected)")
	}
	return f.Graph.DeleteCollection(ctx, c)
}

func testRetry(t *testing.T, st Stores) {
	fail := true
	e := newEnv(t, st, func(g knowledge.Graph) knowledge.Graph { return flakyGraph{g, &fail} })
	a := collection("ktr")
	e.fill(t, a)
	err := e.k.DeleteCollection(t.Context(), a)
	if kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
		t.Fatalf("DeleteCollection with the graph down: %v, want EUNAVAILABLE", err)
	}
	p := e.k.Pending()
	if len(p) != 1 || p[0].Collection != a || len(p[0].Done) != 1 || p[0].Done[0] != knowledge.StoreIndex || p[0].LastError == "" {
		t.Fatalf("Pending = %+v, want %s with the index done and the error", p, a)
	}
	listed, err := e.k.Collections(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, ci := range listed {
		if ci.Name == a {
			t.Errorf("a collection whose delete is pending is still listed")
		}
	}
	// A write into the collection first finishes the delete; while the
	// store is down it is refused and nothing is written.
	if _, _, err := e.k.Writer().Put(t.Context(), doc(a, "new.html", "New", "Lumen news."), knowledge.PageState{}); kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
		t.Fatalf("Put into a collection being deleted: %v, want EUNAVAILABLE", err)
	}
	fail = false
	if err := e.k.Retry(t.Context()); err != nil {
		t.Fatalf("Retry: %v", err)
	}
	if left := e.rows(t, a); len(left) > 0 {
		t.Errorf("after the retried delete the stores still hold %v", left)
	}
	if p := e.k.Pending(); len(p) != 0 {
		t.Errorf("pending after Retry: %v", p)
	}
}
