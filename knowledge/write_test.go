package knowledge_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	corpussqlite "github.com/kgagent/kgagent/corpus/sqlite"
	crawlersqlite "github.com/kgagent/kgagent/crawler/sqlite"
	"github.com/kgagent/kgagent/graphrag"
	graphsqlite "github.com/kgagent/kgagent/graphrag/sqlite"
	"github.com/kgagent/kgagent/knowledge"
)

// journal records the writes reaching the stores, in order, and fails the
// step named in fail.
type journal struct {
	mu   sync.Mutex
	log  []string
	fail string
}

func (j *journal) note(step string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if step == j.fail {
		return kgagent.Errorf(kgagent.EUNAVAILABLE, "%s store down (injected)", step)
	}
	j.log = append(j.log, step)
	return nil
}

func (j *journal) take() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := j.log
	j.log = nil
	return out
}

type jDocs struct {
	knowledge.Documents
	j *journal
}

func (d jDocs) IndexDocument(ctx context.Context, doc kgagent.Document) ([]kgagent.Chunk, error) {
	if err := d.j.note("chunks"); err != nil {
		return nil, err
	}
	return d.Documents.IndexDocument(ctx, doc)
}

func (d jDocs) DeleteDocument(ctx context.Context, c, u string) error {
	if err := d.j.note("-chunks"); err != nil {
		return err
	}
	return d.Documents.DeleteDocument(ctx, c, u)
}

type jTriples struct {
	knowledge.Triples
	j *journal
}

func (g jTriples) IndexDocument(ctx context.Context, doc kgagent.Document, chunks []kgagent.Chunk) (int, error) {
	if err := g.j.note("triples"); err != nil {
		return 0, err
	}
	return g.Triples.IndexDocument(ctx, doc, chunks)
}

func (g jTriples) DeleteDocument(ctx context.Context, c, u string) error {
	if err := g.j.note("-triples"); err != nil {
		return err
	}
	return g.Triples.DeleteDocument(ctx, c, u)
}

type jStates struct {
	knowledge.PageStates
	j *journal
}

func (s jStates) PutPage(ctx context.Context, st knowledge.PageState) error {
	if err := s.j.note("state"); err != nil {
		return err
	}
	return s.PageStates.PutPage(ctx, st)
}

func (s jStates) DeletePage(ctx context.Context, c, u string) error {
	if err := s.j.note("-state"); err != nil {
		return err
	}
	return s.PageStates.DeletePage(ctx, c, u)
}

// sqliteStores are the embedded stores kgagent runs on, in a temp dir.
type sqliteStores struct {
	cs     *corpus.Service
	graph  *graphrag.Service
	store  *graphsqlite.Store
	states *crawlersqlite.Store
}

func openSQLite(t *testing.T) sqliteStores {
	t.Helper()
	dir := t.TempDir()
	idx, err := corpussqlite.Open(corpussqlite.Config{Path: filepath.Join(dir, "index.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	cs, err := corpus.NewService(corpus.ServiceConfig{Index: idx})
	if err != nil {
		t.Fatal(err)
	}
	st, err := graphsqlite.Open(filepath.Join(dir, "graph.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	g, err := graphrag.New(graphrag.Config{Store: st, Embedder: cs.Embedder(), Index: idx, Entities: cs})
	if err != nil {
		t.Fatal(err)
	}
	states, err := crawlersqlite.Open(filepath.Join(dir, "crawl.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { states.Close() })
	return sqliteStores{cs: cs, graph: g, store: st, states: states}
}

// held says which stores hold the page: chunks, triples, entity index
// entries, page state (with its content hash).
func (s sqliteStores) held(t *testing.T, u string) string {
	t.Helper()
	ctx := t.Context()
	var out []string
	if ch, err := s.cs.DocumentChunks(ctx, "c", u); err != nil && kgagent.ErrorCode(err) != kgagent.ENOTFOUND {
		t.Fatal(err)
	} else if len(ch) > 0 {
		out = append(out, "chunks")
	}
	if ts, err := s.store.Find(ctx, graphrag.Pattern{Collection: "c", Limit: 1000}); err != nil {
		t.Fatal(err)
	} else if slices.ContainsFunc(ts, func(x kgagent.Triple) bool { return x.DocURL == u }) {
		out = append(out, "triples")
	}
	if ch, err := s.cs.DocumentChunks(ctx, "c"+s.graph.Config().EntitySuffix, u); err != nil && kgagent.ErrorCode(err) != kgagent.ENOTFOUND {
		t.Fatal(err)
	} else if len(ch) > 0 {
		out = append(out, "entities")
	}
	pages, err := s.states.ListPages(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if p.URL == u {
			out = append(out, "state:"+p.ContentHash)
		}
	}
	return strings.Join(out, " ")
}

func lumenDoc(text string) kgagent.Document {
	const u = "https://docs.example.com/backup.html"
	return kgagent.Document{
		Collection: "c", URL: u, CanonicalURL: u, Title: "Backups", ContentType: "text/html",
		Sections: []kgagent.Section{{Anchor: "intro", Heading: "Backups", Level: 1, HeadingPath: []string{"Backups"}, Blocks: []kgagent.Block{
			{Kind: kgagent.BlockParagraph, Text: text},
		}}},
	}
}

// TestWriterOrderOverSQLite writes a page through the Writer over the
// embedded SQLite stores (corpus index, graph with its entity index, page
// state) and checks the order of the writes and what a failure at each
// step leaves behind: a put saves the page state last, so a put that
// stopped part way leaves the old state (the next crawl writes the page
// again, never skipping it as unchanged); a removal clears the state's
// content hash first and deletes the state last, so one that stopped part
// way is retried and matches no content; a touch writes the state alone.
func TestWriterOrderOverSQLite(t *testing.T) {
	ctx := t.Context()
	s := openSQLite(t)
	j := &journal{}
	w := knowledge.NewWriter(jDocs{s.cs, j}, jTriples{s.graph, j}, jStates{s.states, j})
	const u = "https://docs.example.com/backup.html"
	put := func(text, hash string) error {
		_, _, err := w.Put(ctx, lumenDoc(text), knowledge.PageState{ContentHash: hash, LastSeen: time.Now()})
		return err
	}
	v1 := "The lumen backup command creates snapshots. Lumen Server is a database. The retention policy is a setting."
	if err := put(v1, "h1"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(j.take(), " "); got != "chunks triples state" {
		t.Errorf("put wrote %q, want chunks, triples (with the entity index), state", got)
	}
	if got := s.held(t, u); got != "chunks triples entities state:h1" {
		t.Fatalf("after a put the stores hold %q", got)
	}

	// A put that fails at the graph or the page state leaves the old state:
	// the page is written again by the next crawl.
	for _, fail := range []string{"chunks", "triples", "state"} {
		j.fail = fail
		err := put("The lumen restore command restores a snapshot. Lumen Server is a database.", "h2")
		if kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE || !strings.Contains(kgagent.ErrorMessage(err), "injected") {
			t.Fatalf("put failing at %s: %v", fail, err)
		}
		if got := s.held(t, u); !strings.HasSuffix(got, "state:h1") {
			t.Errorf("put failing at %s left %q; want the old state h1", fail, got)
		}
		j.take()
	}
	j.fail = ""

	// A touch writes the state alone.
	if err := w.Touch(ctx, knowledge.PageState{Collection: "c", URL: u, ContentHash: "h1", ETag: `"e2"`, LastSeen: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(j.take(), " "); got != "state" {
		t.Errorf("touch wrote %q, want the state alone", got)
	}

	// A removal that fails part way keeps a state, so it is tried again, and
	// the state matches no content, so a crawl that finds the page back
	// writes it whole rather than skip it as unchanged.
	for _, fail := range []string{"-triples", "-chunks", "-state"} {
		j.fail = fail
		if err := w.Remove(ctx, "c", u); kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
			t.Fatalf("remove failing at %s: %v", fail, err)
		}
		if got := s.held(t, u); !strings.HasSuffix(got, "state:") {
			t.Errorf("remove failing at %s left %q; want a page state with no content hash", fail, got)
		}
		j.take()
		if err := put(v1, "h1"); err != nil { // the page is back
			t.Fatal(err)
		}
		if got := s.held(t, u); got != "chunks triples entities state:h1" {
			t.Fatalf("the page back after a removal failing at %s: the stores hold %q", fail, got)
		}
		j.take()
	}
	j.fail = ""
	if err := w.Remove(ctx, "c", u); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(j.take(), " "); got != "state -triples -chunks -state" {
		t.Errorf("remove wrote %q, want the state's hash cleared, then triples (with the entity index), chunks, state", got)
	}
	if got := s.held(t, u); got != "" {
		t.Errorf("after a remove the stores hold %q", got)
	}
	if err := w.Remove(ctx, "c", u); err != nil {
		t.Errorf("removing an unknown page: %v", err)
	}
}

// TestServiceWriterReachesEveryStore: a page put through the Service's
// Writer reaches every store it was configured with.
func TestServiceWriterReachesEveryStore(t *testing.T) {
	ctx := t.Context()
	s := openSQLite(t)
	k, err := knowledge.New(knowledge.Config{Corpus: s.cs, Graph: s.graph, States: s.states})
	if err != nil {
		t.Fatal(err)
	}
	chunks, triples, err := k.Writer().Put(ctx, lumenDoc("The lumen backup command creates snapshots. Lumen Server is a database."), knowledge.PageState{ContentHash: "h"})
	if err != nil || chunks == 0 || triples == 0 {
		t.Fatalf("Put: %d chunks, %d triples, %v", chunks, triples, err)
	}
	if got := s.held(t, "https://docs.example.com/backup.html"); got != "chunks triples entities state:h" {
		t.Errorf("the stores hold %q", got)
	}
}

// TestDeleteCollectionForgetsWriterStates: with no page-state store
// configured the Writer keeps its states in memory; deleting the
// collection forgets them too, so the next crawl writes every page again
// instead of touching pages that are gone.
func TestDeleteCollectionForgetsWriterStates(t *testing.T) {
	ctx := t.Context()
	s := openSQLite(t)
	k, err := knowledge.New(knowledge.Config{Corpus: s.cs, Graph: s.graph})
	if err != nil {
		t.Fatal(err)
	}
	doc := lumenDoc("The lumen backup command creates snapshots.")
	if _, _, err := k.Writer().Put(ctx, doc, knowledge.PageState{ContentHash: "h"}); err != nil {
		t.Fatal(err)
	}
	if err := k.DeleteCollection(ctx, doc.Collection); err != nil {
		t.Fatal(err)
	}
	if left, err := k.Writer().States().ListPages(ctx, doc.Collection); err != nil || len(left) != 0 {
		t.Errorf("after the delete the Writer still holds %d page states (%v)", len(left), err)
	}
}

// downGraph is a graph whose DeleteCollection fails while down is set.
type downGraph struct {
	knowledge.Graph
	down *bool
}

func (g downGraph) DeleteCollection(ctx context.Context, c string) error {
	if *g.down {
		return kgagent.Errorf(kgagent.EUNAVAILABLE, "graph store down (injected)")
	}
	return g.Graph.DeleteCollection(ctx, c)
}

// TestPutFinishesAPendingDelete: a Put into a collection whose delete
// stopped part way finishes the delete first; while the delete still
// fails the Put is EUNAVAILABLE and writes nothing.
func TestPutFinishesAPendingDelete(t *testing.T) {
	ctx := t.Context()
	s := openSQLite(t)
	down := false
	k, err := knowledge.New(knowledge.Config{Corpus: s.cs, Graph: downGraph{s.graph, &down}, States: s.states})
	if err != nil {
		t.Fatal(err)
	}
	doc := lumenDoc("The lumen backup command creates snapshots. Lumen Server is a database.")
	const u = "https://docs.example.com/backup.html"
	if _, _, err := k.Writer().Put(ctx, doc, knowledge.PageState{ContentHash: "h"}); err != nil {
		t.Fatal(err)
	}
	down = true
	if err := k.DeleteCollection(ctx, doc.Collection); err == nil {
		t.Fatal("DeleteCollection with the graph down: no error")
	}
	if p := k.Pending(); len(p) != 1 || !slices.Equal(p[0].Done, []string{knowledge.StoreIndex}) {
		t.Fatalf("pending deletes %+v, want c with the index done", p)
	}
	before := s.held(t, u)
	_, _, err = k.Writer().Put(ctx, doc, knowledge.PageState{ContentHash: "h2"})
	if kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE || !strings.Contains(kgagent.ErrorMessage(err), "still being deleted") {
		t.Errorf("Put during a pending delete: %v, want EUNAVAILABLE, still being deleted", err)
	}
	if after := s.held(t, u); after != before || strings.Contains(after, "chunks") {
		t.Errorf("a refused Put changed the stores: %q -> %q", before, after)
	}
	down = false
	if _, _, err := k.Writer().Put(ctx, doc, knowledge.PageState{ContentHash: "h2"}); err != nil {
		t.Fatal(err)
	}
	if p := k.Pending(); len(p) != 0 {
		t.Errorf("pending deletes after a Put: %+v", p)
	}
	if got := s.held(t, u); got != "chunks triples entities state:h2" {
		t.Errorf("after the delete and the Put the stores hold %q", got)
	}
}
