package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/internal/snapfile"
)

// canonical is m as its snapshot holds it (tombstones dropped, slots
// renumbered): what a process reading the snapshot searches.
func canonical(t *testing.T, m *memColl) *memColl {
	t.Helper()
	e := &snapfile.Encoder{}
	encodeSnapshot(e, m)
	got, err := decodeSnapshot(e.B, m.dim, m.weights)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// sameCopy fails unless a and b are the same search copy: rows, pages,
// vectors, lengths and postings.
func sameCopy(t *testing.T, a, b *memColl) {
	t.Helper()
	q := make([]int8, a.dim)
	r := make([]int8, b.dim)
	switch {
	case !reflect.DeepEqual(a.rids, b.rids) || !reflect.DeepEqual(slotDocs(a), slotDocs(b)) || a.live != b.live:
		t.Fatalf("rows differ: %v %v / %v %v", a.rids, slotDocs(a), b.rids, slotDocs(b))
	case !reflect.DeepEqual(a.scales, b.scales) || !reflect.DeepEqual(a.all.lens, b.all.lens) || !reflect.DeepEqual(a.head.lens, b.head.lens):
		t.Fatal("scales or lengths differ")
	case !reflect.DeepEqual(expandPosts(&a.all), expandPosts(&b.all)) || !reflect.DeepEqual(expandPosts(&a.head), expandPosts(&b.head)):
		t.Fatal("postings differ")
	case !reflect.DeepEqual(a.docLen, b.docLen) || !reflect.DeepEqual(a.docLive, b.docLive):
		t.Fatal("page lengths differ")
	}
	for s := range a.rids {
		if !reflect.DeepEqual(a.rowOf(s, q), b.rowOf(s, r)) {
			t.Fatalf("slot %d: vectors differ", s)
		}
	}
}

// sameAsSQLite fails unless m is, once snapshotted, the copy of coll that
// an index opened afresh on f's file builds from SQLite.
func (f *snapFixture) sameAsSQLite(m *memColl, coll string) {
	f.t.Helper()
	z := f.open(Config{NoSnapshots: true})
	defer z.Close()
	fresh, err := z.collection(context.Background(), coll)
	if err != nil {
		f.t.Fatal(err)
	}
	sameCopy(f.t, canonical(f.t, fresh), canonical(f.t, m))
}

// TestKeepSnapshotsWithoutReload: a collection kept from before it exists
// (kgagent ingest's search copies) is held from its first write on and
// follows every write (concurrent ones sharing transactions, replaced and
// deleted documents, more than colMin rows so the vectors move to columns):
// its snapshot is written without building the copy from SQLite, and holds
// exactly the copy SQLite gives; a serve reading it answers the same.
func TestKeepSnapshotsWithoutReload(t *testing.T) {
	ctx := context.Background()
	f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
	x := f.openKept(Config{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 600; i += 4 {
				f.put(x, "c", fmt.Sprintf("https://x/p%d", i), fmt.Sprintf("Page %d about zebra topic%d", i, i%7), "giraffes eat leaves",
					fmt.Sprintf("the json module item%d and Item%d", i%13, i%17), "closing words")
			}
		}()
	}
	wg.Wait()
	f.put(x, "c", "https://x/p3", "replaced text about stripes")
	f.put(x, "other", "https://x/o", "a collection nobody kept")
	if err := x.DeleteDocument(ctx, "c", "https://x/p5"); err != nil {
		t.Fatal(err)
	}
	x.cacheMu.RLock()
	kept, other := x.cache["c"], x.cache["other"]
	x.cacheMu.RUnlock()
	if kept == nil || other != nil {
		t.Fatalf("search copies held: kept %v, not kept %v", kept != nil, other != nil)
	}
	if err := x.Snapshot(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if n := x.Rebuilds(); n != 0 {
		t.Fatalf("%d search copies built from SQLite, want 0", n)
	}
	x.Release("c")
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}

	// the snapshot read back is the copy SQLite gives
	y := f.open(Config{})
	defer y.Close()
	snap, err := y.collection(ctx, "c")
	if err != nil || y.snapHits.Load() != 1 {
		t.Fatalf("snapshot not used (%d, %v)", y.snapHits.Load(), err)
	}
	z := f.open(Config{NoSnapshots: true})
	defer z.Close()
	fresh, err := z.collection(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	sameCopy(t, canonical(t, fresh), snap)
	if got, want := f.results(y, "c"), f.results(z, "c"); !reflect.DeepEqual(got, want) || len(want) == 0 {
		t.Fatalf("results differ:\n%v\nwant\n%v", got, want)
	}
}

// TestKeepExisting: keeping a collection that exists loads it, and the
// copy then follows writes as a searched one does.
func TestKeepExisting(t *testing.T) {
	ctx := context.Background()
	f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
	x := f.open(Config{NoSnapshots: true})
	defer x.Close()
	f.put(x, "c", "https://x/a", "zebra stripes")
	if err := x.Keep(ctx, "c", 0); err != nil {
		t.Fatal(err)
	}
	f.put(x, "c", "https://x/b", "giraffes eat leaves")
	f.put(x, "c", "https://x/a", "zebras graze")
	x.cacheMu.RLock()
	m := x.cache["c"]
	x.cacheMu.RUnlock()
	if m == nil || x.Rebuilds() != 1 {
		t.Fatalf("copy held %v, built %d times", m != nil, x.Rebuilds())
	}
	f.sameAsSQLite(m, "c")
}

// TestTermsDoNotHoldText: the keyword index's terms are copies, not slices
// of the chunk text they came from (a term is a slice of its text, or of
// the text lower-cased, and a key holding it would keep the whole text in
// memory as long as the search copy: most of the chunks' text, on a corpus
// of many distinct identifiers).
func TestTermsDoNotHoldText(t *testing.T) {
	text := strings.Repeat("filler ", 200) + "uniqueidentifier anotherone"
	m := newMemColl(2, [3]float32{3, 2, 1})
	m.add(1, "https://x/p", kgagent.Chunk{Title: "title words", Text: text}, []float32{1, 0})
	lo := uintptr(unsafe.Pointer(unsafe.StringData(text)))
	hi := lo + uintptr(len(text))
	for _, fi := range []*fieldIndex{&m.all, &m.head} {
		for i := range fi.terms.len() {
			term := fi.terms.term(int32(i))
			if p := uintptr(unsafe.Pointer(unsafe.StringData(term))); p >= lo && p < hi {
				t.Errorf("term %q points into the chunk's text", term)
			}
		}
	}
	if len(m.all.list("uniqueidentifi")) == 0 && len(m.all.list("uniqueidentifier")) == 0 {
		t.Errorf("terms %v", expandPosts(&m.all))
	}
}

// TestKeepBounded: kept copies that grow past Keep's bound are dropped and
// no longer kept; the end's Snapshot builds the copy from SQLite, as
// without Keep, and it is the same copy.
func TestKeepBounded(t *testing.T) {
	ctx := context.Background()
	f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
	x := f.open(Config{})
	defer x.Close()
	for _, c := range []string{"c", "e"} {
		if err := x.Keep(ctx, c, 40000); err != nil {
			t.Fatal(err)
		}
	}
	f.put(x, "e", "https://x/e", "a small collection")
	held := x.Holds
	i := 0
	for ; i < 1000; i++ {
		f.put(x, "c", fmt.Sprintf("https://x/p%d", i), fmt.Sprintf("Page %d about zebra topic%d", i, i), "giraffes eat leaves")
		if !held("c") {
			break
		}
	}
	if i < 10 || i == 1000 {
		t.Fatalf("copy dropped after %d documents", i)
	}
	x.cacheMu.RLock()
	kept, other := x.keep["c"], x.keep["e"]
	x.cacheMu.RUnlock()
	if kept || !other || !x.Holds("e") {
		t.Fatalf("still kept: c %v, e %v (held %v)", kept, other, x.Holds("e"))
	}
	f.put(x, "c", "https://x/more", "written after the drop")
	if held("c") {
		t.Fatal("a dropped copy came back")
	}
	for _, c := range []string{"c", "e"} {
		if err := x.Snapshot(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if n := x.Rebuilds(); n != 1 {
		t.Fatalf("%d copies built from SQLite, want 1 (the dropped one)", n)
	}
	m, _ := x.collection(ctx, "c")
	f.sameAsSQLite(m, "c")
}

// TestKeepExistingBounded: kgagent ingest run again on a collection whose
// copy is already bigger than the bound (read back from its snapshot, or
// built from SQLite) does not hold that copy through the crawl: Keep
// drops it at once, and the writes that follow leave it dropped, as for a
// copy that grew past the bound. Before, a copy read from its snapshot
// counted 0 bytes, so it stayed held until the writes themselves added the
// bound's worth. And a copy with no current snapshot is built from SQLite
// once, at the end, not also in Keep.
func TestKeepExistingBounded(t *testing.T) {
	ctx := context.Background()
	for _, snaps := range []bool{true, false} {
		f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
		x := f.open(Config{NoSnapshots: !snaps})
		for i := range 200 {
			f.put(x, "c", fmt.Sprintf("https://x/p%d", i), fmt.Sprintf("Page %d about zebra topic%d", i, i), "giraffes eat leaves")
		}
		if err := x.Snapshot(ctx, "c"); err != nil {
			t.Fatal(err)
		}
		x.Close()
		x = f.open(Config{NoSnapshots: !snaps})
		defer x.Close()
		if err := x.Keep(ctx, "c", 40000); err != nil {
			t.Fatal(err)
		}
		if x.Holds("c") || x.Rebuilds() != 0 {
			t.Fatalf("snapshots %v: a copy over the bound held after Keep (%v), or built from SQLite (%d)", snaps, x.Holds("c"), x.Rebuilds())
		}
		f.put(x, "c", "https://x/new", "written during the ingest")
		if x.Holds("c") {
			t.Fatalf("snapshots %v: a copy over the bound held after a write", snaps)
		}
		if err := x.Snapshot(ctx, "c"); err != nil {
			t.Fatal(err)
		}
		if n := x.Rebuilds(); n != 1 {
			t.Fatalf("snapshots %v: copy built from SQLite %d times, want once, at the end", snaps, n)
		}
		m, _ := x.collection(ctx, "c")
		f.sameAsSQLite(m, "c")
	}
}

// TestKeepCollectionDeletedMidIngest: a kept collection deleted while it
// is written (DeleteCollection from the API during kgagent ingest) and
// then written again is held again from the write that re-creates it, and
// its snapshot is the copy SQLite gives, not one with the deleted rows.
func TestKeepCollectionDeletedMidIngest(t *testing.T) {
	ctx := context.Background()
	f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
	x := f.openKept(Config{})
	defer x.Close()
	f.put(x, "c", "https://x/a", "zebra stripes")
	f.put(x, "c", "https://x/b", "giraffes eat leaves")
	if err := x.DeleteCollection(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if x.Holds("c") {
		t.Fatal("a deleted collection's copy held")
	}
	f.put(x, "c", "https://x/c", "okapis hide")
	if !x.Holds("c") {
		t.Fatal("the re-created collection's copy not held")
	}
	if err := x.Snapshot(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if n := x.Rebuilds(); n != 0 {
		t.Fatalf("%d copies built from SQLite", n)
	}
	m, _ := x.collection(ctx, "c")
	if m.live != 1 {
		t.Fatalf("%d rows held, want 1", m.live)
	}
	f.sameAsSQLite(m, "c")
}

// TestKeepCrawledProjected: kgagent ingest tells the index how far its
// crawl has come (Crawled: pages done of those queued). Kept copies that,
// grown at their rate so far to every queued page, would pass the bound
// are dropped then, not grown to the bound first; copies that fit, a
// projection made too early (fewer than crawledMin pages) and unbounded
// copies are left alone. A dropped copy is built from SQLite at the end,
// as one that grew past the bound is.
func TestKeepCrawledProjected(t *testing.T) {
	ctx := context.Background()
	f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
	x := f.open(Config{})
	defer x.Close()
	for _, c := range []string{"c", "e"} {
		if err := x.Keep(ctx, c, 400000); err != nil {
			t.Fatal(err)
		}
	}
	f.put(x, "e", "https://x/e", "an entity")
	for i := range 20 {
		f.put(x, "c", fmt.Sprintf("https://x/p%d", i), fmt.Sprintf("Page %d about zebra topic%d", i, i), "giraffes eat leaves")
	}
	x.cacheMu.RLock()
	kept := x.keptBytes()
	x.cacheMu.RUnlock()
	if kept == 0 || 2*kept > 400000 {
		t.Fatalf("kept copies hold %d bytes: the test needs them well under the bound", kept)
	}
	// held: the projection fits (twice the pages), or comes too early
	fits := crawledMin * 400000 / kept / 2
	if x.Crawled(crawledMin, fits) || x.Crawled(crawledMin-1, 1<<40) || !x.Holds("c") || !x.Holds("e") {
		t.Fatal("copies dropped while their projection fits the bound, or before crawledMin pages")
	}
	// dropped: the queued pages would take them past it
	if !x.Crawled(crawledMin, 3*fits) || x.Holds("c") || x.Holds("e") {
		t.Fatalf("copies projected to %d bytes still held (bound 400000)", kept*3*fits/crawledMin)
	}
	x.cacheMu.RLock()
	still := len(x.keep)
	x.cacheMu.RUnlock()
	if still != 0 {
		t.Fatalf("%d collections still kept", still)
	}
	f.put(x, "c", "https://x/more", "written after the drop")
	f.put(x, "e", "https://x/e2", "another entity")
	if x.Holds("c") || x.Holds("e") || x.Crawled(crawledMin, 1<<40) {
		t.Fatal("a dropped copy came back")
	}
	for _, c := range []string{"c", "e"} {
		if err := x.Snapshot(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if n := x.Rebuilds(); n != 2 {
		t.Fatalf("%d copies built from SQLite, want 2 (the dropped ones)", n)
	}
	m, _ := x.collection(ctx, "c")
	f.sameAsSQLite(m, "c")

	// unbounded: never dropped
	y := (&snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: f.emb}).open(Config{})
	defer y.Close()
	if err := y.Keep(ctx, "c", 0); err != nil {
		t.Fatal(err)
	}
	f.put(y, "c", "https://x/a", "zebra stripes")
	if y.Crawled(crawledMin, 1<<40) || !y.Holds("c") {
		t.Fatal("an unbounded copy dropped")
	}
}

// TestKeepCrawledIndexPagesFirst: copies whose first 100 pages grew them at
// twice their final rate (the Python docs' index pages come first; 525
// queued) project past the bound at 100 pages but not at 200, where the
// rate has settled: they are kept. crawledMin was 100: 2 of 6 Python docs
// ingests dropped their copies and built them from SQLite at the end.
func TestKeepCrawledIndexPagesFirst(t *testing.T) {
	ctx := context.Background()
	f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
	x := f.open(Config{})
	defer x.Close()
	if err := x.Keep(ctx, "c", 1<<40); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		f.put(x, "c", fmt.Sprintf("https://x/p%d", i), fmt.Sprintf("Page %d about zebra topic%d", i, i), "giraffes eat leaves")
	}
	x.cacheMu.Lock()
	kept := x.keptBytes()
	// the bound that these bytes at 100 of 525 pages project 1.08 of
	bound := kept * 525 * 100 / 108 / 100
	x.keepMax = bound
	x.cacheMu.Unlock()
	if kept == 0 || kept > bound {
		t.Fatalf("kept copy of %d bytes, bound %d", kept, bound)
	}
	for _, done := range []int64{100, 200} {
		if x.Crawled(done, 525) || !x.Holds("c") {
			t.Fatalf("a copy of %d bytes after %d of 525 pages dropped under a bound of %d", kept, done, bound)
		}
	}
}

// TestKeepCrawledRecrawl: an ingest run again on a collection whose copy
// Keep loaded from its snapshot, well within the bound, keeps it while the
// crawl's pages are unchanged: Crawled projects what the crawl adds to the
// copies, not what they held before it (it dropped the Python docs' copies,
// ~27 MB under a 50 MiB bound, 100 pages into a re-crawl with 518 queued,
// to be built from SQLite at the end if a page changed). A re-crawl whose
// writes grow the copies past the bound still drops them.
func TestKeepCrawledRecrawl(t *testing.T) {
	ctx := context.Background()
	f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
	x := f.open(Config{})
	for i := range 200 {
		f.put(x, "c", fmt.Sprintf("https://x/p%d", i), fmt.Sprintf("Page %d about zebra topic%d", i, i), "giraffes eat leaves")
	}
	if err := x.Snapshot(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	x.Close()
	x = f.open(Config{})
	defer x.Close()
	if err := x.Keep(ctx, "c", 1<<40); err != nil { // only to read the copy's size
		t.Fatal(err)
	}
	x.cacheMu.RLock()
	loaded := x.keptBytes()
	x.cacheMu.RUnlock()
	x.Release("c")
	bound := 2 * loaded
	if err := x.Keep(ctx, "c", bound); err != nil {
		t.Fatal(err)
	}
	if !x.Holds("c") || x.Rebuilds() != 0 {
		t.Fatalf("the copy (%d bytes, bound %d) not held after Keep, or built from SQLite", loaded, bound)
	}
	// 500 pages queued, 100 done, all unchanged: nothing added
	if x.Crawled(crawledMin, 5*crawledMin) || !x.Holds("c") {
		t.Fatalf("a copy of %d bytes, grown by nothing in the crawl, dropped under a bound of %d", loaded, bound)
	}
	// the crawl's writes add at a rate that would take it past the bound
	for i := range 40 {
		f.put(x, "c", fmt.Sprintf("https://x/new%d", i), fmt.Sprintf("New page %d about okapi topic%d", i, i), "okapis eat leaves too")
	}
	x.cacheMu.RLock()
	grown := x.keptBytes() - loaded
	x.cacheMu.RUnlock()
	if grown <= 0 {
		t.Fatalf("the copy grew by %d bytes", grown)
	}
	total := crawledMin + crawledMin*(bound-loaded)/grown + 1
	if !x.Crawled(crawledMin, total) || x.Holds("c") {
		t.Fatalf("a copy of %d bytes growing %d bytes every %d pages, %d pages queued, held under a bound of %d", loaded, grown, crawledMin, total, bound)
	}
}

// TestKeepCreatedByChunklessFirst: when the transaction that creates a
// kept collection also holds, queued first, a page with no chunks for it
// (an entity collection's entry of a page without entities), the copy is
// made by the page that brought chunks, with their dimension, and is the
// copy SQLite gives. The chunkless page made a copy of 0 dimensions that
// the rows went into.
func TestKeepCreatedByChunklessFirst(t *testing.T) {
	ctx := context.Background()
	f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
	x := f.openKept(Config{})
	defer x.Close()
	texts := []string{"zebra stripes and giraffes", "the json module"}
	var cs []kgagent.Chunk
	for i, s := range texts {
		cs = append(cs, kgagent.Chunk{ID: corpus.ChunkID("c", "https://x/b", i), Collection: "c", DocURL: "https://x/b", URL: fmt.Sprintf("https://x/b#s%d", i),
			Title: "Page b", HeadingPath: []string{"Section"}, Ordinal: i, Text: s})
	}
	vs, err := f.emb.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	terms := make([]chunkTerms, len(cs))
	for i := range cs {
		terms[i] = chunkTermsOf(&cs[i], x.weights())
	}
	x.runGroup([]*writeJob{
		{ctx: ctx, collection: "c", docURL: "https://x/a"},
		{ctx: ctx, collection: "c", docURL: "https://x/b", chunks: cs, vectors: vs, dim: len(vs[0]), terms: terms},
	})
	x.cacheMu.RLock()
	m := x.cache["c"]
	x.cacheMu.RUnlock()
	if m == nil || m.dim != len(vs[0]) || len(m.rids) != len(cs) {
		t.Fatalf("kept copy %v, want %d rows of %d dimensions", m != nil && m.dim == len(vs[0]), len(cs), len(vs[0]))
	}
	f.sameAsSQLite(m, "c")
}
