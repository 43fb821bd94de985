package extractive

import (
	"context"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kgagent/kgagent/internal/text"
)

// A question that asks for an amount ("how many threads does the query
// engine use?", "what is the maximum number of databases one server can
// hold?") is answered only by a sentence that states an amount of the
// thing it counts. Judged by meaning alone, a section about the same
// subject answers with another number: the FAQ's "One million by default
// (limits.max_series …)" for the databases one server holds, "Runs a SQL
// query" for the engine's threads. So the sentence that leads the answer
// must hold the thing counted, and for a question about a limit (maximum,
// minimum, limit, at most …), a figure or a word that states a limit.
// Otherwise the answer is the not-found abstention: what was searched for
// and not found, never a claim that the docs lack a word.

// countRe finds the thing a question counts: "how many X", "number of X".
var countRe = regexp.MustCompile(`(?i)\b(?:how\s+many|number\s+of|amount\s+of|count\s+of)\s+([a-z][a-z_-]*)`)

// limitRe finds a question about a limit and, after it, the thing it
// limits: "the maximum number of X", "what is the maximum X", "the limit
// on X", "X … at most". Not a superlative or max() asked as an operation
// ("find the biggest item", "the max of a list"), nor "limit" as a noun
// of a name ("repr() with size limits").
var limitRe = regexp.MustCompile(`(?i)(?:\b(?:maximum|minimum|max|min)\s+(?:number|size|length|amount|count)\s+of\s+(?:the\s+|a\s+)?([a-z][a-z_-]*)|\bwhat(?:\s+is|'s)?\s+the\s+(?:maximum|minimum|max|min|largest|smallest|highest|lowest)\s+([a-z][a-z_-]*)|\b(?:limit|cap)\s+(?:on|of|to|for)\s+(?:the\s+|a\s+)?([a-z][a-z_-]*)|\bat\s+(?:most|least)\s*\??\s*$)`)

// limitWords state a limit in a sentence that gives one.
var limitWords = map[string]bool{"max": true, "maximum": true, "min": true, "minimum": true, "limit": true, "most": true,
	"least": true, "exceed": true, "exceeds": true, "between": true, "up": true, "million": true, "thousand": true,
	"billion": true, "unlimited": true, "no": true, "largest": true, "smallest": true}

// amountAsked returns the term of the thing a question asks an amount of,
// "" when it asks none, and whether it asks for a limit.
func amountAsked(q string) (string, bool) {
	q = text.ExpandContractions(q)
	limit := false
	thing := ""
	if m := limitRe.FindStringSubmatch(q); m != nil {
		limit = true
		thing = m[1] + m[2] + m[3]
	}
	for _, m := range countRe.FindAllStringSubmatchIndex(q, -1) {
		if !quantifier(q[:m[0]]) {
			thing = q[m[2]:m[3]]
			break
		}
	}
	thing = strings.ToLower(thing)
	if thing == "" || text.IsQuestionStop(thing) || filler[thing] || frameWords[thing] {
		return "", limit
	}
	return text.Term(thing), limit
}

// quantifierSizes are the words that may stand between "a" and "number
// of" when it says how many, not asks it ("a large number of").
var quantifierSizes = map[string]bool{"large": true, "small": true, "great": true, "huge": true, "big": true,
	"good": true, "fair": true, "certain": true, "growing": true, "whole": true, "limited": true}

// quantifier reports whether before, the question's text before "number
// of" (or "amount of", "count of"), ends in "a" or "an", with a size word
// between: "a number of settings", "a large amount of data" say there are
// several, and ask no amount.
func quantifier(before string) bool {
	f := strings.Fields(strings.ToLower(before))
	if n := len(f); n > 0 && quantifierSizes[f[n-1]] {
		f = f[:n-1]
	}
	n := len(f)
	return n > 0 && (f[n-1] == "a" || f[n-1] == "an")
}

// statesAmount reports whether s, the sentence that would lead the
// answer, states an amount of the thing asked (amountAsked): it holds its
// term (also inside an identifier, "limits.max_series"), and for a limit
// a figure or a limit word.
func statesAmount(s *sentence, thing string, limit bool) bool {
	if thing != "" {
		held := false
		for _, t := range text.AllTerms(s.text) {
			if t == thing {
				held = true
				break
			}
		}
		if !held {
			for _, w := range strings.FieldsFunc(strings.ToLower(s.text), func(r rune) bool {
				return !(r >= 'a' && r <= 'z')
			}) {
				if text.Term(w) == thing {
					held = true
					break
				}
			}
		}
		if !held {
			return false
		}
	}
	if !limit {
		return true
	}
	for _, r := range s.text {
		if r >= '0' && r <= '9' {
			return true
		}
	}
	for _, w := range strings.Fields(strings.ToLower(s.text)) {
		if limitWords[strings.Trim(w, nameTrim)] {
			return true
		}
	}
	return false
}

// A problem report names what went wrong by its status code ("my query
// dies after half a minute with a 504", "uploads fail with 413"): the
// code is what to look for, the section that says when it is answered is
// the answer. Digit runs are otherwise no terms of a question (a version,
// a count); a status code is.

// statusCodeRe finds an HTTP-style status code as a problem report writes
// it: after "with", "a", "an", "http", "error", "status", "code", "get(s)",
// "got", "return(s)", "give(s)", or before "error", "status", "response".
var statusCodeRe = regexp.MustCompile(`(?i)(?:\b(?:with|a|an|http|error|status|code|gets?|got|getting|returns?|returning|gives?|giving)\s+([1-5][0-9][0-9])\b|\b([1-5][0-9][0-9])\s+(?:errors?|status|response|responses)\b)`)

// statusCodes returns the status codes of a question (statusCodeRe). A
// number followed by what it counts or measures ("with 100 rows", "returns
// 200 rows", "a 300 ms timeout") is a count, not a code (countedAfter).
// A question without a digit 1-5 (most) has no code to look for: the
// expression, read five times an answer, is not run (1% of an answer's
// CPU on the Python docs).
func statusCodes(q string) map[string]bool {
	if !strings.ContainsAny(q, "12345") {
		return map[string]bool{}
	}
	return matchStatusCodes(q)
}

// matchStatusCodes is statusCodes without its shortcut: the expression run
// on q whatever digits it holds.
func matchStatusCodes(q string) map[string]bool {
	out := map[string]bool{}
	for _, m := range statusCodeRe.FindAllStringSubmatchIndex(q, -1) {
		code, end := "", m[1]
		switch {
		case m[2] >= 0:
			code, end = q[m[2]:m[3]], m[3]
		case m[4] >= 0:
			code = q[m[4]:m[5]]
		}
		if code != "" && !countedAfter(q[end:]) {
			out[code] = true
		}
	}
	return out
}

// codeFollowers are the words that may follow a status code in a problem
// report besides stop words ("a 503 error", "gives 503 right after a
// restart", "returns 500 sometimes"), with the first words of the HTTP
// reason phrases ("500 Internal Server Error", "413 Request Entity Too
// Large", "503 Service Unavailable", "504 Gateway Timeout").
var codeFollowers = map[string]bool{"error": true, "errors": true, "status": true, "code": true, "codes": true,
	"response": true, "responses": true, "right": true, "sometimes": true, "always": true, "often": true, "instead": true,
	"internal": true, "request": true, "service": true, "gateway": true, "bad": true, "payload": true, "content": true,
	"unauthorized": true, "forbidden": true, "found": true, "conflict": true, "gone": true, "method": true,
	"unprocessable": true, "unsupported": true, "precondition": true, "ok": true, "created": true, "accepted": true,
	"moved": true, "permanent": true, "temporary": true, "timeout": true, "unavailable": true, "insufficient": true}

// countedAfter reports whether rest, the text right after a number, says
// what the number counts or measures: a unit sign ("100%") or a word that
// is no stop word, adverb or codeFollowers word ("rows", "ms", "day").
func countedAfter(rest string) bool {
	if r := strings.TrimLeft(rest, " \t"); r != "" && strings.ContainsRune("%$€£", []rune(r)[0]) {
		return true
	}
	f := strings.Fields(rest)
	if len(f) == 0 || rest[0] != ' ' && rest[0] != '\t' {
		return false
	}
	w := strings.Trim(strings.ToLower(f[0]), nameTrim)
	if w == "" {
		return false
	}
	return !text.IsQuestionStop(w) && !codeFollowers[w] && !strings.HasSuffix(w, "ly")
}

// codeSentence returns the best sentence (in order) of a section found
// close enough in meaning (semanticAnswerMin, or any when the search did
// not rank by meaning) that holds a status code of the question
// (statusCodes) as a word; nil when the question reports none or no such
// sentence is found.
func codeSentence(order []*sentence, ps []*passage, question string) *sentence {
	codes := statusCodes(question)
	if len(codes) == 0 {
		return nil
	}
	lexical := semanticBest(ps) == 0
	for _, s := range order {
		if bare(s) || !s.p.section() || !lexical && s.p.Semantic < semanticAnswerMin {
			continue
		}
		for _, w := range strings.FieldsFunc(s.text, func(r rune) bool { return r < '0' || r > '9' }) {
			if codes[w] {
				return s
			}
		}
	}
	return nil
}

// reportsStatedCode reports whether a section found close in meaning
// (codeSentence) has a sentence that states a status code of the question:
// then the code, a term the docs hold exactly, is what the problem report
// is about ("my inserts start bouncing back with 429 Too Many Requests":
// the rate limits say "excess writes get HTTP 429").
func reportsStatedCode(ps []*passage, question string) bool {
	if len(statusCodes(question)) == 0 {
		return false
	}
	sents, _ := split(ps)
	return codeSentence(sents, ps, question) != nil
}

// reportWording returns the words of unknown (the words of a problem
// report the collection lacks) that are its wording, and whether every
// one of them, but its action, is. The words of the report itself (the
// clause that states the status code: reportClause) are, unless written as
// a name (writtenAsName): a name the docs lack ("Kafka", "nginx" written
// as one) is still what the report is about. A question asked after the
// report ("…, how do I pay for a higher tier?") asks about its own
// subject: its words are judged by the wording rule of any question
// (wording), so a rare word no close section says ("tier") still abstains.
func (q question) reportWording(ctx context.Context, question string, unknown []string, ps []*passage, embed func(context.Context, []string) ([][]float32, error)) ([]string, bool) {
	clause := reportClause(question)
	var out, rest []string
	for _, u := range unknown {
		switch {
		case writtenAsName(question, u):
			return nil, false
		case clause[text.Term(strings.ToLower(u))]:
			out = append(out, u)
		default:
			rest = append(rest, u)
		}
	}
	if len(rest) == 0 {
		return out, true
	}
	// The rest is judged as a question of its own: its share of rare
	// words (fewRare) is of the terms outside the report's clause.
	after := q
	after.terms = nil
	for _, t := range q.terms {
		if !clause[t] {
			after.terms = append(after.terms, t)
		}
	}
	words, ok := after.wording(ctx, question, rest, ps, embed)
	if !ok {
		return nil, false
	}
	return append(out, words...), true
}

// reportClause returns the terms of the words of a problem report up to
// the end of the clause that states its first status code (a comma,
// semicolon, question or exclamation mark, or the end of the question).
func reportClause(question string) map[string]bool {
	end := -1
	for code := range statusCodes(question) {
		if i := strings.Index(question, code); i >= 0 && (end < 0 || i < end) {
			end = i
		}
	}
	out := map[string]bool{}
	if end < 0 {
		return out
	}
	if j := strings.IndexAny(question[end:], ",;?!"); j >= 0 {
		end += j
	} else {
		end = len(question)
	}
	for _, f := range strings.Fields(question[:end]) {
		out[text.Term(strings.ToLower(strings.Trim(f, nameTrim)))] = true
	}
	return out
}

// reasonPhrases returns the words of the reason phrases that follow a
// status code in a problem report ("429 Too Many Requests", "503 Service
// Unavailable"): the capitalised words right after the code. They say
// what the code means, as the docs may say in their own words ("excess
// writes get HTTP 429"); they name nothing the answer must hold.
func reasonPhrases(q string) map[string]bool {
	codes := statusCodes(q)
	if len(codes) == 0 {
		return nil
	}
	out := map[string]bool{}
	fields := strings.Fields(q)
	for i, f := range fields {
		if !codes[strings.Trim(f, nameTrim)] || strings.TrimRight(f, nameTrim) != f {
			continue
		}
		for _, g := range fields[i+1:] {
			w := strings.Trim(g, nameTrim)
			r, _ := utf8.DecodeRuneInString(w)
			if w == "" || !unicode.IsUpper(r) {
				break
			}
			out[w] = true
			if strings.TrimRight(g, nameTrim) != g {
				break // punctuation ends the phrase
			}
		}
	}
	return out
}

// dropReason returns names without those made only of reason words
// (reasonPhrases).
func dropReason(names []string, reason map[string]bool) []string {
	var out []string
	for _, n := range names {
		all := true
		for _, w := range strings.Fields(n) {
			all = all && reason[w]
		}
		if !all {
			out = append(out, n)
		}
	}
	return out
}
