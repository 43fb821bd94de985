package extractive

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
)

// demoUpgrade is what a search finds for "How do I upgrade from Lumen 2 to
// Lumen 3?" on the demo site: the migration guide is not first.
var demoUpgrade = []kgagent.EvidencePassage{
	{URL: "http://lumen/changelog.html#v2.3.0", Title: "Changelog", HeadingPath: []string{"Changelog", "2.3.0 (2025-11-20)"},
		Text: "Added lumen backup create --since for incremental backups. Lumen 2.3 reads data written by Lumen 2.2."},
	{URL: "http://lumen/api/python/index.html#python-client", Title: "Python client", HeadingPath: []string{"Python client"},
		Text: "The lumen package is the Python client of Lumen 2.4 and later."},
	{URL: "http://lumen/install/linux.html#verify", Title: "Install on Linux", HeadingPath: []string{"Install on Linux", "Verify the installation"},
		Text: "lumen version\n\n# lumen 2.4.1 (commit 7f3c2a9)"},
	{URL: "http://lumen/guides/migration.html#migration", Title: "Migrating from Lumen 1.x", HeadingPath: []string{"Migrating from Lumen 1.x"},
		Text: "Lumen 2.0 changed the on-disk format. Run lumen migrate --from /var/lib/lumen-1 --to /var/lib/lumen once; it converts about 1 GB per minute. Lumen 1.x data directories cannot be opened by Lumen 2 without this step."},
}

// TestAbstentionQuotesWhatTheDocsCover: a question that asks for more
// than the docs say (a word no page holds) gets the abstention, then what
// the docs do cover nearest, quoted and cited: the section that names the
// question's version ("Lumen 2") although it ranks fourth; the nearest
// sections listed after it do not repeat it, and three are cited in all. Before, the answer listed
// section titles only.
func TestAbstentionQuotesWhatTheDocsCover(t *testing.T) {
	e := ev("", demoUpgrade...)
	e[0].Unknown = []string{"upgrade"}
	got := Compose("How do I upgrade from Lumen 2 to Lumen 3?", e, Config{})
	want := "The docs don't say anything about “upgrade”. The nearest section they have, Migrating from Lumen 1.x, says: " +
		"Lumen 2.0 changed the on-disk format. Run lumen migrate --from /var/lib/lumen-1 --to /var/lib/lumen once; it converts about 1 GB per minute [4]. " +
		"The nearest sections are Changelog › 2.3.0 (2025-11-20) [1], Python client [2]."
	if got != want {
		t.Errorf("answer\n got %q\nwant %q", got, want)
	}
	if !Abstained(got) {
		t.Errorf("the answer must still read as an abstention: %q", got)
	}

	// Without a version in the question, the cover is the section holding
	// most of its terms (weighted by rarity): "restore" and "backup".
	e = ev("", lumen...)
	e[0].Unknown = []string{"spaceship"}
	got = Compose("How do I restore a backup onto a spaceship?", e, Config{})
	if !Abstained(got) || !strings.Contains(got, "The nearest section they have, Restoring a backup, says: Restoring replaces the data directory with the snapshot. Stop the server first [1].") {
		t.Errorf("answer = %q", got)
	}
	// A cover that holds only the question's names is no cover.
	got = Compose("What is the codename of Lumen 3.0?", ev("", lumen...), Config{})
	if strings.Contains(got, "nearest section they have") {
		t.Errorf("quoted a section that holds only the name asked of: %q", got)
	}
}

func TestVersionedNames(t *testing.T) {
	for q, want := range map[string][]string{
		"How do I upgrade from Lumen 2 to Lumen 3?":   {"Lumen 2", "Lumen 3"},
		"What changed in Python 3.11?":                {"Python 3.11"},
		"Is Lumen 1.x supported?":                     {"Lumen 1.x"},
		"How do I store 2 values?":                    nil,
		"Python 3 is the question's first word here.": nil,
	} {
		if got := versionedNames(q); !reflect.DeepEqual(got, want) {
			t.Errorf("versionedNames(%q) = %q, want %q", q, got, want)
		}
	}
}

func TestMentionsVersion(t *testing.T) {
	for _, c := range []struct {
		s, nv string
		want  bool
	}{
		{"opened by Lumen 2 without this step", "Lumen 2", true},
		{"Lumen 2.0 changed the on-disk format", "Lumen 2", true},
		{"Lumen 2.x reads it", "Lumen 2", true},
		{"the current release is Lumen 2.4.1.", "Lumen 2", false},
		{"Lumen 20 is far away", "Lumen 2", false},
		{"lumen 2", "Lumen 2", true},
		{"Lumen2 is a typo", "Lumen 2", false},
		{"Python 3.11 is new. Python 3.1 is old.", "Python 3.1", true},
		{"Python 3.11 is new.", "Python 3.1", false},
	} {
		if got := mentionsVersion(c.s, c.nv); got != c.want {
			t.Errorf("mentionsVersion(%q, %q) = %v, want %v", c.s, c.nv, got, c.want)
		}
	}
}

// TestLackingWordIsNeverAnsweredOutright: a question with one word the
// collection lacks stays an abstention that says so, even when a section
// names its version and holds its other words; the abstention quotes that
// section, cited. The lacking word is usually what is asked ("encrypt"),
// so answering from the section outright would state something the docs
// do not say.
func TestLackingWordIsNeverAnsweredOutright(t *testing.T) {
	quote := "Run lumen migrate --from /var/lib/lumen-1 --to /var/lib/lumen once; it converts about 1 GB per minute [4]."
	for _, c := range []struct{ q, lacking string }{
		{"How do I upgrade my data from Lumen 1.x?", "upgrade"},
		{"How do I encrypt my data in Lumen 1.x?", "encrypt"},
	} {
		e := ev("", demoUpgrade...)
		e[0].Unknown = []string{c.lacking}
		got := Compose(c.q, e, Config{})
		if !Abstained(got) || !strings.Contains(got, "“"+c.lacking+"”") || !strings.Contains(got, quote) {
			t.Errorf("%q: answer %q, want the abstention on %q quoting the migration section", c.q, got, c.lacking)
		}
	}
}
