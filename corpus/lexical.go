package corpus

import (
	"context"
	"fmt"
	"math"
	"strings"
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

// Embed returns one vector per text. It only fails when ctx is done.
func (l *Lexical) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i] = l.Vector(t)
	}
	return out, nil
}

// Vector embeds one text.
func (l *Lexical) Vector(text string) []float32 {
	feats := map[string]float64{}
	title, body := "", text
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		title, body = text[:i], text[i+1:]
	}
	l.features(feats, title, l.cfg.TitleWeight)
	l.features(feats, body, 1)
	v := make([]float64, l.cfg.Dim)
	for f, w := range feats {
		h := fnv64(f)
		idx := int(h % uint64(l.cfg.Dim))
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
	out := make([]float32, l.cfg.Dim)
	if norm == 0 {
		return out
	}
	norm = math.Sqrt(norm)
	for i, x := range v {
		out[i] = float32(x / norm)
	}
	return out
}

// features adds text's weighted feature counts to feats: occurrences times
// weight, damped with 1+log above 1 when the vector is built.
func (l *Lexical) features(feats map[string]float64, text string, mult float64) {
	if text == "" {
		return
	}
	terms := Terms(text)
	prev := ""
	for _, t := range terms {
		s := Stem(t)
		feats["w:"+s] += l.cfg.WordWeight * mult
		if prev != "" {
			feats["p:"+prev+" "+s] += l.cfg.PairWeight * mult
		}
		prev = s
		g := "<" + t + ">"
		n := len(g) - 2
		if n < 1 {
			continue
		}
		per := l.cfg.CharWeight * mult / float64(n)
		for i := 0; i+3 <= len(g); i++ {
			feats["c:"+g[i:i+3]] += per
		}
	}
}

func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
