package text

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// A SentenceRule says where a sentence ends; it is kgagent's one sentence
// splitter (End, Next, Split), and each reader of sentences names its rule
// by its fields. The zero rule is the loose one: a '.', '!' or '?'
// followed by a space or by the end of the text, so the dots of dotted
// names (os.path) and of numbers (3.11) never end one.
//
// The rules in use: the graph's rule extractor and the model driver's
// citation check add Newline; the digest rule adds Semicolon (the clauses
// of a one-line description); the chunker wants the next sentence to start
// like one (Starts `"('`, shaping the stored chunks, so it never changes
// without a re-ingest); the answer writer also lets backquotes and
// brackets start one and skips abbreviations (Starts "\"'`([", Abbrev);
// the graph's answer reads a description's first sentence with Abbrev.
type SentenceRule struct {
	// Newline: a line break ends a sentence too.
	Newline bool
	// Semicolon: a ';' ends one like a '.'.
	Semicolon bool
	// Starts, when set, asks the next sentence to start like one: after
	// the spaces that follow the mark comes an upper-case letter, a digit
	// or one of these characters (so "and so on. and more" is one
	// sentence, and a mark at the very end of the text ends none).
	Starts string
	// Abbrev: a mark ending an abbreviation ("e.g.", "i.e.", "etc.",
	// "vs."), an initial ("A.") or a dotted word ("U.S.") ends none.
	Abbrev bool
}

// End reports whether s[i] ends a sentence under r.
func (r SentenceRule) End(s string, i int) bool {
	switch c := s[i]; {
	case c == '\n':
		return r.Newline
	case c == '.' || c == '!' || c == '?' || c == ';' && r.Semicolon:
	default:
		return false
	}
	if i+1 == len(s) {
		return r.Starts == ""
	}
	if s[i+1] != ' ' {
		return false
	}
	if r.Starts != "" {
		j := i + 2
		for j < len(s) && s[j] == ' ' {
			j++
		}
		if j == len(s) {
			return false
		}
		c, _ := utf8.DecodeRuneInString(s[j:])
		if !unicode.IsUpper(c) && !unicode.IsDigit(c) && !strings.ContainsRune(r.Starts, c) {
			return false
		}
	}
	return !r.Abbrev || !abbreviation(s, i)
}

// abbreviation reports whether the mark s[i] ends an abbreviation, an
// initial or a dotted word rather than a sentence.
func abbreviation(s string, i int) bool {
	if i >= 2 && s[i-2] == '.' {
		return true // "e.g.", "i.e.", "U.S."
	}
	w := s[strings.LastIndexByte(s[:i], ' ')+1 : i+1]
	return w == "etc." || w == "vs." || len(w) == 2 && unicode.IsUpper(rune(w[0]))
}

// Next returns the first sentence of s (trimmed, maybe empty) and the text
// after it.
func (r SentenceRule) Next(s string) (sent, rest string) {
	for i := 0; i < len(s); i++ {
		if r.End(s, i) {
			return strings.TrimSpace(s[:i+1]), s[i+1:]
		}
	}
	return strings.TrimSpace(s), ""
}

// Split cuts s into its sentences, trimmed, the empty ones left out.
func (r SentenceRule) Split(s string) []string {
	var out []string
	for s != "" {
		var sent string
		if sent, s = r.Next(s); sent != "" {
			out = append(out, sent)
		}
	}
	return out
}

// TableCells splits a table row as the crawler writes it ("a | b | c",
// "| a | b") into its non-empty cells; a line that is no table row gives
// nil.
func TableCells(l string) []string {
	if !strings.Contains(l, " | ") && !strings.HasPrefix(l, "| ") {
		return nil
	}
	var out []string
	for _, c := range strings.Split(l, "|") {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// IsFence reports whether a trimmed line opens or closes a Markdown code
// fence (``` or ~~~); what lies between is code, not prose.
func IsFence(line string) bool {
	return strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~")
}

// A Fence follows Markdown code fences down a text's lines, for walks that
// treat code apart from prose. The zero Fence is outside code.
type Fence struct{ open bool }

// Code reports whether a trimmed line is code: a fence line (which opens
// or closes the fence) or a line inside one. Call it on every line, in
// order.
func (f *Fence) Code(line string) bool {
	if IsFence(line) {
		f.open = !f.open
		return true
	}
	return f.open
}

// Open reports whether the lines read so far end inside a code block.
func (f *Fence) Open() bool { return f.open }
