package text

import (
	"sort"
	"strings"
)

// IsStopWord reports whether w (lower case) is a common English function
// word that carries no meaning for retrieval. Documents and questions both
// leave stop words out; the list is frozen with Stem (see the package
// comment), so words that only a question wastes go to IsFiller instead.
func IsStopWord(w string) bool {
	_, ok := stopWords[w]
	return ok
}

// IsFiller reports whether w (lower case) is a word that frames a question
// or request without saying what it is about ("tell", "explain", "please",
// "like", "also", "might"). Questions leave filler out as they
// leave stop words out (QuestionTerms); documents keep it, since in a
// document "show" or "like" may be the point.
func IsFiller(w string) bool {
	_, ok := fillerWords[w]
	return ok
}

// IsQuestionStop is IsStopWord(w) || IsFiller(w): a word of a question that
// never names what the question is about.
func IsQuestionStop(w string) bool {
	return IsStopWord(w) || IsFiller(w)
}

func wordSet(s string) map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range strings.Fields(s) {
		m[w] = struct{}{}
	}
	return m
}

// stopWords: changing this list changes stored vectors (TestStopListFrozen).
var stopWords = wordSet(`a about above after again against all am an and any are as at be because
	been before being below between both but by can could did do does doing down during each few for from
	further had has have having he her here hers herself him himself his how i if in into is it its itself
	just me more most my myself no nor not now of off on once only or other our ours ourselves out over own
	same she should so some such than that the their theirs them themselves then there these they this
	those through to too under until up very was we were what when where which while who whom why will with
	would you your yours yourself yourselves use used using want need get s t`)

// fillerWords are the words the agent's and the graph's question stop
// lists held beyond stopWords.
var fillerWords = wordSet(`else onto done shall may might must whose yes also gets tell show explain describe
	please like give make per via within without whether`)

// maxStopWordLen is the length in bytes of the longest stop word.
const maxStopWordLen = 10

// stopByLenFirst lists the stop words by length and first letter (all are
// lower-case ASCII letters, TestStopBytes checks), so IsStopBytes compares
// a token with the few of its length and first letter instead of hashing it.
var stopByLenFirst = func() (by [maxStopWordLen + 1][26][]string) {
	for w := range stopWords {
		if c := w[0] - 'a'; len(w) <= maxStopWordLen && c < 26 {
			by[len(w)][c] = append(by[len(w)][c], w)
		}
	}
	return by
}()

// IsStopBytes is IsStopWord(string(t)) for a non-empty token, without
// allocating (the lexical embedder's hot path).
func IsStopBytes(t []byte) bool {
	if len(t) > maxStopWordLen || t[0]-'a' >= 26 {
		return false
	}
	for _, w := range stopByLenFirst[len(t)][t[0]-'a'] {
		if string(t) == w {
			return true
		}
	}
	return false
}

// A WordSet is a fixed set of lower-case words (or phrases).
type WordSet struct{ m map[string]struct{} }

// Has reports whether w is in s.
func (s WordSet) Has(w string) bool {
	_, ok := s.m[w]
	return ok
}

// Words lists s's members, sorted.
func (s WordSet) Words() []string {
	ws := make([]string, 0, len(s.m))
	for w := range s.m {
		ws = append(ws, w)
	}
	sort.Strings(ws)
	return ws
}

// The word lists below are not stop lists: each names a part of the stop
// list a rule needs for its own purpose, plus the few words that purpose
// adds (named after the stop words, and documented). They are built by
// stopPick, which fails at start-up if a word said to be a stop word is
// not one, so the stop list stays the one list of English function words
// and these only choose from it. The graph's lists shape stored triples:
// a change to them changes what a fresh ingest stores.
var (
	// Articles: a sentence's words besides these count toward a claim
	// (the answer writer's claim check).
	Articles = stopPick("a an the")

	// PoorSubjects are words that make a poor subject of "X is a Y" or
	// a poor start of a term: pronouns, determiners and conjunctions of
	// the stop list, and "one", "result" and "return" ("One is a …",
	// "Return is a …" in API prose). The graph's rule extractor.
	PoorSubjects = stopPick("it this that there which what he she they each here the a an these those its such if when so",
		"one", "result", "return")

	// ClauseBreaks end a noun phrase read from the start of a definition
	// ("a mapping that …", "a list of …"): relative pronouns,
	// prepositions, conjunctions and the copula of the stop list, and the
	// relative "whose". The graph's rule extractor (headNoun).
	ClauseBreaks = stopPick("that which who where when with used to for by in on and or from as of is are but if than",
		"whose")

	// CommonTerms are capitalised words and phrases too common to be a
	// salient term of a page: a few stop words that start sentences, and
	// documentation boilerplate (admonitions, navigation, link texts). The
	// graph's rule extractor.
	CommonTerms = stopPick("the a an this if in for when it i here up more",
		"note", "see", "new", "changed", "deprecated", "example", "ok", "id", "ii", "e.g", "i.e", "etc", "also",
		"table of content", "next", "previous", "index", "this page", "link", "source", "home", "top", "back",
		"read more", "click here", "permalink", "show source", "report a bug")

	// CommandEnds end a command written in a sentence ("pip install x and
	// restart"): conjunctions, prepositions, pronouns and articles of the
	// stop list, and "first", "command", "package" and "instead", which
	// follow a command in prose ("run make first"). The answer writer.
	CommandEnds = stopPick("and or then to with the a an for in on from by of as which that it you your is are will if before after",
		"first", "command", "package", "instead")
)

// stopPick is the set of stops, each of which must be a stop word, and of
// more, none of which may be one (it would belong in stops).
func stopPick(stops string, more ...string) WordSet {
	s := WordSet{m: map[string]struct{}{}}
	for _, w := range strings.Fields(stops) {
		if !IsStopWord(w) {
			panic("text: " + w + " is no stop word")
		}
		s.m[w] = struct{}{}
	}
	for _, w := range more {
		if IsStopWord(w) {
			panic("text: " + w + " is a stop word: list it with the stop words")
		}
		s.m[w] = struct{}{}
	}
	return s
}
