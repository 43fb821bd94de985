package extractive

import (
	"context"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
)

// wordVectors embeds the words it knows as given, any other as a vector
// orthogonal to all (cosine 0).
func wordVectors(m map[string][]float32) func(context.Context, []string) ([][]float32, error) {
	return func(_ context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i, t := range texts {
			if v, ok := m[strings.ToLower(t)]; ok {
				out[i] = v
			} else {
				out[i] = []float32{0, 0, 0, 0}
			}
		}
		return out, nil
	}
}

// retentionEvidence is the demo's retention section at cosine cos with
// the question, with unknown as the question's words the collection lacks.
func retentionEvidence(cos float64, unknown ...string) []kgagent.Evidence {
	e := ev("", kgagent.EvidencePassage{URL: "http://lumen/configuration/retention.html#retention", Title: "Retention settings",
		HeadingPath: []string{"Retention settings"}, Semantic: cos,
		Text: "Retention decides how long points are kept. Lumen deletes whole shards whose end time is older than the retention period."})
	e[0].Unknown = unknown
	return e
}

// TestWordingWordsDoNotForceAbstention: everyday words the collection
// lacks ("stick around") are a question's wording, not its subject: when
// the search found a section close in meaning, the question is answered,
// and the answer says which words the docs do not use. Before, any word
// the collection lacks made the answer an abstention. A word written as a
// name, a rare word no section found says in its words, an action the
// sections found do not hold, no section close in meaning, or no model
// (lexical) still abstain.
func TestWordingWordsDoNotForceAbstention(t *testing.T) {
	embed := wordVectors(map[string][]float32{"linger": {1, 0, 0, 0}, "kept": {0.6, 0.8, 0, 0}})
	cfg := Config{Embed: embed}
	q := "how long do old points stick around before they get deleted?"
	got := Compose(q, retentionEvidence(0.56, "stick", "around"), cfg)
	// It leads with the sentence that answers, and ends by naming the
	// words the docs don't use.
	if want, note := "Retention decides how long points are kept", "\n\nThe docs don't use the words “stick” or “around”; the above is the closest they cover."; Abstained(got) || !strings.HasPrefix(got, want) || !strings.HasSuffix(got, note) || !strings.Contains(got, "[1]") {
		t.Errorf("everyday wording: answer = %q, want it to open with %q, cited, and end with %q", got, want, note)
	}
	lacks := Abstention + " anything about “stick” or “around”"
	if got := Compose(q, retentionEvidence(0.56, "stick", "around"), Config{}); !strings.HasPrefix(got, lacks) {
		t.Errorf("no model: answer = %q, want %q", got, lacks)
	}
	if got := Compose(q, retentionEvidence(0.20, "stick", "around"), cfg); !strings.HasPrefix(got, lacks) {
		t.Errorf("no section close in meaning: answer = %q, want %q", got, lacks)
	}
	if got := Compose(q, retentionEvidence(0, "stick", "around"), cfg); !strings.HasPrefix(got, lacks) {
		t.Errorf("lexical search: answer = %q, want %q", got, lacks)
	}
	// A rare word is wording only when a section found says it in its
	// own words ("linger" and "kept": 0.6 here).
	q = "how long do old points linger before they get deleted?"
	if got := Compose(q, retentionEvidence(0.56, "linger"), cfg); Abstained(got) || !strings.HasSuffix(got, "The docs don't use the word “linger”; the above is the closest they cover.") {
		t.Errorf("rare word covered in meaning: answer = %q, want an answer that names it", got)
	}
	if got := Compose(q, retentionEvidence(0.56, "linger"), Config{Embed: wordVectors(nil)}); !Abstained(got) {
		t.Errorf("rare word no section says: answer = %q, want an abstention", got)
	}
	for _, c := range []struct{ q, unknown string }{
		{"how long do old points stick around on my GPU?", "GPU"},             // written as a name
		{"how long do old points stick around in Zorbdb?", "Zorbdb"},          // a name
		{"how long do old points stick around with lumenctl.keep()?", "keep"}, // an identifier's part
	} {
		if got := Compose(c.q, retentionEvidence(0.56, "stick", "around", c.unknown), cfg); !Abstained(got) {
			t.Errorf("%q: answer = %q, want an abstention", c.q, got)
		}
	}
	// A question naming something the docs hold: the page that answers
	// must hold its other words too ("cost" is on another page only).
	named := retentionEvidence(0.56, "around")
	named[0].Passages = append(named[0].Passages, kgagent.EvidencePassage{N: 2, URL: "http://lumen/faq.html#series", DocURL: "http://lumen/faq.html",
		Title: "FAQ", HeadingPath: []string{"How many series can a database hold?"}, Semantic: 0.2,
		Text: "One million by default. Each series costs about 1 KiB of memory."})
	if got := Compose("How long are points kept around by Lumen?", named, cfg); Abstained(got) {
		t.Errorf("named, the page holds every word: answer = %q, want an answer", got)
	}
	if got := Compose("How much does Lumen cost per old point kept around?", named, cfg); !strings.HasPrefix(got, Abstention+" anything about “around”") {
		t.Errorf("named, the page lacks “cost”: answer = %q, want the abstention", got)
	}
	// Nothing but a name is left once the wording is set aside.
	if got := Compose("How much does Lumen cost?", retentionEvidence(0.56, "cost"), cfg); !strings.HasPrefix(got, Abstention+" anything about “cost”") {
		t.Errorf("only a name left: answer = %q, want the abstention", got)
	}
	// The question's action, known to the collection, is in no section
	// found: they do not say how to do it, whatever its wording.
	if got := Compose("How do I compress old points by hand?", retentionEvidence(0.56, "hand"), cfg); !strings.HasPrefix(got, Abstention+" anything about “hand”") {
		t.Errorf("action the sections lack: answer = %q, want the abstention", got)
	}
}

func TestWrittenAsName(t *testing.T) {
	for _, c := range []struct {
		q, w string
		want bool
	}{
		{"How do I log in with my LDAP account?", "ldap", true},
		{"How do I log in with my LDAP account?", "account", false},
		{"Who is the mascot of the Python documentation?", "mascot", false},
		{"Stick around: how long are points kept?", "stick", false}, // the first word
		{"How do I define a schema with Apollo Server?", "apollo", true},
		{"What does asyncio.teleport() do?", "teleport", true},
		{"enable turbo mode with the --turbo flag", "turbo", true},
		{"save a copy of my database somewhere safe", "safe", false},
		// The first word's first letter, not its first byte: "Über" is
		// capitalised as any first word, "ÜBER" and "iPhone" as names.
		{"Über eine Frage: how are points kept?", "über", false},
		{"Éclair stays: how long are points kept?", "éclair", false},
		{"ÉCLAIR: how long are points kept?", "éclair", true},
		{"Why does my iPhone app fail?", "iphone", true},
		// Plain words joined by a slash are alternatives, not a path:
		// a leading slash, digits or other punctuation make one.
		{"track more distinct host/sensor combinations", "sensor", false},
		{"track more distinct host/sensor combinations", "host", false},
		{"expose a /metrics endpoint", "metrics", true},
		{"what does api/v2 return", "api", true},
		// each alternative is a word: capitalised, it is a name
		{"can lumen read from my Kafka/Zookeeper setup?", "kafka", true},
		{"can lumen read from my Kafka/Zookeeper setup?", "zookeeper", true},
		{"does it speak TCP/IP?", "tcp", true},
		{"Host/sensor pairs: how many can I track?", "host", false},
		{"how many host/Sensors can I track?", "sensor", true},
	} {
		if got := writtenAsName(c.q, c.w); got != c.want {
			t.Errorf("writtenAsName(%q, %q) = %v, want %v", c.q, c.w, got, c.want)
		}
	}
}

func TestObjectHead(t *testing.T) {
	for q, want := range map[string]string{
		"How do I upgrade my cluster from Lumen 2?":             "cluster",
		"save a copy of my database somewhere safe":             "copy",
		"load a spreadsheet export into my database":            "export",
		"How do I draw a chart of my points in the browser?":    "chart",
		"How do I compress old shards by hand?":                 "shards",
		"turn on https for the server":                          "", // no action
		"How do I zorblax?":                                     "",
		"get my query results straight into a pandas dataframe": "results", // an adverb ends the object
		"How do I put the old backup back?":                     "backup",
	} {
		if got := objectHead(q, actionWord(q)); got != want {
			t.Errorf("objectHead(%q) = %q, want %q", q, got, want)
		}
	}
}

// TestOppositeActionIsNotMeant: a section's word that the question's
// action negates ("delete" for "undelete") does not name the action,
// however close the semantic model puts them (0.45 measured).
func TestOppositeActionIsNotMeant(t *testing.T) {
	for _, c := range []struct {
		action, word string
		want         bool
	}{
		{"undelete", "delete", true}, {"undelete", "deletes", true}, {"uninstall", "installed", true},
		{"disable", "enable", false}, {"delete", "delete", false}, {"upgrade", "grade", false}, {"decompress", "compressed", true},
	} {
		if got := opposite(c.action, c.word); got != c.want {
			t.Errorf("opposite(%q, %q) = %v, want %v", c.action, c.word, got, c.want)
		}
	}
	embed := wordVectors(map[string][]float32{"undelete": {1, 0, 0, 0}, "deletes": {0.45, 0.893, 0, 0}})
	q := "How do I undelete old points?"
	if got := Compose(q, retentionEvidence(0.56, "undelete"), Config{Embed: embed}); !strings.HasPrefix(got, Abstention+" anything about “undelete”") {
		t.Errorf("answer = %q, want the abstention", got)
	}
}

func TestEveryday(t *testing.T) {
	for w, want := range map[string]bool{
		"around": true, "Yesterday": true, "averages": true, "policies": true, "watches": true,
		"mascot": false, "npm": false, "conftest": false, "blockchain": false, "shards": false,
		"academies": true,                                                    // "academy" is listed, its plural is not
		"hiss":      false,                                                   // not the plural of "his"
		"loading":   true, "mounting": true, "saving": true, "stopped": true, // -ing / -ed of everyday verbs
		"sharding": false, "frobnicated": false, "encrypted": false, "vacuuming": false,
	} {
		if got := everyday(w); got != want {
			t.Errorf("everyday(%q) = %v, want %v", w, got, want)
		}
	}
}

// TestWordingSparesTheObject: an everyday word the collection lacks that is
// what the question's action is done to ("upgrade my cluster") is what is
// asked about, not wording: the answer abstains on it.
func TestWordingSparesTheObject(t *testing.T) {
	q := analyse("How do I delete my office?")
	if q.object != "office" {
		t.Fatalf("object = %q, want office", q.object)
	}
	ps := collect(retentionEvidence(0.56, "office"), false)
	embed := wordVectors(nil)
	if words, ok := q.wording(context.Background(), "How do I delete my office?", []string{"office"}, ps, embed); ok {
		t.Errorf("wording = %q, %v; want the object kept as the subject", words, ok)
	}
	q = analyse("How do I delete points in my office?")
	if words, ok := q.wording(context.Background(), "How do I delete points in my office?", []string{"office"}, ps, embed); !ok || len(words) != 1 {
		t.Errorf("wording = %q, %v; want office as wording when it is not the object", words, ok)
	}
}

// TestWordingShareDecides: how many of a question's terms are words the
// collection lacks decides with the closest section's cosine (answerMin,
// fewRare). Everyday words lower the cosine the question needs, by their
// share: "stick around" (two of the question's terms) is answered from a
// section at 0.30, below semanticAnswerMin, where before it was an
// abstention; a single everyday word among four terms ("football") is
// answered at 0.30 and not at 0.26 (answerMin 0.275). One rare word no
// section says in other words ("gateway": the section says "HTTP 504
// Timeout"), among ten terms of a users'-words report, is its wording;
// among six, its subject. Each case turns with answerMin or fewRare alone:
// the question's other words are all the section's.
func TestWordingShareDecides(t *testing.T) {
	cfg := Config{Embed: wordVectors(nil)}
	q := "how long do old points stick around before they get deleted?"
	if got := Compose(q, retentionEvidence(0.30, "stick", "around"), cfg); Abstained(got) || !strings.Contains(got, "Retention decides how long points are kept") {
		t.Errorf("everyday wording at 0.30: answer = %q, want the retention section", got)
	}
	q = "how long are old football points kept?"
	if got := Compose(q, retentionEvidence(0.30, "football"), cfg); Abstained(got) || !strings.Contains(got, "Retention decides how long points are kept") {
		t.Errorf("one everyday word of four at 0.30: answer = %q, want the retention section", got)
	}
	if got := Compose(q, retentionEvidence(0.26, "football"), cfg); !Abstained(got) {
		t.Errorf("one everyday word of four at 0.26: answer = %q, want an abstention", got)
	}
	timeouts := func(unknown ...string) []kgagent.Evidence {
		e := ev("", kgagent.EvidencePassage{URL: "http://lumen/api/http/query.html#timeouts", Title: "POST /api/v2/query",
			HeadingPath: []string{"POST /api/v2/query", "Timeouts"}, Semantic: 0.49,
			Text: "A monthly report query that runs longer than query.timeout (default 30s) fails with HTTP 504 Timeout; raise the timeout for big queries."})
		e[0].Unknown = unknown
		return e
	}
	q = "my big monthly report query dies after half a minute with a gateway timeout error"
	if got := Compose(q, timeouts("dies", "half", "gateway"), cfg); Abstained(got) || !strings.Contains(got, "query.timeout") || !strings.Contains(got, "“gateway”") {
		t.Errorf("one rare word among ten terms: answer = %q, want the timeouts section, naming “gateway” as wording", got)
	}
	if got := Compose("my monthly report query fails with a gateway timeout", timeouts("gateway"), cfg); !Abstained(got) || !strings.Contains(got, "“gateway”") {
		t.Errorf("one rare word among six terms: answer = %q, want an abstention naming “gateway”", got)
	}
	if got := Compose("How do I publish a package to npm?", timeouts("npm", "publish"), cfg); !Abstained(got) {
		t.Errorf("a rare word and the action among three terms: answer = %q, want an abstention", got)
	}
}

// TestRareWordSaidByAPageOfTheQuestion: a rare word the collection lacks
// that a section found says in other words is wording, as an everyday word
// is, when that section's page holds the question's other words, although
// its cosine with the whole question (a question in a user's words) is
// under semanticAnswerMin: "firewall" beside "port" in the section on
// ports and replicas is answered from it. A section close to the word but
// holding none of the question's other words does not say it ("python" is
// close to "matplotlib", the Python pages found hold neither "legend" nor
// "plot"): the question still abstains. Before, only sections close in
// meaning to the whole question could say a rare word, and the first
// question abstained on “firewall”.
func TestRareWordSaidByAPageOfTheQuestion(t *testing.T) {
	cfg := Config{Embed: wordVectors(map[string][]float32{"firewall": {1, 0, 0, 0}, "port": {0.52, 0.854, 0, 0}, "security": {0.52, 0.854, 0, 0}})}
	q := "which ports do I need to open in the firewall for the database and its replicas?"
	section := func(heading, text string) []kgagent.Evidence {
		e := ev("", kgagent.EvidencePassage{URL: "http://lumen/faq.html#" + strings.ToLower(heading), Title: "FAQ", HeadingPath: []string{"FAQ", heading},
			Semantic: 0.30, Text: text})
		e[0].Unknown = []string{"firewall"}
		return e
	}
	got := Compose(q, section("Ports", "The HTTP API listens on port 8086 by default, and the gRPC API used by replicas on port 8087."), cfg)
	if Abstained(got) || !strings.Contains(got, "8087") || !strings.Contains(got, "“firewall”") {
		t.Errorf("a page of the question's words says it: answer = %q, want the ports section, naming “firewall” as wording", got)
	}
	got = Compose(q, section("Security", "Security settings cover TLS certificates and tokens."), cfg)
	if !strings.HasPrefix(got, Abstention+" anything about “firewall”") {
		t.Errorf("a section without the question's words: answer = %q, want the abstention", got)
	}
}
