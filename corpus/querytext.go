package corpus

import (
	"regexp"
	"strings"
)

// askedKind is a question's leading frame that asks which one thing of a
// kind answers it: "Which Python module …", "What function …", "Which
// Java class …" (which or what, at most one qualifying word, a singular
// kind of API thing). It names what every page of API docs is about, not
// what the user is after.
var askedKind = regexp.MustCompile(`(?i)^\s*(which|what)\s+(\S+\s+)?(module|function|class|method|exception|package|library|type|object|attribute)\s+`)

// SemanticText is the text of a query that the semantic model embeds: the
// query less its askedKind frame, when something is left. all-MiniLM-L6-v2
// embeds the frame's words with the rest, which pulls the query towards
// passages about modules (or classes) in general, the module index and
// "what's new" pages, and away from the one whose synopsis the rest of the
// question says (measured on half 0 of the Python docs' known-item set,
// confirmed on half 1: corpus/minilm/DECISIONS.md). A how-to question's
// "How do I …" is kept: taking it away made no gain there. The lexical
// rankings search the whole query as before.
func SemanticText(query string) string {
	loc := askedKind.FindStringIndex(query)
	if loc == nil {
		return query
	}
	if rest := strings.TrimSpace(query[loc[1]:]); rest != "" {
		return rest
	}
	return query
}
