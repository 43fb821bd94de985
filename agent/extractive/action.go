package extractive

import (
	"context"
	"regexp"
	"sort"
	"strings"

	"github.com/kgagent/kgagent/internal/text"
)

// A word the collection lacks (Evidence.Unknown) is usually what the
// question asks about: "How do I publish a package to npm?", "Who is the
// mascot of the Python documentation?" — the docs do not answer it, and
// the answer says so. One kind of such word is not: the question's action,
// the verb of a how-to question ("How do I upgrade from Lumen 2 to Lumen
// 3?", "move my data from the old install"). Users name an action in their
// own words (upgrade, move, wipe) where the docs use theirs (migrate,
// delete); what is asked is the action's object and the names, which the
// evidence must still hold. So an action word the collection lacks does
// not decide alone: when the search ranked by meaning, found a section
// close enough to the question (semanticAnswerMin), and a section holding
// the question's names has a word meaning the action (actionWordMin, by the
// semantic model: Config.Embed), the question is answered from that
// section, judged by its other words as before. An action the docs do not
// offer on a thing they cover ("pause the retention enforcer") has no such
// word and still abstains. No question of bench/unanswerable_pydocs has an
// action the collection lacks — their unknown words are the thing asked
// about (npm, conftest, blockchain, mascot), which this leaves to abstain.

// actionLeadRe matches how a how-to question leads to its action verb; a
// question whether something can be done ("can I join …", "is it
// possible to …") asks about its verb as a how-to does.
var actionLeadRe = regexp.MustCompile(`(?i)^\s*(how\s+(do|can|should|would|could|does)\s+(i|you|we|one)|how\s+to|what(\s+is|'?s)?\s+the\s+(best\s+|right\s+)?way\s+to|is\s+there\s+a\s+way\s+to|i\s+(want|need)\s+to|(can|could)\s+(i|you|we|one)|is\s+it\s+possible\s+to)\s+(\S+)`)

// objectStarts are words that begin the object of a verb in an
// imperative question ("move my data", "save a copy"): a question whose
// first word is followed by one of them leads with its action. Not a
// particle or preposition ("on", "up", "out"): a thing is followed by one
// as often as a verb is ("sourdough on a Lumen server", "Kafka on
// Lumen?" as much as "turn on https"), and a thing the collection lacks
// taken for an action is answered from any section holding a word near it
// in meaning (sourdough–stdout 0.65: the CLI reference).
var objectStarts = map[string]bool{"a": true, "an": true, "the": true, "my": true, "our": true, "your": true, "all": true,
	"every": true, "each": true, "this": true, "these": true, "that": true, "those": true, "it": true, "them": true,
	"some": true}

// questionStarts are first words that begin a question rather than an
// imperative: never an action.
var questionStarts = map[string]bool{"what": true, "which": true, "who": true, "whom": true, "whose": true, "when": true,
	"where": true, "why": true, "how": true, "is": true, "are": true, "was": true, "were": true, "do": true, "does": true,
	"did": true, "can": true, "could": true, "should": true, "would": true, "will": true, "has": true, "have": true,
	"i": true, "my": true, "we": true, "our": true, "the": true, "a": true, "an": true, "any": true,
	// conjunctions that open a clause saying when or why ("if the power
	// goes out, …"): the clause's subject follows, not an object
	"if": true, "while": true, "once": true, "because": true, "unless": true, "whenever": true, "although": true}

// actionWord returns the verb a question asks how to do, lower-cased: the
// word after "how do I", "how to", "the best way to" …, or the first word
// of an imperative question followed by its object ("move my data …");
// "" when the question has none.
func actionWord(q string) string {
	q = text.ExpandContractions(q)
	if m := actionLeadRe.FindStringSubmatch(q); m != nil {
		return strings.ToLower(strings.Trim(m[len(m)-1], nameTrim))
	}
	f := strings.Fields(strings.ToLower(q))
	if len(f) < 3 {
		return ""
	}
	w := strings.Trim(f[0], nameTrim)
	if questionStarts[w] || !objectStarts[strings.Trim(f[1], nameTrim)] || gerund(w) && saysWhatHappened(f[2:]) {
		return ""
	}
	return w
}

// gerund reports whether w is the -ing form of an everyday verb
// ("loading", "pushing"; not "bring"). A question that starts with one
// and goes on to say what happened (saysWhatHappened) names what the user
// was doing, the subject of what went wrong ("loading my csv file keeps
// failing …"), not an action to do; without such a verb it asks how to do
// it, as the imperative does ("watching a measurement for new points").
func gerund(w string) bool {
	return strings.HasSuffix(w, "ing") && inflectedEveryday(w)
}

// happenedVerbs are the finite verbs by which a question whose subject is
// what the user was doing says what happened to it ("… keeps failing",
// "… fails with 413", "… takes forever", "… is slow"): auxiliaries and
// the verbs of a problem report. A plural noun is no such verb ("points"),
// so only these count.
var happenedVerbs = map[string]bool{"is": true, "are": true, "was": true, "were": true, "does": true, "did": true,
	"has": true, "had": true, "will": true, "would": true, "can": true, "cannot": true, "keeps": true, "kept": true,
	"takes": true, "took": true, "fails": true, "failed": true, "breaks": true, "broke": true, "crashes": true,
	"crashed": true, "hangs": true, "hung": true, "stops": true, "stopped": true, "throws": true, "threw": true,
	"gives": true, "gave": true, "returns": true, "returned": true, "errors": true, "errored": true, "gets": true, "got": true}

// saysWhatHappened reports whether the words after a question's first two
// (lower case, contractions expanded) hold a finite verb of happenedVerbs
// that is not a relative clause's ("reading a file that is too big …":
// the verb of "that", "which" or "who" says what the object is).
func saysWhatHappened(words []string) bool {
	for i, w := range words {
		if happenedVerbs[strings.Trim(w, nameTrim)] && (i == 0 || !relativeStarts[strings.Trim(words[i-1], nameTrim)]) {
			return true
		}
	}
	return false
}

// relativeStarts begin a relative clause, whose verb describes a noun
// rather than saying what happened.
var relativeStarts = map[string]bool{"that": true, "which": true, "who": true}

// actionInOtherWords reports whether the words of the question that the
// collection lacks (unknown) are only its action, and the search found a
// section close enough in meaning to answer it: then those words need not
// be in the docs (see above).
func (q question) actionInOtherWords(unknown []string, ps []*passage) bool {
	if q.action == "" || semanticBest(ps) < q.closeMin() {
		return false
	}
	for _, u := range unknown {
		if !q.actionPart(u) {
			return false
		}
	}
	return true
}

// withoutAction returns q with its action's term dropped from the terms
// the evidence must hold.
func (q question) withoutAction() question {
	terms := make([]string, 0, len(q.terms))
	for _, x := range q.terms {
		if !q.actionPart(x) {
			terms = append(terms, x)
		}
	}
	q.terms = terms
	return q
}

// actionWordMin is the cosine of the semantic vectors of the question's
// action and of a word of a section (each embedded alone) from which the
// section names that action in its own words ("upgrade" and "migrate":
// 0.44; "move" and "migrate": 0.58). A section that answers the question's
// object but not its action ("How can I pause the retention enforcer?":
// the enforcer's interval setting, cosine 0.71 with the question; "pause"
// and "runs" 0.22) or a made-up action ("zorblax the server": "start"
// 0.23) has no such word. Chosen on half 0 (crc32(question) mod 2) of
// bench/lumen_demo_questions, natural_lumen and unanswerable_lumen: the
// actions answered reach 0.44 and 0.58, the unanswerable ones' best word
// 0.33 at most; single words of unrelated meaning reach about 0.35-0.39
// (upgrade–backup 0.39), so 0.4. Half 1: see README's Benchmarks.
const actionWordMin = 0.4

// maxActionWords bounds the words of a section compared with the action.
const maxActionWords = 80

// actionLead returns the sentence that leads the answer to a question
// whose action the collection lacks (actionInOtherWords): with that word
// gone, the question's other words ("Lumen", "data") no longer say which
// section does what it asks, its meaning does. Among the sections whose
// page holds the question's names (covered), that are close enough in
// meaning (semanticAnswerMin) and hold a word meaning its action
// (actionWordMin, by embed), the one naming most of the question's
// versioned names at the question's version leads ("Lumen 2" in "upgrade
// from Lumen 2 to Lumen 3": the migration guide's "Lumen 2.0", not the
// install page's "lumen 2.4.1", as nearestCover ranks them), then the
// closest in meaning; its best sentence holding a question word, not a
// bare heading. Nil when none has one, or embed fails.
func actionLead(ctx context.Context, order []*sentence, ps []*passage, q question, present termSet, embed func(context.Context, []string) ([][]float32, error)) *sentence {
	type cand struct {
		p        *passage
		versions int
		words    []string
	}
	var cs []cand
	all := []string{q.action}
	seen := map[string]bool{q.action: true}
	names := q
	names.terms = nil // covered: the names only
	for _, p := range ps {
		if !p.section() || p.Semantic < q.closeMin() || !names.covered(ps, p, present) {
			continue
		}
		full := p.fullText()
		c := cand{p: p, words: sectionWords(full)}
		for _, nv := range q.versions {
			if mentionsVersion(full, nv) {
				c.versions++
			}
		}
		for _, w := range c.words {
			if !seen[w] {
				seen[w] = true
				all = append(all, w)
			}
		}
		cs = append(cs, c)
	}
	if len(cs) == 0 {
		return nil
	}
	vecs, err := embed(ctx, all)
	if err != nil || len(vecs) != len(all) {
		return nil
	}
	cos := map[string]float64{}
	for i, w := range all {
		cos[w] = dot32(vecs[0], vecs[i])
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].versions != cs[j].versions {
			return cs[i].versions > cs[j].versions
		}
		return cs[i].p.Semantic > cs[j].p.Semantic
	})
	for _, c := range cs {
		meant := false
		for _, w := range c.words {
			meant = meant || cos[w] >= actionWordMin && !opposite(q.action, w)
		}
		if !meant {
			continue
		}
		for _, s := range order {
			if s.score <= 0 {
				break
			}
			if s.p == c.p && !bare(s) {
				return s
			}
		}
		// A section that does the action in the docs' words may hold
		// none of the question's other words ("turn on https": the TLS
		// settings say "TLS is on when set"): its meaning chose it, so
		// its first sentence leads, and its code follows (compose).
		var first *sentence
		for _, s := range order {
			if s.p == c.p && !bare(s) && (first == nil || s.pos < first.pos) {
				first = s
			}
		}
		if first != nil {
			return first
		}
	}
	return nil
}

// fullText is what p says in full: its title, heading path and text, a
// line each.
func (p *passage) fullText() string {
	return p.Title + "\n" + strings.Join(p.HeadingPath, "\n") + "\n" + p.Text
}

// sectionWords returns the words of a section's full text that are
// compared in meaning with a word of the question: its first
// maxActionWords words of three letters or more that are not all digits,
// lower case, in order.
func sectionWords(full string) []string {
	var out []string
	for _, w := range text.QuestionWords(full) {
		if len(out) == maxActionWords {
			break
		}
		w = strings.ToLower(w)
		if len(w) < 3 || allDigits(w) {
			continue
		}
		out = append(out, w)
	}
	return out
}

// dot32 is the dot product of two vectors of one length.
func dot32(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		if i < len(b) {
			d += float64(a[i]) * float64(b[i])
		}
	}
	return d
}

// negations are the prefixes that make a verb its opposite.
var negations = []string{"un", "de", "dis", "non", "anti"}

// opposite reports whether action is word with a prefix that negates it
// ("undelete" and "delete", "uninstall" and "install"): the semantic model
// puts such words close, but a section that says how to delete does not
// say how to undelete.
func opposite(action, word string) bool {
	for _, n := range negations {
		if rest, ok := strings.CutPrefix(action, n); ok && sameStem(rest, word) {
			return true
		}
		if rest, ok := strings.CutPrefix(word, n); ok && sameStem(rest, action) {
			return true
		}
	}
	return false
}

// sameStem reports whether two words share their stem: one, less a final
// "e", begins the other and has at least four letters ("delete" and
// "deleted", "deletes", "deleting").
func sameStem(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	a = strings.TrimSuffix(a, "e")
	return len(a) >= 4 && strings.HasPrefix(b, a)
}
