package minilm

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
)

// smallTokenizer builds a tokenizer.json with a tiny vocabulary.
func smallTokenizer(t testing.TB) *Tokenizer {
	t.Helper()
	vocab := map[string]int{"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}
	for _, w := range strings.Fields("the cafe un ##aff ##able , . ! ' s 中 文 i ##s run ##ning a b c ##b ##c ? $ σοφοσ") {
		vocab[w] = len(vocab)
	}
	doc := map[string]any{
		"added_tokens": []map[string]any{
			{"id": 0, "content": "[PAD]"}, {"id": 1, "content": "[UNK]"}, {"id": 2, "content": "[CLS]"},
			{"id": 3, "content": "[SEP]"}, {"id": 4, "content": "[MASK]"},
		},
		"normalizer":     map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": nil, "lowercase": true},
		"pre_tokenizer":  map[string]any{"type": "BertPreTokenizer"},
		"post_processor": map[string]any{"type": "TemplateProcessing", "special_tokens": map[string]any{"[CLS]": map[string]any{"ids": []int{2}}, "[SEP]": map[string]any{"ids": []int{3}}}},
		"model":          map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 12, "vocab": vocab},
	}
	b, _ := json.Marshal(doc)
	tok, err := ParseTokenizer(b)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestTokenize(t *testing.T) {
	tok := smallTokenizer(t)
	id := func(words string) []int32 {
		out := []int32{2}
		for _, w := range strings.Fields(words) {
			if v, ok := tok.vocab[w]; ok {
				out = append(out, v)
			} else if v, ok := tok.cont[strings.TrimPrefix(w, "##")]; ok {
				out = append(out, v)
			} else {
				out = append(out, tok.unk)
			}
		}
		return append(out, 3)
	}
	for _, tc := range []struct {
		in, want string
		max      int
	}{
		{"", "", 0},
		{"The Café", "the cafe", 0},            // lowercase, accents stripped
		{"unaffable!", "un ##aff ##able !", 0}, // longest-first word pieces, punctuation split
		{"unaffablex", "[UNK]", 0},             // one unknown piece makes the whole word unknown
		{"runningrunningx", "[UNK]", 0},        // longer than max_input_chars_per_word
		{"中文", "中 文", 0},                       // CJK ideographs split off
		{"a\tb\u00a0c\x00\u200b", "a b c", 0},  // whitespace, NUL and format characters
		{"it's", "[UNK] ' s", 0},               // "it" is not in the vocabulary
		{"a[SEP]b", "a [SEP] b", 0},            // special tokens in the text kept whole
		{"[sep]", "[UNK] [UNK] [UNK]", 0},      // only the exact spelling is special
		{"$a?", "$ a ?", 0},                    // ASCII symbols are punctuation to BERT
		{"ΣΟΦΟΣ", "σοφοσ", 0},                  // Greek lowercased letter by letter (no final sigma)
		{"a b c a b c", "a b c", 5},            // cut to 5 ids with [CLS] and [SEP]
		{"abc", "a ##b ##c", 0},                // continuing pieces
		{"abc abc", "a ##b", 4},                // a cut can fall inside a word
		{"İ", "i", 0},                          // dotted capital I: NFD, the dot dropped, lowercased
	} {
		got := tok.Encode(nil, tc.in, tc.max)
		want := id(tc.want)
		if tc.want == "a [SEP] b" {
			want = []int32{2, tok.vocab["a"], 3, tok.vocab["b"], 3}
		}
		if !slices.Equal(got, want) {
			t.Errorf("Encode(%q, %d) = %v, want %v (%s)", tc.in, tc.max, got, want, tc.want)
		}
	}
}

func TestParseTokenizerRejects(t *testing.T) {
	for _, doc := range []string{
		`not json`,
		`{"model":{"type":"BPE","vocab":{"a":0}}}`,
		`{"model":{"type":"WordPiece","vocab":{}},"normalizer":{"type":"BertNormalizer"},"pre_tokenizer":{"type":"BertPreTokenizer"}}`,
		`{"model":{"type":"WordPiece","vocab":{"a":0}},"normalizer":{"type":"NFC"},"pre_tokenizer":{"type":"BertPreTokenizer"}}`,
		`{"model":{"type":"WordPiece","vocab":{"a":0}},"normalizer":{"type":"BertNormalizer"},"pre_tokenizer":{"type":"BertPreTokenizer"}}`,
		`{"model":{"type":"WordPiece","vocab":{"a":-1,"[UNK]":1,"[CLS]":2,"[SEP]":3}},"normalizer":{"type":"BertNormalizer"},"pre_tokenizer":{"type":"BertPreTokenizer"}}`,
	} {
		if _, err := ParseTokenizer([]byte(doc)); kgagent.ErrorCode(err) != kgagent.EINVALID {
			t.Errorf("ParseTokenizer(%.60s) = %v, want INVALID_ARGUMENT", doc, err)
		}
	}
}

// FuzzTokenize: any text encodes to [CLS] … [SEP] within the limit, with
// only ids of the vocabulary, and never panics.
func FuzzTokenize(f *testing.F) {
	tok := smallTokenizer(f)
	for _, s := range []string{"", "The Café [SEP] 中文!", "unaffable", "\xff\xfe", "a\u0301\u0302", "İİ", strings.Repeat("ab ", 50)} {
		f.Add(s, 0)
		f.Add(s, 5)
	}
	n := int32(tok.VocabSize())
	f.Fuzz(func(t *testing.T, s string, maxLen int) {
		maxLen %= 600
		ids := tok.Encode(nil, s, maxLen)
		if len(ids) < 2 || ids[0] != tok.cls || ids[len(ids)-1] != tok.sep {
			t.Fatalf("Encode(%q) = %v: not [CLS] … [SEP]", s, ids)
		}
		if maxLen >= 2 && len(ids) > maxLen {
			t.Fatalf("Encode(%q, %d): %d ids", s, maxLen, len(ids))
		}
		for _, id := range ids {
			if id < 0 || id >= n {
				t.Fatalf("Encode(%q): id %d outside the vocabulary", s, id)
			}
		}
		if maxLen < 2 {
			// A cut keeps a prefix of the uncut ids.
			cut := tok.Encode(nil, s, 4)
			if len(ids) >= 4 && !slices.Equal(cut[:3], ids[:3]) {
				t.Fatalf("Encode(%q, 4) = %v is not a prefix of %v", s, cut, ids)
			}
		}
	})
}
