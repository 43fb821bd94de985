package graphrag

import (
	"strings"
)

// CodeTokens finds code identifiers in text in one pass, returned in four
// classes in order of salience: dotted names (os.path.join, json.dumps()),
// calls (print()), snake_case and CamelCase words. Every token seen (code or
// not, "()" removed) is added to seen when it is not nil.
func CodeTokens(text string, seen map[string]bool) [4][]string {
	if seen == nil {
		return codeTokens(text, nil)
	}
	return codeTokens(text, func(tok string) { seen[tok] = true })
}

// codeTokens is CodeTokens calling saw (when not nil) with every token seen.
func codeTokens(text string, saw func(string)) [4][]string {
	var out [4][]string
	isTok := func(c byte) bool {
		return c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	for i := 0; i < len(text); {
		if !isTok(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isTok(text[j]) {
			j++
		}
		tok := strings.Trim(text[i:j], ".")
		call := strings.HasPrefix(text[j:], "()")
		// tok+"()" as a slice of text when the "()" follows tok there.
		withCall := ""
		if call {
			if text[j-1] != '.' { // tok ends at j
				withCall = text[j-len(tok) : j+2]
			} else {
				withCall = tok + "()"
			}
			j += 2
		}
		i = j
		if tok == "" {
			continue
		}
		if saw != nil {
			saw(tok)
		}
		if c := tok[0]; c >= '0' && c <= '9' {
			continue
		}
		name := tok // with "()" for a call
		if call {
			name = withCall
		}
		switch {
		case strings.Contains(tok, "."):
			if dottedName(tok) {
				out[0] = append(out[0], name)
			}
		case call:
			out[1] = append(out[1], name)
		case isSnake(tok):
			out[2] = append(out[2], tok)
		case isCamel(tok):
			out[3] = append(out[3], tok)
		}
	}
	return out
}

// dottedName reports whether every dot-separated part of tok is non-empty
// and does not start with a digit.
func dottedName(tok string) bool {
	start := true
	for i := 0; i < len(tok); i++ {
		switch c := tok[i]; {
		case c == '.':
			if start {
				return false
			}
			start = true
		case start:
			if isDigitByte(c) {
				return false
			}
			start = false
		}
	}
	return !start
}
