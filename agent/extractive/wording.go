package extractive

import (
	"context"
	_ "embed"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/kgagent/kgagent/internal/text"
)

// A word the collection lacks is not always what the question asks about.
// Users write their questions in everyday words the docs never use: "how
// long do old points stick around", "save a copy of my database somewhere
// safe", "my disk keeps filling up … how do I get rid of them". Before,
// any such word made the answer an abstention ("The docs don't say anything
// about “stick” or “around”"), although the search, ranking by meaning, had
// found the section that answers. What a question asks about is a name or
// a term (npm, conftest, blockchain, mascot, LDAP, GPU): a word of the
// trade, rare in everyday English, or a name written as one. So a word the
// collection lacks is the question's wording, not its subject, when all of
// these hold:
//
//   - it is not written as a name (capitalised inside the question, all
//     capitals, an identifier);
//   - it is an everyday word (among the 6000 most frequent English
//     words, everydayWords) and not the head of the object of the
//     question's action ("cluster" in "upgrade my cluster from Lumen 2":
//     what the action is done to is what is asked about), or a section
//     found close in meaning, or one whose page holds the question's other
//     words, holds a word the semantic model puts close to it (coverMin:
//     "spreadsheet" and "csv", "subfolder" and "directories", "firewall"
//     and "port": covered), or the rare words no such section says are few
//     among the question's terms (fewRare: one of ten in a long report in
//     a user's words);
//   - the search ranked by meaning and found a section close enough to the
//     question: semanticAnswerMin, lowered by the share of the question's
//     terms that are everyday words the collection lacks or rare words a
//     section says in other words (answerMin).
//
// The question must still hold a word beyond its names that the docs use
// ("How much does Lumen cost?" holds none), and is then judged by its
// other words and its meaning, as any other — and when it names something, the page that answers must hold
// every other word of it: a question about a named thing that the docs
// hold is where an unanswerable question in everyday words hides ("How
// much does a Python license cost per seat?": the license page, close in
// meaning, does not say "cost") — and the answer ends by saying which words the docs do not use,
// so that an answer in the docs' words is read as that (wordingNote).

//go:embed everyday.txt
var everydayList string

// everydayWords are the everyday English words: the 6000 most frequent
// in the semantic model's training text (everyday.txt, written by
// everyday_gen.py from the model's WordPiece vocabulary, which lists whole
// words by frequency). 6000 was chosen on half 0 (crc32(question) mod 2)
// of bench/natural_lumen, unanswerable_lumen, natural_pydocs and
// unanswerable_pydocs: the answerable questions' wording words the docs
// lack rank up to 4714 ("yesterday"; "laptop" 8714 is covered in meaning
// by "windows"), the one unanswerable question's subject word that is no
// name nor object head ranks 9637 ("mascot"); 6000 is the round figure
// between, away from both. Half 1: see the README's Benchmarks.
var everydayWords = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(everydayList) {
		m[w] = true
	}
	return m
})

// coverMin is the cosine of the semantic vectors (each word embedded
// alone) of a rare word of the question and a word of a section found
// from which the section says it in its own words ("subfolders" and
// "directories" 0.685, "laptop" and "windows" 0.559). Chosen on half 0
// (as everydayWords): the answerable questions' rare words reach 0.410
// ("ping"), 0.559 and 0.685, the unanswerable ones' 0.437 at most
// ("browser"; "conftest" 0.396, "mascot" 0.381); 0.5 is the round figure
// between the last two. Half 1 confirmed it: answerable "spreadsheet"
// (csv) 0.547 and "subfolder" 0.797 reach it ("averages", 0.471, does not),
// unanswerable "npm" 0.395, "blockchain" 0.428 and "neural" 0.373 do not.
const coverMin = 0.5

// everyday reports whether w is an everyday English word, or the plural,
// third person, -ing or -ed form of one ("averages": the vocabulary lists
// whole words that frequent in their own form only, and "average" is).
func everyday(w string) bool {
	w = strings.ToLower(w)
	if everydayWords()[w] {
		return true
	}
	if b, ok := strings.CutSuffix(w, "ies"); ok && everydayWords()[b+"y"] {
		return true
	}
	if b, ok := strings.CutSuffix(w, "es"); ok && everydayWords()[b] {
		return true
	}
	if b, ok := strings.CutSuffix(w, "s"); ok && !strings.HasSuffix(b, "s") && everydayWords()[b] {
		return true
	}
	return inflectedEveryday(w)
}

// inflectedEveryday reports whether w is the -ing or -ed form of an
// everyday word ("loading", "mounting", "clobbered"): the vocabulary
// lists a frequent verb's whole word in its own form, and its other forms
// only when they are frequent themselves. The stem left keeps three
// letters or more ("string" is no form of "str"), and may have lost an
// "e" ("saving") or doubled its last consonant ("stopped").
func inflectedEveryday(w string) bool {
	for _, suf := range []string{"ing", "ed"} {
		b, ok := strings.CutSuffix(w, suf)
		if !ok || len(b) < 3 {
			continue
		}
		if everydayWords()[b] || everydayWords()[b+"e"] {
			return true
		}
		if n := len(b); b[n-1] == b[n-2] && everydayWords()[b[:n-1]] {
			return true
		}
	}
	return false
}

// writtenAsName reports whether the question writes w as a name: with a
// capital letter other than its first word's first letter, or joined to
// an identifier's punctuation — not to a slash between plain words
// ("host/sensor", "read/write": alternatives, each judged as a word of its
// own: "Kafka/Zookeeper" writes "kafka" as a name).
func writtenAsName(question, w string) bool {
	lw := strings.ToLower(w)
	t := text.Term(lw)
	for i, f := range strings.Fields(question) {
		g := strings.Trim(f, nameTrim)
		lg := strings.ToLower(g)
		_, first := utf8.DecodeRuneInString(g)
		if (lg == lw || text.Term(lg) == t) && g != lg && (i > 0 || strings.ToLower(g[first:]) != g[first:]) {
			return true
		}
		if alternatives.MatchString(g) {
			// Each alternative is a word of its own, written as a name
			// when capitalised as one ("Kafka/Zookeeper", "TCP/IP").
			for j, part := range strings.Split(g, "/") {
				lp := strings.ToLower(part)
				_, first := utf8.DecodeRuneInString(part)
				if (lp == lw || text.Term(lp) == t) && part != lp && (i > 0 || j > 0 || strings.ToLower(part[first:]) != part[first:]) {
					return true
				}
			}
			continue
		}
		if lg != lw && strings.Contains(lg, lw) && (strings.ContainsAny(g, "._()/") || strings.HasPrefix(g, "-")) {
			return true
		}
	}
	return false
}

// alternatives matches plain words joined by slashes ("host/sensor"): a
// user's "or", not a path or an identifier, which have a leading slash,
// digits or other punctuation ("/metrics", "api/v2").
var alternatives = regexp.MustCompile(`^\pL+(/\pL+)+$`)

// wording returns the words of unknown (the question's words the
// collection lacks) that are its wording rather than its subject, by the
// rule above, and whether every one of them, but its action, is; nil,
// false when any is not. The action is judged apart (action.go).
func (q question) wording(ctx context.Context, question string, unknown []string, ps []*passage, embed func(context.Context, []string) ([][]float32, error)) ([]string, bool) {
	words, _, ok := q.wordingShare(ctx, question, unknown, ps, newTermSet(evidenceTerms(ps)), embed)
	return words, ok
}

// wordingShare is wording, with how many of the words lower the cosine
// the question needs (answerMin): its everyday words, and its rare words
// that a section found says in other words (covered). present is the
// evidence's terms.
func (q question) wordingShare(ctx context.Context, question string, unknown []string, ps []*passage, present termSet, embed func(context.Context, []string) ([][]float32, error)) ([]string, int, bool) {
	if embed == nil {
		return nil, 0, false
	}
	out, rare, named := q.sortUnknown(question, unknown)
	if named {
		return nil, 0, false
	}
	var said, lacking []string
	if len(rare) > 0 {
		min := q.answerMin(len(out))
		cov, err := covered(ctx, rare, ps, func(p *passage) bool { return p.Semantic >= min || q.aboutQuestion(ps, p, present) }, embed)
		if err != nil {
			return nil, 0, false
		}
		for _, u := range rare {
			if cov[u] {
				said = append(said, u)
			} else {
				lacking = append(lacking, u)
			}
		}
	}
	discount := len(out) + len(said)
	if semanticBest(ps) < q.answerMin(discount) || !q.fewRare(len(lacking)) {
		return nil, 0, false
	}
	return append(out, rare...), discount, true
}

// aboutQuestion reports whether the page of p holds the question's
// words: covered (its names, two thirds of its terms the evidence holds)
// and one of its terms at least, so that evidence holding none of them
// does not cover it trivially.
func (q question) aboutQuestion(ps []*passage, p *passage, present termSet) bool {
	if !q.covered(ps, p, present) {
		return false
	}
	page := pageTerms(ps, p)
	for _, t := range q.terms {
		if page.has(t) {
			return true
		}
	}
	return false
}

// sortUnknown sorts the words of unknown (the question's words the
// collection lacks) but its action into everyday words that are not the
// head of its action's object, and the others (rare); named: one is
// written as a name.
func (q question) sortUnknown(question string, unknown []string) (everydayWords, rare []string, named bool) {
	for _, u := range unknown {
		switch {
		case q.actionPart(u):
		case writtenAsName(question, u):
			return nil, nil, true
		case everyday(u) && text.Term(strings.ToLower(u)) != text.Term(q.object):
			everydayWords = append(everydayWords, u)
		default:
			rare = append(rare, u)
		}
	}
	return everydayWords, rare, false
}

// covered reports, for each word, whether a section found that may say
// it (say) holds a word the semantic model puts close to it (coverMin).
//
// Which sections may say a rare word of the question in other words:
// those close in meaning to the whole question (answerMin), and those
// whose page holds the question's other words (aboutQuestion). A user's word for
// a thing the docs name otherwise ("firewall" beside "port", 0.519) is in
// a section the search found for the question's other words ("which ports
// do I need to open in the firewall for the database and its replicas":
// "… the gRPC API used by replicas on port 8087"), whose cosine with the
// whole question is low because the question is in a user's words
// (0.327). Such a word is wording as an everyday word is, and lowers the
// cosine the question needs as one does (wordingShare). A section that
// holds few of the question's other words says nothing of it: "python" is
// close to "matplotlib" (0.503), but the Python pages found for "add a
// legend to a matplotlib plot" hold neither "legend" nor "plot".
func covered(ctx context.Context, words []string, ps []*passage, say func(*passage) bool, embed func(context.Context, []string) ([][]float32, error)) (map[string]bool, error) {
	all := make([]string, 0, len(words)+maxActionWords)
	seen := map[string]bool{}
	for _, w := range words {
		w = strings.ToLower(w)
		all = append(all, w)
		seen[w] = true
	}
	for _, p := range ps {
		if !p.section() || !say(p) {
			continue
		}
		for _, w := range sectionWords(p.fullText()) {
			if !seen[w] {
				seen[w] = true
				all = append(all, w)
			}
		}
	}
	out := map[string]bool{}
	if len(all) == len(words) {
		return out, nil
	}
	vecs, err := embed(ctx, all)
	if err != nil || len(vecs) != len(all) {
		return out, err
	}
	for i, w := range words {
		for j := len(words); j < len(all); j++ {
			if dot32(vecs[i], vecs[j]) >= coverMin {
				out[w] = true
				break
			}
		}
	}
	return out, nil
}

// without returns q with the terms of words dropped from the terms the
// evidence must hold.
func (q question) without(words []string) question {
	drop := map[string]bool{}
	for _, w := range words {
		drop[text.Term(strings.ToLower(w))] = true
	}
	terms := make([]string, 0, len(q.terms))
	for _, t := range q.terms {
		if !drop[t] {
			terms = append(terms, t)
		}
	}
	q.terms = terms
	return q
}

// wordingNote ends an answer given although the docs do not use some of
// the question's words: it names them, so an answer in the docs' own
// words ("migrate" for "upgrade") reads as the closest they cover, not as
// a claim about the word. It ends the answer rather than opening it: the
// answer leads with the sentence that answers (before, "The docs don't
// use the words “stuck”, “work” or “library”; the closest they cover: …"
// read as a half abstention).
func wordingNote(words []string) string {
	if len(words) == 1 {
		return "The docs don't use the word " + quoteList(words) + "; the above is the closest they cover."
	}
	return "The docs don't use the words " + quoteList(words) + "; the above is the closest they cover."
}

// objectAdverbs are adverbs that follow a verb's object and end it ("get
// my query results straight into …", "put the backup back", "throw old
// points away"): never the head of the object.
var objectAdverbs = map[string]bool{"straight": true, "directly": true, "back": true, "away": true, "together": true,
	"again": true, "instead": true, "automatically": true, "manually": true, "somewhere": true, "elsewhere": true}

// objectHead returns the head of the object of a question's action, lower
// case: the last word of the run of content words after it ("copy" in
// "save a copy of my database", "export" in "load a spreadsheet export
// into …"); "" when the question has no action or no such word.
func objectHead(q, action string) string {
	if action == "" {
		return ""
	}
	head, after := "", false
	for _, f := range strings.Fields(text.ExpandContractions(q)) {
		w := strings.ToLower(strings.Trim(f, nameTrim))
		if !after {
			after = w == action
			continue
		}
		if objectAdverbs[w] {
			break // "get my results straight into …": the object ended
		}
		if w == "" || text.IsQuestionStop(w) || objectStarts[w] {
			if head != "" {
				break
			}
			continue
		}
		head = w
		if strings.ContainsAny(f, ",.?!;:") {
			break
		}
	}
	return head
}

// pageHolds reports whether the page of p (its sections found) holds every
// term of the question but digits.
func (q question) pageHolds(ps []*passage, p *passage) bool {
	page := pageTerms(ps, p)
	for _, t := range q.terms {
		if !page.has(t) && !allDigits(t) {
			return false
		}
	}
	return true
}

// asksBeyondNames reports whether a term of the question is neither part
// of a name it asks about nor a digit run.
func (q question) asksBeyondNames() bool {
	names := map[string]bool{}
	for _, w := range q.specific {
		for _, t := range text.AllTerms(w) {
			names[t] = true
		}
	}
	for _, t := range q.terms {
		if !names[t] && !allDigits(t) {
			return true
		}
	}
	return false
}
