package extractive

import (
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
)

// shelveEvidence is what a search finds for "keep a dictionary on disk
// between runs of my program": no page holds two thirds of the question's
// words, and the semantic model puts the shelve section closest (its
// cosine shelveCos, the others a little below it).
func shelveEvidence(shelveCos float64) []kgagent.Evidence {
	return ev("",
		kgagent.EvidencePassage{URL: "http://py/library/idle.html#user-output", Title: "IDLE", HeadingPath: []string{"User output in Shell"},
			Text: "Keep the program's output in the Shell window between runs.", Semantic: shelveCos * 0.6},
		kgagent.EvidencePassage{URL: "http://py/library/shelve.html#module-shelve", Title: "shelve — Python object persistence", HeadingPath: []string{"shelve — Python object persistence"},
			Text: "A shelf is a persistent, dictionary-like object stored in a file on disk.", Semantic: shelveCos},
		kgagent.EvidencePassage{URL: "http://py/library/stdtypes.html#dict", Title: "Built-in Types", HeadingPath: []string{"Mapping Types — dict"},
			Text: "A mapping object maps hashable values to arbitrary objects. The dictionary is the standard mapping type.", Semantic: shelveCos * 0.8},
	)
}

// TestSemanticLeadAnswersUsersWords: a question in users' words whose
// words no page holds together is answered from the section the semantic
// model finds closest when it is close enough (cosine >=
// semanticAnswerMin); below that, or when the question names something, it
// is still the not-found abstention.
func TestSemanticLeadAnswersUsersWords(t *testing.T) {
	q := "keep a dictionary on disk between runs of my program"
	for _, cos := range []float64{0.66, 0.45} {
		got := Compose(q, shelveEvidence(cos), Config{})
		if Abstained(got) || !strings.Contains(got, "A shelf is a persistent, dictionary-like object stored in a file on disk [2]") {
			t.Errorf("close (%.2f): answer = %q, want it from the shelve section [2]", cos, got)
		}
	}
	if got := Compose(q, shelveEvidence(0.3), Config{}); !strings.HasPrefix(got, NotFound) {
		t.Errorf("far: answer = %q, want the not-found abstention", got)
	}
	if got := Compose("keep a dictionary on disk between runs of my Django program", shelveEvidence(0.66), Config{}); !Abstained(got) {
		t.Errorf("a question naming something: answer = %q, want an abstention", got)
	}
	// Without semantic vectors (every cosine 0) nothing changes.
	if got := Compose(q, shelveEvidence(0), Config{}); !strings.HasPrefix(got, NotFound) {
		t.Errorf("lexical: answer = %q, want the not-found abstention", got)
	}
}

// TestSemanticLeadSkipsAPassageWithNoSentence: when the closest section
// has no sentence holding a word of the question (its heading alone
// matched), the next closest one that has leads, rather than an
// abstention ("schedule a few jobs to run at given times in my script":
// the sched page's "Scheduler Objects" heading comes first).
func TestSemanticLeadSkipsAPassageWithNoSentence(t *testing.T) {
	e := ev("",
		kgagent.EvidencePassage{URL: "http://py/library/sched.html#scheduler-objects", Title: "sched — Event scheduler", HeadingPath: []string{"Scheduler Objects"},
			Text: "Scheduler Objects", Semantic: 0.47},
		kgagent.EvidencePassage{URL: "http://py/library/sched.html#sched.scheduler.enter", Title: "sched — Event scheduler", HeadingPath: []string{"scheduler.enter(delay, priority, action)"},
			Text: "Schedule an event for delay more time units.", Semantic: 0.44},
		kgagent.EvidencePassage{URL: "http://py/faq/library.html#threads", Title: "Library FAQ", HeadingPath: []string{"Threads"},
			Text: "Use a pool of worker threads for jobs.", Semantic: 0.30},
	)
	got := Compose("schedule a few jobs to run at given times in my script", e, Config{})
	if Abstained(got) || !strings.Contains(got, "Schedule an event for delay more time units [2]") {
		t.Errorf("answer = %q, want it from the scheduler.enter section [2]", got)
	}
}

// tempfileEvidence is what a search finds for "make a scratch folder that
// is deleted automatically when I'm done": the right section says
// "temporary directory" and "removed"; no section says "scratch" or
// "automatically", words the collection holds elsewhere.
func tempfileEvidence(cos float64) []kgagent.Evidence {
	return ev("",
		kgagent.EvidencePassage{URL: "http://py/library/tempfile.html#tempfile.TemporaryDirectory", Title: "tempfile — Generate temporary files and directories",
			HeadingPath: []string{"class tempfile.TemporaryDirectory(suffix=None)"},
			Text:        "This class securely creates a temporary directory. On completion of the context or destruction of the object the folder and all of its contents are deleted from the filesystem.", Semantic: cos},
		kgagent.EvidencePassage{URL: "http://py/library/os.html#os.rmdir", Title: "os — Miscellaneous operating system interfaces", HeadingPath: []string{"os.rmdir(path)"},
			Text: "Remove (delete) the directory path.", Semantic: cos - 0.02},
	)
}

// TestMissingWordsLeftToMeaning: words of a question that names nothing,
// missing from the sections found although the collection holds them
// ("scratch", "automatically"), no longer make an abstention when a
// section found is close in meaning: that section answers. They still do
// when no section is close, when the search did not rank by meaning, and
// when the question names something the sections lack; a word the
// collection lacks (Evidence.Unknown) is still the docs-don't-say
// abstention.
func TestMissingWordsLeftToMeaning(t *testing.T) {
	q := "make a scratch folder that is deleted automatically when I'm done"
	if got := Compose(q, tempfileEvidence(0.46), Config{}); Abstained(got) || !strings.Contains(got, "[1]") {
		t.Errorf("close: answer = %q, want an answer citing the tempfile section [1]", got)
	}
	for _, cos := range []float64{0.3, 0} {
		if got := Compose(q, tempfileEvidence(cos), Config{}); !strings.HasPrefix(got, NotFound) || !strings.Contains(got, "“scratch”") {
			t.Errorf("cosine %.2f: answer = %q, want the not-found abstention naming “scratch”", cos, got)
		}
	}
	if got := Compose("make a scratch folder with Django that is deleted automatically", tempfileEvidence(0.46), Config{}); !strings.HasPrefix(got, NotFound) {
		t.Errorf("a name the sections lack: answer = %q, want the not-found abstention", got)
	}
	e := tempfileEvidence(0.46)
	e[0].Unknown = []string{"scratch"}
	if got := Compose(q, e, Config{}); !strings.HasPrefix(got, Abstention) || !strings.Contains(got, "“scratch”") {
		t.Errorf("a word the collection lacks: answer = %q, want the docs-don't-say abstention naming “scratch”", got)
	}
}

// TestFarInMeaningAbstains: a page holding the question's words does not
// answer it when no section found is close to it in meaning ("configure
// nginx as a reverse proxy": the urllib proxy handlers hold "configure"
// and "proxy"); without semantic cosines (a lexical search) the words
// decide, as before.
func TestFarInMeaningAbstains(t *testing.T) {
	proxy := func(cos float64) []kgagent.Evidence {
		return ev("",
			kgagent.EvidencePassage{URL: "http://py/library/urllib.request.html#proxyhandler-objects", Title: "urllib.request — Extensible library for opening URLs",
				HeadingPath: []string{"ProxyHandler Objects"},
				Text:        "To configure a reverse proxy handler, pass a dictionary mapping protocol names to URLs of proxies.", Semantic: cos},
		)
	}
	q := "How do I configure nginx as a reverse proxy?"
	if got := Compose(q, proxy(0.33), Config{}); !strings.HasPrefix(got, NotFound) {
		t.Errorf("far: answer = %q, want the not-found abstention", got)
	}
	for _, cos := range []float64{0.5, 0} {
		if got := Compose(q, proxy(cos), Config{}); Abstained(got) || !strings.Contains(got, "[1]") {
			t.Errorf("cosine %.2f: answer = %q, want the proxy section's answer [1]", cos, got)
		}
	}
	// Every section found farther than unrelated (negative cosines, which
	// MiniLM gives): none is close, so the answer is the abstention too.
	neg := proxy(-0.04)
	neg[0].Passages = append(neg[0].Passages, kgagent.EvidencePassage{N: 2, URL: "http://py/library/urllib.request.html#basehandler-objects", DocURL: "http://py/library/urllib.request.html",
		Title: "urllib.request — Extensible library for opening URLs", HeadingPath: []string{"BaseHandler Objects"},
		Text: "A proxy handler may be configured for each protocol.", Semantic: -0.02})
	if got := Compose(q, neg, Config{}); !strings.HasPrefix(got, NotFound) {
		t.Errorf("negative cosines: answer = %q, want the not-found abstention", got)
	}
	// While the semantic pass runs, a section without a vector yet may be
	// the one that answers: the words decide.
	e := proxy(0.33)
	e[0].Passages = append(e[0].Passages, kgagent.EvidencePassage{N: 2, URL: "http://py/howto/urllib2.html#proxies", DocURL: "http://py/howto/urllib2.html",
		Title: "HOWTO Fetch Internet Resources Using The urllib Package", HeadingPath: []string{"Proxies"},
		Text: "urllib will auto-detect your proxy settings and use those."})
	if got := Compose(q, e, Config{}); Abstained(got) {
		t.Errorf("a section without a vector: answer = %q, want an answer", got)
	}
}
