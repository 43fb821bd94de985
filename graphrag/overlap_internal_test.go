package graphrag

import (
	"strings"
	"testing"
	"unicode"
)

// overlapRef is overlap as first written (lower-case, split, map of hits):
// the reference the allocation-free version must agree with.
func overlapRef(q map[string]bool, text string) float64 {
	if len(q) == 0 {
		return 0
	}
	hit := map[string]bool{}
	for _, f := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '.'
	}) {
		f = strings.Trim(f, ".")
		if q[f] {
			hit[f] = true
		} else if len(f) > 4 && f[len(f)-1] == 's' {
			if n := singular(f); q[n] {
				hit[n] = true
			}
		}
		if strings.Contains(f, ".") {
			for _, p := range strings.Split(f, ".") {
				if q[p] {
					hit[p] = true
				}
			}
		}
	}
	return float64(len(hit)) / float64(len(q))
}

func FuzzOverlap(f *testing.F) {
	for _, c := range [][2]string{
		{"How do I use json.dumps with files?", "json.dumps(obj, fp) writes JSON Files to os.path"},
		{"What is the GIL?", "Global Interpreter Lock (GIL): the mechanism…"},
		{"Straße Ärger naïve café", "STRASSE ärger NAÏVE Café..."},
		{"classes dictionaries", "Classes and DICTIONARIES, queries"},
		{"", "anything"},
		{"os.path.join json.dumps", "OS.PATH.Join and Json.DUMPS, .Path. x.JOINS"},
		{"İstanbul Ω omega", "İSTANBUL istanbul ΩMEGA Ω.OMEGA"},
		{"a.b.c", "..a..b.c.. \xff\xfeA.B"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, question, text string) {
		q := termSet(question)
		want := overlapRef(q, text)
		if got := overlap(newWordSet(q), text); got != want {
			t.Errorf("overlap(%q, %q) = %v, want %v", question, text, got, want)
		}
	})
}
