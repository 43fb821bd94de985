package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent/extractive"
)

// TestDocsSayJudgesByMeaning: what the docs say beside a model's answer
// (ground's docsSay) is the built-in answerer's answer with the same
// semantic model the built-in model has (LoopConfig.DocsAnswer). A
// question in a user's everyday words the collection lacks ("stick
// around"), with the retention section close in meaning, is one the docs
// answer: a looping model's right answer is attributed, not replaced by
// an abstention on "stick" and "around" as when the docs were judged by
// words only.
func TestDocsSayJudgesByMeaning(t *testing.T) {
	const q = "how long do old points stick around before they get deleted?"
	ev := &kgagent.Evidence{Query: q, Unknown: []string{"stick", "around"}, Passages: []kgagent.EvidencePassage{{
		URL: "http://lumen/configuration/retention.html#retention", Title: "Retention settings", HeadingPath: []string{"Retention settings"},
		Semantic: 0.56, Text: "Retention decides how long points are kept. Lumen deletes whole shards whose end time is older than the retention period."}}}
	output := "A: " + strings.Repeat("Retention decides how long points are kept.\n", 3)
	embed := func(_ context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i := range texts {
			out[i] = []float32{0, 0, 0, 0}
		}
		return out, nil
	}
	for _, tt := range []struct {
		name      string
		docs      extractive.Config
		citations string
		want      string
	}{
		{"by meaning", extractive.Config{Embed: embed}, kgagent.CitationsAttributed, "Retention decides how long points are kept [1]."},
		{"by words only", extractive.Config{}, kgagent.CitationsUnsupported, extractive.Abstention},
	} {
		m := newManager(t, Config{Model: ModelConfig{LLM: script(output, output)},
			Loop:     LoopConfig{SearchFirst: true, AttributeCitations: true, MaxIterations: 3, DocsAnswer: tt.docs},
			Builtins: BuiltinsConfig{Knowledge: evidenceRetriever{ev}}})
		var evs events
		ans, err := m.Ask(context.Background(), Request{ID: "r1", Question: q}, evs.emit)
		if err != nil {
			t.Fatal(err)
		}
		if ans.Citations != tt.citations || !strings.Contains(ans.Answer, tt.want) {
			t.Errorf("%s: answer %q (citations %s), want %q (%s)", tt.name, ans.Answer, ans.Citations, tt.want, tt.citations)
		}
	}
}

// TestDocsSayDegradedIsNotCached: when the semantic model fails while the
// docs are judged (a rare word the collection lacks, "linger", is looked
// for in the close section's words), the run's answer is not kept in the
// answer cache: asked again, the model is asked again.
func TestDocsSayDegradedIsNotCached(t *testing.T) {
	const q = "how long do old points linger before they get deleted?"
	ev := &kgagent.Evidence{Query: q, Unknown: []string{"linger"}, Passages: []kgagent.EvidencePassage{{
		URL: "http://lumen/configuration/retention.html#retention", Title: "Retention settings", HeadingPath: []string{"Retention settings"},
		Semantic: 0.56, Text: "Retention decides how long points are kept. Lumen deletes whole shards whose end time is older than the retention period."}}}
	output := "A: " + strings.Repeat("Retention decides how long points are kept.\n", 3)
	for _, tt := range []struct {
		name  string
		err   error
		calls int
	}{{"embeds", nil, 1}, {"fails", errors.New("model not loaded"), 2}} {
		embed := func(_ context.Context, texts []string) ([][]float32, error) {
			return make([][]float32, len(texts)), tt.err
		}
		llm := script(output, output)
		m := newManager(t, Config{Model: ModelConfig{LLM: llm},
			Loop:     LoopConfig{SearchFirst: true, AttributeCitations: true, MaxIterations: 3, DocsAnswer: extractive.Config{Embed: embed}},
			Builtins: BuiltinsConfig{Knowledge: evidenceRetriever{ev}}, Cache: CacheConfig{Size: 8, TTL: time.Hour}})
		for range 2 {
			var evs events
			if _, err := m.Ask(context.Background(), Request{ID: "r1", Question: q}, evs.emit); err != nil {
				t.Fatal(err)
			}
		}
		if got := len(llm.Calls()); got != tt.calls {
			t.Errorf("semantic model %s: %d model calls for the question asked twice, want %d", tt.name, got, tt.calls)
		}
	}
}
