package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// benchDocs makes n documents of perDoc chunks shaped like the Python docs'
// (a ~900-byte body of Zipf-distributed words, a title, a two-level heading
// path, an anchor) with their lexical vectors.
func benchDocs(n, perDoc int) (urls []string, chunks [][]kgagent.Chunk, vecs [][][]float32) {
	r := rand.New(rand.NewPCG(3, 4))
	z := rand.NewZipf(r, 1.1, 1, 5000)
	word := func() string { return fmt.Sprintf("w%d", z.Uint64()) }
	emb := corpus.NewLexical(corpus.LexicalConfig{})
	for d := range n {
		url := fmt.Sprintf("https://docs.test/lib/page%d.html", d)
		title := word() + " " + word() + " module"
		var cs []kgagent.Chunk
		var texts []string
		for i := range perDoc {
			var b strings.Builder
			for b.Len() < 900 {
				b.WriteString(word())
				b.WriteByte(' ')
			}
			anchor := fmt.Sprintf("sec-%d", i/3)
			c := kgagent.Chunk{Collection: "bench", DocURL: url, URL: url + "#" + anchor, Title: title,
				HeadingPath: []string{title, "Section " + word()}, Anchor: anchor, Ordinal: i, Text: b.String()}
			c.ID = corpus.ChunkID("bench", url, i)
			c.Hash = fmt.Sprintf("%064x", r.Uint64())
			cs = append(cs, c)
			texts = append(texts, corpus.IndexText(c))
		}
		vs, _ := emb.Embed(context.Background(), texts)
		urls, chunks, vecs = append(urls, url), append(chunks, cs), append(vecs, vs)
	}
	return
}

// BenchmarkReplaceDocument measures the index's write of one new document
// of 20 chunks (384-dimensional lexical vectors) in a file database, in
// groups of 8 documents per transaction as the ingest's concurrent writers
// share them (see write.go).
func BenchmarkReplaceDocument(b *testing.B) { benchReplace(b, false) }

// BenchmarkReplaceDocumentKept is BenchmarkReplaceDocument into a
// collection whose search copy is kept (Keep, as kgagent ingest does): each
// write also adds its chunks, with their terms taken beforehand, to the copy.
func BenchmarkReplaceDocumentKept(b *testing.B) { benchReplace(b, true) }

func benchReplace(b *testing.B, kept bool) {
	const group = 8
	urls, chunks, vecs := benchDocs(64, 20)
	x, err := Open(Config{Path: filepath.Join(b.TempDir(), "corpus.db"), NoSnapshots: true})
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	ctx := context.Background()
	if kept {
		if err := x.Keep(ctx, "bench", 0); err != nil {
			b.Fatal(err)
		}
	}
	round := 0
	cpu0 := cpuTime()
	for b.Loop() {
		// a new URL every round: every write inserts, none deletes
		var jobs []*writeJob
		for i := range group {
			k := (round*group + i) % len(urls)
			url := fmt.Sprintf("%s?r=%d", urls[k], round)
			cs := make([]kgagent.Chunk, len(chunks[k]))
			for j, c := range chunks[k] {
				c.DocURL = url
				c.ID = fmt.Sprintf("%s-%d", c.ID, round)
				cs[j] = c
			}
			j := &writeJob{ctx: ctx, collection: "bench", docURL: url, chunks: cs, vectors: vecs[k], dim: 384}
			if kept {
				j.terms = make([]chunkTerms, len(cs))
				for i := range cs {
					j.terms[i] = chunkTermsOf(&cs[i], x.weights())
				}
			}
			jobs = append(jobs, j)
		}
		x.runGroup(jobs)
		for _, j := range jobs {
			if j.err != nil {
				b.Fatal(j.err)
			}
		}
		round++
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N*group), "cpu-ns/doc")
}

// cpuTime is the process's user and system CPU time in nanoseconds (the
// box is shared, so wall time says little).
func cpuTime() int64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return u.Utime.Nano() + u.Stime.Nano()
}
