package extractive

import (
	"slices"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
)

func TestIdiomAction(t *testing.T) {
	for _, c := range []struct {
		q, verb string
		words   []string
	}{
		{"my disk keeps filling up, how do I get rid of them automatically", "remove", []string{"get", "rid", "of"}},
		{"how do I shut down the server cleanly", "stop", []string{"shut", "down"}},
		{"put back a database from last week's backup", "restore", []string{"put", "back"}},
		{"turn on https for the server", "enable", []string{"turn", "on"}},
		{"How do I restore a backup?", "", nil},
		{"how do I restore a backup and then shut down?", "", nil}, // the action is "restore"
		{"what does the server turn into", "", nil},
	} {
		verb, words := idiomAction(c.q, actionWord(c.q))
		if verb != c.verb || !slices.Equal(words, c.words) {
			t.Errorf("idiomAction(%q) = %q, %q; want %q, %q", c.q, verb, words, c.verb, c.words)
		}
	}
}

// TestIdiomIsTheAction: a phrasal verb ("get rid of") is the question's
// action, meant as the verb it maps to; its words the collection lacks
// ("rid") are the action's wording. The section found that says the
// action in the docs' words ("deletes") answers, although it holds none
// of the question's other words. Before, "rid" (not an everyday word, not
// the action "get") made the answer "The docs don't say anything about
// “rid”". A section with no word near the meant verb still abstains.
func TestIdiomIsTheAction(t *testing.T) {
	embed := wordVectors(map[string][]float32{"remove": {1, 0, 0, 0}, "deletes": {0.8, 0.6, 0, 0}})
	cfg := Config{Embed: embed}
	q := "how do I get rid of the oldest shards automatically"
	e := retentionEvidence(0.5, "rid")
	got := Compose(q, e, cfg)
	if want := "Retention settings: Retention decides how long points are kept."; Abstained(got) || !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "The docs don't use the word “rid”; the above is the closest they cover.") {
		t.Errorf("idiom: answer = %q, want it to open with %q and name “rid” last", got, want)
	}
	if got := Compose(q, retentionEvidence(0.5, "rid"), Config{Embed: wordVectors(map[string][]float32{"remove": {1, 0, 0, 0}})}); !strings.HasPrefix(got, Abstention+" anything about “rid”") {
		t.Errorf("no word of the section means the action: answer = %q, want the abstention", got)
	}
	if got := Compose(q, retentionEvidence(0.3, "rid"), cfg); !Abstained(got) {
		t.Errorf("no section close in meaning: answer = %q, want an abstention", got)
	}
}

// TestActionLeadWithoutQuestionWords: the section the action rule chose
// by meaning leads even when none of its sentences holds another word of
// the question ("turn on https": the TLS section says "TLS is on when
// set"), and its code follows for an imperative question. Before, no
// sentence scored, and the answer abstained on the action's words.
func TestActionLeadWithoutQuestionWords(t *testing.T) {
	embed := wordVectors(map[string][]float32{"restore": {1, 0, 0, 0}, "restores": {0.9, 0.43, 0, 0}})
	e := ev("", kgagent.EvidencePassage{URL: "http://lumen/cli/lumen-backup.html#restore", Title: "lumen backup",
		HeadingPath: []string{"lumen backup", "lumen backup restore"}, Semantic: 0.5,
		Text: "Reads a snapshot and restores its shards. The server must be running.\n\n    lumen backup restore --input DIR [--db NAME]\n"})
	e[0].Unknown = []string{"put"}
	got := Compose("put back the copy from last week", e, Config{Embed: embed})
	if Abstained(got) || !strings.Contains(got, "Reads a snapshot and restores its shards") || !strings.Contains(got, "lumen backup restore --input DIR") {
		t.Errorf("answer = %q, want the restore section's first sentence and its code", got)
	}
}

// TestCapabilityVerbIsTheAction: in "can I join two measurements in one
// query?" the verb is what is asked; a verb the collection lacks is not
// its everyday wording. Before, "join" (an everyday word) was set aside
// and the continuous-query section, close in meaning, answered.
func TestCapabilityVerbIsTheAction(t *testing.T) {
	if got := actionWord("can I join two measurements in one query?"); got != "join" {
		t.Errorf("actionWord = %q, want join", got)
	}
	e := ev("", kgagent.EvidencePassage{URL: "http://lumen/guides/downsampling.html#downsampling", Title: "Downsampling",
		HeadingPath: []string{"Downsampling with continuous queries"}, Semantic: 0.5,
		Text: "A continuous query runs on a schedule and writes aggregated points into another measurement."})
	e[0].Unknown = []string{"join"}
	got := Compose("can I join two measurements in one query?", e, Config{Embed: wordVectors(nil)})
	if !strings.HasPrefix(got, Abstention+" anything about “join”") {
		t.Errorf("answer = %q, want the abstention on “join”", got)
	}
}
