package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/internal/snapfile"
)

// snapFixture writes pages into a file index with the lexical embedder.
type snapFixture struct {
	t    *testing.T
	path string
	emb  *corpus.Lexical
}

func (f *snapFixture) open(cfg Config) *Index {
	f.t.Helper()
	cfg.Path = f.path
	x, err := Open(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	return x
}

// openKept opens the fixture's index with cfg and keeps collection "c"
// in memory.
func (f *snapFixture) openKept(cfg Config) *Index {
	x := f.open(cfg)
	if err := x.Keep(context.Background(), "c", 0); err != nil {
		f.t.Fatal(err)
	}
	return x
}

func (f *snapFixture) put(x *Index, coll, url string, texts ...string) {
	f.t.Helper()
	var cs []kgagent.Chunk
	for i, s := range texts {
		cs = append(cs, kgagent.Chunk{ID: corpus.ChunkID(coll, url, i), Collection: coll, DocURL: url, URL: fmt.Sprintf("%s#s%d", url, i),
			Title: "Page " + url, HeadingPath: []string{"Section", fmt.Sprint(i)}, Ordinal: i, Text: s})
	}
	vs, err := f.emb.Embed(context.Background(), texts)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := x.ReplaceDocument(context.Background(), coll, url, cs, vs); err != nil {
		f.t.Fatal(err)
	}
}

var snapQueries = []string{"zebra stripes", "how giraffes eat", "json parser module", "unrelated", "Section 1"}

// results searches every query in every mode.
func (f *snapFixture) results(x *Index, coll string) []string {
	f.t.Helper()
	var out []string
	for _, q := range snapQueries {
		for _, mode := range []corpus.Mode{corpus.ModeDense, corpus.ModeKeyword, corpus.ModeHybrid} {
			vs, _ := f.emb.Embed(context.Background(), []string{q})
			hits, err := x.Search(context.Background(), corpus.Query{Collection: coll, Text: q, Vector: vs[0], K: 5, Mode: mode})
			if err != nil {
				f.t.Fatal(err)
			}
			for _, h := range hits {
				out = append(out, fmt.Sprintf("%s %s %s %.6f", q, mode, h.URL, h.Score))
			}
		}
	}
	return out
}

// fresh is what a load from SQLite alone answers.
func (f *snapFixture) fresh(coll string) []string {
	x := f.open(Config{NoSnapshots: true})
	defer x.Close()
	return f.results(x, coll)
}

// TestSnapshotAnswersLikeSQLite: a search copy read back from its snapshot
// answers exactly like one built from SQLite, and a snapshot is used only
// while nothing was written after it.
func TestSnapshotAnswersLikeSQLite(t *testing.T) {
	f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
	x := f.open(Config{})
	f.put(x, "c", "https://x/zebra", "zebra stripes are black and white", "zebras graze")
	f.put(x, "c", "https://x/giraffe", "giraffes eat leaves from tall trees", "long necks")
	f.put(x, "c", "https://x/json", "the json module parses JSON text", "json.loads and json.dumps")
	f.put(x, "c", "https://x/gone", "a page about zebra crossings", "that will be deleted")
	f.put(x, "d", "https://x/other", "another collection about zebra")
	if err := x.DeleteDocument(context.Background(), "c", "https://x/gone"); err != nil {
		t.Fatal(err)
	}
	first := f.results(x, "c") // loads c from SQLite and snapshots it
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	want := f.fresh("c")
	if !reflect.DeepEqual(first, want) || len(want) == 0 {
		t.Fatalf("results differ before any snapshot:\n%v\n%v", first, want)
	}

	// Reopened: c comes from its snapshot and answers the same.
	x = f.open(Config{})
	if got := f.results(x, "c"); !reflect.DeepEqual(got, want) {
		t.Fatalf("from the snapshot:\n%v\nwant\n%v", got, want)
	}
	if n := x.snapHits.Load(); n != 1 {
		t.Fatalf("%d search copies read from snapshots, want 1", n)
	}
	// Written while loaded: the copy follows, and Close snapshots it again.
	f.put(x, "c", "https://x/zebra", "zebra stripes differ for every zebra", "a new second chunk", "and a third")
	f.put(x, "c", "https://x/new", "okapis are related to giraffes")
	x.Close()
	// (A copy kept current by writes counts its tombstones in document
	// frequencies until reloaded; its snapshot, like a reload, has none.)
	want = f.fresh("c")
	x = f.open(Config{})
	if got := f.results(x, "c"); !reflect.DeepEqual(got, want) || x.snapHits.Load() != 1 {
		t.Fatalf("snapshot written at close (%d used):\n%v\nwant\n%v", x.snapHits.Load(), got, want)
	}
	x.Close()

	// Written while not loaded: the snapshot is stale and not used.
	x = f.open(Config{})
	f.put(x, "c", "https://x/json", "the json module was rewritten")
	x.Close()
	x = f.open(Config{})
	got := f.results(x, "c")
	if x.snapHits.Load() != 0 {
		t.Fatal("a stale snapshot was used")
	}
	x.Close()
	if want := f.fresh("c"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after a write to an unloaded collection:\n%v\nwant\n%v", got, want)
	}

	// A damaged snapshot is not used.
	snap := filepath.Join(f.path+"-snap", "63") // hex("c")
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(snap, b, 0o644); err != nil {
		t.Fatal(err)
	}
	x = f.open(Config{})
	if got := f.results(x, "c"); x.snapHits.Load() != 0 || !reflect.DeepEqual(got, f.fresh("c")) {
		t.Fatalf("damaged snapshot: used %d times, results %v", x.snapHits.Load(), got)
	}
	x.Close()

	// A deleted collection's snapshot goes with it; made again with as many
	// writes, it is loaded from SQLite.
	x = f.open(Config{})
	f.results(x, "d")
	if err := x.DeleteCollection(context.Background(), "d"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.path+"-snap", "64")); !os.IsNotExist(err) {
		t.Errorf("snapshot of the deleted collection: %v", err)
	}
	f.put(x, "d", "https://x/other", "a different text about okapis")
	x.Close()
	x = f.open(Config{})
	if got := f.results(x, "d"); !slices.ContainsFunc(got, func(s string) bool { return s != "" }) || !reflect.DeepEqual(got, f.fresh("d")) {
		t.Fatalf("recreated collection: %v", got)
	}
	x.Close()
}

// TestSnapshotRoundTrip: decoding an encoded copy gives the structure a
// load from SQLite builds, tombstones dropped.
func TestSnapshotRoundTrip(t *testing.T) {
	f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
	x := f.open(Config{NoSnapshots: true})
	defer x.Close()
	for i := range 30 {
		f.put(x, "c", fmt.Sprintf("https://x/p%d", i), fmt.Sprintf("page %d about topic %d", i, i%7), "shared words here")
	}
	m, err := x.collection(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 { // tombstones in the loaded copy
		f.put(x, "c", fmt.Sprintf("https://x/p%d", i), "replaced text")
	}
	x.cacheMu.RLock()
	e := &snapfile.Encoder{}
	encodeSnapshot(e, m)
	enc := e.B
	x.cacheMu.RUnlock()
	got, err := decodeSnapshot(enc, m.dim, m.weights)
	if err != nil {
		t.Fatal(err)
	}
	x.cacheMu.Lock()
	delete(x.cache, "c")
	x.cacheMu.Unlock()
	want, err := x.collection(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	for name, eq := range map[string]bool{"rids": reflect.DeepEqual(got.rids, want.rids), "docs": reflect.DeepEqual(slotDocs(got), slotDocs(want)),
		"vecs": reflect.DeepEqual(got.vecs, want.vecs), "cols": reflect.DeepEqual(got.cols, want.cols), "scales": reflect.DeepEqual(got.scales, want.scales),
		"all.post": reflect.DeepEqual(expandPosts(&got.all), expandPosts(&want.all)), "head.post": reflect.DeepEqual(expandPosts(&got.head), expandPosts(&want.head)),
		"lens": reflect.DeepEqual(got.all.lens, want.all.lens), "docLive": reflect.DeepEqual(got.docLive, want.docLive), "pos": reflect.DeepEqual(got.pos, want.pos),
		"docID": reflect.DeepEqual(got.docID, want.docID), "docLen": reflect.DeepEqual(got.docLen, want.docLen)} {
		if !eq {
			t.Errorf("%s differs", name)
		}
	}
	if !reflect.DeepEqual(got.rids, want.rids) || !reflect.DeepEqual(slotDocs(got), slotDocs(want)) || !reflect.DeepEqual(got.vecs, want.vecs) ||
		!reflect.DeepEqual(got.cols, want.cols) || !reflect.DeepEqual(got.scales, want.scales) || !reflect.DeepEqual(expandPosts(&got.all), expandPosts(&want.all)) ||
		!reflect.DeepEqual(expandPosts(&got.head), expandPosts(&want.head)) || !reflect.DeepEqual(got.all.lens, want.all.lens) || got.live != want.live ||
		got.livePage != want.livePage || !reflect.DeepEqual(got.docLive, want.docLive) || !reflect.DeepEqual(got.pos, want.pos) {
		t.Fatal("decoded snapshot differs from a fresh load")
	}
	for i := range enc { // every truncation fails cleanly
		if _, err := decodeSnapshot(enc[:i], m.dim, m.weights); err == nil {
			t.Fatalf("truncated to %d of %d bytes: no error", i, len(enc))
		}
	}
}

// TestSnapshotPostingsCompact: format 2 writes a posting in a few bytes (a
// slot's difference from the one before and its frequency's index, as
// varints) where format 1 wrote eight (slot and frequency as 4 bytes
// each), and a row id and page in two where format 1 wrote twelve: the
// body of 400 chunks is under what its vectors, floats and terms take plus
// 3 bytes a posting and 3 a row (format 1: 8 and 12).
func TestSnapshotPostingsCompact(t *testing.T) {
	f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
	x := f.open(Config{NoSnapshots: true})
	defer x.Close()
	for i := range 100 {
		f.put(x, "c", fmt.Sprintf("https://x/p%d", i), fmt.Sprintf("page %d about topic %d", i, i%7), "shared words here",
			fmt.Sprintf("more text on item%d and item%d", i%13, i%17), "the closing lines of every page")
	}
	m, err := x.collection(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	x.cacheMu.RLock()
	defer x.cacheMu.RUnlock()
	e := &snapfile.Encoder{}
	encodeSnapshot(e, m)
	postings, terms := 0, 0
	for _, fi := range []*fieldIndex{&m.all, &m.head} {
		for t, ps := range fi.lists {
			postings += len(ps)
			terms += 4 + len(fi.terms.term(int32(t)))
		}
	}
	// vectors, scales and two lengths a row, the frequency tables, terms
	fixed := m.live*m.dim + 3*4*m.live + 2*4*64 + terms
	if limit := fixed + 3*postings + 3*m.live + 1024; len(e.B) > limit {
		t.Errorf("%d rows, %d postings: body of %d bytes, want at most %d", m.live, postings, len(e.B), limit)
	}
	got, err := decodeSnapshot(e.B, m.dim, m.weights)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(expandPosts(&got.all), expandPosts(&m.all)) || !reflect.DeepEqual(expandPosts(&got.head), expandPosts(&m.head)) || !reflect.DeepEqual(got.rids, m.rids) {
		t.Error("postings or row ids read back differ")
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 'a'})
	// a real body: one row of dim 4 (format 2)
	m := newMemColl(4, [3]float32{6, 2, 1})
	m.add(7, "https://x/p", kgagent.Chunk{Title: "Zebra", HeadingPath: []string{"Stripes"}, Text: "zebra stripes"}, []float32{1, 0, -3, 2})
	e := &snapfile.Encoder{}
	encodeSnapshot(e, m)
	if _, err := decodeSnapshot(e.B, 4, [3]float32{6, 2, 1}); err != nil {
		f.Fatalf("seed: %v", err)
	}
	f.Add(e.B)
	// colMin rows, so the columns are read sparse (spCol)
	big := newMemColl(4, [3]float32{6, 2, 1})
	for i := range colMin {
		big.add(int64(i+1), "https://x/p", kgagent.Chunk{Text: "w"}, []float32{float32(i % 3), 0, 1, float32(i%5) - 2})
	}
	e = &snapfile.Encoder{}
	encodeSnapshot(e, big)
	if got, err := decodeSnapshot(e.B, 4, [3]float32{6, 2, 1}); err != nil || !got.byCol {
		f.Fatalf("seed of %d rows: %v", colMin, err)
	}
	f.Add(e.B)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeSnapshot(b, 4, [3]float32{6, 2, 1})
	})
}

// TestSnapshotNow: Snapshot writes a collection's snapshot before any search
// loaded it (what kgagent ingest does at its end), so the next process
// builds nothing from SQLite; without it, the next process rebuilds.
func TestSnapshotNow(t *testing.T) {
	for _, snapshot := range []bool{true, false} {
		f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
		x := f.open(Config{})
		f.put(x, "c", "https://x/zebra", "zebra stripes are black and white", "zebras graze")
		f.put(x, "c", "https://x/json", "the json module parses JSON text")
		if snapshot {
			if err := x.Snapshot(context.Background(), "c"); err != nil {
				t.Fatal(err)
			}
			if err := x.Snapshot(context.Background(), "no-such-collection"); err != nil {
				t.Fatal(err)
			}
		}
		x.Close()
		want := f.fresh("c")
		x = f.open(Config{})
		if got := f.results(x, "c"); !reflect.DeepEqual(got, want) {
			t.Fatalf("results %v, want %v", got, want)
		}
		wantRebuilds := int64(1)
		if snapshot {
			wantRebuilds = 0
		}
		if n := x.Rebuilds(); n != wantRebuilds {
			t.Errorf("snapshot written %v: %d search copies built from SQLite, want %d", snapshot, n, wantRebuilds)
		}
		x.Close()
	}
}

// TestRelease: a released search copy leaves memory, and the next search
// reads it back from its snapshot (no rebuild from SQLite) with the same
// results.
func TestRelease(t *testing.T) {
	f := &snapFixture{t: t, path: filepath.Join(t.TempDir(), "index.db"), emb: corpus.NewLexical(corpus.LexicalConfig{})}
	x := f.open(Config{})
	defer x.Close()
	f.put(x, "c", "https://x/zebra", "zebra stripes are black and white", "zebras graze")
	f.put(x, "c", "https://x/json", "the json module parses JSON text")
	if err := x.Snapshot(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	want := f.results(x, "c")
	built := x.Rebuilds()
	x.Release("c")
	x.cacheMu.RLock()
	_, held := x.cache["c"]
	x.cacheMu.RUnlock()
	if held {
		t.Fatal("search copy still held after Release")
	}
	if got := f.results(x, "c"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after Release: results %v, want %v", got, want)
	}
	if n := x.Rebuilds(); n != built {
		t.Errorf("after Release: %d search copies built from SQLite, want %d (read from the snapshot)", n, built)
	}
}

// TestSnapshotWriteStreams: a search copy's snapshot is compressed into its
// file as it is encoded, so writing it allocates less than the size of
// the compressed body (10 MB for this 15.6 MB body, the compressor's and
// the encoder's buffers mostly). Before, the whole compressed body was held
// in memory, grown by doubling, and only then written (58 MB allocated;
// the OpenJDK docs' copy: ~30 MB held beside the copy itself at the end of
// kgagent ingest).
func TestSnapshotWriteStreams(t *testing.T) {
	x, err := Open(Config{Path: filepath.Join(t.TempDir(), "index.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	const dim, rows = 384, 40000
	m := newMemColl(dim, x.weights())
	m.reserve(rows)
	rng := rand.New(rand.NewPCG(1, 2))
	row := make([]int8, dim)
	for s := range rows {
		for j := range row {
			row[j] = int8(rng.IntN(255) - 127) // incompressible
		}
		m.appendRow(row, 1)
		ct := chunkTerms{terms: []string{fmt.Sprint("t", s)}, tf: []float32{1}, length: 1}
		m.addTerms(int64(s+1), "https://x/d", &ct)
	}
	m.version = 1
	m.snapVersion.Store(-1)
	x.cacheMu.Lock()
	x.cache["c"] = m
	x.cacheMu.Unlock()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := x.writeSnapshot("c", m); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	fi, err := os.Stat(x.snapPath("c"))
	if err != nil {
		t.Fatal(err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(fi.Size()) {
		t.Fatalf("writing a %d-byte snapshot allocated %d bytes", fi.Size(), alloc)
	}
	if got := x.readSnapshot("c", 1, dim); got == nil || len(got.rids) != rows {
		t.Fatal("the snapshot written does not read back")
	}
}
