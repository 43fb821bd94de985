package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent/extractive"
)

// upgradeEvidence is what the demo's search finds for "How do I upgrade
// from Lumen 2 to Lumen 3?" ranked by meaning (the cosines all-MiniLM-L6-v2
// gives): no page says "upgrade", the migration guide says "migrate".
func upgradeEvidence() *kgagent.Evidence {
	return &kgagent.Evidence{Query: "How do I upgrade from Lumen 2 to Lumen 3?", Unknown: []string{"upgrade"}, Passages: []kgagent.EvidencePassage{
		{URL: "http://lumen/changelog.html#v2.3.0", DocURL: "http://lumen/changelog.html", Title: "Changelog", HeadingPath: []string{"Changelog", "2.3.0 (2025-11-20)"},
			Text: "Added lumen backup create --since for incremental backups. Lumen 2.3 reads data written by Lumen 2.2.", Score: 4, Semantic: 0.52},
		{URL: "http://lumen/api/python/index.html#python-client", DocURL: "http://lumen/api/python/index.html", Title: "Python client", HeadingPath: []string{"Python client"},
			Text: "The lumen package is the Python client of Lumen 2.4 and later.", Score: 3, Semantic: 0.56},
		{URL: "http://lumen/install/linux.html#verify", DocURL: "http://lumen/install/linux.html", Title: "Install on Linux", HeadingPath: []string{"Install on Linux", "Verify the installation"},
			Text: "lumen version\n\n# lumen 2.4.1 (commit 7f3c2a9)", Score: 2, Semantic: 0.71},
		{URL: "http://lumen/guides/migration.html#migration", DocURL: "http://lumen/guides/migration.html", Title: "Migrating from Lumen 1.x", HeadingPath: []string{"Migrating from Lumen 1.x"},
			Text: "Lumen 2.0 changed the on-disk format. Run lumen migrate --from /var/lib/lumen-1 --to /var/lib/lumen once; it converts about 1 GB per minute. Lumen 1.x data directories cannot be opened by Lumen 2 without this step.", Score: 1, Semantic: 0.60},
	}}
}

// upgradeEmbed embeds words as the semantic model roughly does: "upgrade"
// and "migrate"/"migrating" at cosine 0.44, every other word orthogonal.
// It counts its calls.
type upgradeEmbed struct{ calls int }

func (u *upgradeEmbed) embed(_ context.Context, texts []string) ([][]float32, error) {
	u.calls++
	out := make([][]float32, len(texts))
	for i, t := range texts {
		switch strings.ToLower(t) {
		case "upgrade":
			out[i] = []float32{1, 0, 0}
		case "migrate", "migrating":
			out[i] = []float32{0.44, 0.898, 0}
		default:
			out[i] = []float32{0, 0, 1}
		}
	}
	return out, nil
}

// TestGroundingJudgesByMeaning: with an LLM, what grounding adds from the
// docs (a model that gave no answer, an unsupported answer) is the
// built-in answerer's answer with LoopConfig.DocsAnswer — by meaning when it
// has the semantic model's Embed, as the built-in model answers: "upgrade"
// is answered from the migration guide, which says "migrate". Before,
// ground composed with extractive.Config{} (by words alone) and abstained.
// An Embed that fails: TestDocsSayDegradedIsNotCached.
func TestGroundingJudgesByMeaning(t *testing.T) {
	q := "How do I upgrade from Lumen 2 to Lumen 3?"
	migrate := "Run lumen migrate --from /var/lib/lumen-1 --to /var/lib/lumen once"
	for _, tt := range []struct {
		name, output, citations string
		embed                   bool
		want, notWant           []string
	}{
		{name: "no answer", output: "A: answer [1]", embed: true, citations: kgagent.CitationsFallback,
			want: []string{"The model gave no answer (only protocol text). The docs say: ", migrate, "The docs don't use the word “upgrade”"}},
		{name: "unsupported answer", output: "A: Click the upgrade button in the web console.", embed: true, citations: kgagent.CitationsUnsupported,
			want: []string{"Click the upgrade button in the web console.\n\n" + unsupportedNote + " The docs say: ", migrate}},
		// Without the semantic model: by words, as before.
		{name: "no answer, by words", output: "A: answer [1]", citations: kgagent.CitationsFallback,
			want: []string{"The model gave no answer (only protocol text). " + extractive.Abstention + " anything about “upgrade”"}, notWant: []string{"The docs say: "}},
		{name: "unsupported answer, by words", output: "A: Click the upgrade button in the web console.", citations: kgagent.CitationsUnsupported,
			want: []string{extractive.Abstention + " anything about “upgrade”"}, notWant: []string{"web console", "The docs say: "}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			emb := &upgradeEmbed{}
			loop := LoopConfig{SearchFirst: true, AttributeCitations: true, MaxIterations: 3}
			if tt.embed {
				loop.DocsAnswer = extractive.Config{Embed: emb.embed}
			}
			m := newManager(t, Config{Model: ModelConfig{LLM: script(tt.output)}, Loop: loop, Builtins: BuiltinsConfig{Knowledge: evidenceRetriever{upgradeEvidence()}}})
			ans, err := m.Ask(context.Background(), Request{ID: "r1", Question: q}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if ans.Citations != tt.citations {
				t.Errorf("citations %q, want %q; answer %q", ans.Citations, tt.citations, ans.Answer)
			}
			checkWords(t, ans.Answer, tt.want, tt.notWant)
			if tt.embed && !strings.Contains(ans.Answer, "guides/migration.html") && !hasSource(ans.Sources, "http://lumen/guides/migration.html#migration") {
				t.Errorf("the answer does not cite the migration guide: %q %+v", ans.Answer, ans.Sources)
			}
			if tt.embed && emb.calls == 0 {
				t.Errorf("Embed never called")
			}
		})
	}
}

// hasSource reports whether sources holds one with url.
func hasSource(sources []kgagent.Source, url string) bool {
	for _, s := range sources {
		if s.URL == url {
			return true
		}
	}
	return false
}
