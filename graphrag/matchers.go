package graphrag

import (
	"strings"
	"unicode/utf8"
)

// mayModHead reports whether h starts as every match of reModHead does:
// [A-Za-z_][\w.]*, white space, a dash. It is the cheap test run before the
// regexp.
func mayModHead(h string) bool {
	i, j, ok := headName(h)
	if !ok {
		return false
	}
	r := h[j:]
	return j > i && (strings.HasPrefix(r, "-") || strings.HasPrefix(r, "—") || strings.HasPrefix(r, "–"))
}

// headName scans the name h starts with ([A-Za-z_][\w.]*): it returns where
// the name ends and where the white space after it ends, or false when h
// does not start with a name.
func headName(h string) (end, next int, ok bool) {
	if h == "" || !isUpperByte(h[0]) && !isLowerByte(h[0]) && h[0] != '_' {
		return 0, 0, false
	}
	i := 1
	for i < len(h) && (isWordByte(h[i]) || h[i] == '.') {
		i++
	}
	j := i
	for j < len(h) && isSpace(h[j]) {
		j++
	}
	return i, j, true
}

// sigKinds are the words reSigHead allows before an API name.
var sigKinds = map[string]bool{
	"class": true, "exception": true, "async": true, "abstractmethod": true, "classmethod": true,
	"staticmethod": true, "method": true, "function": true, "attribute": true, "property": true,
	"data": true, "coroutine": true, "awaitable": true,
}

// maySigHead reports whether h can match reSigHead: its first word
// ([A-Za-z_][\w.]*, all of it, or the expression fails) is the name, so
// white space and then the end or "(" follow it, or it is one of sigKinds
// followed by white space. It is the cheap test run before the regexp.
func maySigHead(h string) bool {
	i, j, ok := headName(h)
	if !ok {
		return false
	}
	return j == len(h) || h[j] == '(' || j > i && sigKinds[h[:i]]
}

// isSpace is the regexp package's \s.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// mayParen reports whether s has what every match of reParen needs: a "("
// after whitespace, which follows a byte that can end the X of "X (Y)"
// ([\w\-)]), and then 2 to 60 characters other than "(" and ")" and a ")".
// It is the cheap test run before the regexp.
func mayParen(s string) bool {
	for i := 1; i < len(s); i++ {
		if s[i] != '(' || !isSpace(s[i-1]) {
			continue
		}
		j := i - 1
		for j >= 0 && isSpace(s[j]) {
			j--
		}
		if j < 0 || !isWordByte(s[j]) && s[j] != '-' && s[j] != ')' {
			continue
		}
		n := 0 // characters inside, as regexp counts them (a bad byte is one)
		for _, r := range s[i+1:] {
			if r == '(' || r == ')' {
				if r == ')' && n >= 2 && n <= 60 {
					return true
				}
				break
			}
			n++
			if n > 60 {
				break
			}
		}
	}
	return false
}

// mayIsA reports whether s holds whitespace, "is" or "are", whitespace, "a"
// or "an", whitespace: what every match of reIsA needs, tested before the
// regexp.
func mayIsA(s string) bool {
	for _, w := range [2]string{"is", "are"} {
		for off := 0; ; {
			i := strings.Index(s[off:], w)
			if i < 0 {
				break
			}
			i += off
			off = i + 1
			if i == 0 || !isSpace(s[i-1]) {
				continue
			}
			j := i + len(w)
			k := j
			for k < len(s) && isSpace(s[k]) {
				k++
			}
			if k == j || k >= len(s) || s[k] != 'a' {
				continue
			}
			k++
			if k < len(s) && s[k] == 'n' && k+1 < len(s) && isSpace(s[k+1]) {
				return true
			}
			if k < len(s) && isSpace(s[k]) {
				return true
			}
		}
	}
	return false
}

// The matchers below are hand-written forms of regular expressions that
// were a third of the extractor's time (FuzzMatchers checks that they agree
// with the expressions). \w and \b are ASCII, as in package regexp.

// isWordByte reports whether c is a \w byte: [0-9A-Za-z_].
func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isLowerByte(c byte) bool { return c >= 'a' && c <= 'z' }
func isUpperByte(c byte) bool { return c >= 'A' && c <= 'Z' }
func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }

// isIdent matches ^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$: a dotted identifier.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	start := true // at the first byte of a part
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.':
			if start {
				return false
			}
			start = true
		case start:
			if !isUpperByte(c) && !isLowerByte(c) && c != '_' {
				return false
			}
			start = false
		case !isWordByte(c):
			return false
		}
	}
	return !start
}

// isSnake matches ^[a-z][a-z0-9]*_[a-z0-9_]+$: snake_case.
func isSnake(s string) bool {
	if len(s) < 3 || !isLowerByte(s[0]) {
		return false
	}
	under := -1 // the first '_'
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_':
			if under < 0 {
				under = i
			}
		case !isLowerByte(c) && !isDigitByte(c):
			return false
		}
	}
	return under > 0 && under < len(s)-1
}

// isCamel matches ^[A-Z][a-z0-9]+[A-Z]\w*$: CamelCase.
func isCamel(s string) bool {
	if len(s) < 3 || !isUpperByte(s[0]) {
		return false
	}
	i := 1
	for i < len(s) && (isLowerByte(s[i]) || isDigitByte(s[i])) {
		i++
	}
	if i == 1 || i == len(s) || !isUpperByte(s[i]) {
		return false
	}
	for i++; i < len(s); i++ {
		if !isWordByte(s[i]) {
			return false
		}
	}
	return true
}

// capPhrases calls f with each match of \b[A-Z][a-z]+(?: [A-Z][a-z]+){1,3}\b
// in text, leftmost first, as FindAllString finds them, until f returns
// false: two to four capitalised words.
func capPhrases(text string, f func(string) bool) {
	for i := 0; i < len(text); i++ {
		if !isUpperByte(text[i]) || i > 0 && isWordByte(text[i-1]) {
			continue
		}
		// Ends of the capitalised words from i: "Foo", "Foo Bar", ...
		var ends [4]int
		n := 0
		j := i
		for n < 4 {
			k := j + 1
			for k < len(text) && isLowerByte(text[k]) {
				k++
			}
			if k == j+1 {
				break // no [a-z]+
			}
			ends[n] = k
			n++
			if k+1 >= len(text) || text[k] != ' ' || !isUpperByte(text[k+1]) {
				break
			}
			j = k + 1
		}
		// The longest run of two or more words that ends at a word
		// boundary (each word's [a-z]+ is maximal, or the next word
		// could not follow it).
		for m := n - 1; m >= 1; m-- {
			if e := ends[m]; e == len(text) || !isWordByte(text[e]) {
				if !f(text[i:e]) {
					return
				}
				i = e - 1
				break
			}
		}
	}
}

// acronyms calls f with each match of \b[A-Z][A-Z0-9]{1,7}\b in text,
// leftmost first, until f returns false: words of two to eight capitals and
// digits that start with a capital.
func acronyms(text string, f func(string) bool) {
	for i := 0; i < len(text); {
		if !isWordByte(text[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(text) && isWordByte(text[j]) {
			j++
		}
		if w := text[i:j]; len(w) >= 2 && len(w) <= 8 && isUpperByte(w[0]) && isCapsDigits(w[1:]) {
			if !f(w) {
				return
			}
		}
		i = j
	}
}

// isCapsDigits reports whether s is made of [A-Z0-9].
func isCapsDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isUpperByte(s[i]) && !isDigitByte(s[i]) {
			return false
		}
	}
	return true
}

// parens calls f with the groups (X and Y) of each match of reParen in s,
// leftmost first, as FindAllStringSubmatch(s, n) finds them: at most n (all
// when n < 0).
// reParen, run on every sentence with a "(", was a tenth of the
// extractor's time.
//
// The expression's shape makes every choice of the backtracking matcher
// forced: each word or identifier part runs to its last [\w\-] or \w byte
// (a shorter one would be followed by a byte that \s, "." or "(" cannot
// match), and after each run of white space the next byte says whether X
// goes on (a capital) or ends ("("); Y is every character up to the next
// parenthesis, which must be ")".
func parens(s string, n int, f func(x, y string)) {
	if n < 0 {
		n = len(s) + 1
	}
	for pos := 0; pos < len(s) && n > 0; n-- {
		found := false
		for x0 := pos; x0 < len(s); x0++ {
			if xEnd, ys, ye, ok := parenAt(s, x0); ok {
				f(s[x0:xEnd], s[ys:ye])
				pos = ye + 1
				found = true
				break
			}
		}
		if !found {
			return
		}
	}
}

// parenAt matches reParen at s[x0:]: X is s[x0:xEnd], Y s[ys:ye], and the
// match ends after s[ye] (")").
func parenAt(s string, x0 int) (xEnd, ys, ye int, ok bool) {
	c := s[x0]
	if isUpperByte(c) {
		// [A-Z][\w\-]*(?:\s+[A-Z][\w\-]*){0,5}
		i := x0
		for words := 1; ; words++ {
			i++
			for i < len(s) && (isWordByte(s[i]) || s[i] == '-') {
				i++
			}
			j := i
			for j < len(s) && isSpace(s[j]) {
				j++
			}
			if j == i || j == len(s) {
				break
			}
			if s[j] == '(' {
				if ys, ye, ok := parenTail(s, j); ok {
					return i, ys, ye, true
				}
				break
			}
			if !isUpperByte(s[j]) || words == 6 {
				break
			}
			i = j
		}
	}
	if !isUpperByte(c) && !isLowerByte(c) && c != '_' {
		return 0, 0, 0, false
	}
	// [A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?:\(\))?
	i := x0 + 1
	for i < len(s) && isWordByte(s[i]) {
		i++
	}
	for i+1 < len(s) && s[i] == '.' && (isUpperByte(s[i+1]) || isLowerByte(s[i+1]) || s[i+1] == '_') {
		i += 2
		for i < len(s) && isWordByte(s[i]) {
			i++
		}
	}
	if strings.HasPrefix(s[i:], "()") {
		i += 2
	}
	j := i
	for j < len(s) && isSpace(s[j]) {
		j++
	}
	if j == i || j == len(s) || s[j] != '(' {
		return 0, 0, 0, false
	}
	if ys, ye, ok := parenTail(s, j); ok {
		return i, ys, ye, true
	}
	return 0, 0, 0, false
}

// parenTail matches \(([^()]{2,60})\) at s[j:] (s[j] is "("), returning
// where the group starts and ends.
func parenTail(s string, j int) (ys, ye int, ok bool) {
	n := 0
	for k := j + 1; k < len(s); {
		switch s[k] {
		case ')':
			return j + 1, k, n >= 2
		case '(':
			return 0, 0, false
		}
		if s[k] < utf8.RuneSelf {
			k++
		} else {
			_, w := utf8.DecodeRuneInString(s[k:])
			k += w
		}
		if n++; n > 60 {
			return 0, 0, false
		}
	}
	return 0, 0, false
}

// dottedNames calls yield with each match of
// \b(?:[A-Za-z_]\w*\.)*W\b in s, left to right as regexp's FindAllString
// finds them, where W is a word (a maximal \w run) that last accepts; where
// no such match starts at a word, the word alone matches when it equals
// alone (if alone is not empty). It stops when yield returns false.
//
// At a word start the regexp takes the longest dotted chain of words whose
// last word last accepts (its group is greedy); a word that fails moves the
// search to the next word start, inside the chain or after it.
func dottedNames(s string, last func(string) bool, alone string, yield func(string) bool) {
	i := 0
	for i < len(s) {
		for i < len(s) && !isWordByte(s[i]) {
			i++
		}
		if i == len(s) {
			return
		}
		p := i // a word start: s[p-1] is not a \w byte
		end := wordEnd(s, p)
		first := end
		if !isUpperByte(s[p]) && !isLowerByte(s[p]) && s[p] != '_' {
			i = first
			continue
		}
		best, start := -1, p
		for {
			if last(s[start:end]) {
				best = end
			}
			if end+1 >= len(s) || s[end] != '.' {
				break
			}
			if c := s[end+1]; !isUpperByte(c) && !isLowerByte(c) && c != '_' {
				break
			}
			start = end + 1
			end = wordEnd(s, start)
		}
		if best < 0 && alone != "" && s[p:first] == alone {
			best = first
		}
		if best < 0 {
			i = first
			continue
		}
		if !yield(s[p:best]) {
			return
		}
		i = best
	}
}

// wordEnd returns the end of the \w run that starts at i.
func wordEnd(s string, i int) int {
	for i < len(s) && isWordByte(s[i]) {
		i++
	}
	return i
}

// excSuffixes end the names of exception classes.
var excSuffixes = [...]string{"Error", "Exception", "Warning", "Exit", "Interrupt", "Iteration", "ExceptionGroup"}

// excNames finds what reads as exception names in s: matches of
// \b([A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Iteration|ExceptionGroup)\b|\bException\b.
func excNames(s string, yield func(string) bool) {
	dottedNames(s, func(w string) bool {
		if !isUpperByte(w[0]) {
			return false
		}
		for _, suf := range excSuffixes {
			if len(w) > len(suf) && strings.HasSuffix(w, suf) {
				return true
			}
		}
		return false
	}, "Exception", yield)
}

// capIdents finds the capitalised, possibly dotted identifiers of s:
// matches of \b(?:[A-Za-z_]\w*\.)*[A-Z]\w+\b.
func capIdents(s string, yield func(string) bool) {
	dottedNames(s, func(w string) bool { return len(w) >= 2 && isUpperByte(w[0]) }, "", yield)
}
