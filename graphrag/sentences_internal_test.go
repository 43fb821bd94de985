package graphrag

import (
	"strings"
	"testing"
)

// splitSentences is the sentence splitter nextSentence replaced: the
// reference it must agree with (the empty sentences dropped).
func splitSentences(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		end := c == '\n' || ((c == '.' || c == '!' || c == '?') && i+1 < len(text) && text[i+1] == ' ')
		if end {
			if s := strings.TrimSpace(text[start : i+1]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(text[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// mayIsARef is mayIsA as first written, byte by byte.
func mayIsARef(s string) bool {
	for i := 1; i < len(s); i++ {
		if !isSpace(s[i-1]) || isSpace(s[i]) {
			continue
		}
		j := i
		switch {
		case strings.HasPrefix(s[j:], "is"):
			j += 2
		case strings.HasPrefix(s[j:], "are"):
			j += 3
		default:
			continue
		}
		k := j
		for k < len(s) && isSpace(s[k]) {
			k++
		}
		if k == j || k >= len(s) || s[k] != 'a' {
			continue
		}
		k++
		if k < len(s) && s[k] == 'n' {
			if k+1 < len(s) && isSpace(s[k+1]) {
				return true
			}
		}
		if k < len(s) && isSpace(s[k]) {
			return true
		}
	}
	return false
}

func checkSentences(t *testing.T, text string) {
	t.Helper()
	var got []string
	for rest := text; rest != ""; {
		var sent string
		sent, rest = nextSentence(rest)
		if sent != "" {
			got = append(got, sent)
		}
	}
	want := splitSentences(text)
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
		t.Errorf("nextSentence(%q) gave %q, want %q", text, got, want)
	}
	if got, want := mayIsA(text), mayIsARef(text); got != want {
		t.Errorf("mayIsA(%q) = %v, want %v", text, got, want)
	}
}

var sentenceSeeds = []string{
	"", " ", "A list is a mutable sequence. It is an object! Is it? yes\nno", "x is an  y", "this island is amazing",
	"a.b.c. d", "end.", "end. ", "..  . !", "\n\n", " is a", "x\tare\ta\t", "x is an", "x is anx y", "isa is\ta ",
}

func TestSentences(t *testing.T) {
	for _, s := range sentenceSeeds {
		checkSentences(t, s)
	}
}

func FuzzSentences(f *testing.F) {
	for _, s := range sentenceSeeds {
		f.Add(s)
	}
	f.Fuzz(checkSentences)
}
