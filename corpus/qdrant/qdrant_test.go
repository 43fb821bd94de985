package qdrant_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	qc "github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/corpustest"
	"github.com/kgagent/kgagent/corpus/qdrant"
	"github.com/kgagent/kgagent/corpus/qdrant/qdranttest"
)

// rawClient is a plain go-client connected to the stand-in, to look at what
// the adapter created.
func rawClient(t *testing.T, srv *qdranttest.Server) *qc.Client {
	t.Helper()
	host, port, _ := net.SplitHostPort(srv.Addr())
	p, _ := strconv.Atoi(port)
	c, err := qc.NewClient(&qc.Config{Host: host, Port: p, SkipCompatibilityCheck: true, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// doc builds a document of n chunks whose texts say word and whose vectors
// are embedded with the suite's embedder.
func doc(collection, url, word string, n int) ([]kgagent.Chunk, [][]float32) {
	chunks := make([]kgagent.Chunk, n)
	vecs := make([][]float32, n)
	for i := range chunks {
		text := fmt.Sprintf("Part %d of %s is about %s.", i, url, word)
		chunks[i] = kgagent.Chunk{
			ID: fmt.Sprintf("%s#%d", url, i), Collection: collection, DocURL: url,
			URL: fmt.Sprintf("%s#p%d", url, i), Title: "Title of " + url,
			HeadingPath: []string{"Title of " + url, fmt.Sprintf("Part %d", i)},
			Anchor:      fmt.Sprintf("p%d", i), Ordinal: i, Text: text, Hash: fmt.Sprintf("h%d", i),
		}
		vecs[i] = corpustest.Embedder.Vector(corpus.IndexText(chunks[i]))
	}
	return chunks, vecs
}

func put(t *testing.T, ix *qdrant.Index, collection, url, word string, n int) {
	t.Helper()
	chunks, vecs := doc(collection, url, word, n)
	if err := ix.ReplaceDocument(context.Background(), collection, url, chunks, vecs); err != nil {
		t.Fatalf("ReplaceDocument(%s): %v", url, err)
	}
}

func hybrid(text string, k int) corpus.Query {
	return corpus.Query{Collection: "docs", Text: text, Vector: corpustest.Embedder.Vector(text), K: k, Mode: corpus.ModeHybrid}
}

func TestCollectionSchema(t *testing.T) {
	tests := []struct {
		name      string
		cfg       qdrant.Config
		wantM     uint64
		wantEf    uint64
		wantQuant bool
	}{
		{"defaults", qdrant.Config{}, 16, 100, false},
		{"tuned", qdrant.Config{HNSWM: 32, HNSWEfConstruct: 256, ScalarQuantization: true}, 32, 256, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startStandIn(t, qdranttest.Options{})
			cfg := tt.cfg
			cfg.Addr = srv.Addr()
			checkSchemaOf(t, cfg, rawClient(t, srv), srv.Calls, tt.wantM, tt.wantEf, tt.wantQuant)
		})
	}
}

// checkSchemaOf writes two collections through an adapter with cfg and
// checks what raw sees of them; calls, when not nil, counts the server's
// calls of a method (stand-in only).
func checkSchemaOf(t *testing.T, cfg qdrant.Config, raw *qc.Client, calls func(string) int, wantM, wantEf uint64, wantQuant bool) {
	ix := open(t, cfg)
	put(t, ix, "docs", "https://ex.org/a", "alpacas", 2)
	put(t, ix, "docs", "https://ex.org/b", "badgers", 2)
	put(t, ix, "other", "https://ex.org/a", "alpacas", 1)
	if calls != nil {
		if got := calls("Create"); got != 2 {
			t.Errorf("Create called %d times, want 2 (one per kgagent collection)", got)
		}
		if got := calls("CreateFieldIndex"); got != 8 {
			t.Errorf("CreateFieldIndex called %d times, want 8", got)
		}
	}
	want := []string{ix.CollectionName("docs"), ix.CollectionName("other")}
	slices.Sort(want)
	names, err := raw.ListCollections(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range names {
		if strings.HasPrefix(n, cfg.Prefix+"_") || cfg.Prefix == "" && strings.HasPrefix(n, qdrant.DefaultPrefix+"_") {
			got = append(got, n)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("collections %v, want %v", got, want)
	}
	info, err := raw.GetCollectionInfo(context.Background(), ix.CollectionName("docs"))
	if err != nil {
		t.Fatal(err)
	}
	params := info.GetConfig().GetParams()
	dense := params.GetVectorsConfig().GetParamsMap().GetMap()[qdrant.DenseVector]
	if dense.GetSize() != corpustest.Dim || dense.GetDistance() != qc.Distance_Cosine {
		t.Errorf("dense vector %v, want size %d cosine", dense, corpustest.Dim)
	}
	sparse := params.GetSparseVectorsConfig().GetMap()[qdrant.SparseVector]
	if sparse.GetModifier() != qc.Modifier_Idf {
		t.Errorf("sparse vector %v, want the IDF modifier", sparse)
	}
	for _, f := range []string{"collection", "doc_url", "url_prefixes"} {
		if info.GetPayloadSchema()[f].GetDataType() != qc.PayloadSchemaType_Keyword {
			t.Errorf("payload index on %s: %v, want keyword", f, info.GetPayloadSchema()[f])
		}
	}
	h := info.GetConfig().GetHnswConfig()
	if h.GetM() != wantM || h.GetEfConstruct() != wantEf {
		t.Errorf("hnsw m=%d ef_construct=%d, want %d %d", h.GetM(), h.GetEfConstruct(), wantM, wantEf)
	}
	if got := info.GetConfig().GetQuantizationConfig().GetScalar() != nil; got != wantQuant {
		t.Errorf("scalar quantisation %v, want %v", got, wantQuant)
	}

	// A second adapter (a restart) reuses the collection.
	again := open(t, cfg)
	put(t, again, "docs", "https://ex.org/c", "camels", 1)
	if calls != nil {
		if got := calls("Create"); got != 2 {
			t.Errorf("after restart Create called %d times, want still 2", got)
		}
	}
	if n, err := raw.Count(context.Background(), &qc.CountPoints{CollectionName: ix.CollectionName("docs"), Exact: qc.PtrOf(true)}); err != nil || n != 5 {
		t.Errorf("after restart the collection holds %d points (%v), want 5", n, err)
	}
}

func TestDimensionConflict(t *testing.T) {
	srv := startStandIn(t, qdranttest.Options{})
	ix := open(t, qdrant.Config{Addr: srv.Addr()})
	put(t, ix, "docs", "https://ex.org/a", "alpacas", 1)
	// Same embedder name, other dimension: the existing collection must not
	// be written with vectors of another length.
	other, err := qdrant.New(context.Background(), qdrant.Config{Addr: srv.Addr()}, corpustest.Dim/2, corpustest.Embedder.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	chunks, _ := doc("docs", "https://ex.org/b", "badgers", 1)
	err = other.ReplaceDocument(context.Background(), "docs", "https://ex.org/b", chunks, [][]float32{make([]float32, corpustest.Dim/2)})
	if kgagent.ErrorCode(err) != kgagent.ECONFLICT {
		t.Errorf("write with another dimension: %v, want %s", err, kgagent.ECONFLICT)
	}
}

func TestBatching(t *testing.T) {
	tests := []struct {
		batch, chunks int
		want          []int
	}{
		{1, 3, []int{1, 1, 1}},
		{3, 7, []int{3, 3, 1}},
		{4, 8, []int{4, 4}},
		{0, 7, []int{7}}, // default 256
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("batch%d_chunks%d", tt.batch, tt.chunks), func(t *testing.T) {
			srv := startStandIn(t, qdranttest.Options{})
			ix := open(t, qdrant.Config{Addr: srv.Addr(), BatchSize: tt.batch})
			put(t, ix, "docs", "https://ex.org/a", "alpacas", tt.chunks)
			if got := srv.UpsertSizes(); !slices.Equal(got, tt.want) {
				t.Errorf("upsert sizes %v, want %v", got, tt.want)
			}
			if got := len(srv.Payloads(ix.CollectionName("docs"))); got != tt.chunks {
				t.Errorf("%d points stored, want %d", got, tt.chunks)
			}
		})
	}
}

func TestAPIKey(t *testing.T) {
	srv := startStandIn(t, qdranttest.Options{APIKey: "s3cret"})
	tests := []struct {
		key      string
		wantCode string
	}{
		{"s3cret", ""},
		{"wrong", kgagent.EUNAVAILABLE},
		{"", kgagent.EUNAVAILABLE},
	}
	for _, tt := range tests {
		t.Run("key="+tt.key, func(t *testing.T) {
			before := len(srv.APIKeys())
			if tt.wantCode != "" {
				checkKeyRefused(t, qdrant.Config{Addr: srv.Addr(), APIKey: tt.key})
				return
			}
			ix := open(t, qdrant.Config{Addr: srv.Addr(), APIKey: tt.key})
			chunks, vecs := doc("docs", "https://ex.org/a", "alpacas", 2)
			err := ix.ReplaceDocument(context.Background(), "docs", "https://ex.org/a", chunks, vecs)
			if got := kgagent.ErrorCode(err); got != tt.wantCode {
				t.Fatalf("ReplaceDocument: %v, want code %q", err, tt.wantCode)
			}
			keys := srv.APIKeys()[before:]
			if len(keys) == 0 {
				t.Fatal("no calls reached the stand-in")
			}
			for _, k := range keys {
				if k != tt.key {
					t.Errorf("call carried api-key %q, want %q", k, tt.key)
				}
			}
			if tt.wantCode == "" {
				hits, err := ix.Search(context.Background(), hybrid("alpacas", 5))
				if err != nil || len(hits) != 2 {
					t.Errorf("search with the right key: %d hits, %v", len(hits), err)
				}
			}
		})
	}
}

// checkKeyRefused: a refused key is reported by New (issue 11, finding 9),
// not at the first search, as UNAVAILABLE "API key rejected".
func checkKeyRefused(t *testing.T, cfg qdrant.Config) {
	t.Helper()
	ix, err := qdrant.New(context.Background(), cfg, corpustest.Dim, corpustest.Embedder.Name())
	if err == nil {
		ix.Close()
	}
	if kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE || !strings.Contains(err.Error(), "API key rejected") {
		t.Fatalf("New with key %q: %v, want %s API key rejected", cfg.APIKey, err, kgagent.EUNAVAILABLE)
	}
}

func TestUnreachable(t *testing.T) {
	// A port that was free a moment ago and has nobody listening now.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = qdrant.New(ctx, qdrant.Config{Addr: addr}, corpustest.Dim, "e")
	if kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
		t.Errorf("New against a closed port: %v, want %s", err, kgagent.EUNAVAILABLE)
	}

	// A server that goes away after the adapter connected.
	srv, err := qdranttest.Start(qdranttest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ix := open(t, qdrant.Config{Addr: srv.Addr()})
	put(t, ix, "docs", "https://ex.org/a", "alpacas", 1)
	srv.Close()
	if _, err := ix.Search(ctx, hybrid("alpacas", 3)); kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
		t.Errorf("Search after the server stopped: %v, want %s", err, kgagent.EUNAVAILABLE)
	}
	chunks, vecs := doc("docs", "https://ex.org/b", "badgers", 1)
	if err := ix.ReplaceDocument(ctx, "docs", "https://ex.org/b", chunks, vecs); kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
		t.Errorf("ReplaceDocument after the server stopped: %v, want %s", err, kgagent.EUNAVAILABLE)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  qdrant.Config
		dim  int
		emb  string
	}{
		{"no port", qdrant.Config{Addr: "localhost"}, 8, "e"},
		{"bad port", qdrant.Config{Addr: "localhost:http"}, 8, "e"},
		{"zero dimension", qdrant.Config{Addr: "localhost:6334"}, 0, "e"},
		{"no embedder", qdrant.Config{Addr: "localhost:6334"}, 8, " "},
	}
	for _, tt := range tests {
		if _, err := qdrant.New(context.Background(), tt.cfg, tt.dim, tt.emb); kgagent.ErrorCode(err) != kgagent.EINVALID {
			t.Errorf("%s: %v, want %s", tt.name, err, kgagent.EINVALID)
		}
	}
}

func TestErrorMapping(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{status.Error(codes.Unavailable, "down"), kgagent.EUNAVAILABLE},
		{status.Error(codes.Unauthenticated, "no key"), kgagent.EUNAVAILABLE},
		{status.Error(codes.PermissionDenied, "read-only key"), kgagent.EUNAVAILABLE},
		{status.Error(codes.ResourceExhausted, "slow down"), kgagent.ERATELIMIT},
		{status.Error(codes.DeadlineExceeded, "late"), kgagent.ETIMEOUT},
		{status.Error(codes.InvalidArgument, "bad"), kgagent.EINVALID},
		{status.Error(codes.Internal, "boom"), kgagent.EINTERNAL},
		{errors.New("plain"), kgagent.EINTERNAL},
	}
	srv := startStandIn(t, qdranttest.Options{})
	ix := open(t, qdrant.Config{Addr: srv.Addr()})
	put(t, ix, "docs", "https://ex.org/a", "alpacas", 1)
	for _, tt := range tests {
		srv.FailNext("Query", tt.err)
		_, err := ix.Search(context.Background(), hybrid("alpacas", 3))
		if got := kgagent.ErrorCode(err); got != tt.want {
			t.Errorf("Query failing with %v: %v, want %s", tt.err, err, tt.want)
		}
		if strings.Contains(kgagent.ErrorMessage(err), "boom") {
			t.Errorf("server message leaked into the user-safe message: %q", kgagent.ErrorMessage(err))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ix.Search(ctx, hybrid("alpacas", 3)); kgagent.ErrorCode(err) != kgagent.ECANCELED {
		t.Errorf("Search with a canceled context: %v, want %s", err, kgagent.ECANCELED)
	}
}

// gens returns the distinct "gen" payloads and the texts stored for url.
func stored(srv *qdranttest.Server, name, url string) (gens, texts []string) {
	for _, p := range srv.Payloads(name) {
		if p["doc_url"].GetStringValue() != url {
			continue
		}
		if g := p["gen"].GetStringValue(); !slices.Contains(gens, g) {
			gens = append(gens, g)
		}
		texts = append(texts, p["text"].GetStringValue())
	}
	slices.Sort(texts)
	return gens, texts
}

func TestReplaceFailures(t *testing.T) {
	const url = "https://ex.org/a"
	srv := startStandIn(t, qdranttest.Options{})
	ix := open(t, qdrant.Config{Addr: srv.Addr(), BatchSize: 2})
	name := ix.CollectionName("docs")
	put(t, ix, "docs", url, "alpacas", 5)
	_, oldTexts := stored(srv, name, url)

	// The second upsert batch fails: every old chunk is still there.
	srv.FailNext("Upsert", nil, status.Error(codes.Unavailable, "gone"))
	chunks, vecs := doc("docs", url, "llamas", 3)
	chunks = append(chunks, kgagent.Chunk{ID: "extra", Ordinal: 9, Text: "extra llamas"})
	vecs = append(vecs, corpustest.Embedder.Vector("extra llamas"))
	if err := ix.ReplaceDocument(context.Background(), "docs", url, chunks, vecs); kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
		t.Fatalf("ReplaceDocument with a failing upsert: %v", err)
	}
	_, texts := stored(srv, name, url)
	for _, old := range oldTexts[2:] { // the first batch overwrote chunks 0 and 1
		if !slices.Contains(texts, old) {
			t.Errorf("old chunk %q lost by a failed replace", old)
		}
	}
	if hits, err := ix.Search(context.Background(), hybrid("alpacas", 10)); err != nil || len(hits) < 3 {
		t.Errorf("old version no longer searchable after a failed replace: %d hits, %v", len(hits), err)
	}

	// The stale-generation delete fails: the next replace cleans up.
	srv.FailNext("Delete", status.Error(codes.Unavailable, "gone"))
	put2 := func() error {
		c, v := doc("docs", url, "vicunas", 2)
		return ix.ReplaceDocument(context.Background(), "docs", url, c, v)
	}
	if err := put2(); kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
		t.Fatalf("ReplaceDocument with a failing delete: %v", err)
	}
	if gens, _ := stored(srv, name, url); len(gens) < 2 {
		t.Fatalf("expected leftovers of several generations, got %v", gens)
	}
	if err := put2(); err != nil {
		t.Fatal(err)
	}
	gens, texts := stored(srv, name, url)
	if len(gens) != 1 || len(texts) != 2 || !strings.Contains(texts[0], "vicunas") {
		t.Errorf("after a clean replace: generations %v, texts %q", gens, texts)
	}
}

func TestURLPrefix(t *testing.T) {
	srv := startStandIn(t, qdranttest.Options{})
	ix := open(t, qdrant.Config{Addr: srv.Addr()})
	checkURLPrefix(t, ix)

	// What is stored for the server-side half of the filter.
	for _, p := range srv.Payloads(ix.CollectionName("docs")) {
		if p["doc_url"].GetStringValue() != "https://ex.org/docs/zipfile" {
			continue
		}
		var got []string
		for _, v := range p["url_prefixes"].GetListValue().GetValues() {
			got = append(got, v.GetStringValue())
		}
		want := []string{"https:/", "https://", "https://ex.org/", "https://ex.org/docs/", "https://ex.org/docs/zipfile"}
		if !slices.Equal(got, want) {
			t.Errorf("url_prefixes %q, want %q", got, want)
		}
	}
}

// checkURLPrefix indexes documents under several paths and checks prefix
// filters ending and not ending in '/' in every mode.
func checkURLPrefix(t *testing.T, ix *qdrant.Index) {
	// Many documents under /docs/ that match the query better than the two
	// under /docs/zip*, so a non-'/' prefix needs the over-fetch loop.
	for i := range 30 {
		put(t, ix, "docs", fmt.Sprintf("https://ex.org/docs/a%02d", i), "marmots marmots marmots", 1)
	}
	put(t, ix, "docs", "https://ex.org/docs/zipfile", "marmots", 1)
	put(t, ix, "docs", "https://ex.org/docs/zipimport", "marmots", 1)
	put(t, ix, "docs", "https://ex.org/zipped/x", "marmots", 1)

	tests := []struct {
		prefix string
		k      int
		want   []string
	}{
		{"https://ex.org/docs/zip", 2, []string{"https://ex.org/docs/zipfile", "https://ex.org/docs/zipimport"}},
		{"https://ex.org/docs/zipf", 5, []string{"https://ex.org/docs/zipfile"}},
		{"https://ex.org/zip", 5, []string{"https://ex.org/zipped/x"}},
		{"https://ex.org/docs/zipfile", 5, []string{"https://ex.org/docs/zipfile"}},
		{"https://ex.org/zipped/", 5, []string{"https://ex.org/zipped/x"}},
		{"https://ex.org/nothing", 5, nil},
		{"https:", 1, []string{"any"}},
	}
	for _, tt := range tests {
		for _, mode := range []corpus.Mode{corpus.ModeDense, corpus.ModeKeyword, corpus.ModeHybrid} {
			q := hybrid("marmots", tt.k)
			q.Mode, q.URLPrefix = mode, tt.prefix
			hits, err := ix.Search(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range hits {
				if !strings.HasPrefix(h.DocURL, tt.prefix) {
					t.Errorf("%s %q: hit %s outside the prefix", mode, tt.prefix, h.DocURL)
				}
				got = append(got, h.DocURL)
			}
			slices.Sort(got)
			if len(tt.want) == 1 && tt.want[0] == "any" {
				if len(got) != tt.k {
					t.Errorf("%s %q: %d hits, want %d", mode, tt.prefix, len(got), tt.k)
				}
				continue
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s %q k=%d: %v, want %v", mode, tt.prefix, tt.k, got, tt.want)
			}
		}
	}
}

func TestCollectionNames(t *testing.T) {
	srv := startStandIn(t, qdranttest.Options{})
	ix := open(t, qdrant.Config{Addr: srv.Addr()})
	names := []string{"docs", "a/b", "a_b", "a b", "Ünïcode", strings.Repeat("x", 250), "../etc", "a:b*?"}
	seen := map[string]string{}
	for _, n := range names {
		got := ix.CollectionName(n)
		if len(got) > 255 || strings.ContainsAny(got, "<>:\"/\\|?* ") {
			t.Errorf("CollectionName(%q) = %q is not a safe name", n, got)
		}
		if !strings.HasPrefix(got, "kg_") {
			t.Errorf("CollectionName(%q) = %q lacks the prefix", n, got)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("%q and %q share the collection %q", n, other, got)
		}
		seen[got] = n
		// and the stand-in, which checks names as the real service does, takes it
		put(t, ix, n, "https://ex.org/a", "alpacas", 1)
	}
	if got := len(srv.Collections()); got != len(names) {
		t.Errorf("%d collections for %d names", got, len(names))
	}
}

func TestCollectionDroppedBehindOurBack(t *testing.T) {
	srv := startStandIn(t, qdranttest.Options{})
	ix := open(t, qdrant.Config{Addr: srv.Addr()})
	put(t, ix, "docs", "https://ex.org/a", "alpacas", 1)
	if err := rawClient(t, srv).DeleteCollection(context.Background(), ix.CollectionName("docs")); err != nil {
		t.Fatal(err)
	}
	if hits, err := ix.Search(context.Background(), hybrid("alpacas", 3)); err != nil || len(hits) != 0 {
		t.Errorf("search of a vanished collection: %d hits, %v", len(hits), err)
	}
	put(t, ix, "docs", "https://ex.org/b", "badgers", 1)
	hits, err := ix.Search(context.Background(), hybrid("badgers", 3))
	if err != nil || len(hits) != 1 {
		t.Errorf("after re-creation: %d hits, %v", len(hits), err)
	}
}

func TestHybridScoresAreRRF(t *testing.T) {
	srv := startStandIn(t, qdranttest.Options{})
	checkHybridScores(t, open(t, qdrant.Config{Addr: srv.Addr()}))
}

// checkHybridScores checks that a hybrid score is Σ 1/(60 + rank) over the
// dense and keyword rankings of the same query.
func checkHybridScores(t *testing.T, ix *qdrant.Index) {
	put(t, ix, "docs", "https://ex.org/a", "alpacas", 3)
	put(t, ix, "docs", "https://ex.org/b", "badgers", 3)
	q := hybrid("alpacas", 6)
	hits, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	q.Mode = corpus.ModeDense
	dense, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	q.Mode = corpus.ModeKeyword
	keyword, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	// An empty result would make the loop below check nothing.
	if len(hits) == 0 || len(dense) == 0 || len(keyword) == 0 {
		t.Fatalf("search found nothing: %d hybrid, %d dense, %d keyword hits", len(hits), len(dense), len(keyword))
	}
	if hits[0].DocURL != "https://ex.org/a" {
		t.Errorf("best hybrid hit for alpacas is %s (%s)", hits[0].ID, hits[0].DocURL)
	}
	rank := func(list []corpus.Hit, id string) int {
		for i, h := range list {
			if h.ID == id {
				return i + 1
			}
		}
		return 0
	}
	inBoth := 0
	for _, h := range hits {
		want := 0.0
		for _, list := range [][]corpus.Hit{dense, keyword} {
			if r := rank(list, h.ID); r > 0 {
				want += 1 / float64(qdrant.DefaultRRFK+r)
			}
		}
		if d := h.Score - want; d > 1e-6 || d < -1e-6 {
			t.Errorf("hit %s: score %v, want Σ 1/(60+rank) = %v", h.ID, h.Score, want)
		}
		if rank(dense, h.ID) > 0 && rank(keyword, h.ID) > 0 {
			inBoth++
		}
	}
	if inBoth == 0 {
		t.Errorf("no hybrid hit is in both the dense and the keyword ranking: the sum of two terms was never checked")
	}
}

func TestCollections(t *testing.T) {
	srv := startStandIn(t, qdranttest.Options{})
	checkCollections(t, qdrant.Config{Addr: srv.Addr()}, rawClient(t, srv))
}

// checkCollections checks Collections and HasCollection, with collections of
// another embedder and a foreign collection under the same prefix around.
func checkCollections(t *testing.T, cfg qdrant.Config, raw *qc.Client) {
	ctx := context.Background()
	ix := open(t, cfg)
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = qdrant.DefaultPrefix
	}
	if got, err := ix.Collections(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Collections of an empty server: %v, %v", got, err)
	}
	put(t, ix, "docs", "https://ex.org/a", "alpacas", 3)
	put(t, ix, "docs", "https://ex.org/b", "badgers", 2)
	put(t, ix, "a/b", "https://ex.org/a", "alpacas", 1)
	put(t, ix, "empty", "https://ex.org/a", "alpacas", 1)
	if err := ix.DeleteDocument(ctx, "empty", "https://ex.org/a"); err != nil {
		t.Fatal(err)
	}
	// Collections of another embedder and foreign collections are not listed.
	other, err := qdrant.New(ctx, cfg, corpustest.Dim, "other-embedder")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	chunks, vecs := doc("docs", "https://ex.org/z", "zebras", 1)
	if err := other.ReplaceDocument(ctx, "docs", "https://ex.org/z", chunks, vecs); err != nil {
		t.Fatal(err)
	}
	if err := raw.CreateCollection(ctx, &qc.CreateCollection{CollectionName: prefix + "_foreign",
		VectorsConfig: qc.NewVectorsConfig(&qc.VectorParams{Size: 4, Distance: qc.Distance_Cosine})}); err != nil {
		t.Fatal(err)
	}

	got, err := ix.Collections(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []corpus.CollectionInfo{{Name: "a/b", Documents: 1, Chunks: 1}, {Name: "docs", Documents: 2, Chunks: 5}, {Name: "empty"}}
	if !slices.Equal(got, want) {
		t.Errorf("Collections = %+v, want %+v", got, want)
	}

	tests := []struct {
		name string
		want bool
	}{{"docs", true}, {"a/b", true}, {"empty", true}, {"nothing", false}}
	fresh := open(t, cfg) // knows nothing from its own writes
	for _, tt := range tests {
		for _, x := range []*qdrant.Index{ix, fresh} {
			if has, err := x.HasCollection(ctx, tt.name); err != nil || has != tt.want {
				t.Errorf("HasCollection(%q) = %v, %v; want %v", tt.name, has, err, tt.want)
			}
		}
	}
	if err := ix.DeleteCollection(ctx, "docs"); err != nil {
		t.Fatal(err)
	}
	if has, _ := ix.HasCollection(ctx, "docs"); has {
		t.Errorf("HasCollection after DeleteCollection = true")
	}
	if _, err := ix.HasCollection(ctx, ""); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("HasCollection(\"\"): %v", err)
	}
}

func TestEmptyModeIsInvalid(t *testing.T) {
	srv := startStandIn(t, qdranttest.Options{})
	ix := open(t, qdrant.Config{Addr: srv.Addr()})
	q := hybrid("alpacas", 3)
	q.Mode = ""
	if _, err := ix.Search(context.Background(), q); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("Search with no mode: %v, want %s (as the embedded index)", err, kgagent.EINVALID)
	}
}

func TestHalfCreatedCollectionHeals(t *testing.T) {
	srv := startStandIn(t, qdranttest.Options{})
	ix := open(t, qdrant.Config{Addr: srv.Addr()})
	// The collection gets created but the second payload index fails; the
	// write goes on, finds the collection there and adds what is missing.
	srv.FailNext("CreateFieldIndex", nil, status.Error(codes.Unavailable, "gone"))
	put(t, ix, "docs", "https://ex.org/a", "alpacas", 1)
	info, err := rawClient(t, srv).GetCollectionInfo(context.Background(), ix.CollectionName("docs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"collection", "doc_url", "url_prefixes", "gen"} {
		if info.GetPayloadSchema()[f] == nil {
			t.Errorf("payload index on %s still missing", f)
		}
	}
	if got := srv.Calls("Create"); got != 1 {
		t.Errorf("Create called %d times, want 1", got)
	}
	if got := srv.Calls("CreateFieldIndex"); got != 5 {
		t.Errorf("CreateFieldIndex called %d times, want 5 (1 ok, 1 failed, 3 healed)", got)
	}
}

// TestNewOnRESTPort: an address that answers HTTP/1 (Qdrant's REST port)
// is reported as not a gRPC endpoint, not as unreachable.
func TestNewOnRESTPort(t *testing.T) {
	rest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"title":"qdrant - vector search engine"}`))
	}))
	defer rest.Close()
	checkNotGRPC(t, qdrant.Config{Addr: strings.TrimPrefix(rest.URL, "http://")})
}

// checkNotGRPC: New on cfg.Addr, an HTTP/1 port, says so.
func checkNotGRPC(t *testing.T, cfg qdrant.Config) {
	t.Helper()
	ix, err := qdrant.New(context.Background(), cfg, corpustest.Dim, corpustest.Embedder.Name())
	if err == nil {
		ix.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "not a gRPC endpoint") {
		t.Fatalf("New on an HTTP/1 port (%s): %v", cfg.Addr, err)
	}
}
