package corpus

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// termSeq is the terms of title, headings and body as text.FieldTerms
// gives them, one "field:term" a occurrence.
func termSeq(title, headings, body string) []string {
	var out []string
	text.FieldTerms(title, headings, body, func(t string, f int) {
		out = append(out, string(rune('0'+f))+":"+t)
	})
	return out
}

// seqOf is ct's occurrences as termSeq writes them.
func seqOf(ct *ChunkTerms) []string {
	var out []string
	ct.Each(func(t string, f int) {
		out = append(out, string(rune('0'+f))+":"+t)
	})
	return out
}

// checkEmbedChunks checks that embedChunks gives every chunk Embed's
// vector of its IndexText (its Text when asIs), to the bit, and
// text.FieldTerms' terms of its fields, each distinct term once in order of
// first occurrence.
func checkEmbedChunks(t *testing.T, chunks []kgagent.Chunk, asIs bool) {
	t.Helper()
	l := NewLexical(LexicalConfig{})
	vecs, terms, err := l.embedChunks(t.Context(), chunks, asIs)
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(chunks))
	for i, c := range chunks {
		texts[i] = IndexText(c)
		if asIs {
			texts[i] = c.Text
		}
	}
	want, err := l.Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range chunks {
		if !slices.Equal(vecs[i], want[i]) {
			t.Fatalf("chunk %d (%q): vector differs from Embed's", i, texts[i])
		}
		wantSeq := termSeq(PageTitle(c), HeadingText(c), c.Text)
		if got := seqOf(&terms[i]); !slices.Equal(got, wantSeq) {
			t.Fatalf("chunk %d (%q): terms\n%q\nwant\n%q", i, texts[i], got, wantSeq)
		}
		seen := map[string]bool{}
		for _, term := range terms[i].Terms {
			if seen[term] {
				t.Fatalf("chunk %d: term %q twice in Terms %q", i, term, terms[i].Terms)
			}
			seen[term] = true
		}
		if ref := TermsOf(c); !slices.Equal(ref.Terms, terms[i].Terms) || !slices.Equal(ref.Occurs, terms[i].Occurs) {
			t.Fatalf("chunk %d: terms %v, TermsOf %v", i, terms[i], ref)
		}
	}
}

// pieces random texts are made of: words, stop words, contractions with
// straight and curly apostrophes (and ones that are none), upper case,
// digits, snake_case, non-ASCII letters and case changes that change a
// letter's length, separators, line breaks, invalid UTF-8 and a word over
// text.MaxTermLen.
var pieces = []string{
	"configuration", "Encoders", "encoding", "the", "is", "not", "won't", "don't", "Doesn't", "it's", "can't",
	"shan't", "mustn't", "they're", "we've", "you'll", "I'd", "I'm", "rock'n'roll", "o'clock", "x't", "n't",
	"9's", "a_b's", "isn’t", "it’s", "won’t", "’s", "'", "’", "''", "' '", "Straße", "ÉCOLE", "İstanbul",
	"Ǆemal", "KELVIN\u212a", "naïve", "日本語", "ﬁle", "os.path", "max_body_size", "HTTP/2", "x86_64", "3.11",
	" ", "  ", ", ", ". ", "\n", "\t", " › ", "›", "\xff", "\xe2\x80", "(", ")", "-", "¶",
	strings.Repeat("a", text.MaxTermLen), strings.Repeat("b", text.MaxTermLen+1), "running", "parsed", "d", "m",
}

func randText(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(pieces[r.IntN(len(pieces))])
		if r.IntN(3) > 0 {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

func TestEmbedChunksMatchesEmbedAndTerms(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var chunks []kgagent.Chunk
	for i := range 3000 {
		c := kgagent.Chunk{Text: randText(r, r.IntN(60))}
		switch i % 6 {
		case 0: // page title that is the top heading plus a suffix
			h := randText(r, 1+r.IntN(4))
			c.Title, c.HeadingPath = h+" — Python", []string{h, randText(r, r.IntN(5)), randText(r, r.IntN(3))}
		case 1:
			c.Title, c.HeadingPath = randText(r, r.IntN(6)), []string{randText(r, r.IntN(6))}
		case 2: // no title, headings only
			c.HeadingPath = []string{"", randText(r, 1+r.IntN(4))}
		case 3: // a title with a line break (terms cut apart)
			c.Title = randText(r, 1+r.IntN(3)) + "\n" + randText(r, 1+r.IntN(3))
		case 4:
			c.Title = randText(r, r.IntN(5))
		}
		chunks = append(chunks, c)
	}
	checkEmbedChunks(t, chunks, false)
	checkEmbedChunks(t, chunks, true)
}

// TestEmbedChunksContractions pins the cases where the embedder's words
// and Terms' differ: a contraction is read as the words it stands for
// (won't: will, not) or as its first word (it's), across fields never.
func TestEmbedChunksContractions(t *testing.T) {
	chunks := []kgagent.Chunk{
		{Title: "Mustn't panic", HeadingPath: []string{"Mustn't panic", "They're parsing"}, Text: "Parsers can't fail; Python’s parser won't. rock'n'roll o'clock"},
		{Title: "ends with it'", HeadingPath: []string{"", "s heading"}, Text: "d'Artagnan l’homme 9's shan't"},
	}
	checkEmbedChunks(t, chunks, false)
	checkEmbedChunks(t, chunks, true)
	_, terms, _ := NewLexical(LexicalConfig{}).embedChunks(t.Context(), chunks[:1], false)
	got := strings.Join(seqOf(&terms[0]), " ")
	if want := "0:must 0:panic 1:pars 2:pars 2:fail 2:python 2:pars 2:rock 2:n 2:roll 2:o 2:clock"; got != want {
		t.Errorf("terms %q, want %q", got, want)
	}
}

// FuzzEmbedChunks checks embedChunks against Embed and text.FieldTerms on
// any title, heading and text.
func FuzzEmbedChunks(f *testing.F) {
	f.Add("json — JSON encoder", "json", "Encoders won't", "It's \xff the encoder’s naïve ﬁle")
	f.Add("", "", "a\nb", "x'y")
	f.Add("T\nU", "h", "", "it's")
	f.Fuzz(func(t *testing.T, title, h0, h1, body string) {
		c := []kgagent.Chunk{{Title: title, HeadingPath: []string{h0, h1}, Text: body}}
		checkEmbedChunks(t, c, false)
		checkEmbedChunks(t, c, true)
	})
}

// TestTermScratchMatchesTermsOf: a TermScratch used for one random chunk
// after another gives each TermsOf's terms and occurrences, and once warm
// allocates no map and no occurrence slice.
func TestTermScratchMatchesTermsOf(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 25))
	var s TermScratch
	for i := range 300 {
		c := kgagent.Chunk{Text: randText(r, r.IntN(60))}
		if i%3 > 0 {
			c.Title, c.HeadingPath = randText(r, r.IntN(5)), []string{randText(r, r.IntN(4)), randText(r, 2)}
		}
		got, want := s.TermsOf(c), TermsOf(c)
		if !slices.Equal(got.Terms, want.Terms) || !slices.Equal(got.Occurs, want.Occurs) {
			t.Fatalf("chunk %d: scratch terms %v, TermsOf %v", i, got, want)
		}
	}
	c := kgagent.Chunk{Title: "Encoders", HeadingPath: []string{"Encoders", "json", "encoding"}, Text: "the json encoding of a configuration, os.path and max_body_size"}
	s.TermsOf(c)
	scratch := testing.AllocsPerRun(50, func() { s.TermsOf(c) })
	fresh := testing.AllocsPerRun(50, func() { TermsOf(c) })
	if scratch > fresh-2 {
		t.Errorf("a warm scratch allocates %.0f times a chunk, TermsOf %.0f: want at least the map and the occurrences fewer", scratch, fresh)
	}
}
