package text

import (
	"crypto/sha256"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kgagent/kgagent/internal/text/texttest"
)

func TestTokens(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"os.path.join", []string{"os", "path", "join"}},
		{"max_body_size x86_64", []string{"max_body_size", "x86_64"}},
		{"Straße Über", []string{"straße", "über"}},
		{"the server won't start", []string{"the", "server", "will", "not", "start"}},
		{"It doesn't; we can’t; they shan't", []string{"it", "does", "not", "we", "can", "not", "they", "shall", "not"}},
		{"it's I'm we've you're they'll he'd", []string{"it", "i", "we", "you", "they", "he"}},
		{"'quoted' x1's don't", []string{"quoted", "x1", "s", "do", "not"}},
		{"n't 't", []string{"n", "t", "t"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := Tokens(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Tokens(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestExpandContractions(t *testing.T) {
	tests := []struct{ in, want string }{
		{"the server won't start", "the server will not start"},
		{"Doesn't it? It's fine, I'm sure we’ve seen it.", "Does not it? It fine, I sure we seen it."},
		{"Can't and shan't", "Can not and shall not"},
		{"no apostrophe here", "no apostrophe here"},
		{"'a' b's", "'a' b"},
		{"I can't connect", "I can not connect"},
		{"it doesn’t work", "it does not work"},
		{"Lumen's port isn't open", "Lumen port is not open"},
		{"we've tried; you'd think", "we tried; you think"},
		{"WON'T and Shan't", "will not and shall not"},
		{"the 'quoted' word", "the 'quoted' word"},
		{"rock'n'roll is not a word", "rock'n'roll is not a word"},
		{"İstanbul's port", "istanbul port"}, // lower case one byte shorter: was "İstanbu port"
	}
	for _, tt := range tests {
		if got := ExpandContractions(tt.in); got != tt.want {
			t.Errorf("ExpandContractions(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestQuestionTermsNoFragments is the symptom of issue 22: "won't" read as
// the word "won".
func TestQuestionTermsNoFragments(t *testing.T) {
	q := "the server won't start because the port is already used"
	got := QuestionTerms(q)
	want := []string{"serv", "start", "port", "alreadi"}
	if !slices.Equal(got, want) {
		t.Fatalf("QuestionTerms(%q) = %q, want %q", q, got, want)
	}
	if w := QuestionWords("Why doesn't json.loads accept bytes? I've tried"); !slices.Equal(w, []string{"json", "loads", "accept", "bytes", "tried"}) {
		t.Fatalf("QuestionWords = %q", w)
	}
}

func TestTermsKeepFiller(t *testing.T) {
	// Documents keep filler words; questions drop them.
	if got := Terms("Show the tables, please"); !slices.Equal(got, []string{"show", "tabl", "pleas"}) {
		t.Errorf("Terms = %q", got)
	}
	if got := QuestionTerms("Show the tables, please"); !slices.Equal(got, []string{"tabl"}) {
		t.Errorf("QuestionTerms = %q", got)
	}
	long := strings.Repeat("x", MaxTermLen+1)
	if got := Terms("ok " + long); !slices.Equal(got, []string{"ok"}) {
		t.Errorf("Terms drops words over MaxTermLen: %q", got)
	}
}

func TestAllTerms(t *testing.T) {
	got := AllTerms("Set max_body_size in the config")
	want := []string{"set", "max_body_size", "max", "body", "size", "in", "the", "config"}
	if !slices.Equal(got, want) {
		t.Fatalf("AllTerms = %q, want %q", got, want)
	}
}

func TestStem(t *testing.T) {
	tests := []struct {
		words []string
		want  string
	}{
		{[]string{"encode", "encoder", "encoders", "encoding", "encoded", "encodes"}, "encod"},
		{[]string{"library", "libraries"}, "librari"},
		{[]string{"parse", "parser", "parsing", "parses"}, "pars"},
		{[]string{"class"}, "class"},
		{[]string{"process", "processes"}, "process"},
		{[]string{"serialize", "serialization", "serialized"}, "serial"},
		{[]string{"json"}, "json"},
	}
	for _, tt := range tests {
		for _, w := range tt.words {
			if got := Stem(w); got != tt.want {
				t.Errorf("Stem(%q) = %q, want %q", w, got, tt.want)
			}
		}
	}
}

func TestSingular(t *testing.T) {
	for in, want := range map[string]string{"classes": "class", "dictionaries": "dictionary", "status": "status",
		"indices": "index", "keys": "keys", "modules": "module", "physics": "physics", "boxes": "box"} {
		if got := Singular(in); got != want {
			t.Errorf("Singular(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStopListFrozen guards the stored data that depends on the stop list
// and the stemmer: the lexical embedder's vectors ("lexical-v1") and
// Qdrant's sparse vectors. A change here needs a new embedder name or a
// re-ingest, not just a new hash.
func TestStopListFrozen(t *testing.T) {
	var ws []string
	for w := range stopWords {
		ws = append(ws, w)
	}
	sort.Strings(ws)
	var stems []string
	for _, w := range []string{"encoders", "libraries", "happily", "organizations", "statement", "kindness", "realizers", "studied"} {
		stems = append(stems, Stem(w))
	}
	sum := sha256.Sum256([]byte(strings.Join(ws, " ") + "|" + strings.Join(stems, " ")))
	if got, want := fmt.Sprintf("%x", sum[:8]), "99ebba6139084c50"; got != want {
		t.Fatalf("stop list or stemmer changed (fingerprint %s, want %s): stored vectors would no longer match queries", got, want)
	}
	for w := range fillerWords {
		if IsStopWord(w) {
			t.Errorf("%q is both a stop word and filler", w)
		}
	}
}

func TestStemBytesMatchesStem(t *testing.T) {
	words := []string{"", "a", "abcd", "abcde", "class", "process", "processes", "status", "analysis", "libraries",
		"studied", "encoders", "organizations", "nationalities", "happy", "happily", "days", "play", "key", "keys",
		"statement", "kindness", "ies", "bies", "abies", "zzzies", "rated", "rate", "eye", "eyes", "tree", "trees",
		"serialization", "realizers", "ye", "yyyyy", "eeeee", "ssssss", "under_scores", "x86_64", "é_lan"}
	for w := range stopWords {
		words = append(words, w)
	}
	var buf []byte
	for _, w := range words {
		buf = StemBytes(buf, []byte(w))
		if got, want := string(buf), Stem(w); got != want {
			t.Errorf("StemBytes(%q) = %q, Stem = %q", w, got, want)
		}
		if got, want := Stem(w), stemRef(w); got != want {
			t.Errorf("Stem(%q) = %q, the reference gives %q", w, got, want)
		}
	}
}

// TestStopBytes checks IsStopBytes against IsStopWord on every stop word
// and near misses.
func TestStopBytes(t *testing.T) {
	words := []string{"a", "z", "the", "thé", "you", "yours", "x86_64", "_", "9", "Ü", "please"}
	for w := range stopWords {
		words = append(words, w, w+"s", "x"+w, w[:len(w)-1])
		if c := w[0]; c < 'a' || c > 'z' || len(w) > maxStopWordLen {
			t.Errorf("stop word %q does not start with a letter a-z or is longer than maxStopWordLen", w)
		}
	}
	for _, w := range words {
		if w == "" {
			continue
		}
		if got, want := IsStopBytes([]byte(w)), IsStopWord(w); got != want {
			t.Errorf("IsStopBytes(%q) = %v, IsStopWord = %v", w, got, want)
		}
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		s          string
		n          int
		clip, trun string
	}{
		{"hello", 10, "hello", "hello"},
		{"hello", 3, "hel", "hel…"},
		{"héllo", 2, "h", "h…"},
		{"日本語", 4, "日", "日…"},
		{"abc", 0, "", "…"},
	}
	for _, tt := range tests {
		if got := Clip(tt.s, tt.n); got != tt.clip {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.clip)
		}
		if got := Truncate(tt.s, tt.n); got != tt.trun {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.trun)
		}
	}
	if got := CutWords("one two three four", 12); got != "one two …" {
		t.Errorf("CutWords = %q", got)
	}
	if got := CutWords("onetwothree four", 8); got != "onetwoth …" {
		t.Errorf("CutWords without a space in the second half = %q", got)
	}
}

func TestBM25(t *testing.T) {
	docs := [][]string{Terms("JSON encoder and decoder"), Terms("CSV file reading and writing"), Terms("the json module encodes JSON")}
	sc := NewBM25(docs).Scores(QuestionTerms("How do I encode JSON?"))
	if !(sc[2] > sc[0] && sc[0] > 0 && sc[1] == 0) {
		t.Fatalf("scores %v: want doc 2 > doc 0 > doc 1 = 0", sc)
	}
}

func TestCosine(t *testing.T) {
	if got := Cosine([]float32{1, 0}, []float32{1, 0}); math.Abs(got-1) > 1e-9 {
		t.Errorf("Cosine of equal vectors = %v", got)
	}
	if got := Cosine([]float32{1, 0}, []float32{1, 0, 0}); got != 0 {
		t.Errorf("Cosine of vectors of different lengths = %v, want 0", got)
	}
	if got := Cosine([]float32{0, 0}, []float32{1, 0}); got != 0 {
		t.Errorf("Cosine with a zero vector = %v", got)
	}
	if got := BagCosine("How do I parse JSON?", "parsing json please"); math.Abs(got-1) > 1e-9 {
		t.Errorf("BagCosine of the same question terms = %v", got)
	}
}

func FuzzTokens(f *testing.F) {
	for _, s := range tokenSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Tokens(s), tokensRef(s); !slices.Equal(got, want) || (got == nil) != (want == nil) {
			t.Fatalf("Tokens(%q) = %q, the reference gives %q", s, got, want)
		}
		if got, want := Spans(s), spansRef(s); !slices.Equal(got, want) {
			t.Fatalf("Spans(%q) = %v, the reference gives %v", s, got, want)
		}
		for _, tok := range Tokens(s) {
			if tok == "" || strings.ContainsAny(tok, " '’") {
				t.Fatalf("Tokens(%q) has token %q", s, tok)
			}
		}
		e := ExpandContractions(s)
		if utf8.ValidString(s) && !utf8.ValidString(e) {
			t.Fatalf("ExpandContractions(%q) = %q is not valid UTF-8", s, e)
		}
		// Expanding first changes nothing Tokens reads.
		if got, want := Tokens(e), Tokens(s); !slices.Equal(got, want) && utf8.ValidString(s) {
			t.Fatalf("Tokens(ExpandContractions(%q)) = %q, Tokens = %q", s, got, want)
		}
	})
}

func TestIDF(t *testing.T) {
	if !(IDF(100, 1) > IDF(100, 50) && IDF(100, 50) > IDF(100, 100) && IDF(100, 100) >= math.Log(2)) {
		t.Fatalf("IDF(100, 1/50/100) = %v %v %v: want falling, never below log 2", IDF(100, 1), IDF(100, 50), IDF(100, 100))
	}
}

// TestSharedQuestions checks the table every reader of a question is tested
// with (texttest.Questions) against this package.
func TestSharedQuestions(t *testing.T) {
	for _, q := range texttest.Questions {
		if got := QuestionWords(q.Q); !slices.Equal(got, q.Words) {
			t.Errorf("QuestionWords(%q) = %q, table %q", q.Q, got, q.Words)
		}
		if got := QuestionTerms(q.Q); !slices.Equal(got, q.Terms) {
			t.Errorf("QuestionTerms(%q) = %q, table %q", q.Q, got, q.Terms)
		}
		if got := BagCosine(q.Q, strings.Join(q.Words, " ")); math.Abs(got-1) > 1e-9 {
			t.Errorf("BagCosine(%q, its words) = %v: the router reads it otherwise", q.Q, got)
		}
	}
}

func TestSentenceRule(t *testing.T) {
	s := "Use os.path in 3.11. Why? Yes! end."
	var ends []int
	for i := range len(s) {
		if (SentenceRule{}).End(s, i) {
			ends = append(ends, i)
		}
	}
	if want := []int{19, 24, 29, 34}; !slices.Equal(ends, want) {
		t.Fatalf("the loose rule ends sentences at %v, want %v", ends, want)
	}
	chunker := SentenceRule{Starts: `"('`}
	writer := SentenceRule{Starts: "\"'`([", Abbrev: true}
	tests := []struct {
		rule SentenceRule
		in   string
		want []string
	}{
		{SentenceRule{}, "One. two! Three?four", []string{"One.", "two!", "Three?four"}},
		{SentenceRule{}, "a\nb. c", []string{"a\nb.", "c"}},
		{SentenceRule{Newline: true}, "a\nb.\nc", []string{"a", "b.", "c"}},
		{SentenceRule{Semicolon: true}, "Reads x; writes y. Done", []string{"Reads x;", "writes y.", "Done"}},
		{SentenceRule{}, "Reads x; writes y", []string{"Reads x; writes y"}},
		// the chunker: the next word must start like a sentence
		{chunker, "Set it. then go. Then stop. \"Quoted\" (paren) 'q' 3 items.  Über", []string{"Set it. then go.", "Then stop.", "\"Quoted\" (paren) 'q' 3 items.", "Über"}},
		{chunker, "Use e.g. Foo. `code` here. [1] note", []string{"Use e.g.", "Foo. `code` here. [1] note"}},
		{chunker, "End. ", []string{"End."}},
		{chunker, "A. b. éclair. Élan", []string{"A. b. éclair.", "Élan"}},
		// the answer writer: backquotes and brackets start one, not abbreviations
		{writer, "Use e.g. Foo. `code` here. [1] note", []string{"Use e.g. Foo.", "`code` here.", "[1] note"}},
		{writer, "See etc. Bar, vs. Baz, J. Smith and the U.S. Army. Done.", []string{"See etc. Bar, vs. Baz, J. Smith and the U.S. Army.", "Done."}},
		{writer, "Version 2.4.1 is out. It is fast.", []string{"Version 2.4.1 is out.", "It is fast."}},
		{writer, "", nil},
	}
	for _, tt := range tests {
		if got := tt.rule.Split(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("%+v.Split(%q) = %q, want %q", tt.rule, tt.in, got, tt.want)
		}
	}
	if sent, rest := (SentenceRule{Newline: true}).Next(" First one. Second\nthird"); sent != "First one." || rest != " Second\nthird" {
		t.Errorf("Next = %q, %q", sent, rest)
	}
}

func TestJoinWords(t *testing.T) {
	tests := []struct {
		in   string
		sep  byte
		want string
	}{
		{"Is Part Of", '_', "is_part_of"},
		{"  --Getting Started: the CLI (v2)!  ", '-', "getting-started-the-cli-v2"},
		{"AWS Lambda's limits", ' ', "aws lambda s limits"},
		{"Straße ÜBER x86_64", '-', "straße-über-x86-64"},
		{"ⅠⅡ Ⓐ", '-', ""},
		{"", '_', ""},
	}
	for _, tt := range tests {
		if got := JoinWords(tt.in, tt.sep); got != tt.want {
			t.Errorf("JoinWords(%q, %q) = %q, want %q", tt.in, tt.sep, got, tt.want)
		}
	}
}

// TestWordListsMatchReferences holds the word lists made from the stop
// list to the lists their users kept before (graphrag's stopStarts,
// stopTerms and headNoun's stop words shape stored triples).
func TestWordListsMatchReferences(t *testing.T) {
	for _, c := range []struct {
		name string
		set  WordSet
		ref  string
	}{
		{"Articles", Articles, "a|an|the"},
		{"PoorSubjects", PoorSubjects, "it|this|that|there|which|what|he|she|they|one|each|here|result|return|the|a|an|these|those|its|such|if|when|so"},
		{"ClauseBreaks", ClauseBreaks, "that|which|who|where|when|whose|with|used|to|for|by|in|on|and|or|from|as|of|is|are|but|if|than"},
		{"CommonTerms", CommonTerms, "the|a|an|this|if|in|for|note|see|new|when|it|changed|deprecated|example|ok|id|i|ii|e.g|i.e|etc|also|" +
			"table of content|next|previous|index|here|this page|link|source|home|top|back|more|read more|click here|permalink|show source|report a bug|up"},
		{"CommandEnds", CommandEnds, "and|or|then|to|with|the|a|an|for|in|on|from|by|of|as|which|that|it|you|your|is|are|will|if|before|after|first|command|package|instead"},
	} {
		want := strings.Split(c.ref, "|")
		sort.Strings(want)
		if got := c.set.Words(); !slices.Equal(got, want) {
			t.Errorf("%s = %q, want %q", c.name, got, want)
		}
	}
}

// TestStopPick checks a word list cannot list a word as a stop word that
// is none, nor add one that is.
func TestStopPick(t *testing.T) {
	for _, c := range []struct {
		stops string
		more  []string
	}{{"the result", nil}, {"the", []string{"a"}}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("stopPick(%q, %q) did not panic", c.stops, c.more)
				}
			}()
			stopPick(c.stops, c.more...)
		}()
	}
}

func TestFence(t *testing.T) {
	var f Fence
	var code []bool
	// ``` and ~~~ open and close the same fence, as every walk took them.
	for _, l := range []string{"prose", "```go", "x := a[1]", "~~~", "```", "inside", "~~~", "after"} {
		code = append(code, f.Code(l))
	}
	if want := []bool{false, true, true, true, true, true, true, false}; !slices.Equal(code, want) {
		t.Fatalf("Code = %v, want %v", code, want)
	}
}

func TestLetterRuns(t *testing.T) {
	got := LetterRuns("Lumen's docs [1, 2]: x_y é-2")
	want := []string{"Lumen", "s", "docs", "1", "2", "x", "y", "é", "2"}
	if !slices.Equal(got, want) {
		t.Fatalf("LetterRuns = %q, want %q", got, want)
	}
	if j, w := JoinWords("Lumen's docs [1, 2]: x_y é-2", ' '), strings.ToLower(strings.Join(want, " ")); j != w {
		t.Fatalf("JoinWords = %q, LetterRuns joined %q", j, w)
	}
}

// tokensRef is Tokens as it was before its ASCII fast path: Tokens must
// give exactly what it gives.
// spansRef is Spans as a loop over s's runes: the reference Spans and
// tokensRef are checked against, independent of nextSpan.
func spansRef(s string) [][2]int {
	var out [][2]int
	start := -1
	for i, r := range s {
		w := IsWordRune(r)
		if w && start < 0 {
			start = i
		} else if !w && start >= 0 {
			out = append(out, [2]int{start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, [2]int{start, len(s)})
	}
	return out
}

func tokensRef(s string) []string {
	lower := strings.ToLower(s)
	var out []string
	sp := spansRef(lower)
	for i := 0; i < len(sp); i++ {
		w := lower[sp[i][0]:sp[i][1]]
		if i+1 < len(sp) {
			if words, ok := contraction(lower, sp[i], sp[i+1]); ok {
				out = append(out, words...)
				i++
				continue
			}
		}
		out = append(out, w)
	}
	return out
}

var tokenSeeds = []string{"", "won't", "Doesn't it’s", "a'b'c", "'", "x\xff'y", "n't", "日本's",
	"How do I parse JSON? Don't I'd We'll they've I'm", "WON'T Can't SHAN'T ain't n't a'' ''b x'y'z",
	"os.path.join(a, b) -> str_1 __init__ 3.11 99'S 9n't _n't", "İstanbul'S Straße ÀB'c", "x's'  ,.;: \t\n",
	"   ", "A", "ab'", "'ab", "can't't", "Hello, World! It's 2026.", "tab\tsep\nnew_line\x00nul\x7f"}

// TestTokensMatchRef: Tokens gives what the reference gives on the seeds,
// on the shared questions and on a page of the Python docs.
func TestTokensMatchRef(t *testing.T) {
	ins := append([]string{}, tokenSeeds...)
	for _, q := range texttest.Questions {
		ins = append(ins, q.Q)
	}
	ins = append(ins, docTexts(t)...)
	for _, s := range ins {
		if got, want := Tokens(s), tokensRef(s); !slices.Equal(got, want) || (got == nil) != (want == nil) {
			t.Errorf("Tokens(%q) = %q, the reference gives %q", s, got, want)
		}
	}
}

// docTexts cuts a page of the testdata Python docs into its lines, tags
// dropped: text like what ingest tokenises.
func docTexts(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile("../../testdata/pydocs/library/json.html")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		var sb strings.Builder
		in := false
		for _, r := range line {
			switch {
			case r == '<':
				in = true
			case r == '>':
				in = false
			case !in:
				sb.WriteRune(r)
			}
		}
		if l := strings.TrimSpace(sb.String()); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// BenchmarkTokens tokenises the lines of a Python docs page with Tokens
// and with the reference it replaced.
func BenchmarkTokens(b *testing.B) {
	texts := docTexts(b)
	for _, bc := range []struct {
		name string
		f    func(string) []string
	}{{"ref", tokensRef}, {"new", Tokens}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, s := range texts {
					_ = bc.f(s)
				}
			}
		})
	}
}

// allTermsRef is AllTerms as it was before it wrote the terms into Tokens'
// own slice: AllTerms must give exactly what it gives.
func allTermsRef(s string) []string {
	toks := Tokens(s)
	out := make([]string, 0, len(toks))
	for _, w := range toks {
		out = append(out, Term(w))
		if strings.IndexByte(w, '_') > 0 {
			for _, p := range strings.Split(w, "_") {
				if p != "" {
					out = append(out, Term(p))
				}
			}
		}
	}
	return out
}

func FuzzAllTerms(f *testing.F) {
	for _, s := range tokenSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := AllTerms(s), allTermsRef(s); !slices.Equal(got, want) || (got == nil) != (want == nil) {
			t.Fatalf("AllTerms(%q) = %q, the reference gives %q", s, got, want)
		}
	})
}

// TestAllTermsAllocations: the terms of a text that is not all ASCII cost
// its lower-case copy and one slice (before: a slice of its word spans,
// grown as it was read, and a second slice of terms: 9 allocations for
// this text).
func TestAllTermsAllocations(t *testing.T) {
	s := strings.Repeat("Python’s “zipfile” module reads ZIP archives — it can’t write them all. ", 8)
	if n := testing.AllocsPerRun(50, func() { AllTerms(s) }); n > 2 {
		t.Errorf("AllTerms: %.0f allocations, want at most 2", n)
	}
	for _, s := range tokenSeeds {
		if got, want := AllTerms(s), allTermsRef(s); !slices.Equal(got, want) || (got == nil) != (want == nil) {
			t.Errorf("AllTerms(%q) = %q, the reference gives %q", s, got, want)
		}
	}
}
