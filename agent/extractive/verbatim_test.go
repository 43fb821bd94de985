package extractive

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent/cite"
	"github.com/kgagent/kgagent/internal/text"
)

func TestExactItems(t *testing.T) {
	tests := []struct {
		sentence string
		want     []string
	}{
		{"Install it with pip install lumen and restart.", []string{"pip install lumen"}},
		{"Run `lumen backup create --since 2d` first.", []string{"lumen backup create --since 2d"}},
		{"See https://kubernetes.io/docs/helm.", []string{"https://kubernetes.io/docs/helm"}},
		{"The default HTTP port is 8086.", []string{"8086"}},
		{"Use go to the settings page.", nil},
		{"Install it with pip.", nil},
		{"Pass --data-dir to choose it.", []string{"--data-dir"}},
		{"It supports Python 3.9 and later.", []string{"3.9"}},
	}
	for _, tt := range tests {
		if got := exactItems(tt.sentence); !slices.Equal(got, tt.want) {
			t.Errorf("exactItems(%q) = %q, want %q", tt.sentence, got, tt.want)
		}
	}
}

func TestHoldsVerbatim(t *testing.T) {
	text := squash("Install it with pip install lumen-client.\nListen on 127.0.0.1:8086 (Python 3.9.1 or\n  13.9).")
	for item, want := range map[string]bool{
		"pip install lumen":        false, // lumen-client
		"pip install lumen-client": true,
		"8086":                     true,  // after a ':'
		"3.9":                      false, // 3.9.1
		"3.9.1":                    true,
		"3.9.1 or 13.9":            true, // wrapped in the passage
		"13":                       false,
		"lumen":                    false,
	} {
		if got := holdsVerbatim(text, item); got != want {
			t.Errorf("holdsVerbatim(%q) = %v, want %v", item, got, want)
		}
	}
}

// TestAttributeNeedsClaimsVerbatim: a sentence with no claim, protocol
// syntax, or a command, URL, flag or number the passage does not hold
// verbatim gets no citation, however many of its words the passage has.
func TestAttributeNeedsClaimsVerbatim(t *testing.T) {
	evs := ev("", lumen...)
	for answer, want := range map[string]int{
		"Install it with pip install lumen.":        0, // the docs say lumen-client
		"Install it with `pip install lumen`.":      0,
		"Install it with pip install lumen-client.": 4,
		"A: answer":            0,
		"Lumen documentation.": 0,
		"Ask Func[fixie_query_corpus]: restore the data directory snapshot":                     0,
		"Reply with one line: restoring replaces the data directory with the snapshot.":         0,
		"Restoring replaces the data directory, see https://kubernetes.io/docs/lumen-helm.":     0,
		"Restore with lumen backup restore --from 2026-01-01T00:00Z --data-dir /var/lib/lumen.": 1,
		"Restore with lumen backup restore --to 2026-01-01T00:00Z --data-dir /var/lib/lumen.":   0,
		"Restoring replaces the data directory with the snapshot.":                              1,
	} {
		got := NewSupport(evs).Attribute(answer)
		n := 0
		if c := citationsIn(got.Text); len(c) > 0 {
			n = c[0]
		}
		if n != want {
			t.Errorf("%q: cited [%d] (%q), want [%d]", answer, n, got.Text, want)
		}
	}
}

// citationsIn returns the numbers of the [n] in text.
func citationsIn(text string) []int {
	var out []int
	for i := 0; i+2 < len(text); i++ {
		if text[i] == '[' && text[i+1] >= '0' && text[i+1] <= '9' && text[i+2] == ']' {
			out = append(out, int(text[i+1]-'0'))
		}
	}
	return out
}

// FuzzExactItems: every exact item of a sentence is held verbatim by the
// sentence itself (so a passage that repeats the sentence supports it).
func FuzzExactItems(f *testing.F) {
	for _, s := range []string{"Install it with pip install lumen-client.", "Run `x --y 3` on https://a.b/c?d=1.", "Port 127.0.0.1:8086, v1.2.3-rc1.", "sudo apt-get install -y  nlohmann-json3-dev"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		text := squash(s)
		for _, it := range exactItems(s) {
			if !holdsVerbatim(text, it) {
				t.Fatalf("%q: item %q not held by the sentence itself", s, it)
			}
		}
	})
}

func TestInvented(t *testing.T) {
	evs := []kgagent.Evidence{{Passages: []kgagent.EvidencePassage{{N: 1, URL: "http://lumen/install.html#client",
		Text: "Install the client with pip install lumen-client. See https://lumen.dev/docs for more."}}}}
	sup := NewSupport(evs)
	tests := []struct {
		answer string
		want   []string
	}{
		{"Install it with pip install lumen-client [1].", nil},
		{"Install it with `pip install lumen-client`.", nil},
		{"Install it with pip install lumen.", []string{"pip install lumen"}},
		{"See https://lumen.dev/docs.", nil},
		{"See http://lumen/install.html for the steps.", nil}, // the source's own page
		{"2023-08-24 - https://www.kubernetes.io/docs/lumen\nThe client is lumen-client [1].", []string{"https://www.kubernetes.io/docs/lumen"}},
		{"```\npip install lumen\n```\nUse the client.", nil}, // code blocks are not judged here
	}
	for _, tt := range tests {
		if got := sup.Invented(tt.answer); !slices.Equal(got, tt.want) {
			t.Errorf("Invented(%q) = %q, want %q", tt.answer, got, tt.want)
		}
	}
}

// citationRefRe and citationMarkRefRe are the citation grammar verbatim.go
// kept before it read citations with agent/cite's parser.
var (
	citationRefRe     = regexp.MustCompile(`\[\d+(?:,\s*\d+)*\]`)
	citationMarkRefRe = regexp.MustCompile(`\s*\[\d+(?:,\s*\d+)*\]`)
)

// TestCitationsAreCitesGrammar: what the claim check and the invented-item
// check take for a citation is what agent/cite parses as one (the answer's
// citations are numbered and checked by cite), including where the old
// regular expression disagreed with it.
func TestCitationsAreCitesGrammar(t *testing.T) {
	tests := []struct {
		line  string
		items []string
	}{
		{"Run pip install lumen [1].", []string{"pip install lumen"}},
		{"Run pip install lumen [1, 2].", []string{"pip install lumen"}},
		{"Run pip install lumen [1 2].", []string{"pip install lumen"}},           // cite: a group; the regexp: text
		{"Run pip install lumen [ 1].", []string{"pip install lumen"}},            // cite: a group; the regexp: text
		{"Run pip install lumen [12345].", []string{"pip install lumen [12345]"}}, // cite: at most 4 digits; the regexp: a group
		{"See https://d/x.html [3]", []string{"https://d/x.html"}},
		{"Run `pip install lumen[1]`", []string{"pip install lumen[1]"}}, // code: no citation for cite; the regexp cut it
	}
	for _, tt := range tests {
		if got := namedItems(tt.line); !slices.Equal(got, tt.items) {
			t.Errorf("namedItems(%q) = %q, want %q", tt.line, got, tt.items)
		}
		if strings.Contains(cite.Parse(tt.line).Strip(""), "[1 2]") {
			t.Errorf("cite kept [1 2] in %q", tt.line)
		}
	}
	if claims("Lumen documentation [1 2, 3]") {
		t.Error("citation numbers counted as the words of a claim")
	}
}

// FuzzCitationGrammarsAgree: wherever cite's parser and the old regular
// expression find the same citation groups, the claim check and the
// invented-item check give what they gave with the expression.
func FuzzCitationGrammarsAgree(f *testing.F) {
	for _, s := range []string{"Run pip install lumen [1].", "a [1] [2] b [3, 4]", "See https://d/x.html [3]", "x[1]y", "Lumen docs [12] are here [1,2]."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsRune(s, '`') || strings.Contains(s, "\n") {
			return // code and lines: cite reads code, the expression did not
		}
		var spans [][]int
		ct := cite.Parse(s)
		for _, g := range ct.Groups() {
			spans = append(spans, []int{g.Start, g.End})
		}
		if want := citationRefRe.FindAllStringIndex(s, -1); !slices.EqualFunc(spans, want, slices.Equal[[]int]) {
			return // the grammars disagree here (TestCitationsAreCitesGrammar)
		}
		refLine := citationMarkRefRe.ReplaceAllString(s, "")
		if got, want := ct.Strip(""), refLine; got != want {
			t.Fatalf("Strip(%q) = %q, the expression gives %q", s, got, want)
		}
		refClaims := func(sentence string) bool {
			if isProtocol(sentence) {
				return false
			}
			n := 0
			for _, w := range strings.FieldsFunc(citationRefRe.ReplaceAllString(sentence, " "), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
				if !text.Articles.Has(strings.ToLower(w)) {
					n++
				}
			}
			return n >= 3
		}
		if got, want := claims(s), refClaims(s); got != want {
			t.Fatalf("claims(%q) = %v, the expression gives %v", s, got, want)
		}
	})
}
