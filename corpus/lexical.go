package corpus

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/kgagent/kgagent/internal/text"
)

// LexicalConfig configures the built-in lexical embedder. The zero value
// uses the defaults.
type LexicalConfig struct {
	Dim         int     // vector length (default 384)
	WordWeight  float64 // weight of a (stemmed) word (default 1)
	PairWeight  float64 // weight of two adjacent words (default 0.5)
	CharWeight  float64 // total weight of a word's character trigrams (default 0.6)
	TitleWeight float64 // multiplier for the first line of a multi-line text (default 2)
}

// Lexical is the built-in embedder: no network, no model. A text becomes a
// bag of hashed features (stemmed words, adjacent word pairs and character
// trigrams of words), each weighted with a sublinear term frequency, folded
// into Dim signed buckets and L2-normalised. It is deterministic, so vectors
// computed today match vectors computed after a restart. The first line of a
// multi-line text counts as its title (IndexText puts title and headings
// there) and weighs more.
type Lexical struct {
	cfg LexicalConfig
}

var _ Embedder = (*Lexical)(nil)

// NewLexical returns the lexical embedder for cfg.
func NewLexical(cfg LexicalConfig) *Lexical {
	if cfg.Dim <= 0 {
		cfg.Dim = 384
	}
	if cfg.WordWeight == 0 {
		cfg.WordWeight = 1
	}
	if cfg.PairWeight == 0 {
		cfg.PairWeight = 0.5
	}
	if cfg.CharWeight == 0 {
		cfg.CharWeight = 0.6
	}
	if cfg.TitleWeight == 0 {
		cfg.TitleWeight = 2
	}
	return &Lexical{cfg: cfg}
}

// Dimension returns the vector length.
func (l *Lexical) Dimension() int { return l.cfg.Dim }

// Name identifies the embedder and its settings.
func (l *Lexical) Name() string {
	c := l.cfg
	if c.WordWeight == 1 && c.PairWeight == 0.5 && c.CharWeight == 0.6 && c.TitleWeight == 2 {
		return fmt.Sprintf("lexical-v1-%d", c.Dim)
	}
	return fmt.Sprintf("lexical-v1-%d-w%g-p%g-c%g-t%g", c.Dim, c.WordWeight, c.PairWeight, c.CharWeight, c.TitleWeight)
}

// Embed returns one vector per text. It only fails when ctx is done. The
// vectors of one call share one backing array (each capped at its length).
func (l *Lexical) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	dim := l.cfg.Dim
	backing := make([]float32, len(texts)*dim)
	sc := lexPool.Get().(*lexScratch)
	defer lexPool.Put(sc)
	for i, t := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		v := backing[i*dim : (i+1)*dim : (i+1)*dim]
		l.vector(sc, t, v)
		out[i] = v
	}
	return out, nil
}

// Vector embeds one text.
func (l *Lexical) Vector(text string) []float32 {
	out := make([]float32, l.cfg.Dim)
	sc := lexPool.Get().(*lexScratch)
	l.vector(sc, text, out)
	lexPool.Put(sc)
	return out
}

// lexScratch holds the reusable buffers of one embedding. Features are
// keyed by their FNV-64 hash (the bucket and sign come from it anyway) and
// kept in order of first occurrence, so that the buckets are summed in a
// fixed order and a vector is reproducible to the bit.
type lexScratch struct {
	hashSlots           // the feature hashes (keys), in order of first occurrence
	ws        []float64 // accumulated weight of each feature
	v         []float64 // buckets
	mark      []uint64  // a bit per bucket some feature fell in
	tok       []byte    // current token, lower case
	stem      []byte    // stem of the current token
	// pair is the FNV-1a state after "p:" + the previous token's stem +
	// " ", the start of the next pair feature's hash; hasPrev says there
	// is a previous token in this text
	pair    uint64
	hasPrev bool
	grams   []byte // "<" + token + ">"

	// terms says the words' terms are collected in tt as well
	// (embedChunks): the title line's words are of field first; when that
	// is 0, one that starts before split is the title's (field 0), a later
	// one the headings' (1); the body's words are field 2
	terms bool
	first uint32
	split int
	tt    termTable
}

var lexPool = sync.Pool{New: func() any { return new(lexScratch) }}

// reset empties sc for a text of n bytes: the table starts with 2n slots
// or more, room for the n or so features prose gives (a word, a pair and
// its trigrams per word of ~7 bytes) without growing, while clearing it
// costs little next to reading the text.
func (sc *lexScratch) reset(n int) {
	sc.keys, sc.ws = sc.keys[:0], sc.ws[:0]
	bits := uint(6)
	for 1<<bits < 2*n && bits < 20 {
		bits++
	}
	sc.setTable(bits)
}

// vector embeds text into out (len Dim, all zero).
func (l *Lexical) vector(sc *lexScratch, text string, out []float32) {
	title, body := "", text
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		title, body = text[:i], text[i+1:]
	}
	l.lines(sc, title, body, len(text), out)
}

// lines is vector of a text of n bytes whose first line is title (no line
// break) and the rest body.
func (l *Lexical) lines(sc *lexScratch, title, body string, n int, out []float32) {
	sc.reset(n)
	l.features(sc, title, l.cfg.TitleWeight, sc.first)
	l.features(sc, body, 1, 2)
	dim := l.cfg.Dim
	if cap(sc.v) < dim {
		sc.v = make([]float64, dim)
	}
	v := sc.v[:dim]
	clear(v)
	// mark holds a bit per bucket a feature fell in: the others are +0,
	// which changes neither the norm nor out, so only marked buckets are
	// summed and divided, in the same (ascending) order as a full pass.
	nw := (dim + 63) / 64
	if cap(sc.mark) < nw {
		sc.mark = make([]uint64, nw)
	}
	mark := sc.mark[:nw]
	clear(mark)
	for i, h := range sc.keys {
		w := sc.ws[i]
		idx := int(h % uint64(dim))
		s := 1.0
		if h>>63 == 1 {
			s = -1
		}
		if w > 1 {
			w = 1 + math.Log(w) // sublinear term frequency
		}
		v[idx] += s * w
		mark[idx>>6] |= 1 << (idx & 63)
	}
	var norm float64
	for k, m := range mark {
		for ; m != 0; m &= m - 1 {
			x := v[k<<6+bits.TrailingZeros64(m)]
			norm += x * x
		}
	}
	if norm == 0 {
		return
	}
	norm = math.Sqrt(norm)
	for k, m := range mark {
		for ; m != 0; m &= m - 1 {
			i := k<<6 + bits.TrailingZeros64(m)
			out[i] = float32(v[i] / norm)
		}
	}
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// FNV-1a states after the feature prefixes "w:", "p:" and "c:".
var (
	fnvW = fnv64("w:")
	fnvP = fnv64("p:")
	fnvC = fnv64("c:")
)

// add adds w to the feature with hash h.
func (sc *lexScratch) add(h uint64, w float64) {
	mask := uint64(len(sc.slots) - 1)
	for i := sc.slot(h); ; i = (i + 1) & mask {
		j := sc.slots[i]
		if j == 0 {
			sc.keys = append(sc.keys, h)
			sc.ws = append(sc.ws, w)
			sc.slots[i] = int32(len(sc.keys))
			if 2*len(sc.keys) > len(sc.slots) {
				sc.grow()
			}
			return
		}
		if sc.keys[j-1] == h {
			sc.ws[j-1] += w
			return
		}
	}
}

// features adds text's weighted feature counts to sc: occurrences times
// weight, damped with 1+log above 1 when the vector is built. The terms are
// those of text.Stem over the words that are not stop words, found
// without building strings. When sc collects terms, text's words are those
// of field (0: the title line, whose words from sc.split on are field 1).
func (l *Lexical) features(sc *lexScratch, text string, mult float64, field uint32) {
	if text == "" {
		return
	}
	sc.hasPrev = false
	// what stands between two words: gap runes, the last an apostrophe
	// when apos (a contraction, when gap is 1); start, wapos: where the
	// current word starts and whether one apostrophe stands before it
	gap, apos := 0, false
	start, wapos := 0, false
	// Like text.Spans over strings.ToLower(text) (the words of text.Tokens
	// before contractions are written out: lexical-v1 vectors are stored and
	// predate that), which lower-cases with strings.ToLower (that is
	// unicode.ToLower rune by rune, invalid bytes becoming U+FFFD, which is
	// no word character) and splits at non-word runes.
	t := sc.tok[:0]
	for i := 0; i < len(text); {
		c := text[i]
		var sep bool // the separator is an apostrophe
		if c < utf8.RuneSelf {
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' {
				if len(t) == 0 {
					start, wapos = i, gap == 1 && apos
				}
				i++
				t = append(t, c)
				continue
			}
			i++
			sep = c == '\''
		} else {
			r, size := utf8.DecodeRuneInString(text[i:])
			r = unicode.ToLower(r)
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				if len(t) == 0 {
					start, wapos = i, gap == 1 && apos
				}
				i += size
				t = utf8.AppendRune(t, r)
				continue
			}
			i += size
			sep = r == '\u2019'
		}
		if len(t) > 0 {
			l.word(sc, t, mult, wapos, l.fieldAt(sc, field, start))
			t = t[:0]
			gap = 0
		}
		gap++
		apos = sep
	}
	if len(t) > 0 {
		l.word(sc, t, mult, wapos, l.fieldAt(sc, field, start))
	}
	if sc.terms {
		sc.tt.flush()
	}
	sc.tok = t
}

// fieldAt is the field of a word of a text of field that starts at start.
func (l *Lexical) fieldAt(sc *lexScratch, field uint32, start int) uint32 {
	if field == 0 && start >= sc.split {
		return 1
	}
	return field
}

// word adds the features of one lower-case word t and, when sc collects
// terms, its term: apos says that one apostrophe stands between it and
// the word before (a contraction, if text.Contraction reads them as one).
func (l *Lexical) word(sc *lexScratch, t []byte, mult float64, apos bool, field uint32) {
	if !sc.terms {
		l.term(sc, t, mult)
		return
	}
	tt := &sc.tt
	if tt.pend && apos {
		if w1, w2, k := text.Contraction(string(tt.pendTok), string(t)); k > 0 {
			// Terms reads the two as the words they stand for; k 1 is
			// the word before
			if k == 1 {
				tt.flush()
			} else {
				tt.word(w1, tt.pendField)
				tt.word(w2, tt.pendField)
				tt.pend = false
			}
			l.term(sc, t, mult)
			return
		}
	}
	tt.flush()
	h, ok := l.term(sc, t, mult)
	tt.pend, tt.pendTerm, tt.pendField = true, ok, field
	tt.pendTok = append(tt.pendTok[:0], t...)
	if ok {
		tt.pendStem, tt.pendHash = append(tt.pendStem[:0], sc.stem...), h
	}
}

// term adds the features of one lower-case token t. When t makes a term
// (not a stop word, not too long: Terms keeps it) it returns true and the
// hash of its word feature, its stem left in sc.stem.
func (l *Lexical) term(sc *lexScratch, t []byte, mult float64) (uint64, bool) {
	if len(t) > text.MaxTermLen || text.IsStopBytes(t) {
		return 0, false
	}
	s := text.StemBytes(sc.stem[:0], t)
	sc.stem = s
	// the word's hash, the pair's (previous stem, this one) and this
	// stem's pair prefix for the next pair, in one pass over s
	hw, hp, hn := uint64(fnvW), sc.pair, uint64(fnvP)
	for _, c := range s {
		hw = (hw ^ uint64(c)) * fnvPrime
		hp = (hp ^ uint64(c)) * fnvPrime
		hn = (hn ^ uint64(c)) * fnvPrime
	}
	sc.add(hw, l.cfg.WordWeight*mult)
	if sc.hasPrev {
		sc.add(hp, l.cfg.PairWeight*mult)
	}
	sc.pair, sc.hasPrev = (hn^' ')*fnvPrime, true
	g := append(sc.grams[:0], '<')
	g = append(g, t...)
	g = append(g, '>')
	sc.grams = g
	n := len(g) - 2
	if n < 1 {
		return hw, true
	}
	per := l.cfg.CharWeight * mult / float64(n)
	for i := 0; i+3 <= len(g); i++ {
		h := (fnvC ^ uint64(g[i])) * fnvPrime
		h = (h ^ uint64(g[i+1])) * fnvPrime
		h = (h ^ uint64(g[i+2])) * fnvPrime
		sc.add(h, per)
	}
	return hw, true
}

func fnv64(s string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}
