package extractive

import (
	"strings"

	"github.com/kgagent/kgagent/internal/text"
)

// Users name an action with a phrasal verb or an idiom ("get rid of old
// points", "shut down the server", "put back a database") where the docs
// use one verb (delete, stop, restore). Read word by word, such a phrase
// says nothing the docs hold: "rid" is in no document, "get" and "put"
// mean nothing alone, and the question abstained on "rid" although the
// search had found the retention section. An idiom of phrasalVerbs in the
// question is its action, meant as the verb it maps to: the action rule
// (action.go) then looks for that verb's meaning in the sections found,
// and the idiom's own words are the action's wording, not what is asked.

// phrasalVerbs maps a phrasal verb or idiom, its words in order as users
// write them (inflected forms are listed where users write them), to the
// one verb the docs would use. A closed list of common English phrasal
// verbs that name an operation on data or a service; not drawn from any
// benchmark question.
var phrasalVerbs = map[string]string{
	"get rid of": "remove", "got rid of": "remove", "getting rid of": "remove",
	"shut down": "stop", "shutting down": "stop", "shut off": "stop",
	"put back": "restore", "bring back": "restore", "get back": "recover",
	"turn on": "enable", "switch on": "enable", "turn off": "disable", "switch off": "disable",
	"take away": "remove", "throw away": "delete", "throw out": "delete",
	"wipe out": "delete", "clean up": "delete", "clear out": "delete",
	"start up": "start", "boot up": "start", "spin up": "start",
	"hand out": "create", "give out": "create",
	"speed up": "accelerate", "slow down": "throttle",
	"look up": "find", "find out": "find",
}

// idiomAction returns the verb meant by the first phrasal verb of
// phrasalVerbs in q and the idiom's words as written (lower case); "",
// nil when q holds none. Only an idiom where the question's action is
// (action, its first word) or where it has none counts: "how do I restore
// … and then shut down" keeps "restore".
func idiomAction(q, action string) (string, []string) {
	var f []string
	for _, w := range strings.Fields(strings.ToLower(text.ExpandContractions(q))) {
		f = append(f, strings.Trim(w, nameTrim))
	}
	for i := range f {
		for n := 3; n >= 2; n-- {
			if i+n > len(f) {
				continue
			}
			words := f[i : i+n]
			verb, ok := phrasalVerbs[strings.Join(words, " ")]
			if !ok || action != "" && action != words[0] {
				continue
			}
			return verb, append([]string(nil), words...)
		}
	}
	return "", nil
}

// actionPart reports whether u, a word of the question, is its action or
// a word of the idiom that says it.
func (q question) actionPart(u string) bool {
	if q.action == "" {
		return false
	}
	t := text.Term(strings.ToLower(u))
	if t == text.Term(q.action) {
		return true
	}
	for _, w := range q.idiom {
		if t == text.Term(w) {
			return true
		}
	}
	return false
}
