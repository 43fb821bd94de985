// Package corpustest is the conformance suite every corpus.Index passes: the
// embedded index (corpus/sqlite) and the Qdrant adapter (against its gRPC
// stand-in in CI and a real server when QDRANT_URL is set). Call Run from a
// test in the implementation's package, in the manner of testing/fstest.
//
// The contract it checks, beyond the Index doc comments:
//   - ReplaceDocument replaces all chunks of a document at once; an empty
//     chunk list deletes; a failed call leaves what was stored untouched.
//   - Collections are isolated; DeleteDocument and DeleteCollection of one
//     never touch another; deleting what does not exist is not an error.
//   - Search returns at most K hits, best first (scores non-increasing), no
//     duplicates, with every Chunk field as stored; an unknown or empty
//     collection gives no hits and no error; URLPrefix filters by DocURL.
//   - Bad arguments give EINVALID: empty collection, K <= 0, unknown mode,
//     a dense or hybrid query without a vector, a keyword or hybrid query
//     without text, vectors not matching chunks one to one, a chunk whose
//     DocURL differs from the docURL argument, vectors of unequal length.
//   - Concurrent writes to different documents all land; concurrent writes
//     to one document leave exactly one version.
package corpustest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// Dim is the vector length the suite uses.
const Dim = 128

// Embedder is the embedder the suite computes its vectors with.
var Embedder = corpus.NewLexical(corpus.LexicalConfig{Dim: Dim})

type fixtureDoc struct {
	url, title, text string
}

// Fixture documents: distinct topics, two sections each, one outside /docs/.
var fixture = []fixtureDoc{
	{"https://ex.org/docs/zipfile", "zipfile — Work with ZIP archives",
		"The zipfile module reads and writes ZIP archive files.\n\n# ZipFile objects\nOpen a ZIP archive for reading, writing or appending compressed members."},
	{"https://ex.org/docs/json", "json — JSON encoder and decoder",
		"Encode Python objects as JSON text and decode JSON documents.\n\n# Basic usage\nSerialize obj as a JSON formatted stream with dumps and parse it with loads."},
	{"https://ex.org/docs/smtplib", "smtplib — SMTP protocol client",
		"Send electronic mail to any internet machine with an SMTP or ESMTP listener daemon.\n\n# SMTP objects\nThe sendmail method delivers a message to the recipients."},
	{"https://ex.org/docs/threading", "threading — Thread-based parallelism",
		"Construct higher-level threading interfaces on top of the low-level thread module.\n\n# Lock objects\nA primitive lock is a synchronization primitive that is not owned by a particular thread."},
	{"https://ex.org/docs/sqlite3", "sqlite3 — DB-API 2.0 interface for SQLite databases",
		"SQLite is a C library that provides a lightweight disk-based database.\n\n# Cursor objects\nExecute SQL statements and fetch rows from a cursor."},
	{"https://ex.org/blog/compression-tips", "Tips on compression",
		"Compressing log files saves disk space; gzip and bzip2 are common choices.\n\n# Archives\nAn archive bundles many files into one."},
}

func chunksOf(collection string, d fixtureDoc) ([]kgagent.Chunk, [][]float32) {
	chunks := corpus.ChunkText(collection, d.url, d.title, d.text, corpus.ChunkConfig{})
	texts := make([]string, len(chunks))
	for i, c := range chunks {
		texts[i] = corpus.IndexText(c)
	}
	vecs, _ := Embedder.Embed(context.Background(), texts)
	return chunks, vecs
}

func load(t *testing.T, idx corpus.Index, collection string, docs ...fixtureDoc) map[string][]kgagent.Chunk {
	t.Helper()
	out := map[string][]kgagent.Chunk{}
	for _, d := range docs {
		chunks, vecs := chunksOf(collection, d)
		if err := idx.ReplaceDocument(context.Background(), collection, d.url, chunks, vecs); err != nil {
			t.Fatalf("ReplaceDocument(%s, %s): %v", collection, d.url, err)
		}
		out[d.url] = chunks
	}
	return out
}

func vec(text string) []float32 { return Embedder.Vector(text) }

func search(t *testing.T, idx corpus.Index, q corpus.Query) []corpus.Hit {
	t.Helper()
	hits, err := idx.Search(context.Background(), q)
	if err != nil {
		t.Fatalf("Search(%+v): %v", q, err)
	}
	checkHits(t, q, hits)
	return hits
}

func checkHits(t *testing.T, q corpus.Query, hits []corpus.Hit) {
	t.Helper()
	if len(hits) > q.K {
		t.Errorf("Search %q: %d hits > k=%d", q.Text, len(hits), q.K)
	}
	seen := map[string]bool{}
	for i, h := range hits {
		if seen[h.ID] {
			t.Errorf("Search %q: duplicate hit %s", q.Text, h.ID)
		}
		seen[h.ID] = true
		if i > 0 && h.Score > hits[i-1].Score+1e-9 {
			t.Errorf("Search %q: hit %d score %v > previous %v", q.Text, i, h.Score, hits[i-1].Score)
		}
		if h.Collection != q.Collection {
			t.Errorf("Search %q: hit from collection %q, want %q", q.Text, h.Collection, q.Collection)
		}
		if !strings.HasPrefix(h.DocURL, q.URLPrefix) {
			t.Errorf("Search %q: hit %s outside prefix %q", q.Text, h.DocURL, q.URLPrefix)
		}
	}
}

func docURLs(hits []corpus.Hit) []string {
	var out []string
	for _, h := range hits {
		if !slices.Contains(out, h.DocURL) {
			out = append(out, h.DocURL)
		}
	}
	return out
}

func code(err error) string { return kgagent.ErrorCode(err) }

// Run runs the conformance suite. newIndex returns a fresh, empty index for
// each subtest; it should register its own cleanup with t.Cleanup.
func Run(t *testing.T, newIndex func(t *testing.T) corpus.Index) {
	ctx := context.Background()
	modes := []corpus.Mode{corpus.ModeDense, corpus.ModeKeyword, corpus.ModeHybrid}

	t.Run("DocumentReader", func(t *testing.T) {
		idx := newIndex(t)
		r, ok := idx.(corpus.DocumentReader)
		if !ok {
			t.Skip("the index does not implement corpus.DocumentReader")
		}
		if ds, err := r.Documents(ctx, "nothing", "", 10); err != nil || len(ds) != 0 {
			t.Fatalf("Documents of an unknown collection: %+v %v", ds, err)
		}
		if cs, err := r.DocumentChunks(ctx, "nothing", fixture[0].url); err != nil || len(cs) != 0 {
			t.Fatalf("DocumentChunks of an unknown collection: %+v %v", cs, err)
		}
		stored := load(t, idx, "docs", fixture...)
		load(t, idx, "other", fixture[1])
		var urls []string
		for _, d := range fixture {
			urls = append(urls, d.url)
		}
		slices.Sort(urls)
		var got []string
		after := ""
		for page := 0; page < 10; page++ {
			ds, err := r.Documents(ctx, "docs", after, 4)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) > 4 {
				t.Fatalf("Documents returned %d > limit 4", len(ds))
			}
			if len(ds) == 0 {
				break
			}
			for _, d := range ds {
				got = append(got, d.URL)
				if want := stored[d.URL]; d.Chunks != len(want) || d.Title != want[0].Title {
					t.Errorf("document %s: %+v, want %d chunks titled %q", d.URL, d, len(want), want[0].Title)
				}
			}
			after = ds[len(ds)-1].URL
		}
		if !slices.Equal(got, urls) {
			t.Fatalf("Documents paged to %v, want %v", got, urls)
		}
		for _, d := range fixture {
			cs, err := r.DocumentChunks(ctx, "docs", d.url)
			if err != nil {
				t.Fatal(err)
			}
			want := stored[d.url]
			if len(cs) != len(want) {
				t.Fatalf("DocumentChunks(%s): %d chunks, want %d", d.url, len(cs), len(want))
			}
			for i := range cs {
				if cs[i].ID != want[i].ID || cs[i].Ordinal != i || cs[i].Text != want[i].Text || cs[i].Anchor != want[i].Anchor || cs[i].URL != want[i].URL || !slices.Equal(cs[i].HeadingPath, want[i].HeadingPath) {
					t.Fatalf("DocumentChunks(%s)[%d] = %+v, want %+v", d.url, i, cs[i], want[i])
				}
			}
		}
		if err := idx.DeleteDocument(ctx, "docs", fixture[0].url); err != nil {
			t.Fatal(err)
		}
		if cs, err := r.DocumentChunks(ctx, "docs", fixture[0].url); err != nil || len(cs) != 0 {
			t.Fatalf("a deleted document still reads: %+v %v", cs, err)
		}
		if ds, err := r.Documents(ctx, "other", "", 10); err != nil || len(ds) != 1 || ds[0].URL != fixture[1].url {
			t.Fatalf("Documents of another collection: %+v %v", ds, err)
		}
	})

	t.Run("EmptyCollection", func(t *testing.T) {
		idx := newIndex(t)
		for _, m := range modes {
			hits := search(t, idx, corpus.Query{Collection: "nothing", Vector: vec("zip"), Text: "zip", K: 5, Mode: m})
			if len(hits) != 0 {
				t.Errorf("%s: %d hits in an empty collection", m, len(hits))
			}
		}
		// deleting what does not exist is fine
		if err := idx.DeleteDocument(ctx, "nothing", "https://ex.org/x"); err != nil {
			t.Errorf("DeleteDocument of nothing: %v", err)
		}
		if err := idx.DeleteCollection(ctx, "nothing"); err != nil {
			t.Errorf("DeleteCollection of nothing: %v", err)
		}
	})

	t.Run("RoundTrip", func(t *testing.T) {
		idx := newIndex(t)
		stored := load(t, idx, "docs", fixture...)
		hits := search(t, idx, corpus.Query{Collection: "docs", Text: "sendmail recipients", Vector: vec("sendmail recipients"), K: 3, Mode: corpus.ModeHybrid})
		if len(hits) == 0 {
			t.Fatal("no hits")
		}
		h := hits[0]
		var want kgagent.Chunk
		for _, c := range stored["https://ex.org/docs/smtplib"] {
			if c.ID == h.ID {
				want = c
			}
		}
		if want.ID == "" {
			t.Fatalf("top hit %s (%s) is not an smtplib chunk", h.ID, h.DocURL)
		}
		got := h.Chunk
		if got.ID != want.ID || got.Collection != want.Collection || got.DocURL != want.DocURL || got.URL != want.URL ||
			got.Title != want.Title || !slices.Equal(got.HeadingPath, want.HeadingPath) || got.Anchor != want.Anchor ||
			got.Ordinal != want.Ordinal || got.Text != want.Text || got.Hash != want.Hash {
			t.Errorf("hit chunk\n got %+v\nwant %+v", got, want)
		}
	})

	t.Run("Ordering", func(t *testing.T) {
		idx := newIndex(t)
		load(t, idx, "docs", fixture...)
		tests := []struct {
			query, wantTop string
		}{
			{"ZIP archive members", "https://ex.org/docs/zipfile"},
			{"serialize objects to JSON", "https://ex.org/docs/json"},
			{"send mail with SMTP", "https://ex.org/docs/smtplib"},
			{"lock synchronization primitive", "https://ex.org/docs/threading"},
			{"SQL cursor fetch rows", "https://ex.org/docs/sqlite3"},
		}
		for _, tt := range tests {
			for _, m := range modes {
				hits := search(t, idx, corpus.Query{Collection: "docs", Text: tt.query, Vector: vec(tt.query), K: 4, Mode: m})
				if len(hits) == 0 || hits[0].DocURL != tt.wantTop {
					t.Errorf("%s %q: top docs %v, want %s first", m, tt.query, docURLs(hits), tt.wantTop)
				}
			}
		}
		// keyword search finds only chunks containing a query word
		hits := search(t, idx, corpus.Query{Collection: "docs", Text: "sendmail", K: 10, Mode: corpus.ModeKeyword})
		if len(hits) != 1 || !strings.Contains(hits[0].Text, "sendmail") {
			t.Errorf("keyword sendmail: %d hits %v", len(hits), docURLs(hits))
		}
		// hybrid sees what either side sees
		hyb := search(t, idx, corpus.Query{Collection: "docs", Text: "sendmail", Vector: vec("lock primitive"), K: 10, Mode: corpus.ModeHybrid})
		d := docURLs(hyb)
		if !slices.Contains(d, "https://ex.org/docs/smtplib") || !slices.Contains(d, "https://ex.org/docs/threading") {
			t.Errorf("hybrid should fuse keyword and dense results, got %v", d)
		}
	})

	// Keyword search weights the page title above the body (BM25F) on
	// every backend: a page titled with the query word outranks a short
	// note that mentions it once in passing, which plain BM25 over the
	// concatenated text ranks first (the note is much shorter).
	t.Run("FieldWeights", func(t *testing.T) {
		idx := newIndex(t)
		titled := fixtureDoc{"https://ex.org/docs/deque", "deque — double-ended queues",
			"Fast appends and pops from either end, with memory use that stays the same in both directions. " +
				"Indexed access is slower in the middle; use a list when random access dominates and " +
				"appends happen mostly at the right end of the sequence."}
		note := fixtureDoc{"https://ex.org/blog/note", "Note", "A deque, in passing."}
		load(t, idx, "docs", append([]fixtureDoc{titled, note}, fixture...)...)
		hits := search(t, idx, corpus.Query{Collection: "docs", Text: "deque", K: 3, Mode: corpus.ModeKeyword})
		if len(hits) == 0 || hits[0].DocURL != titled.url {
			t.Errorf("keyword deque: top docs %v, want %s (deque in its title) first", docURLs(hits), titled.url)
		}
	})

	t.Run("KLimits", func(t *testing.T) {
		idx := newIndex(t)
		stored := load(t, idx, "docs", fixture...)
		total := 0
		for _, cs := range stored {
			total += len(cs)
		}
		for _, m := range []corpus.Mode{corpus.ModeDense, corpus.ModeHybrid} {
			for _, k := range []int{1, 3, total, total + 50} {
				hits := search(t, idx, corpus.Query{Collection: "docs", Text: "archive", Vector: vec("archive"), K: k, Mode: m})
				if want := min(k, total); len(hits) != want {
					t.Errorf("%s k=%d: %d hits, want %d", m, k, len(hits), want)
				}
			}
		}
		hits := search(t, idx, corpus.Query{Collection: "docs", Text: "archive", K: 1, Mode: corpus.ModeKeyword})
		if len(hits) != 1 {
			t.Errorf("keyword k=1: %d hits", len(hits))
		}
	})

	t.Run("ReplaceAndDelete", func(t *testing.T) {
		idx := newIndex(t)
		load(t, idx, "docs", fixture...)
		zip := fixture[0]
		// replace with a one-section version: the old chunks go
		newer := fixtureDoc{zip.url, zip.title, "Only a short note about quokkas now."}
		load(t, idx, "docs", newer)
		hits := search(t, idx, corpus.Query{Collection: "docs", Text: "compressed members appending", K: 10, Mode: corpus.ModeKeyword})
		if slices.Contains(docURLs(hits), zip.url) {
			t.Errorf("old chunks of a replaced document are still found")
		}
		hits = search(t, idx, corpus.Query{Collection: "docs", Vector: vec("quokkas"), Text: "quokkas", K: 10, Mode: corpus.ModeHybrid})
		n := 0
		for _, h := range hits {
			if h.DocURL == zip.url {
				n++
			}
		}
		if n != 1 || hits[0].DocURL != zip.url {
			t.Errorf("after replace: %d chunks of %s, top %v", n, zip.url, docURLs(hits))
		}
		// empty replace deletes
		if err := idx.ReplaceDocument(ctx, "docs", zip.url, nil, nil); err != nil {
			t.Fatal(err)
		}
		for _, m := range modes {
			hits = search(t, idx, corpus.Query{Collection: "docs", Vector: vec("quokkas"), Text: "quokkas", K: 20, Mode: m})
			if slices.Contains(docURLs(hits), zip.url) {
				t.Errorf("%s: deleted document still found", m)
			}
		}
		// DeleteDocument
		if err := idx.DeleteDocument(ctx, "docs", fixture[1].url); err != nil {
			t.Fatal(err)
		}
		hits = search(t, idx, corpus.Query{Collection: "docs", Vector: vec("JSON"), Text: "JSON", K: 20, Mode: corpus.ModeHybrid})
		if slices.Contains(docURLs(hits), fixture[1].url) {
			t.Errorf("DeleteDocument: document still found")
		}
		if len(hits) == 0 {
			t.Errorf("DeleteDocument removed other documents too")
		}
		// DeleteCollection
		if err := idx.DeleteCollection(ctx, "docs"); err != nil {
			t.Fatal(err)
		}
		for _, m := range modes {
			if hits := search(t, idx, corpus.Query{Collection: "docs", Vector: vec("SMTP"), Text: "SMTP", K: 20, Mode: m}); len(hits) != 0 {
				t.Errorf("%s: %d hits after DeleteCollection", m, len(hits))
			}
		}
		// the collection can be used again
		load(t, idx, "docs", fixture[2])
		if hits := search(t, idx, corpus.Query{Collection: "docs", Vector: vec("SMTP"), Text: "SMTP", K: 20, Mode: corpus.ModeHybrid}); len(hits) == 0 {
			t.Errorf("no hits after reusing a deleted collection")
		}
	})

	t.Run("CollectionIsolation", func(t *testing.T) {
		idx := newIndex(t)
		load(t, idx, "a", fixture[:3]...)
		load(t, idx, "b", fixture[2:]...)
		for _, m := range modes {
			hits := search(t, idx, corpus.Query{Collection: "a", Vector: vec("SQL cursor"), Text: "SQL cursor", K: 20, Mode: m})
			if slices.Contains(docURLs(hits), fixture[4].url) {
				t.Errorf("%s: collection a sees a document of b", m)
			}
		}
		// same document URL in both: deleting it in a leaves b's copy
		if err := idx.DeleteDocument(ctx, "a", fixture[2].url); err != nil {
			t.Fatal(err)
		}
		hits := search(t, idx, corpus.Query{Collection: "b", Vector: vec("sendmail"), Text: "sendmail", K: 5, Mode: corpus.ModeHybrid})
		if !slices.Contains(docURLs(hits), fixture[2].url) {
			t.Errorf("DeleteDocument in a removed b's copy")
		}
		if err := idx.DeleteCollection(ctx, "b"); err != nil {
			t.Fatal(err)
		}
		hits = search(t, idx, corpus.Query{Collection: "a", Vector: vec("zip"), Text: "ZIP", K: 5, Mode: corpus.ModeHybrid})
		if !slices.Contains(docURLs(hits), fixture[0].url) {
			t.Errorf("DeleteCollection(b) touched a")
		}
	})

	t.Run("URLPrefix", func(t *testing.T) {
		idx := newIndex(t)
		load(t, idx, "docs", fixture...)
		for _, m := range modes {
			hits := search(t, idx, corpus.Query{Collection: "docs", Vector: vec("archive compression"), Text: "archive compression", K: 20, Mode: m, URLPrefix: "https://ex.org/blog/"})
			if d := docURLs(hits); len(d) != 1 || d[0] != "https://ex.org/blog/compression-tips" {
				t.Errorf("%s blog prefix: %v", m, d)
			}
			hits = search(t, idx, corpus.Query{Collection: "docs", Vector: vec("archive compression"), Text: "archive compression", K: 20, Mode: m, URLPrefix: "https://ex.org/docs/"})
			if d := docURLs(hits); len(d) == 0 || slices.Contains(d, "https://ex.org/blog/compression-tips") {
				t.Errorf("%s docs prefix: %v", m, d)
			}
			hits = search(t, idx, corpus.Query{Collection: "docs", Vector: vec("archive"), Text: "archive", K: 20, Mode: m, URLPrefix: "https://other.org/"})
			if len(hits) != 0 {
				t.Errorf("%s foreign prefix: %d hits", m, len(hits))
			}
		}
	})

	t.Run("BadArguments", func(t *testing.T) {
		idx := newIndex(t)
		load(t, idx, "docs", fixture[0])
		v := vec("zip")
		searches := []struct {
			name string
			q    corpus.Query
		}{
			{"no collection", corpus.Query{Vector: v, Text: "zip", K: 5, Mode: corpus.ModeHybrid}},
			{"k zero", corpus.Query{Collection: "docs", Vector: v, Text: "zip", K: 0, Mode: corpus.ModeHybrid}},
			{"k negative", corpus.Query{Collection: "docs", Vector: v, Text: "zip", K: -1, Mode: corpus.ModeDense}},
			{"unknown mode", corpus.Query{Collection: "docs", Vector: v, Text: "zip", K: 5, Mode: "fuzzy"}},
			{"dense without vector", corpus.Query{Collection: "docs", Text: "zip", K: 5, Mode: corpus.ModeDense}},
			{"hybrid without vector", corpus.Query{Collection: "docs", Text: "zip", K: 5, Mode: corpus.ModeHybrid}},
			{"keyword without text", corpus.Query{Collection: "docs", Vector: v, K: 5, Mode: corpus.ModeKeyword}},
			{"hybrid without text", corpus.Query{Collection: "docs", Vector: v, K: 5, Mode: corpus.ModeHybrid}},
		}
		for _, tt := range searches {
			if _, err := idx.Search(ctx, tt.q); code(err) != kgagent.EINVALID {
				t.Errorf("Search %s: err %v, want %s", tt.name, err, kgagent.EINVALID)
			}
		}
		chunks, vecs := chunksOf("docs", fixture[1])
		other, _ := chunksOf("docs", fixture[2])
		short := append([][]float32{}, vecs...)
		short[len(short)-1] = short[len(short)-1][:Dim/2]
		writes := []struct {
			name       string
			collection string
			url        string
			chunks     []kgagent.Chunk
			vecs       [][]float32
		}{
			{"no collection", "", fixture[1].url, chunks, vecs},
			{"no url", "docs", "", chunks, vecs},
			{"fewer vectors", "docs", fixture[1].url, chunks, vecs[:1]},
			{"chunk of another document", "docs", fixture[1].url, append(slices.Clone(chunks), other[0]), append(slices.Clone(vecs), vecs[0])},
			{"ragged vectors", "docs", fixture[1].url, chunks, short},
		}
		for _, tt := range writes {
			if err := idx.ReplaceDocument(ctx, tt.collection, tt.url, tt.chunks, tt.vecs); code(err) != kgagent.EINVALID {
				t.Errorf("ReplaceDocument %s: err %v, want %s", tt.name, err, kgagent.EINVALID)
			}
		}
		if err := idx.DeleteDocument(ctx, "", fixture[0].url); code(err) != kgagent.EINVALID {
			t.Errorf("DeleteDocument without collection: %v", err)
		}
		if err := idx.DeleteCollection(ctx, ""); code(err) != kgagent.EINVALID {
			t.Errorf("DeleteCollection without name: %v", err)
		}
		// nothing stored was touched, nothing half-written
		hits := search(t, idx, corpus.Query{Collection: "docs", Vector: vec("JSON archive"), Text: "JSON archive", K: 20, Mode: corpus.ModeHybrid})
		if d := docURLs(hits); !slices.Equal(d, []string{fixture[0].url}) {
			t.Errorf("after bad writes the collection holds %v", d)
		}
	})

	t.Run("ConcurrentWrites", func(t *testing.T) {
		idx := newIndex(t)
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		const n = 8
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d := fixtureDoc{fmt.Sprintf("https://ex.org/docs/page%d", i), fmt.Sprintf("Page %d", i), fmt.Sprintf("Page number %d talks about marmots.\n\n# More\nMarmot %d burrows.", i, i)}
				chunks, vecs := chunksOf("docs", d)
				errs <- idx.ReplaceDocument(ctx, "docs", d.url, chunks, vecs)
			}()
			// and everyone rewrites one shared document with a version of their own
			wg.Add(1)
			go func() {
				defer wg.Done()
				var b strings.Builder
				for j := 0; j <= i; j++ {
					fmt.Fprintf(&b, "# Part %d\nversion %d part %d about walruses.\n\n", j, i, j)
				}
				chunks, vecs := chunksOf("docs", fixtureDoc{"https://ex.org/docs/shared", "Shared", b.String()})
				errs <- idx.ReplaceDocument(ctx, "docs", "https://ex.org/docs/shared", chunks, vecs)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("concurrent ReplaceDocument: %v", err)
			}
		}
		hits := search(t, idx, corpus.Query{Collection: "docs", Vector: vec("marmots"), Text: "marmots marmot", K: 100, Mode: corpus.ModeHybrid})
		pages := 0
		for _, h := range hits {
			if strings.Contains(h.DocURL, "/page") {
				pages++
			}
		}
		if pages != 2*n {
			t.Errorf("found %d page chunks, want %d", pages, 2*n)
		}
		shared := search(t, idx, corpus.Query{Collection: "docs", Text: "walruses", K: 100, Mode: corpus.ModeKeyword})
		if len(shared) == 0 {
			t.Fatal("shared document lost")
		}
		// exactly one version: all its chunks say the same version, and as many as it had parts
		version := ""
		for _, h := range shared {
			f := strings.Fields(h.Text)
			if len(f) < 2 {
				t.Fatalf("odd chunk %q", h.Text)
			}
			if version == "" {
				version = f[1]
			} else if f[1] != version {
				t.Errorf("chunks of two versions of one document: %s and %s", version, f[1])
			}
		}
		var v int
		fmt.Sscan(version, &v)
		if len(shared) != v+1 {
			t.Errorf("version %s has %d chunks stored, want %d", version, len(shared), v+1)
		}
	})
}
