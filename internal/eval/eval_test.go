package eval

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/agent/extractive"
	"github.com/kgagent/kgagent/corpus"
)

const base = "https://docs.example.org/"

// fakeSearch ranks pages by a table from question to page names.
type fakeSearch map[string][]string

func (f fakeSearch) Search(ctx context.Context, req corpus.SearchRequest) ([]corpus.Hit, error) {
	var hits []corpus.Hit
	for _, p := range f[req.Query] {
		hits = append(hits, corpus.Hit{Chunk: kgagent.Chunk{DocURL: base + p}})
	}
	return hits, nil
}

// fakeAsker answers from a table from question to answer and cited pages.
type fakeAsker map[string]kgagent.Answer

func (f fakeAsker) Ask(ctx context.Context, req agent.Request, emit agent.Emit) (kgagent.Answer, error) {
	return f[req.Question], nil
}

func sources(pages ...string) []kgagent.Source {
	var out []kgagent.Source
	for _, p := range pages {
		out = append(out, kgagent.Source{URL: base + p + "#s"})
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestRunScores: retrieval recall and MRR over the answerable questions,
// the agent's figures, abstentions on both kinds, must_contain, citations
// and gold items, on a set whose figures are worked out by hand.
func TestRunScores(t *testing.T) {
	qs := []Question{
		{ID: "a", Question: "qa", GoldPage: "a.html", MustContain: "alpha"},
		{ID: "b", Question: "qb", GoldPage: "b.html", MustContain: "beta"},
		{ID: "c", Question: "qc", GoldPage: "c.html", GoldItems: []string{"m.one", "m.two"}},
		{ID: "u", Question: "qu"}, // unanswerable
	}
	search := fakeSearch{
		"qa": {"a.html", "x.html"},                     // rank 1
		"qb": {"x.html", "x.html", "y.html", "b.html"}, // rank 3 (x counted once)
		"qc": {"x.html"},                               // absent
	}
	asker := fakeAsker{
		"qa": {Answer: "alpha does it [1].", Sources: sources("a.html")},
		"qb": {Answer: extractive.Abstention + " anything about qb.", Sources: sources("y.html", "b.html")},
		"qc": {Answer: "one [1] and `m.two` [3]", Sources: sources("c.html")}, // [3] is not a source
		"qu": {Answer: extractive.Abstention + " anything about qu."},
	}
	var misses strings.Builder
	sum, err := Run(context.Background(), Services{Search: search, Asker: asker}, Options{K: 2, BaseURL: base, Answers: true, Misses: &misses}, qs)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"questions", float64(sum.Questions), 4},
		{"answerable", float64(sum.Answerable), 3},
		{"unanswerable", float64(sum.Unanswerable), 1},
		{"recall@2", sum.RecallAtK, 1.0 / 3},             // a only (b at rank 3)
		{"mrr", sum.MRR, (1 + 1.0/3) / 3},                // a 1, b 1/3, c 0
		{"agent recall@2", sum.AgentRecallAtK, 3.0 / 3},  // a 1, b 2, c 1
		{"agent mrr", sum.AgentMRR, (1 + 0.5 + 1) / 3},   //
		{"answer contains", sum.AnswerContains, 1.0 / 2}, // alpha yes, beta no
		{"answer leads", sum.AnswerLeads, 1.0 / 2},       // alpha in the first sentence
		{"abstain answerable", sum.AbstainAnswerable, 1.0 / 3},
		{"abstain unanswerable", sum.AbstainUnanswerable, 1},
		{"citations valid", sum.CitationsValid, 3.0 / 4}, // qc cites [3] of 1
		{"item questions", float64(sum.ItemQuestions), 1},
		{"item coverage", sum.ItemCoverage, 1}, // "one" is m.one's last part, m.two as written
		{"all items named", sum.AllItemsNamed, 1},
		{"first source holds", sum.FirstSourceHolds, 1},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// b abstained and is a miss; a is not.
	if !strings.Contains(misses.String(), "--- b (") || strings.Contains(misses.String(), "--- a (") {
		t.Errorf("misses:\n%s", misses.String())
	}
	if _, err := Run(context.Background(), Services{Search: search}, Options{K: 0}, qs); err == nil {
		t.Error("k 0 was accepted")
	}
}

// TestPageRank: fragments are ignored, a page counts once, and the gold
// page matches as a full URL or as a path suffix, and a directory URL is
// its index.html.
func TestPageRank(t *testing.T) {
	urls := []string{base + "x.html#a", base + "x.html#b", base + "lib/y.html", base + "z.html", base + "api/#top", base}
	for _, c := range []struct {
		gold, page string
		want       int
	}{
		{base + "x.html", "x.html", 1},
		{"", "y.html", 2},
		{base + "z.html", "z.html", 3},
		{base + "w.html", "w.html", 0},
		{base + "api/index.html", "api/index.html", 4},
		{base + "index.html", "index.html", 5},
		{base + "lib/index.html", "lib/index.html", 0},
	} {
		if got := pageRank(urls, c.gold, c.page); got != c.want {
			t.Errorf("pageRank(%s) = %d, want %d", c.page, got, c.want)
		}
	}
}

// TestReadQuestions: blank lines are skipped; a bad line, a line without a
// question and an empty file are errors naming the file (and line).
func TestReadQuestions(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	qs, err := ReadQuestions(write("ok.jsonl", `{"id":"1","question":"q1","gold_page":"a.html"}`+"\n\n"+`{"id":"2","question":"q2","gold_items":["x"]}`+"\n"))
	if err != nil || len(qs) != 2 || qs[0].GoldPage != "a.html" || len(qs[1].GoldItems) != 1 {
		t.Fatalf("got %+v, %v", qs, err)
	}
	for name, body := range map[string]string{
		"bad.jsonl":   `{"id":"1","question":"q1"}` + "\n{oops\n",
		"empty.jsonl": "\n",
		"noq.jsonl":   `{"id":"1"}` + "\n",
	} {
		_, err := ReadQuestions(write(name, body))
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: got %v, want an error naming the file", name, err)
		}
	}
	if _, err := ReadQuestions(filepath.Join(dir, "missing.jsonl")); err == nil {
		t.Error("a missing file was read")
	}
}

// TestFirstSentence: a sentence ends at '.', '?' or '!' before white space or
// the end, or at a line break, never inside `code` or a dotted name; a name
// said only after the first sentence does not lead the answer.
func TestFirstSentence(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Use `shutil.rmtree(path)` [1]. It removes a tree.", "Use `shutil.rmtree(path)` [1]."},
		{"Call os.path.basename(p) [1] to get it. See also x.", "Call os.path.basename(p) [1] to get it."},
		{"Use `a. b` [1]! Then c.", "Use `a. b` [1]!"},
		{"What for? Nothing.", "What for?"},
		{"line one\nline two.", "line one"},
		{"no end", "no end"},
		{"", ""},
	} {
		if got := FirstSentence(c.in); got != c.want {
			t.Errorf("FirstSentence(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if strings.Contains(FirstSentence("The docs explain it [1]. See also `str.title()` [2]."), "str.title") {
		t.Error("a see-also sentence counted as the lead")
	}
}

// TestRunAnswerLeads: answer_leads counts must_contain in the answer's
// first sentence only, answer_contains anywhere: a name said only in a
// later sentence (a see-also) counts for the one, not the other.
func TestRunAnswerLeads(t *testing.T) {
	qs := []Question{
		{ID: "a", Question: "qa", GoldPage: "a.html", MustContain: "alpha"},
		{ID: "b", Question: "qb", GoldPage: "b.html", MustContain: "beta"},
		{ID: "c", Question: "qc", GoldPage: "c.html", MustContain: "gamma"},
	}
	asker := fakeAsker{
		"qa": {Answer: "Use `alpha.run()` [1]. It runs.", Sources: sources("a.html")},
		"qb": {Answer: "It is done this way [1].\n\nSee also `beta()` [2].", Sources: sources("b.html", "x.html")},
		"qc": {Answer: "Nothing here names it [1].", Sources: sources("c.html")},
	}
	sum, err := Run(context.Background(), Services{Search: fakeSearch{}, Asker: asker}, Options{K: 2, BaseURL: base, Answers: true}, qs)
	if err != nil {
		t.Fatal(err)
	}
	if !near(sum.AnswerContains, 2.0/3) || !near(sum.AnswerLeads, 1.0/3) {
		t.Errorf("answer contains %.3f, leads %.3f; want 0.667 (alpha, beta) and 0.333 (alpha only)", sum.AnswerContains, sum.AnswerLeads)
	}
}
