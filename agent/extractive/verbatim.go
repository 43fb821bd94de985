package extractive

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kgagent/kgagent/agent/cite"
	"github.com/kgagent/kgagent/internal/text"
)

// A sentence that names something exact — a command, a URL, a flag, a
// number, an inline code span — is supported by a passage only if the
// passage holds that thing verbatim: words alone would let "pip install
// lumen" be supported by a passage that says "pip install lumen-client",
// or an invented https://kubernetes.io/… URL by a passage about Docker.

var (
	codeSpanRe = regexp.MustCompile("`([^`\n]+)`")
	urlRe      = regexp.MustCompile(`(?i)\bhttps?://[^\s<>()\[\]"'` + "`" + `]+`)
	// commandRe finds a command line: a common command-line tool, then
	// its words up to the end of the clause (cut further by cutCommand).
	commandRe = regexp.MustCompile(`(?:^|[\s(])((?:sudo\s+)?(?:pip3?|pipx|python3?|npm|npx|yarn|pnpm|apt-get|apt|brew|docker|podman|kubectl|helm|curl|wget|git|cargo|go\s+(?:install|get|run|build|test|mod))\s+[^\s,;:!?()]+(?:\s+[^\s,;:!?()]+)*)`)
	// digitTokenRe is a token with a digit: a port, version, size, path.
	digitTokenRe = regexp.MustCompile(`[\p{L}\p{N}._:/%+-]*\p{N}[\p{L}\p{N}._:/%+-]*`)
	flagRe       = regexp.MustCompile(`(?:^|\s)(--?[A-Za-z][A-Za-z0-9-]*(?:=[^\s,;]+)?)`)
)

// cutCommand keeps a command's words up to the first prose word, without a
// trailing full stop; a tool with no argument left is no command.
func cutCommand(cmd string) string {
	fields := strings.Fields(cmd)
	n := 0
	for i, f := range fields {
		if i > 0 && text.CommandEnds.Has(strings.ToLower(f)) {
			break
		}
		n = i + 1
	}
	fields = fields[:n]
	if len(fields) > 0 {
		fields[n-1] = strings.TrimRight(fields[n-1], ".")
	}
	tool := 1
	if len(fields) > 0 && fields[0] == "sudo" {
		tool = 2
	}
	if len(fields) > 0 && (fields[tool-1] == "go") {
		tool++
	}
	if len(fields) <= tool {
		return ""
	}
	return strings.Join(fields, " ")
}

// exactItems returns what a passage must hold verbatim to support
// sentence: its inline code spans, URLs, command lines, flags and tokens
// with a digit.
func exactItems(sentence string) []string {
	var items []string
	rest := sentence
	for _, m := range codeSpanRe.FindAllStringSubmatch(sentence, -1) {
		if s := strings.TrimSpace(m[1]); s != "" {
			items = append(items, s)
		}
	}
	rest = codeSpanRe.ReplaceAllString(rest, " ")
	for _, u := range urlRe.FindAllString(rest, -1) {
		items = append(items, strings.TrimRight(u, ".,;:!?"))
	}
	rest = urlRe.ReplaceAllString(rest, " ")
	for _, m := range commandRe.FindAllStringSubmatch(rest, -1) {
		if c := cutCommand(m[1]); c != "" {
			items = append(items, c)
		}
	}
	for _, m := range flagRe.FindAllStringSubmatch(rest, -1) {
		items = append(items, strings.TrimRight(m[1], "."))
	}
	for _, tok := range digitTokenRe.FindAllString(rest, -1) {
		if tok = strings.Trim(tok, ".:/-+_"); tok != "" && strings.IndexFunc(tok, unicode.IsDigit) >= 0 {
			items = append(items, tok)
		}
	}
	// Only what the sentence itself holds as a whole ("-A" of "-A.00" is
	// no flag): a passage repeating the sentence supports it.
	text := squash(sentence)
	return slices.DeleteFunc(items, func(it string) bool { return !holdsVerbatim(text, it) })
}

// squash collapses runs of white space to one space, so that a command
// wrapped over two lines in a passage still matches.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// holdsVerbatim reports whether text (squashed) holds item as a whole:
// not as the start or end of a longer word ("lumen" in "lumen-client",
// "3.9" in "3.9.1" or "13.9").
func holdsVerbatim(text, item string) bool {
	item = squash(item)
	if item == "" {
		return true
	}
	for from := 0; ; {
		i := strings.Index(text[from:], item)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(item)
		if !continues(text, i, -1) && !continues(text, end, 1) {
			return true
		}
		from = i + 1
	}
}

// continues reports whether the word at text[at] goes on past the edge
// of a match, going back (dir -1: the rune before at) or on (dir 1).
func continues(text string, at, dir int) bool {
	var r rune
	if dir < 0 {
		if at == 0 {
			return false
		}
		r, _ = utf8.DecodeLastRuneInString(text[:at])
	} else {
		if at >= len(text) {
			return false
		}
		r, _ = utf8.DecodeRuneInString(text[at:])
	}
	if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' {
		return true
	}
	if r == '-' || r == '.' {
		// "lumen-client", "3.9.1": the word goes on when a letter or
		// digit follows (a sentence's full stop does not). A ':' or '/'
		// separates ("127.0.0.1:8086" holds the port 8086).
		next := at + 1
		if dir < 0 {
			return at >= 2 && isWordByte(text[at-2])
		}
		return next < len(text) && isWordByte(text[next])
	}
	return false
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// protocolRe matches the ReAct protocol's syntax and the prompt's
// instructions, which a small model echoes: never a claim about the docs.
var protocolRe = regexp.MustCompile(`(?i)(?:\b(?:Ask\s+(?:Func|Agent)\s*\[|(?:Func|Agent)\s*\[[^\]]*\]\s*says\b)|^\s*(?:[QA]|Thought|Action|Observation|Answer)\s*:|^\s*\{\s*"(?:thought|action|input)"|\bReply with one line\b)`)

// isProtocol reports whether a sentence is protocol syntax or an echo of
// the prompt's instructions rather than a claim.
func isProtocol(sentence string) bool { return protocolRe.MatchString(sentence) }

// claims reports whether a sentence can make a claim a passage supports:
// three words or more besides articles ("Lumen documentation" is a
// title, not a claim), and no protocol syntax.
func claims(sentence string) bool {
	if isProtocol(sentence) {
		return false
	}
	n := 0
	sentence = cite.Parse(sentence).Strip(" ") // a citation is no word of the sentence
	for _, w := range text.LetterRuns(sentence) {
		if !text.Articles.Has(strings.ToLower(w)) {
			n++
		}
	}
	return n >= 3
}

// Invented returns the URLs and command lines that answer names outside
// its code blocks and that no evidence passage holds verbatim (a source's
// own URL counts as held): made up, however well the answer's other
// sentences are supported. An invented https://kubernetes.io/… URL in a
// line no citation covers must not leave the answer "attributed".
func (s *Support) Invented(answer string) []string {
	var out []string
	var fence text.Fence
	for _, line := range strings.Split(answer, "\n") {
		t := strings.TrimSpace(line)
		if fence.Code(t) || t == "" {
			continue
		}
		for _, it := range namedItems(line) {
			if !s.holds(it) {
				out = append(out, it)
			}
		}
	}
	return out
}

// namedItems are the URLs and command lines of a line (exactItems' kinds
// that only a source can vouch for; numbers and code spans are judged per
// sentence by Support).
func namedItems(line string) []string {
	line = cite.Parse(line).Strip("")
	var items []string
	for _, u := range urlRe.FindAllString(line, -1) {
		items = append(items, strings.TrimRight(u, ".,;:!?"))
	}
	rest := codeSpanRe.ReplaceAllStringFunc(urlRe.ReplaceAllString(line, " "), func(span string) string {
		return " " + strings.Trim(span, "`") + " "
	})
	for _, m := range commandRe.FindAllStringSubmatch(rest, -1) {
		if c := cutCommand(m[1]); c != "" {
			items = append(items, c)
		}
	}
	return items
}

// holds reports whether a passage's text holds item verbatim, or item is
// (a prefix of) a passage's own URL.
func (s *Support) holds(item string) bool {
	for i, p := range s.ps {
		if holdsVerbatim(s.ptext[i], item) || (p.URL != "" && strings.HasPrefix(p.URL, strings.TrimRight(item, "/"))) {
			return true
		}
	}
	return false
}
