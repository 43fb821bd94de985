package extractive

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent/cite"
	"github.com/kgagent/kgagent/llm"
)

func TestActionWord(t *testing.T) {
	for q, want := range map[string]string{
		"How do I upgrade from Lumen 2 to Lumen 3?":                    "upgrade",
		"how can I wipe the cache?":                                    "wipe",
		"how to rename a column":                                       "rename",
		"What's the best way to merge two dicts?":                      "merge",
		"I want to shrink my backups":                                  "shrink",
		"move my data from the old lumen 1 install to the new release": "move",
		"save a copy of my database somewhere safe":                    "save",
		"turn on https for the server":                                 "",         // a particle: see objectStarts
		"Sourdough on a Lumen server":                                  "",         // a thing, not an action
		"loading my csv file keeps failing on the date column":         "",         // a gerund: what the user was doing
		"sending a million points one by one takes forever":            "",         // likewise
		"watching a measurement for new points":                        "watching", // a gerund that says nothing happened: how to do it
		"reading a file line by line in python":                        "reading",
		"reading a file that is too big for memory":                    "reading", // a relative clause's verb
		"bring my old backup back":                                     "bring",
		"Kafka on Lumen?":                                              "",
		"GPU on my server?":                                            "",
		"What is the codename of Python 3.11?":                         "",
		"my backups take too much disk space, what can I do?":          "",
		"blockchain ledger in sqlite3":                                 "",
		"Which built-in module trains neural networks?":                "",
		"Does Lumen run on Windows?":                                   "",
		"restore":                                                      "",
		// a conjunction opens a clause saying when: its subject follows
		"if the power goes out, could I lose the last few things I wrote?": "",
		"while the server is down, can I restore a backup?":                "",
	} {
		if got := actionWord(q); got != want {
			t.Errorf("actionWord(%q) = %q, want %q", q, got, want)
		}
	}
}

// demoUpgradeMeaning is demoUpgrade with the semantic cosines the demo's
// search gives it (all-MiniLM-L6-v2): the install page's "lumen 2.4.1" is
// closer in meaning than the migration guide.
func demoUpgradeMeaning(scale float64) []kgagent.Evidence {
	cos := []float64{0.52, 0.56, 0.71, 0.60}
	ps := append([]kgagent.EvidencePassage(nil), demoUpgrade...)
	for i := range ps {
		ps[i].Semantic = cos[i] * scale
	}
	e := ev("", ps...)
	e[0].Unknown = []string{"upgrade"}
	return e
}

// fakeEmbed embeds single words as the semantic model roughly does: the
// action "upgrade" and "migrate"/"migrating" at cosine 0.44, "pause" and
// "runs" at 0.22, every other word orthogonal to both.
func fakeEmbed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		switch strings.ToLower(t) {
		case "upgrade":
			out[i] = []float32{1, 0, 0, 0}
		case "migrate", "migrating":
			out[i] = []float32{0.44, 0.898, 0, 0}
		case "pause":
			out[i] = []float32{0, 0, 1, 0}
		case "runs":
			out[i] = []float32{0, 0, 0.22, 0.975}
		default:
			out[i] = []float32{0, 0, 0, 0}
		}
	}
	return out, nil
}

// TestActionInOtherWordsAnswers: a how-to question whose action the
// collection lacks ("upgrade"; the docs say "migrate") is answered, cited,
// from the section that names the action in its words and the question's
// version ("Lumen 2") — not the closest in meaning ("lumen 2.4.1") — when
// the search ranked by meaning and found a section close enough. Before,
// any word the collection lacks made the answer an abstention. A word the
// collection lacks that is what the question asks about (npm), a second
// such word, a name the evidence lacks, no semantic vectors, no model to
// compare words with, no section close in meaning, or no section naming
// the action ("pause") still abstain.
func TestActionInOtherWordsAnswers(t *testing.T) {
	q := "How do I upgrade from Lumen 2 to Lumen 3?"
	cfg := Config{Embed: fakeEmbed}
	got := Compose(q, demoUpgradeMeaning(1), cfg)
	// The answer leads with the section that answers and ends by saying
	// the docs do not use the word, so that one in their words reads as
	// the closest they cover.
	want := "Migrating from Lumen 1.x: Lumen 2.0 changed the on-disk format. Run lumen migrate --from /var/lib/lumen-1 --to /var/lib/lumen once; it converts about 1 GB per minute"
	note := "\n\nThe docs don't use the word “upgrade”; the above is the closest they cover."
	if Abstained(got) || !strings.HasPrefix(got, want) || !strings.HasSuffix(got, note) || !strings.Contains(got, "[4]") {
		t.Errorf("answer = %q, want it to open with %q, cited [4], and end with %q", got, want, note)
	}
	// Only the lead's section speaks: the question's other words ("Lumen",
	// "2") picked the changelog's backup line as support before.
	if nums := cite.Numbers(got); slices.ContainsFunc(nums, func(n int) bool { return n != 4 }) {
		t.Errorf("answer = %q cites %v, want the migration guide [4] only", got, nums)
	}
	lacks := Abstention + " anything about “upgrade”"
	if got := Compose(q, demoUpgradeMeaning(1), Config{}); !strings.HasPrefix(got, lacks) {
		t.Errorf("no model to compare words: answer = %q, want the abstention", got)
	}
	if got := Compose(q, demoUpgradeMeaning(0), cfg); !strings.HasPrefix(got, lacks) {
		t.Errorf("lexical (no semantic vectors): answer = %q, want the abstention", got)
	}
	if got := Compose(q, demoUpgradeMeaning(0.45), cfg); !Abstained(got) {
		t.Errorf("far in meaning (best 0.32, below %v): answer = %q, want an abstention", semanticAnswerMin, got)
	}
	for _, c := range []struct {
		q       string
		unknown []string
	}{
		{"How do I publish my Lumen data to npm?", []string{"npm"}},
		{"How do I upgrade my cluster from Lumen 2?", []string{"upgrade", "cluster"}},
		{"How do I upgrade from Lumen 2 with Helm?", []string{"upgrade"}}, // Helm: a name the evidence lacks
	} {
		e := demoUpgradeMeaning(1)
		e[0].Unknown = c.unknown
		if got := Compose(c.q, e, cfg); !Abstained(got) {
			t.Errorf("%q (unknown %q): answer = %q, want an abstention", c.q, c.unknown, got)
		}
	}
	// The section about the object, close in meaning, holds no word for
	// the action: the docs do not say how to do it.
	e := ev("",
		kgagent.EvidencePassage{URL: "http://lumen/configuration/retention.html#check-interval", Title: "Retention settings",
			HeadingPath: []string{"Retention settings", "retention.check_interval"}, Text: "How often the retention enforcer runs. Default: 1h.", Semantic: 0.71})
	e[0].Unknown = []string{"pause"}
	if got := Compose("How can I pause the retention enforcer for a day?", e, cfg); !strings.HasPrefix(got, Abstention+" anything about “pause”") {
		t.Errorf("an action no section names: answer = %q, want the abstention", got)
	}
	// Its -ing form, with nothing said to have happened, asks the same:
	// the action is still "pausing", not wording of a report.
	e[0].Unknown = []string{"pausing"}
	if got := Compose("pausing the retention enforcer for a day", e, cfg); !strings.HasPrefix(got, Abstention+" anything about “pausing”") {
		t.Errorf("a gerund how-to whose action no section names: answer = %q, want the abstention", got)
	}
}

// TestComposeContextEmbedsUnderTheRequest: the action rule's word
// embeddings run under the request's context, so a request whose deadline
// passes is not held up by a slow (loading) model, and the answer written
// without them says it is degraded (the answer cache must not keep it).
// Before, Config.Embed took no context: the answerer waited out its own
// fixed timeout whatever the request's deadline, and nothing told the
// manager the abstention came from a timeout.
func TestComposeContextEmbedsUnderTheRequest(t *testing.T) {
	q := "How do I upgrade from Lumen 2 to Lumen 3?"
	slow := func(ctx context.Context, texts []string) ([][]float32, error) {
		<-ctx.Done() // a model still loading
		return nil, ctx.Err()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	got := ComposeContext(ctx, q, demoUpgradeMeaning(1), Config{Embed: slow})
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("ComposeContext took %v past a 30 ms deadline", d)
	}
	if !got.Degraded || !Abstained(got.Text) {
		t.Errorf("embed timed out: got %+v, want a degraded abstention", got)
	}
	if got := ComposeContext(context.Background(), q, demoUpgradeMeaning(1), Config{Embed: fakeEmbed}); got.Degraded || Abstained(got.Text) {
		t.Errorf("embed answered: got %+v, want an answer, not degraded", got)
	}
	// The model passes its Complete's context on, and marks the step of an
	// answer written without the embeddings: here the answerer's own bound
	// ran out while the request still has time.
	var seen context.Context
	capped := func(ctx context.Context, texts []string) ([][]float32, error) {
		seen = ctx
		return nil, context.DeadlineExceeded
	}
	m := NewModel(ModelConfig{Answer: Config{Embed: capped}})
	ev := demoUpgradeMeaning(1)[0]
	ep := llm.Episode{Question: q, Actions: 1, Observations: []llm.Observation{{Name: CorpusFunc, Text: "found", Evidence: &ev}}}
	type key struct{}
	ctx2 := context.WithValue(context.Background(), key{}, "request")
	s, err := m.Complete(ctx2, llm.CompletionRequest{Messages: []llm.ChatMessage{{Role: "user", Content: q}}, Episode: &ep})
	if err != nil {
		t.Fatal(err)
	}
	if seen == nil || seen.Value(key{}) != "request" {
		t.Errorf("Embed ran under %v, want the request's context", seen)
	}
	var steps []llm.Step
	for {
		d, err := s.Recv()
		steps = append(steps, d.Steps...)
		if err != nil {
			break
		}
	}
	if len(steps) != 1 || steps[0].Kind != llm.StepAnswer || !steps[0].Degraded {
		t.Errorf("steps = %+v, want one degraded answer", steps)
	}
}
