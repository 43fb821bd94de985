package extractive

import (
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
)

func ev(q string, ps ...kgagent.EvidencePassage) []kgagent.Evidence {
	for i := range ps {
		if ps[i].N == 0 {
			ps[i].N = i + 1
		}
		if ps[i].DocURL == "" {
			ps[i].DocURL, _, _ = strings.Cut(ps[i].URL, "#")
		}
	}
	return []kgagent.Evidence{{Query: q, Passages: ps}}
}

var lumen = []kgagent.EvidencePassage{
	{URL: "http://lumen/ops/backup.html#restore", Title: "Backups", HeadingPath: []string{"Backups", "Restoring a backup"},
		Text: "Restoring replaces the data directory with the snapshot. Stop the server first.\n\nRun the restore command with the snapshot id:\n\nlumen backup restore --from 2026-01-01T00:00Z --data-dir /var/lib/lumen\n\nSee lumen backup restore for all options."},
	{URL: "http://lumen/ops/backup.html#create", Title: "Backups", HeadingPath: []string{"Backups", "Creating a backup"},
		Text: "lumen backup create writes a snapshot of every database. New: incremental backups with lumen backup create --since."},
	{URL: "http://lumen/faq.html#python", Title: "FAQ", HeadingPath: []string{"FAQ", "Which Python versions are supported?"},
		Text: "It supports Python 3.9 and later."},
	{URL: "http://lumen/api/python/client.html", Title: "lumen — Python client", HeadingPath: []string{"lumen — Python client"},
		Text: "The lumen package is the Python client of the Lumen server. Install it with pip install lumen-client."},
}

func TestComposeHowToKeepsTheCommand(t *testing.T) {
	got := Compose("How do I restore a backup?", ev("", lumen...), Config{})
	if !strings.Contains(got, "```\nlumen backup restore --from 2026-01-01T00:00Z --data-dir /var/lib/lumen\n```") {
		t.Errorf("answer lacks the command verbatim:\n%s", got)
	}
	if Abstained(got) || !strings.Contains(got, "[1]") {
		t.Errorf("answer = %q", got)
	}
}

func TestComposeAbstainsWhenTheDocsDoNotSay(t *testing.T) {
	for _, q := range []string{
		"What is the codename of Lumen 3.0?",
		"How do I configure Kubernetes ingress for Lumen?",
		"Which module provides the quantum teleporter?",
	} {
		got := Compose(q, ev("", lumen...), Config{})
		if !Abstained(got) {
			t.Errorf("%q: answered %q, want an abstention", q, got)
			continue
		}
		if !strings.Contains(got, "The nearest sections are Backups › Restoring a backup [1]") {
			t.Errorf("%q: abstention does not list the nearest sections: %q", q, got)
		}
	}
	if got := Compose("What is the HTTP port?", nil, Config{}); !Abstained(got) {
		t.Errorf("no evidence: %q", got)
	}
}

func TestComposeNamesTheThing(t *testing.T) {
	got := Compose("Which module is the Python client?", ev("", lumen...), Config{})
	if !strings.HasPrefix(got, "`lumen` — Python client [4].") {
		t.Errorf("answer = %q, want it to open by naming the module", got)
	}
}

// TestComposeSkipsSourceOnlyPassages: a passage kept only as a source
// (EvidencePassage.SourceOnly) is never quoted or cited, though it would
// answer the question best; the answer comes from the other passages.
func TestComposeSkipsSourceOnlyPassages(t *testing.T) {
	ps := append([]kgagent.EvidencePassage(nil), lumen...)
	ps[3].SourceOnly = true
	got := Compose("Which module is the Python client?", ev("", ps...), Config{})
	if strings.Contains(got, "[4]") || strings.Contains(got, "pip install") {
		t.Errorf("answer quotes the source-only passage: %q", got)
	}
}

func TestComposeCitesOnlyEvidenceNumbers(t *testing.T) {
	e := ev("", lumen...)
	valid := map[int]bool{}
	for _, p := range e[0].Passages {
		valid[p.N] = true
	}
	for _, q := range []string{"How do I restore a backup?", "Which Python versions are supported?", "What does lumen backup create write?", "What is Lumen?"} {
		got := Compose(q, e, Config{})
		for _, c := range citations(got) {
			if !valid[c] {
				t.Errorf("%q: answer %q cites [%d], which is no passage's number", q, got, c)
			}
		}
	}
}

// citations returns the [n] numbers of s.
func citations(s string) []int {
	var out []int
	for i := 0; i < len(s); i++ {
		if s[i] != '[' {
			continue
		}
		n, j := 0, i+1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			n = n*10 + int(s[j]-'0')
			j++
		}
		if j > i+1 && j < len(s) && s[j] == ']' {
			out = append(out, n)
		}
	}
	return out
}

func TestSplitSentences(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"One. Two! Three? four", []string{"One.", "Two!", "Three? four"}},
		{"Use e.g. Foo. Then bar.", []string{"Use e.g. Foo.", "Then bar."}},
		{"Version 2.4.1 is out. It is fast.", []string{"Version 2.4.1 is out.", "It is fast."}},
		{"Call lumen.connect(url). Done.", []string{"Call lumen.connect(url).", "Done."}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := splitSentences(tt.in); strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("splitSentences(%q) = %q", tt.in, got)
		}
	}
}

func TestSubject(t *testing.T) {
	tests := []struct {
		title    string
		headings []string
		best     string
		question string
		want     string
	}{
		{"json — JSON encoder and decoder — Python 3.11 documentation", []string{"json — JSON encoder and decoder", "Basic Usage"}, "Serialize obj with json.dumps() to a JSON formatted str.", "Which function serializes an object to JSON?", "json.dumps()"},
		{"json — JSON encoder and decoder — Python 3.11 documentation", []string{"json — JSON encoder and decoder", "Basic Usage"}, "Serialize obj to a JSON formatted str.", "Which module encodes JSON?", "json"},
		{"9. API Reference", []string{"9. API Reference", "9.28. distutils.debug — Distutils debug mode"}, "This module provides the DEBUG flag.", "Which Python module provides the debug flag?", "distutils.debug"},
		{"lumen — Python client", []string{"lumen — Python client", "lumen.connect"}, "Opens a connection.", "What function opens a connection?", "lumen.connect"},
		{"Configuration reference", []string{"Configuration reference", "HTTP"}, "Set --http-port to change it.", "Which flag changes the port?", "--http-port"},
	}
	for _, tt := range tests {
		kind := entityType(tt.question)
		got, _ := subject(&passage{EvidencePassage: kgagent.EvidencePassage{Title: tt.title, HeadingPath: tt.headings}}, tt.best, kind)
		if got != tt.want {
			t.Errorf("subject for %q = %q, want %q", tt.question, got, tt.want)
		}
	}
}

func TestLinkHeavyPassagesDoNotLead(t *testing.T) {
	index := kgagent.EvidencePassage{URL: "http://d/py-modindex.html", Title: "Python Module Index", LinkHeavy: true,
		Text: "json | Encode and decode the JSON format.\npickle | Convert Python objects to streams of bytes and back."}
	page := kgagent.EvidencePassage{URL: "http://d/library/json.html#module-json", Title: "json — JSON encoder and decoder",
		HeadingPath: []string{"json — JSON encoder and decoder"}, Text: "The json module encodes and decodes the JSON format, a lightweight data interchange format."}
	got := Compose("Which module should I use to encode and decode the JSON format?", ev("", index, page), Config{})
	if !strings.HasPrefix(got, "`json` — JSON encoder and decoder [2].") {
		t.Errorf("answer = %q, want the json page to lead", got)
	}
}

func FuzzCompose(f *testing.F) {
	f.Add("How do I restore?", "Run it:\n\nlumen backup restore --from x\n\nDone.", "T — d")
	f.Add("Which module?", "", "")
	f.Add("What is [1]?", "a [2] b. C d.", "x › y")
	f.Fuzz(func(t *testing.T, q, text, title string) {
		e := ev(q, kgagent.EvidencePassage{URL: "http://x/a#b", Title: title, HeadingPath: []string{title}, Text: text},
			kgagent.EvidencePassage{URL: "http://x/c", Title: "c", Text: text + " more"})
		got := Compose(q, e, Config{})
		if strings.TrimSpace(got) == "" {
			t.Fatal("empty answer")
		}
		for _, c := range citations(got) {
			if c < 0 {
				t.Fatalf("bad citation in %q", got)
			}
		}
	})
}

// TestComposeWhichClassLeadsWithTheClassPage: a question asking for a
// class is answered by naming the class whose page was found, not the
// package page that describes it among many (ranked first for quoting the
// class's description) nor a name the class page's sentence mentions.
func TestComposeWhichClassLeadsWithTheClassPage(t *testing.T) {
	const q = "Which Java class is this: base class used to maintain a strongly typed enumeration."
	pkg := kgagent.EvidencePassage{URL: "http://j/javax/accessibility/package-summary.html#AccessibleBundle", Title: "javax.accessibility (Java SE 17 & JDK 17)",
		HeadingPath: []string{"Package javax.accessibility"},
		Text:        "This class is used to maintain a strongly typed enumeration. It is the super class of both the AccessibleRole and AccessibleState classes."}
	uses := kgagent.EvidencePassage{URL: "http://j/javax/accessibility/package-use.html", Title: "Uses of Package javax.accessibility (Java SE 17 & JDK 17)",
		HeadingPath: []string{"Uses of Package javax.accessibility"},
		Text:        "Base class used to maintain a strongly typed enumeration, the super class of AccessibleRole."}
	class := kgagent.EvidencePassage{URL: "http://j/javax/accessibility/AccessibleBundle.html", Title: "AccessibleBundle (Java SE 17 & JDK 17)",
		HeadingPath: []string{"Class AccessibleBundle"},
		Text:        "Base class used to maintain a strongly typed enumeration, the super class of javax.accessibility.AccessibleState."}
	for _, c := range []struct {
		name string
		ps   []kgagent.EvidencePassage
	}{
		{"package page first", []kgagent.EvidencePassage{pkg, class}},
		{"uses page first", []kgagent.EvidencePassage{uses, class}},
	} {
		got := Compose(q, ev("", c.ps...), Config{})
		if !strings.HasPrefix(got, "`Class AccessibleBundle`") {
			t.Errorf("%s: answer = %q, want the class page's heading first", c.name, got)
		}
	}
	// Only the package page: it still answers, naming what it can.
	if got := Compose(q, ev("", pkg), Config{}); Abstained(got) || !strings.Contains(got, "[1]") {
		t.Errorf("package page alone: answer = %q", got)
	}
}

func TestAboutMany(t *testing.T) {
	for heading, want := range map[string]bool{
		"Package javax.accessibility|javax.accessibility (Java SE 17 & JDK 17)":                      true,
		"Module java.base|java.base (Java SE 17 & JDK 17)":                                           true,
		"Uses of Package java.util.stream|Uses of Package java.util.stream (Java SE 17 & JDK 17)":    true,
		"Uses of Class java.security.Permission|Uses of Class java.security.Permission (Java SE 17)": true,
		"Uses of Interface java.util.List<E>|Uses of Interface java.util.List (Java SE 17)":          true,
		"Uses of Enum Class java.math.RoundingMode|":                                                 true,
		"Class AccessibleBundle|AccessibleBundle (Java SE 17 & JDK 17)":                              false,
		"Interface Flow.Subscription<T>|Flow.Subscription (Java SE 17 & JDK 17)":                     false,
		"Module Objects|Module Objects — Python 3.11.2 documentation":                                false, // the Python C API's page on module objects
		"Packages|Packages": false,
		"os — Miscellaneous operating system interfaces": false,
		// a site's pages on managing packages or on what an API is
		// used for: not titled by a package's name, nor a Javadoc kind
		"Package management|Package management — Distro docs": false,
		"Package javax.accessibility|":                        false,
		"Uses of the API|Uses of the API":                     false,
	} {
		top, title, _ := strings.Cut(heading, "|")
		p := &passage{EvidencePassage: kgagent.EvidencePassage{Title: title, HeadingPath: []string{top}}}
		if got := aboutMany(p); got != want {
			t.Errorf("aboutMany(%q, title %q) = %v, want %v", top, title, got, want)
		}
	}
}

// TestComposeWhichClassByItsDescription: of two type pages nearly as good,
// the one whose description holds more of the question's words in a row
// leads (a known-item question quotes its type's description), as a
// "name — synopsis" heading does on module pages.
func TestComposeWhichClassByItsDescription(t *testing.T) {
	const q = "Which Java class is this: pluggable look and feel interface for JButton."
	chooser := kgagent.EvidencePassage{URL: "http://j/javax/swing/plaf/ColorChooserUI.html", Title: "ColorChooserUI (Java SE 17 & JDK 17)",
		HeadingPath: []string{"Class ColorChooserUI"},
		Text:        "Pluggable look and feel interface for JColorChooser."}
	button := kgagent.EvidencePassage{URL: "http://j/javax/swing/plaf/ButtonUI.html", Title: "ButtonUI (Java SE 17 & JDK 17)",
		HeadingPath: []string{"Class ButtonUI"},
		Text:        "Pluggable look and feel interface for JButton."}
	if got := Compose(q, ev("", chooser, button), Config{}); !strings.HasPrefix(got, "`Class ButtonUI`") {
		t.Errorf("answer = %q, want the class whose description the question quotes first", got)
	}
}

// TestComposeDeclaredHeadingNeedsItsTitle: a page whose top heading is a
// kind word and a word ("Exception Handling", "Enum HOWTO" in the Python
// docs) declares no class unless its title names that word alone, as a
// Javadoc type page's does ("ButtonUI (Java SE 17 & JDK 17)"): the
// identifier its sentence names answers a which-function question, not
// the page's heading.
func TestComposeDeclaredHeadingNeedsItsTitle(t *testing.T) {
	const q = "Which function sets the error indicator from a message?"
	p := kgagent.EvidencePassage{URL: "http://d/c-api/exceptions.html#raising-exceptions", Title: "Exception Handling — Python 3.11.2 documentation",
		HeadingPath: []string{"Exception Handling", "Raising exceptions"},
		Text:        "The most common way to set the error indicator from a message is PyErr_SetString()."}
	if got := Compose(q, ev("", p), Config{}); strings.Contains(got, "`Exception Handling`") || !strings.HasPrefix(got, "`PyErr_SetString()`") {
		t.Errorf("answer = %q, want PyErr_SetString() named first", got)
	}
	for heading, want := range map[string]bool{
		"Class ButtonUI|ButtonUI (Java SE 17 & JDK 17)":                          true,
		"Interface Flow.Subscription<T>|Flow.Subscription (Java SE 17 & JDK 17)": true,
		"Exception Handling|Exception Handling — Python 3.11.2 documentation":    false,
		"Enum HOWTO|Enum HOWTO — Python 3.11.2 documentation":                    false,
		"Class ButtonUI|": false,
	} {
		top, title, _ := strings.Cut(heading, "|")
		p := &passage{EvidencePassage: kgagent.EvidencePassage{Title: title, HeadingPath: []string{top}}}
		if got := declared(p) != ""; got != want {
			t.Errorf("declared(%q, title %q) = %v, want %v", top, title, got, want)
		}
	}
}
