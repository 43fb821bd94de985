package extractive

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// absentRe finds the words an abstention, or the note that ends an answer
// in words the docs don't use, says the docs lack.
var absentRe = regexp.MustCompile(`don't (?:say anything about|use the words?) (.*?)[.;]`)

// namedAbsent returns the words answer says the docs do not mention.
func namedAbsent(answer string) []string {
	m := absentRe.FindStringSubmatch(answer)
	if m == nil {
		return nil
	}
	var out []string
	for _, q := range regexp.MustCompile(`“([^”]*)”`).FindAllStringSubmatch(m[1], -1) {
		out = append(out, q[1])
	}
	return out
}

// TestAbstentionNamesOnlyWordsTheCollectionLacks: a word is said to be
// absent from the docs only when the index's vocabulary lacks it
// (Evidence.Unknown); words merely missing from the passages found make a
// "not found" abstention that says what was searched for; stop words,
// filler and contraction fragments are never named.
func TestAbstentionNamesOnlyWordsTheCollectionLacks(t *testing.T) {
	backup := []kgagent.EvidencePassage{
		{URL: "http://lumen/ops/backup.html#full", Title: "Backup and restore", HeadingPath: []string{"Backup and restore", "Take a full backup"},
			Text: "lumen backup writes a full backup of a database to a directory."},
		{URL: "http://lumen/cli/backup.html", Title: "lumen backup", HeadingPath: []string{"lumen backup"},
			Text: "lumen backup takes a backup of one database."},
	}
	tests := []struct {
		name     string
		q        string
		unknown  []string // Evidence.Unknown: what the index's vocabulary lacks
		absent   []string // named as absent from the docs, exactly
		notFound bool     // a NotFound abstention
		never    []string // never quoted in the answer
	}{
		// Demo: "much" is filler; "space" is what the index lacks.
		{name: "filler never named", q: "my backups take too much disk space, what can I do?",
			unknown: []string{"much", "disk", "space"}, absent: []string{"disk", "space"}, never: []string{"much", "what", "can"}},
		// The index knows "space" (no Unknown): the passages lacking it
		// is no evidence that the docs do.
		{name: "missing from passages only", q: "How do I free disk space taken by backups?",
			notFound: true, never: []string{}},
		// "won't" is "will not": "won" is no word of the question.
		{name: "contraction fragment", q: "the backup won't start because the port is already used",
			unknown: []string{"won", "port"}, absent: []string{"port"}, never: []string{"won", "t", "already"}},
		{name: "curly contraction", q: "why doesn’t lumen backup compress the snapshot?",
			unknown: []string{"doesn", "compress", "snapshot"}, absent: []string{"compress", "snapshot"}, never: []string{"doesn"}},
		// OpenJDK: words of a long question the passages lack, none
		// known absent: no word is said to be missing from the docs.
		{name: "long question, corpus words", q: "The message type determines which icon will be displayed in the caption of the message, and a system sound may also be generated upon showing the backup",
			notFound: true, never: []string{"upon", "show", "which"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := ev(tt.q, append([]kgagent.EvidencePassage(nil), backup...)...)
			evs[0].Unknown = tt.unknown
			got := Compose(tt.q, evs, Config{})
			t.Log(got)
			if !Abstained(got) {
				t.Fatalf("answered %q, want an abstention", got)
			}
			if a := namedAbsent(got); strings.Join(a, ",") != strings.Join(tt.absent, ",") {
				t.Errorf("named absent %q, want %q: %q", a, tt.absent, got)
			}
			if tt.notFound != strings.HasPrefix(got, NotFound) {
				t.Errorf("NotFound abstention = %v, want %v: %q", !tt.notFound, tt.notFound, got)
			}
			if tt.notFound && !strings.Contains(got, "I searched for “") {
				t.Errorf("a not-found abstention does not say what was searched for: %q", got)
			}
			for _, w := range tt.never {
				if strings.Contains(got, "“"+w+"”") {
					t.Errorf("names %q: %q", w, got)
				}
			}
		})
	}
}

// TestNamedAbsentAreUnknown: whatever the closest section's cosine and
// whichever of a question's words the collection lacks (Evidence.Unknown),
// every word an answer or abstention says the docs don't mention or don't
// use is one the collection lacks, and never a stop or filler word: the
// share rule (answerMin, fewRare) decides whether to answer, never what is
// named.
func TestNamedAbsentAreUnknown(t *testing.T) {
	cfg := Config{Embed: wordVectors(map[string][]float32{"linger": {1, 0, 0, 0}, "kept": {0.6, 0.8, 0, 0}})}
	questions := []struct {
		q       string
		unknown []string
	}{
		{"how long do old points stick around before they get deleted?", []string{"stick", "around"}},
		{"how long do old points linger before they get deleted?", []string{"linger"}},
		{"my big monthly retention job dies after half a minute with a gateway error, what can I do?", []string{"big", "dies", "half", "gateway"}},
		{"we're stuck at work, will old points still be kept for us?", []string{"stuck", "work"}},
		{"Who won the 2022 football World Cup?", []string{"football", "won", "cup"}},
		{"How do I publish a package to npm?", []string{"npm", "publish", "package"}},
		{"how much data does Lumen keep on my GPU before deleting it?", []string{"GPU", "much"}},
	}
	inNote, inAbstention := 0, 0
	for _, c := range questions {
		unknown := map[string]bool{}
		for _, u := range c.unknown {
			unknown[strings.ToLower(u)] = true
		}
		for _, cos := range []float64{0, 0.15, 0.25, 0.3, 0.34, 0.4, 0.56, 0.7} {
			got := Compose(c.q, retentionEvidence(cos, c.unknown...), cfg)
			named := namedAbsent(got)
			if Abstained(got) {
				inAbstention += len(named)
			} else {
				inNote += len(named)
			}
			for _, w := range named {
				if !unknown[strings.ToLower(w)] || text.IsQuestionStop(strings.ToLower(w)) || filler[strings.ToLower(w)] {
					t.Errorf("%q at %.2f names %q, not a word the collection lacks: %q", c.q, cos, w, got)
				}
			}
		}
	}
	// Both forms were exercised: answers that end with the note, and
	// abstentions.
	if inNote == 0 || inAbstention == 0 {
		t.Errorf("words named in answers' notes %d, in abstentions %d: want both", inNote, inAbstention)
	}
}
