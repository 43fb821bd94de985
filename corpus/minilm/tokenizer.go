package minilm

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kgagent/kgagent"
	"golang.org/x/text/unicode/norm"
)

// Tokenizer is a BERT WordPiece tokenizer read from a HuggingFace
// tokenizer.json (BertNormalizer, BertPreTokenizer, WordPiece model,
// [CLS] … [SEP] template). It gives the token ids the HuggingFace tokenizers
// library gives for the same text: special tokens written in the text are
// kept whole, then the text is cleaned (control characters dropped, every
// whitespace a space), CJK ideographs are split off, accents stripped (NFD,
// marks dropped) and letters lowercased as configured, words split at
// whitespace and punctuation, and each word cut greedily into the longest
// vocabulary pieces ("##" marks a piece that continues a word; a word that
// cannot be cut is [UNK]).
//
// Character classes follow Go's Unicode tables, so a character assigned
// after the Unicode version of the Rust library may be classed differently
// (kept as [UNK] here where the library drops it as unassigned).
type Tokenizer struct {
	vocab    map[string]int32 // word-initial pieces
	cont     map[string]int32 // continuing pieces, without their prefix
	unk      int32
	cls, sep int32
	maxChars int
	special  []specialToken

	lowercase, stripAccents, cleanText, chinese bool
}

type specialToken struct {
	content string
	id      int32
}

// tokenizerFile is the part of tokenizer.json the Tokenizer reads.
type tokenizerFile struct {
	AddedTokens []struct {
		ID      int32  `json:"id"`
		Content string `json:"content"`
	} `json:"added_tokens"`
	Normalizer *struct {
		Type               string `json:"type"`
		CleanText          bool   `json:"clean_text"`
		HandleChineseChars bool   `json:"handle_chinese_chars"`
		StripAccents       *bool  `json:"strip_accents"`
		Lowercase          bool   `json:"lowercase"`
	} `json:"normalizer"`
	PreTokenizer *struct {
		Type string `json:"type"`
	} `json:"pre_tokenizer"`
	PostProcessor *struct {
		Type          string `json:"type"`
		SpecialTokens map[string]struct {
			IDs []int32 `json:"ids"`
		} `json:"special_tokens"`
		CLS []json.RawMessage `json:"cls"`
		SEP []json.RawMessage `json:"sep"`
	} `json:"post_processor"`
	Model struct {
		Type                    string           `json:"type"`
		UnkToken                string           `json:"unk_token"`
		ContinuingSubwordPrefix string           `json:"continuing_subword_prefix"`
		MaxInputCharsPerWord    int              `json:"max_input_chars_per_word"`
		Vocab                   map[string]int32 `json:"vocab"`
	} `json:"model"`
}

// ParseTokenizer reads a tokenizer.json of a BERT WordPiece tokenizer. Any
// other kind of tokenizer is an EINVALID error.
func ParseTokenizer(data []byte) (*Tokenizer, error) {
	var f tokenizerFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, kgagent.WrapError(kgagent.EINVALID, err, "tokenizer.json: not valid JSON")
	}
	bad := func(format string, args ...any) error {
		return kgagent.Errorf(kgagent.EINVALID, "tokenizer.json: "+format, args...)
	}
	if f.Model.Type != "WordPiece" {
		return nil, bad("model type %q, want WordPiece", f.Model.Type)
	}
	if f.Normalizer == nil || f.Normalizer.Type != "BertNormalizer" {
		return nil, bad("normalizer is not a BertNormalizer")
	}
	if f.PreTokenizer == nil || f.PreTokenizer.Type != "BertPreTokenizer" {
		return nil, bad("pre_tokenizer is not a BertPreTokenizer")
	}
	if len(f.Model.Vocab) == 0 {
		return nil, bad("empty vocabulary")
	}
	t := &Tokenizer{
		vocab:     make(map[string]int32, len(f.Model.Vocab)),
		cont:      make(map[string]int32, len(f.Model.Vocab)/4),
		maxChars:  f.Model.MaxInputCharsPerWord,
		cleanText: f.Normalizer.CleanText,
		chinese:   f.Normalizer.HandleChineseChars,
		lowercase: f.Normalizer.Lowercase,
	}
	if t.maxChars <= 0 {
		t.maxChars = 100
	}
	t.stripAccents = t.lowercase
	if f.Normalizer.StripAccents != nil {
		t.stripAccents = *f.Normalizer.StripAccents
	}
	prefix := f.Model.ContinuingSubwordPrefix
	if prefix == "" {
		prefix = "##"
	}
	for piece, id := range f.Model.Vocab {
		if id < 0 {
			return nil, bad("negative id %d for %q", id, piece)
		}
		if rest, ok := strings.CutPrefix(piece, prefix); ok && rest != "" {
			t.cont[rest] = id
		} else {
			t.vocab[piece] = id
		}
	}
	lookup := func(tok string) (int32, error) {
		for _, a := range f.AddedTokens {
			if a.Content == tok {
				return a.ID, nil
			}
		}
		if id, ok := f.Model.Vocab[tok]; ok {
			return id, nil
		}
		return 0, bad("no id for %s", tok)
	}
	var err error
	unk := f.Model.UnkToken
	if unk == "" {
		unk = "[UNK]"
	}
	if t.unk, err = lookup(unk); err != nil {
		return nil, err
	}
	if t.cls, err = lookup("[CLS]"); err != nil {
		return nil, err
	}
	if t.sep, err = lookup("[SEP]"); err != nil {
		return nil, err
	}
	if pp := f.PostProcessor; pp != nil {
		if s, ok := pp.SpecialTokens["[CLS]"]; ok && len(s.IDs) == 1 {
			t.cls = s.IDs[0]
		}
		if s, ok := pp.SpecialTokens["[SEP]"]; ok && len(s.IDs) == 1 {
			t.sep = s.IDs[0]
		}
	}
	for _, a := range f.AddedTokens {
		if a.Content != "" {
			t.special = append(t.special, specialToken{a.Content, a.ID})
		}
	}
	return t, nil
}

// VocabSize is one more than the largest token id.
func (t *Tokenizer) VocabSize() int {
	n := int32(0)
	for _, m := range []map[string]int32{t.vocab, t.cont} {
		for _, id := range m {
			n = max(n, id+1)
		}
	}
	for _, s := range t.special {
		n = max(n, s.id+1)
	}
	return int(n)
}

// Encode returns the token ids of text, [CLS] first and [SEP] last, cut to
// at most maxLen ids in all (maxLen < 2 means no limit). It appends to dst
// (which may be nil) and returns the extended slice.
func (t *Tokenizer) Encode(dst []int32, text string, maxLen int) []int32 {
	start := len(dst)
	dst = append(dst, t.cls)
	limit := -1
	if maxLen >= 2 {
		limit = start + maxLen - 1 // room for [SEP]
	}
	var buf strings.Builder
	for text != "" && (limit < 0 || len(dst) < limit) {
		i, sp := t.nextSpecial(text)
		dst = t.encodeSegment(dst, text[:i], limit, &buf)
		if sp == nil {
			break
		}
		if limit < 0 || len(dst) < limit {
			dst = append(dst, sp.id)
		}
		text = text[i+len(sp.content):]
	}
	return append(dst, t.sep)
}

// nextSpecial finds the first (then longest) special token written in text.
func (t *Tokenizer) nextSpecial(text string) (int, *specialToken) {
	best, bi := -1, (*specialToken)(nil)
	for k := range t.special {
		s := &t.special[k]
		i := strings.Index(text, s.content)
		if i < 0 {
			continue
		}
		if best < 0 || i < best || (i == best && len(s.content) > len(bi.content)) {
			best, bi = i, s
		}
	}
	if bi == nil {
		return len(text), nil
	}
	return best, bi
}

// encodeSegment normalises, splits and word-pieces one run of text with no
// special token in it.
func (t *Tokenizer) encodeSegment(dst []int32, seg string, limit int, buf *strings.Builder) []int32 {
	if seg == "" {
		return dst
	}
	s := t.normalize(seg, buf)
	// Pre-tokenise: words end at whitespace; punctuation is a word of its own.
	wordStart := -1
	for i, r := range s {
		switch {
		case unicode.IsSpace(r):
			if wordStart >= 0 {
				dst = t.wordPiece(dst, s[wordStart:i])
				wordStart = -1
			}
		case isBertPunct(r):
			if wordStart >= 0 {
				dst = t.wordPiece(dst, s[wordStart:i])
				wordStart = -1
			}
			dst = t.wordPiece(dst, s[i:i+utf8.RuneLen(r)])
		default:
			if wordStart < 0 {
				wordStart = i
			}
		}
		if limit >= 0 && len(dst) >= limit {
			return dst[:limit]
		}
	}
	if wordStart >= 0 {
		dst = t.wordPiece(dst, s[wordStart:])
	}
	if limit >= 0 && len(dst) > limit {
		dst = dst[:limit]
	}
	return dst
}

// normalize applies the BertNormalizer steps in the library's order: clean,
// pad CJK, strip accents, lowercase.
func (t *Tokenizer) normalize(s string, buf *strings.Builder) string {
	buf.Reset()
	ascii := true
	for _, r := range s {
		if r >= utf8.RuneSelf {
			ascii = false
		}
		if t.cleanText {
			if r == 0 || r == utf8.RuneError || isControl(r) {
				continue
			}
			if unicode.IsSpace(r) {
				r = ' '
			}
		}
		if t.chinese && isChinese(r) {
			buf.WriteByte(' ')
			buf.WriteRune(r)
			buf.WriteByte(' ')
			continue
		}
		buf.WriteRune(r)
	}
	out := buf.String()
	if t.stripAccents && !ascii {
		out = norm.NFD.String(out)
		buf.Reset()
		for _, r := range out {
			if !unicode.Is(unicode.Mn, r) {
				buf.WriteRune(r)
			}
		}
		out = buf.String()
	}
	if t.lowercase {
		buf.Reset()
		for _, r := range out {
			if r == 'İ' { // the one unconditional multi-rune lowercase mapping
				buf.WriteString("i\u0307")
				continue
			}
			buf.WriteRune(unicode.ToLower(r))
		}
		out = buf.String()
	}
	return out
}

// wordPiece appends the ids of one word: greedy longest-match-first pieces,
// or [UNK] for the whole word when some part matches no piece.
func (t *Tokenizer) wordPiece(dst []int32, word string) []int32 {
	if utf8.RuneCountInString(word) > t.maxChars {
		return append(dst, t.unk)
	}
	n := len(dst)
	start := 0
	for start < len(word) {
		end := len(word)
		found := false
		for start < end {
			var id int32
			var ok bool
			if start == 0 {
				id, ok = t.vocab[word[:end]]
			} else {
				id, ok = t.cont[word[start:end]]
			}
			if ok {
				dst = append(dst, id)
				found = true
				break
			}
			_, size := utf8.DecodeLastRuneInString(word[start:end])
			end -= size
		}
		if !found {
			return append(dst[:n], t.unk)
		}
		start = end
	}
	return dst
}

// isControl is the library's is_control: Unicode "other" categories (Cc, Cf,
// Co, Cs, unassigned) except tab, newline and carriage return.
func isControl(r rune) bool {
	switch r {
	case '\t', '\n', '\r':
		return false
	}
	if r < 0x20 || r == 0x7f {
		return true
	}
	if r < 0x80 {
		return false
	}
	return unicode.Is(unicode.C, r) || !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z)
}

// isBertPunct is ASCII punctuation (which includes symbols such as $ + < =
// > ^ ` |) or any Unicode punctuation.
func isBertPunct(r rune) bool {
	if r < 0x80 {
		return (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126)
	}
	return unicode.IsPunct(r)
}

// isChinese reports whether r is in a CJK Unified Ideographs block as BERT
// defines them.
func isChinese(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) ||
		(r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) ||
		(r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x2F800 && r <= 0x2FA1F)
}
