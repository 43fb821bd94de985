package text

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The folds as written before they shared suffixTable, kept as the
// references the stored data (Stem: index terms, lexical and Qdrant sparse
// vectors; Singular: graph entity keys) and the measured answers
// (LightStem, PrefixStem) were made with. TestFoldsMatchReferences and
// FuzzFolds hold the table to them byte for byte.

// stemRef is Stem before the table.
func stemRef(w string) string {
	if len(w) <= 4 {
		return w
	}
	for _, suf := range []string{
		"izations", "ization", "ational", "ations", "ation", "nesses", "ments", "ness", "ment",
		"izing", "izers", "izer", "ized", "izes", "ings", "ing", "ers", "ies", "ied", "ize",
		"er", "es", "ed", "ly", "s",
	} {
		if strings.HasSuffix(w, suf) && len(w)-len(suf) >= 3 {
			if suf == "s" && (strings.HasSuffix(w, "ss") || strings.HasSuffix(w, "us") || strings.HasSuffix(w, "is")) {
				break
			}
			w = w[:len(w)-len(suf)]
			if suf == "ies" || suf == "ied" {
				w += "i"
			}
			break
		}
	}
	if n := len(w); n > 3 && w[n-1] == 'e' {
		w = w[:n-1]
	}
	if n := len(w); n > 3 && w[n-1] == 'y' {
		w = w[:n-1] + "i"
	}
	return w
}

// singularRef is Singular before the table (graphrag.singular before it).
func singularRef(w string) string {
	if s, ok := map[string]string{
		"series": "series", "species": "species", "news": "news", "aliases": "alias",
		"statuses": "status", "buses": "bus", "indices": "index", "matrices": "matrix",
		"vertices": "vertex", "analyses": "analysis", "movies": "movie", "cookies": "cookie",
		"children": "child", "people": "person", "criteria": "criterion", "axes": "axis",
	}[w]; ok {
		return s
	}
	n := len(w)
	if n <= 4 || !strings.HasSuffix(w, "s") {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && n > 5:
		return w[:n-3] + "y"
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"):
		return w[:n-2]
	}
	for _, keep := range []string{"ss", "us", "is", "as", "os", "ics"} {
		if strings.HasSuffix(w, keep) {
			return w
		}
	}
	return w[:n-1]
}

// lightStemRef is LightStem before the table.
func lightStemRef(w string) string {
	switch n := len(w); {
	case n > 5 && strings.HasSuffix(w, "ing"):
		return w[:n-3]
	case n > 4 && strings.HasSuffix(w, "ies"):
		return w[:n-3] + "y"
	case n > 4 && strings.HasSuffix(w, "ed"):
		return w[:n-2]
	case n > 4 && strings.HasSuffix(w, "es") && !strings.HasSuffix(w, "ses"):
		return w[:n-2]
	case n > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss"):
		return w[:n-1]
	}
	return w
}

// prefixStemRef is graphrag's stem (restriction matching) before the table.
func prefixStemRef(w string) string {
	for _, suf := range []string{"ying", "ing", "ies", "ied", "es", "ed", "s", "e", "y"} {
		if len(w) > len(suf)+2 && strings.HasSuffix(w, suf) {
			w = strings.TrimSuffix(w, suf)
			break
		}
	}
	if n := len(w); n > 3 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiou", rune(w[n-1])) {
		w = w[:n-1]
	}
	return w
}

// checkFolds compares every fold with its reference on w.
func checkFolds(t *testing.T, w string) {
	t.Helper()
	for _, c := range []struct {
		name      string
		got, want func(string) string
	}{
		{"Stem", Stem, stemRef},
		{"StemBytes", func(w string) string { return string(StemBytes(nil, []byte(w))) }, stemRef},
		{"Singular", Singular, singularRef},
		{"LightStem", LightStem, lightStemRef},
		{"PrefixStem", PrefixStem, prefixStemRef},
	} {
		if got, want := c.got(w), c.want(w); got != want {
			t.Fatalf("%s(%q) = %q, the reference gives %q", c.name, w, got, want)
		}
	}
}

// TestFoldsMatchReferences checks the four folds against their references
// on every lower-case word of up to four letters over the letters the
// endings use, on random stems followed by one to three endings of the
// table, and on every word of testdata/pydocs and testdata/site.
func TestFoldsMatchReferences(t *testing.T) {
	const letters = "abcdeghilmnorstuxyz"
	var words []string
	var gen func(prefix string, n int)
	gen = func(prefix string, n int) {
		words = append(words, prefix)
		if n == 0 {
			return
		}
		for i := range len(letters) {
			gen(prefix+letters[i:i+1], n-1)
		}
	}
	gen("", 4)
	var endings []string
	for _, l := range strings.Split(strings.TrimSpace(suffixTable), "\n")[1:] {
		endings = append(endings, strings.Fields(l)[0])
	}
	endings = append(endings, irregularWords()...)
	rng := rand.New(rand.NewPCG(22, 1))
	for range 200000 {
		var b strings.Builder
		for range rng.IntN(7) {
			b.WriteByte(letters[rng.IntN(len(letters))])
		}
		for range 1 + rng.IntN(3) {
			b.WriteString(endings[rng.IntN(len(endings))])
		}
		words = append(words, b.String())
	}
	n := len(words)
	for _, dir := range []string{"../../testdata/pydocs", "../../testdata/site"} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			words = append(words, Tokens(strings.ToLower(string(b)))...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(words)-n < 5000 {
		t.Fatalf("only %d words from testdata", len(words)-n)
	}
	for _, w := range words {
		checkFolds(t, w)
	}
}

func irregularWords() []string {
	var ws []string
	for w, s := range irregular {
		ws = append(ws, w, s)
	}
	return ws
}

// FuzzFolds holds every fold to its reference on any input.
func FuzzFolds(f *testing.F) {
	for _, w := range append([]string{"libraries", "eyes", "copping", "classes", "processes", "ties", "organizations", "studied", "é_lan", "ssss"}, irregularWords()...) {
		f.Add(w)
	}
	f.Fuzz(func(t *testing.T, w string) {
		checkFolds(t, w)
	})
}

// TestFoldsCoverEveryStep checks each step of suffixTable is used by a
// fold, so the table holds no dead column.
func TestFoldsCoverEveryStep(t *testing.T) {
	used := map[*foldStep]bool{}
	for _, f := range []*fold{searchFold, entityFold, lightFold, prefixFold} {
		for _, s := range f.steps {
			used[s] = true
		}
	}
	for name, s := range foldSteps {
		if !used[s] {
			t.Errorf("step %s of suffixTable is used by no fold", name)
		}
	}
}

func BenchmarkStemBytes(b *testing.B) {
	ws := [][]byte{[]byte("encoders"), []byte("libraries"), []byte("class"), []byte("the"), []byte("organizations"), []byte("happy"), []byte("x86_64")}
	var dst []byte
	for i := 0; b.Loop(); i++ {
		dst = StemBytes(dst, ws[i%len(ws)])
	}
}

func BenchmarkStemBytesRef(b *testing.B) {
	ws := []string{"encoders", "libraries", "class", "the", "organizations", "happy", "x86_64"}
	for i := 0; b.Loop(); i++ {
		_ = stemRef(ws[i%len(ws)])
	}
}
