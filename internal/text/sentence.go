package text

import "strings"

// EndsSentence reports whether s[i] ends a sentence by the loose rule: a
// '.', '!' or '?' followed by a space or by the end of s, so the dots of
// dotted names (os.path) and of numbers (3.11) never do. The graph's rule
// extractor, the model driver's citation check and the link-list detector
// cut and count sentences with it. The chunker and the answer writer also
// want the next word to start like a sentence (an upper-case letter, a
// digit, a quote or a bracket) and keep that stricter test of their own;
// the chunker's shapes the stored chunks.
func EndsSentence(s string, i int) bool {
	switch s[i] {
	case '.', '!', '?':
		return i+1 == len(s) || s[i+1] == ' '
	}
	return false
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
