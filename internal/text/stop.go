package text

import "strings"

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
