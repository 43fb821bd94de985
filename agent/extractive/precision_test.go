package extractive

import (
	"maps"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

func TestAmountAsked(t *testing.T) {
	for _, c := range []struct {
		q, thing string
		limit    bool
	}{
		{"what is the maximum number of databases one server can hold?", "databases", true},
		{"how many threads does the query engine use?", "threads", false},
		{"what is the limit on fields per point?", "fields", true},
		{"how long can a token name be at most?", "", true},
		{"what's the maximum interval a continuous query can run at?", "interval", true},
		{"find the biggest item in a list", "", false},
		{"how do I get the max of a list", "", false},
		{"alternate repr() implementation with size limits", "", false},
		{"writes blow up with a series limit error", "", false},
		// "a number of" says there are several; it asks no amount.
		{"There are a number of retention settings; which one keeps data forever?", "", false},
		{"a large number of my series are old, how do I drop them?", "", false},
		{"I write a large amount of data: what is the number of shards?", "shards", false},
	} {
		thing, limit := amountAsked(c.q)
		want := ""
		if c.thing != "" {
			want = text.Term(c.thing)
		}
		if thing != want || limit != c.limit {
			t.Errorf("amountAsked(%q) = %q, %v; want %q, %v", c.q, thing, limit, want, c.limit)
		}
	}
}

// TestAmountIsStatedOfTheThingAsked: a question about an amount is
// answered only by a sentence that states one of the thing it counts.
// Before, the FAQ's series limit, close in meaning, answered the number of
// databases a server holds, and a query section answered the number of
// threads.
func TestAmountIsStatedOfTheThingAsked(t *testing.T) {
	faq := func() []kgagent.Evidence {
		return ev("", kgagent.EvidencePassage{URL: "http://lumen/faq.html#max-series", Title: "Frequently asked questions",
			HeadingPath: []string{"Frequently asked questions", "How many series can a database hold?"}, Semantic: 0.6,
			Text: "One million series by default (limits.max_series = 1000000). Raising it costs about 1 KiB of memory per series."})
	}
	cfg := Config{Embed: wordVectors(nil)}
	if got := Compose("How many series can a database hold?", faq(), cfg); Abstained(got) || !strings.Contains(got, "One million") {
		t.Errorf("the amount asked: answer = %q, want the FAQ's", got)
	}
	for _, q := range []string{
		"what is the maximum number of databases one server can hold?",
		"how many databases can a server hold?",
	} {
		got := Compose(q, faq(), cfg)
		if !strings.HasPrefix(got, "I found no section") {
			t.Errorf("%q: answer = %q, want the not-found abstention", q, got)
		}
	}
}

// TestStatusCodeLeads: a problem report's status code ("gives 503") is
// what to look for: the sentence of a section found that says when it is
// answered leads. Before, digit runs were no terms of the question, and a
// changelog line holding "health" led.
func TestStatusCodeLeads(t *testing.T) {
	e := ev("",
		kgagent.EvidencePassage{URL: "http://lumen/changelog.html#v2.4.1", Title: "Changelog", HeadingPath: []string{"Changelog", "2.4.1"},
			Semantic: 0.45, Text: "The health check endpoint reports the version after a restart."},
		kgagent.EvidencePassage{URL: "http://lumen/api/http/health.html#health", Title: "GET /health", HeadingPath: []string{"GET /health"},
			Semantic: 0.40, Text: "Returns HTTP 200 when the server is ready, and HTTP 503 while the WAL is being replayed at start-up."})
	got := Compose("right after a restart the health check gives 503, is something wrong?", e, Config{Embed: wordVectors(nil)})
	if !strings.HasPrefix(got, "Returns HTTP 200 when the server is ready, and HTTP 503") {
		t.Errorf("answer = %q, want the health endpoint's 503 sentence first", got)
	}
	for q, want := range map[string]string{"uploads fail with 413": "413", "I get a 504 error": "504", "a 500 response": "500",
		"list every address in 192.168.1.0/24": "", "upgrade from Lumen 2 to 3": "",
		"gives 503 right after a restart": "503", "fails with 413, why?": "413", "returns 500 when I post": "500",
		"uploads fail with 413 Request Entity Too Large": "413", "I get a 500 Internal Server Error": "500",
		"the proxy answers with 504 gateway timeout": "504", "got 503 Service Unavailable": "503",
		// A number followed by what it counts is no code.
		"how do I insert a batch with 100 rows?": "", "my query returns 200 rows, how do I get more?": "",
		"how do I set a 300 ms timeout?": "", "how do I keep a 100 day retention?": "", "with 100% of the points": ""} {
		got := statusCodes(q)
		if want == "" && len(got) > 0 || want != "" && !got[want] {
			t.Errorf("statusCodes(%q) = %v, want %q", q, got, want)
		}
	}
}

// TestStatusCodeLeadsLexical: without semantic scores (a lexical
// collection) any section found that holds the code may lead; with them,
// only one close in meaning (semanticAnswerMin).
func TestStatusCodeLeadsLexical(t *testing.T) {
	ps := collect(ev("",
		kgagent.EvidencePassage{URL: "http://lumen/changelog.html#v2", Title: "Changelog", HeadingPath: []string{"Changelog"},
			Text: "The health check endpoint reports the version after a restart."},
		kgagent.EvidencePassage{URL: "http://lumen/health.html#health", Title: "GET /health", HeadingPath: []string{"GET /health"},
			Text: "Returns HTTP 503 while the WAL is being replayed at start-up."}), false)
	sents, _ := split(ps)
	if s := codeSentence(sents, ps, "the health check gives 503"); s == nil || !strings.Contains(s.text, "503") {
		t.Errorf("lexical: code sentence = %v, want the 503 one", s)
	}
	for _, p := range ps {
		p.Semantic = 0.2
	}
	ps[0].Semantic = 0.5
	if s := codeSentence(sents, ps, "the health check gives 503"); s != nil {
		t.Errorf("semantic, the 503 section far in meaning: code sentence = %q, want none", s.text)
	}
}

// TestWhatDoesANameDo: "what does lumen.connect do?" asks of a dotted
// name; the section whose heading is that name answers it. Before,
// answerType took "lumen.connect" as the kind asked for, a term the
// evidence never holds whole, and the answer said none of the sections
// found mentions “lumen.connect”, under the heading that names it.
func TestWhatDoesANameDo(t *testing.T) {
	e := ev("", kgagent.EvidencePassage{URL: "http://lumen/api/python/client.html#lumen.connect", Title: "lumen.Client",
		HeadingPath: []string{`lumen.connect(url, token=None, timeout=10.0)`}, Semantic: 0.6,
		Text: "Opens a connection and returns a Client. timeout is in seconds and applies to each request."})
	for _, q := range []string{"what does lumen.connect do?", "what is lumen.connect?"} {
		if got := Compose(q, e, Config{}); Abstained(got) || !strings.Contains(got, "Opens a connection") {
			t.Errorf("%q: answer = %q, want the section's", q, got)
		}
	}
	if got := answerType("what port does lumen.connect use?"); got != text.Term("port") {
		t.Errorf("answerType = %q, want port", got)
	}
}

// rateLimitEvidence is the demo's rate-limit section (it states HTTP 429)
// at cosine cos with the question, beside the quickstart, with unknown as
// the question's words the collection lacks.
func rateLimitEvidence(cos float64, unknown ...string) []kgagent.Evidence {
	e := ev("",
		kgagent.EvidencePassage{URL: "http://lumen/getting-started/quickstart.html#quickstart", Title: "Quickstart", HeadingPath: []string{"Quickstart"},
			Semantic: cos, Text: "This quickstart starts a local server, writes three points and queries them back."},
		kgagent.EvidencePassage{URL: "http://lumen/api/http/index.html#rate-limits", Title: "HTTP API reference", HeadingPath: []string{"HTTP API reference", "Rate limits"},
			Semantic: cos - 0.02, Text: "When limits.writes_per_second is set, excess writes get HTTP 429 with a Retry-After header."})
	e[0].Unknown = unknown
	return e
}

// TestReportedCodeIsTheSubject: a problem report whose status code a
// section close in meaning states is about that code. Its other words the
// collection lacks ("inserts", "bouncing": rare, no section word close to
// them) are its wording, and the code's reason phrase ("Too Many
// Requests") names nothing the sections must hold. Before, the report was
// an abstention on those words ("The docs don't say anything about
// “inserts” …"). A name the docs lack (Kafka), no section close in
// meaning, or no model still abstain.
func TestReportedCodeIsTheSubject(t *testing.T) {
	cfg := Config{Embed: wordVectors(nil)}
	q := "my app's inserts suddenly start bouncing back with 429 Too Many Requests, what should it do"
	got := Compose(q, rateLimitEvidence(0.47, "inserts", "suddenly", "bouncing"), cfg)
	want := "When limits.writes_per_second is set, excess writes get HTTP 429"
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "The docs don't use the words “inserts”, “suddenly” or “bouncing”; the above is the closest they cover.") {
		t.Errorf("report with a stated code: answer = %q, want it to open with %q and name its wording last", got, want)
	}
	lacks := Abstention + " anything about"
	for name, c := range map[string]struct {
		q       string
		cos     float64
		unknown []string
		cfg     Config
	}{
		"a name the docs lack": {"my Kafka consumer fails with 429 when it writes", 0.47, []string{"Kafka", "consumer"}, cfg},
		"far in meaning":       {q, 0.30, []string{"inserts", "suddenly", "bouncing"}, cfg},
		"no model":             {q, 0.47, []string{"inserts", "suddenly", "bouncing"}, Config{}},
		"code not stated":      {"my app's inserts start bouncing back with 503, what should it do", 0.47, []string{"inserts", "bouncing"}, cfg},
		// A question after the report asks about its own subject:
		// "autoscaling", rare and said by no close section, is no wording
		// of the report.
		"a question after the report": {"my app's inserts start bouncing back with 429 Too Many Requests, does autoscaling fix it?", 0.47, []string{"inserts", "bouncing", "autoscaling"}, cfg},
	} {
		if got := Compose(c.q, rateLimitEvidence(c.cos, c.unknown...), c.cfg); !strings.HasPrefix(got, lacks) {
			t.Errorf("%s: answer = %q, want %q…", name, got, lacks)
		}
	}
	if got := reasonPhrases("uploads fail with 413 Request Entity Too Large, why? Ask Bob"); !got["Request"] || !got["Large"] || got["Ask"] || got["Bob"] {
		t.Errorf("reasonPhrases = %v, want the words after 413 up to the comma", got)
	}
	if got := analyse(q); len(got.specific) > 0 || len(got.compounds) > 0 {
		t.Errorf("analyse(%q): names %v, phrases %v, want none (a reason phrase)", q, got.specific, got.compounds)
	}
}

// FuzzStatusCodes: statusCodes skips the expression for a question with
// no digit 1-5 and finds what it finds otherwise: the same codes as
// running the expression on every question.
func FuzzStatusCodes(f *testing.F) {
	for _, q := range []string{"uploads fail with 413", "I get a 504 error", "how do I set a 300 ms timeout?", "HTTP 200", "status 099",
		"list every address in 192.168.1.0/24", "why?", "error 600", "returns 1xx", "a 5O3 error"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		want := matchStatusCodes(q)
		if got := statusCodes(q); !maps.Equal(got, want) || got == nil {
			t.Fatalf("statusCodes(%q) = %v, the expression finds %v", q, got, want)
		}
	})
}
