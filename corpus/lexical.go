package corpus

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"unicode"
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
	idx   map[uint64]int32 // feature hash -> index into keys/ws
	keys  []uint64         // feature hashes in order of first occurrence
	ws    []float64        // accumulated weight of each feature
	v     []float64        // buckets
	tok   []byte           // current token, lower case
	stem  []byte           // stem of the current token
	prev  []byte           // stem of the previous token
	grams []byte           // "<" + token + ">"
}

var lexPool = sync.Pool{New: func() any { return &lexScratch{idx: make(map[uint64]int32, 256)} }}

// vector embeds text into out (len Dim, all zero).
func (l *Lexical) vector(sc *lexScratch, text string, out []float32) {
	clear(sc.idx)
	sc.keys, sc.ws = sc.keys[:0], sc.ws[:0]
	title, body := "", text
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		title, body = text[:i], text[i+1:]
	}
	l.features(sc, title, l.cfg.TitleWeight)
	l.features(sc, body, 1)
	dim := l.cfg.Dim
	if cap(sc.v) < dim {
		sc.v = make([]float64, dim)
	}
	v := sc.v[:dim]
	clear(v)
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
	}
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	if norm == 0 {
		return
	}
	norm = math.Sqrt(norm)
	for i, x := range v {
		out[i] = float32(x / norm)
	}
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// fnvBytes continues the FNV-1a hash h over b.
func fnvBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

// FNV-1a states after the feature prefixes "w:", "p:" and "c:".
var (
	fnvW = fnv64("w:")
	fnvP = fnv64("p:")
	fnvC = fnv64("c:")
)

// add adds w to the feature with hash h.
func (sc *lexScratch) add(h uint64, w float64) {
	if i, ok := sc.idx[h]; ok {
		sc.ws[i] += w
		return
	}
	sc.idx[h] = int32(len(sc.keys))
	sc.keys = append(sc.keys, h)
	sc.ws = append(sc.ws, w)
}

// features adds text's weighted feature counts to sc: occurrences times
// weight, damped with 1+log above 1 when the vector is built. The terms are
// those of Terms and Stem, found without building strings.
func (l *Lexical) features(sc *lexScratch, text string, mult float64) {
	if text == "" {
		return
	}
	sc.prev = sc.prev[:0]
	if isASCII(text) {
		start := -1
		for i := 0; i <= len(text); i++ {
			word := false
			if i < len(text) {
				c := text[i]
				word = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
			}
			if word && start < 0 {
				start = i
			} else if !word && start >= 0 {
				t := sc.tok[:0]
				for j := start; j < i; j++ {
					c := text[j]
					if c >= 'A' && c <= 'Z' {
						c += 'a' - 'A'
					}
					t = append(t, c)
				}
				sc.tok = t
				l.term(sc, t, mult)
				start = -1
			}
		}
		return
	}
	lower := strings.ToLower(text)
	start := -1
	for i, r := range lower {
		word := unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_'
		if word && start < 0 {
			start = i
		} else if !word && start >= 0 {
			sc.tok = append(sc.tok[:0], lower[start:i]...)
			l.term(sc, sc.tok, mult)
			start = -1
		}
	}
	if start >= 0 {
		sc.tok = append(sc.tok[:0], lower[start:]...)
		l.term(sc, sc.tok, mult)
	}
}

// term adds the features of one lower-case token t.
func (l *Lexical) term(sc *lexScratch, t []byte, mult float64) {
	if len(t) > 64 || len(t) <= maxStopWordLen && IsStopWord(string(t)) {
		return
	}
	s := stemBytes(sc.stem[:0], t)
	sc.stem = s
	sc.add(fnvBytes(fnvW, s), l.cfg.WordWeight*mult)
	if len(sc.prev) > 0 {
		h := fnvBytes(fnvP, sc.prev)
		h = (h ^ ' ') * fnvPrime
		sc.add(fnvBytes(h, s), l.cfg.PairWeight*mult)
	}
	sc.prev, sc.stem = s, sc.prev
	g := append(sc.grams[:0], '<')
	g = append(g, t...)
	g = append(g, '>')
	sc.grams = g
	n := len(g) - 2
	if n < 1 {
		return
	}
	per := l.cfg.CharWeight * mult / float64(n)
	for i := 0; i+3 <= len(g); i++ {
		h := (fnvC ^ uint64(g[i])) * fnvPrime
		h = (h ^ uint64(g[i+1])) * fnvPrime
		h = (h ^ uint64(g[i+2])) * fnvPrime
		sc.add(h, per)
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func fnv64(s string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}
