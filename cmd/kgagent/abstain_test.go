package main

import (
	"context"
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent/extractive"
	corpussqlite "github.com/kgagent/kgagent/corpus/sqlite"
	"github.com/kgagent/kgagent/internal/text"
)

// absentRe finds the words an answer says the docs lack.
var (
	absentRe = regexp.MustCompile(`don't (?:say anything about|use the words?) (.*?)(?:\. |; |\.$)`)
	quotedRe = regexp.MustCompile(`“([^”]*)”`)
)

// TestAbstentionNeverNamesACorpusWord ingests the demo site, asks
// questions built from words of its chunks mixed with words it lacks (and
// the questions users reported), and checks that every word an answer
// says the docs don't mention has document frequency zero in the index:
// no chunk holds its keyword term (issue 23 item 5).
func TestAbstentionNeverNamesACorpusWord(t *testing.T) {
	site := httptest.NewServer(http.FileServer(http.Dir(siteDir)))
	defer site.Close()
	dir := t.TempDir()
	var out, errb syncBuffer
	if code := run(context.Background(), []string{"ingest", "--data-dir", dir, site.URL + "/*"}, &out, &errb, testEnv()); code != 0 {
		t.Fatalf("ingest exited %d: %s", code, errb.String())
	}
	df, vocab := indexFrequencies(t, filepath.Join(dir, "index.db"))
	if len(vocab) < 200 {
		t.Fatalf("the demo index holds %d words; the test needs a real vocabulary", len(vocab))
	}
	questions := []string{
		"my backups take too much disk space, what can I do?",
		"the server won't start because the port is already used",
		"How do I upgrade from Lumen 2 to Lumen 3?",
		"How do I deploy Lumen on Kubernetes with Helm?",
		"What is the codename of Lumen 3.0?",
	}
	// Corpus words with words no page holds, in question frames.
	made := []string{"zorblax", "quintaphonic", "glimmerwyrd", "snarfle", "upgrade", "kubernetes", "teleporter", "much", "upon"}
	frames := []string{"How do I %s the %s with %s?", "Why does %s %s when I use %s?", "Which %s handles %s and %s?",
		"What is the %s of %s in %s?", "Does %s support %s for %s?", "my %s won't %s because of %s"}
	r := rand.New(rand.NewSource(23))
	for i := 0; i < 60; i++ {
		w := []any{vocab[r.Intn(len(vocab))], vocab[r.Intn(len(vocab))], made[r.Intn(len(made))]}
		r.Shuffle(len(w), func(a, b int) { w[a], w[b] = w[b], w[a] })
		questions = append(questions, fmt.Sprintf(frames[i%len(frames)], w...))
	}
	named, abstained := 0, 0
	for _, q := range questions {
		var out, errb syncBuffer
		if code := run(context.Background(), []string{"ask", "--data-dir", dir, q}, &out, &errb, testEnv()); code != 0 {
			t.Fatalf("ask %q exited %d: %s", q, code, errb.String())
		}
		ans, _, _ := strings.Cut(out.String(), "\n[1] ")
		if extractive.Abstained(ans) {
			abstained++
		}
		m := absentRe.FindStringSubmatch(ans)
		if m == nil {
			continue
		}
		for _, w := range quotedRe.FindAllStringSubmatch(m[1], -1) {
			named++
			for _, term := range text.Terms(w[1]) {
				if df[term] > 0 {
					t.Errorf("%q: the answer says the docs don't mention %q, but %d chunks hold %q: %q", q, w[1], df[term], term, ans)
				}
			}
			if text.IsQuestionStop(strings.ToLower(w[1])) || strings.EqualFold(w[1], "won") {
				t.Errorf("%q: names the stop or filler word %q: %q", q, w[1], ans)
			}
		}
	}
	t.Logf("%d questions, %d abstentions, %d words named as absent", len(questions), abstained, named)
	if named == 0 {
		t.Error("no answer named an absent word: the made-up words should be named")
	}
}

// indexFrequencies reads every chunk of the default collection from the
// index at path and returns each keyword term's document frequency (chunks
// holding it in their title, headings or text) and the collection's
// content words, sorted.
func indexFrequencies(t *testing.T, path string) (map[string]int, []string) {
	t.Helper()
	idx, err := corpussqlite.Open(corpussqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	ctx := context.Background()
	df := map[string]int{}
	words := map[string]bool{}
	after := ""
	for {
		docs, err := idx.Documents(ctx, kgagent.DefaultCollection, after, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(docs) == 0 {
			break
		}
		for _, d := range docs {
			chunks, err := idx.DocumentChunks(ctx, kgagent.DefaultCollection, d.URL)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range chunks {
				all := c.Title + "\n" + strings.Join(c.HeadingPath, "\n") + "\n" + c.Text
				seen := map[string]bool{}
				for _, term := range text.Terms(all) {
					if !seen[term] {
						seen[term] = true
						df[term]++
					}
				}
				for _, w := range text.ContentWords(all) {
					if len(w) >= 4 && !strings.ContainsAny(w, "0123456789_") {
						words[w] = true
					}
				}
			}
			after = d.URL
		}
	}
	var vocab []string
	for w := range words {
		vocab = append(vocab, w)
	}
	sort.Strings(vocab)
	return df, vocab
}
