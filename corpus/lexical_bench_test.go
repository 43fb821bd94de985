package corpus_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/internal/text"
)

// goldenTexts returns a fixed, varied set of texts: the index texts of the
// chunks of a few testdata/site pages plus edge cases.
func goldenTexts(tb testing.TB) []string {
	tb.Helper()
	pages := []string{"index.html", "faq.html", "glossary.html", "api/http/query.html", "configuration/storage.html",
		"install/docker.html", "api/python/client.html", "about.html", "changelog.html", "configuration/security.html",
		"install/linux.html", "api/http/write.html", "api/python/query.html", "search.html", "configuration/retention.html"}
	var texts []string
	for _, p := range pages {
		body, err := os.ReadFile(filepath.Join("..", "testdata", "site", filepath.FromSlash(p)))
		if err != nil {
			tb.Fatal(err)
		}
		doc, err := crawler.Extract("https://docs.example.org/"+p, "text/html; charset=utf-8", body)
		if err != nil {
			tb.Fatal(err)
		}
		for _, c := range corpus.ChunkDocument(doc, corpus.ChunkConfig{}) {
			texts = append(texts, corpus.IndexText(c))
		}
	}
	if len(texts) > 50 {
		texts = texts[:50]
	}
	long := strings.Repeat("Encoding and decoding JSON documents with the json module: json.dumps(obj, indent=2) returns a str. ", 200)
	texts = append(texts,
		"", "\n", "\n\n", "a", "the of and", "x\ny", "Title only",
		"Ünïcödé Straße — ΑΒΓ δέλτα\nКириллица и 漢字かな交じり文 emoji 🎉 café naïve",
		"İstanbul ǅemal ẞ K Ω \u212a\u2126 fullwidth ＡＢＣ",
		"invalid \xff\xfe utf8 \xc3 bytes\nmore\x80text",
		"def f(x):\n    return os.path.join(x, '__init__.py')  # comment\n\nclass Foo_Bar(BaseClass): pass",
		"configurations configuration configured configuring configures configurer serialization serializations libraries studied processes",
		strings.Repeat("a", 70)+" "+strings.Repeat("b", 64)+" "+strings.Repeat("é", 33)+" ok",
		"ab cd ef gh 12 345 6789 _ __ a_b",
		long,
		"Title\n"+long,
	)
	return texts
}

func TestLexicalGolden(t *testing.T) {
	texts := goldenTexts(t)
	if len(texts) < 60 {
		t.Fatalf("only %d golden texts", len(texts))
	}
	cfgs := []corpus.LexicalConfig{{}, {Dim: 64}, {Dim: 1000, WordWeight: 0.7, PairWeight: 0.3, CharWeight: 1.5, TitleWeight: 3}}
	for _, cfg := range cfgs {
		l := corpus.NewLexical(cfg)
		for i, text := range texts {
			got := l.Vector(text)
			want := referenceVector(corpus.LexicalConfigOf(l), text, false)
			if len(got) != len(want) {
				t.Fatalf("cfg %+v text %d: len %d want %d", cfg, i, len(got), len(want))
			}
			for j := range got {
				if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
					t.Fatalf("cfg %+v text %d (%.40q) dim %d: got %v want %v", cfg, i, text, j, got[j], want[j])
				}
			}
			// The original accumulated buckets in map order, so it is only
			// reproducible to the last float32 bit or so.
			orig := referenceVector(corpus.LexicalConfigOf(l), text, true)
			for j := range got {
				if d := math.Abs(float64(got[j]) - float64(orig[j])); d > 1e-6 {
					t.Fatalf("cfg %+v text %d dim %d: got %v original %v", cfg, i, j, got[j], orig[j])
				}
			}
		}
	}
}

// lexicalV1Words are the words lexical-v1 vectors are built from: the
// words of the lower-cased text (contractions not written out), less stop
// words and words over text.MaxTermLen bytes.
func lexicalV1Words(s string) []string {
	lower := strings.ToLower(s)
	var out []string
	for _, sp := range text.Spans(lower) {
		if w := lower[sp[0]:sp[1]]; len(w) <= text.MaxTermLen && !text.IsStopWord(w) {
			out = append(out, w)
		}
	}
	return out
}

// referenceVector is a frozen copy of the original, string-keyed
// implementation of Lexical.Vector. With mapOrder it folds features into
// buckets in map iteration order exactly as the original did; without, in
// order of first occurrence (which the fast implementation uses, so the
// result is reproducible to the bit).
func referenceVector(cfg corpus.LexicalConfig, in string, mapOrder bool) []float32 {
	feats := map[string]float64{}
	var order []string
	add := func(f string, w float64) {
		if _, ok := feats[f]; !ok {
			order = append(order, f)
		}
		feats[f] += w
	}
	features := func(field string, mult float64) {
		if field == "" {
			return
		}
		prev := ""
		for _, t := range lexicalV1Words(field) {
			s := text.Stem(t)
			add("w:"+s, cfg.WordWeight*mult)
			if prev != "" {
				add("p:"+prev+" "+s, cfg.PairWeight*mult)
			}
			prev = s
			g := "<" + t + ">"
			n := len(g) - 2
			if n < 1 {
				continue
			}
			per := cfg.CharWeight * mult / float64(n)
			for i := 0; i+3 <= len(g); i++ {
				add("c:"+g[i:i+3], per)
			}
		}
	}
	title, body := "", in
	if i := strings.IndexByte(in, '\n'); i >= 0 {
		title, body = in[:i], in[i+1:]
	}
	features(title, cfg.TitleWeight)
	features(body, 1)
	if mapOrder {
		order = order[:0]
		for f := range feats {
			order = append(order, f)
		}
	}
	v := make([]float64, cfg.Dim)
	for _, f := range order {
		w := feats[f]
		h := corpus.FNV64(f)
		idx := int(h % uint64(cfg.Dim))
		s := 1.0
		if h>>63 == 1 {
			s = -1
		}
		if w > 1 {
			w = 1 + math.Log(w)
		}
		v[idx] += s * w
	}
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	out := make([]float32, cfg.Dim)
	if norm == 0 {
		return out
	}
	norm = math.Sqrt(norm)
	for i, x := range v {
		out[i] = float32(x / norm)
	}
	return out
}

func BenchmarkLexicalVector(b *testing.B) {
	texts := goldenTexts(b)[:50]
	var n int
	for _, t := range texts {
		n += len(t)
	}
	l := corpus.NewLexical(corpus.LexicalConfig{})
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		for _, t := range texts {
			l.Vector(t)
		}
	}
}

func BenchmarkLexicalReference(b *testing.B) {
	texts := goldenTexts(b)[:50]
	l := corpus.NewLexical(corpus.LexicalConfig{})
	b.ReportAllocs()
	for b.Loop() {
		for _, t := range texts {
			referenceVector(corpus.LexicalConfigOf(l), t, true)
		}
	}
}

func TestStemBytesMatchesStem(t *testing.T) {
	words := []string{"", "a", "abcd", "abcde", "class", "process", "processes", "status", "analysis", "libraries",
		"studied", "encoders", "organizations", "nationalities", "happy", "happily", "days", "play", "key", "keys",
		"statement", "kindness", "ies", "bies", "abies", "zzzies", "rated", "rate", "eye", "eyes", "tree", "trees",
		"serialization", "realizers", "ye", "yyyyy", "eeeee", "ssssss", "under_scores", "x86_64", "é_lan"}
	for _, s := range goldenTexts(t) {
		words = append(words, text.Tokens(s)...)
	}
	var buf []byte
	for _, w := range words {
		buf = text.StemBytes(buf, []byte(w))
		if got, want := string(buf), text.Stem(w); got != want {
			t.Errorf("stemBytes(%q) = %q, Stem = %q", w, got, want)
		}
	}
}

func FuzzLexicalVector(f *testing.F) {
	for _, s := range []string{"", "Hello World\nfoo bar", "Straße\nÜber \xff", "a_b c-d e.f", "processes libraries"} {
		f.Add(s)
	}
	l := corpus.NewLexical(corpus.LexicalConfig{Dim: 97})
	f.Fuzz(func(t *testing.T, s string) {
		got := l.Vector(s)
		want := referenceVector(corpus.LexicalConfigOf(l), s, false)
		for j := range got {
			if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
				t.Fatalf("%q dim %d: got %v want %v", s, j, got[j], want[j])
			}
		}
		w := []byte(s)
		if got, want := string(text.StemBytes(nil, w)), text.Stem(s); got != want {
			t.Fatalf("stemBytes(%q) = %q, Stem = %q", s, got, want)
		}
	})
}

func benchDocs(b *testing.B) []kgagent.Document {
	b.Helper()
	var docs []kgagent.Document
	for _, p := range []string{"index.html", "faq.html", "glossary.html", "api/http/query.html", "configuration/storage.html",
		"install/docker.html", "api/python/client.html", "about.html", "changelog.html", "configuration/security.html"} {
		body, err := os.ReadFile(filepath.Join("..", "testdata", "site", filepath.FromSlash(p)))
		if err != nil {
			b.Fatal(err)
		}
		doc, err := crawler.Extract("https://docs.example.org/"+p, "text/html; charset=utf-8", body)
		if err != nil {
			b.Fatal(err)
		}
		docs = append(docs, doc)
	}
	return docs
}

func BenchmarkChunkDocument(b *testing.B) {
	docs := benchDocs(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, d := range docs {
			for _, c := range corpus.ChunkDocument(d, corpus.ChunkConfig{}) {
				_ = corpus.IndexText(c)
			}
		}
	}
}

// TestStopBytes checks text.IsStopBytes against text.IsStopWord on every
// token of the golden texts (internal/text checks the stop words).
func TestStopBytes(t *testing.T) {
	words := []string{"a", "z", "the", "thé", "you", "yours", "x86_64", "_", "9", "Ü"}
	for _, s := range goldenTexts(t) {
		words = append(words, text.Tokens(s)...)
	}
	for _, w := range words {
		if w == "" {
			continue
		}
		if got, want := text.IsStopBytes([]byte(w)), text.IsStopWord(w); got != want {
			t.Errorf("IsStopBytes(%q) = %v, IsStopWord = %v", w, got, want)
		}
	}
}
