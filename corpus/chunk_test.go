package corpus

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/kgagent/kgagent"
)

func testDoc() kgagent.Document {
	long := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 80)
	code := ""
	for i := range 60 {
		code += "    x" + strings.Repeat("y", i%7) + " = compute(" + strings.Repeat("a", 20) + ")\n"
	}
	return kgagent.Document{
		Collection: "c", URL: "https://ex.org/p", Title: "Page",
		Sections: []kgagent.Section{
			{Heading: "Page", Level: 0, Blocks: []kgagent.Block{{Kind: kgagent.BlockParagraph, Text: "Intro text."}}},
			{Heading: "Install", Level: 2, Anchor: "install", HeadingPath: []string{"Page", "Install"}, Blocks: []kgagent.Block{
				{Kind: kgagent.BlockParagraph, Text: long},
				{Kind: kgagent.BlockCode, Text: code},
				{Kind: kgagent.BlockTable, Text: "a | b\n1 | 2\n3 | 4"},
			}},
			{Heading: "Empty", Level: 2, Anchor: "empty", HeadingPath: []string{"Page", "Empty"}},
		},
	}
}

func TestChunkDocument(t *testing.T) {
	doc := testDoc()
	cfg := ChunkConfig{MaxChars: 400, Overlap: 60}
	chunks := ChunkDocument(doc, cfg)
	if len(chunks) < 5 {
		t.Fatalf("got %d chunks, want several", len(chunks))
	}
	codeLines := map[string]bool{}
	for _, l := range strings.Split(doc.Sections[1].Blocks[1].Text, "\n") {
		codeLines[l] = true
	}
	seen := map[string]bool{}
	emptyChunks := 0
	for i, c := range chunks {
		if c.Ordinal != i {
			t.Errorf("chunk %d ordinal %d", i, c.Ordinal)
		}
		if c.ID != ChunkID("c", doc.URL, i) || seen[c.ID] {
			t.Errorf("chunk %d: bad or duplicate id %q", i, c.ID)
		}
		seen[c.ID] = true
		if c.Hash != hashText(c.Text) {
			t.Errorf("chunk %d: hash mismatch", i)
		}
		if len(c.Text) > cfg.MaxChars {
			t.Errorf("chunk %d: %d bytes > %d", i, len(c.Text), cfg.MaxChars)
		}
		if c.DocURL != doc.URL || c.Title != "Page" || c.Collection != "c" {
			t.Errorf("chunk %d: wrong doc fields %+v", i, c)
		}
		if c.Anchor == "install" {
			if c.URL != doc.URL+"#install" || len(c.HeadingPath) != 2 {
				t.Errorf("chunk %d: url %q path %v", i, c.URL, c.HeadingPath)
			}
			// every line of a chunk that looks like code must be a whole code line
			for _, l := range strings.Split(c.Text, "\n") {
				if strings.Contains(l, "compute(") && !codeLines[l] {
					t.Errorf("chunk %d: code line cut: %q", i, l)
				}
				if strings.Contains(l, "|") && l != "a | b" && l != "1 | 2" && l != "3 | 4" {
					t.Errorf("chunk %d: table row cut: %q", i, l)
				}
			}
		} else if c.Anchor == "empty" {
			// a section with a heading and no text is findable by its heading
			emptyChunks++
			if c.Text != "Empty" || c.URL != doc.URL+"#empty" || len(c.HeadingPath) != 2 {
				t.Errorf("heading-only chunk %d: text %q url %q path %v", i, c.Text, c.URL, c.HeadingPath)
			}
		} else if c.URL != doc.URL {
			t.Errorf("lead chunk url %q", c.URL)
		}
	}
	if emptyChunks != 1 {
		t.Errorf("%d chunks for the heading-only section, want 1", emptyChunks)
	}
	// the long paragraph is split at sentences, with overlap
	if !strings.HasPrefix(chunks[2].Text, "The quick") {
		t.Errorf("second prose chunk should start at a sentence: %q", chunks[2].Text[:20])
	}
	if !strings.HasSuffix(chunks[1].Text, chunks[2].Text[:len("The quick brown fox jumps over the lazy dog.")]) {
		t.Errorf("no overlap between chunk 1 and 2")
	}
	// stable: same input, same chunks
	again := ChunkDocument(doc, cfg)
	for i := range chunks {
		if again[i].ID != chunks[i].ID || again[i].Text != chunks[i].Text {
			t.Fatalf("chunking is not deterministic at %d", i)
		}
	}
}

func TestChunkOversizedLineKeptWhole(t *testing.T) {
	line := strings.Repeat("z", 500)
	doc := kgagent.Document{URL: "u", Sections: []kgagent.Section{{Blocks: []kgagent.Block{{Kind: kgagent.BlockCode, Text: "a\n" + line + "\nb"}}}}}
	chunks := ChunkDocument(doc, ChunkConfig{MaxChars: 100})
	found := false
	for _, c := range chunks {
		for _, l := range strings.Split(c.Text, "\n") {
			if l == line {
				found = true
			} else if strings.HasPrefix(l, "z") {
				t.Fatalf("long code line cut: %d bytes", len(l))
			}
		}
	}
	if !found {
		t.Fatal("long code line missing")
	}
}

func TestTextDocument(t *testing.T) {
	text := "intro line\n\n# Title A\npara one\n\n## Sub B\n```\ncode # not heading\n```\nafter"
	doc := TextDocument("c", "embed:1", "E", text)
	tests := []struct {
		heading string
		path    []string
		kinds   []kgagent.BlockKind
	}{
		{"E", nil, []kgagent.BlockKind{kgagent.BlockParagraph}},
		{"Title A", []string{"Title A"}, []kgagent.BlockKind{kgagent.BlockParagraph}},
		{"Sub B", []string{"Title A", "Sub B"}, []kgagent.BlockKind{kgagent.BlockCode, kgagent.BlockParagraph}},
	}
	if len(doc.Sections) != len(tests) {
		t.Fatalf("got %d sections: %+v", len(doc.Sections), doc.Sections)
	}
	for i, tt := range tests {
		s := doc.Sections[i]
		if s.Heading != tt.heading || strings.Join(s.HeadingPath, "/") != strings.Join(tt.path, "/") || len(s.Blocks) != len(tt.kinds) {
			t.Errorf("section %d = %+v, want %+v", i, s, tt)
			continue
		}
		for j, k := range tt.kinds {
			if s.Blocks[j].Kind != k {
				t.Errorf("section %d block %d kind %s want %s", i, j, s.Blocks[j].Kind, k)
			}
		}
	}
	if doc.Sections[2].Anchor != "sub-b" {
		t.Errorf("anchor %q", doc.Sections[2].Anchor)
	}
}

func TestIndexTextHasTitleAndHeadings(t *testing.T) {
	c := kgagent.Chunk{Title: "zipfile — Work with ZIP archives", HeadingPath: []string{"zipfile — Work with ZIP archives", "ZipFile Objects"}, Text: "body"}
	got := IndexText(c)
	if !strings.HasPrefix(got, "zipfile — Work with ZIP archives › ZipFile Objects\n") || !strings.HasSuffix(got, "\nbody") {
		t.Fatalf("IndexText = %q", got)
	}
}

func FuzzChunkText(f *testing.F) {
	f.Add("# H\nsome text. More text!\n\n```\ncode\n```", 80)
	f.Add(strings.Repeat("word ", 300), 64)
	f.Add("a|b\n\xff\xfe\n## \n###### x", 0)
	f.Fuzz(func(t *testing.T, text string, max int) {
		cfg := ChunkConfig{MaxChars: max % 5000}
		chunks := ChunkText("c", "u", "t", text, cfg)
		n := cfg.norm().MaxChars
		for i, c := range chunks {
			if c.Ordinal != i || c.ID == "" || c.Hash != hashText(c.Text) {
				t.Fatalf("bad chunk %d %+v", i, c)
			}
			if strings.TrimSpace(c.Text) == "" {
				t.Fatalf("empty chunk %d", i)
			}
			if utf8.ValidString(text) && !utf8.ValidString(c.Text) {
				t.Fatalf("chunk %d cut inside a rune", i)
			}
			// only code lines may make a chunk oversized
			if len(c.Text) > n && !strings.Contains(text, "```") {
				t.Fatalf("chunk %d has %d bytes > %d", i, len(c.Text), n)
			}
		}
	})
}

// splitSentencesRef is the chunker's own sentence splitter before the
// chunker cut lines with internal/text's SentenceRule: the reference the
// one splitter must agree with, since it shapes the stored chunks.
func splitSentencesRef(s string, max int) []string {
	var sents []string
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c == '.' || c == '!' || c == '?') && i+1 < len(s) && s[i+1] == ' ' {
			j := i + 1
			for j < len(s) && s[j] == ' ' {
				j++
			}
			if j < len(s) {
				r, _ := utf8.DecodeRuneInString(s[j:])
				if unicode.IsUpper(r) || unicode.IsDigit(r) || r == '"' || r == '(' || r == '\'' {
					sents = append(sents, s[start:i+1])
					start = j
					i = j - 1
				}
			}
		}
	}
	sents = append(sents, s[start:])
	var out []string
	for _, sent := range sents {
		if len(sent) <= max {
			out = append(out, sent)
			continue
		}
		out = append(out, splitWords(sent, max)...)
	}
	return out
}

func FuzzSplitSentencesMatchesReference(f *testing.F) {
	f.Add("Set it. then go. Then stop. \"Quoted\" (paren) 'q' 3 items.  Über. éclair! `x` [1]? e.g. Foo", 40)
	f.Add("One.  Two.   three. Four!", 5)
	f.Add("a. \xff. B", 1)
	f.Fuzz(func(t *testing.T, s string, max int) {
		// the chunker cuts trimmed lines longer than max
		line := strings.TrimSpace(strings.ReplaceAll(s, "\n", " "))
		if line == "" {
			return
		}
		max = 1 + (max&0x7fffffff)%200
		got, want := splitSentences(line, max), splitSentencesRef(line, max)
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
			t.Fatalf("splitSentences(%q, %d) = %q, want %q", line, max, got, want)
		}
	})
}
