package corpus

import (
	"context"
	"slices"
	"strings"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// ChunkTerms is a chunk's keyword terms as text.FieldTerms gives them for
// its PageTitle (field 0), HeadingText (1) and Text (2): the distinct
// terms, and every occurrence in order. The lexical embedder takes them in
// the pass that embeds the chunk (IndexDocument), so an index that keeps a
// keyword index (TermsIndex) does not cut the text into words again.
type ChunkTerms struct {
	// Terms are the distinct terms, in the order they first occur.
	Terms []string
	// Occurs has an entry for every occurrence, in order: the term's index
	// in Terms shifted left by two, or'ed with its field.
	Occurs []uint32
}

// Each calls add with every occurrence, in order, as text.FieldTerms
// calls it.
func (ct *ChunkTerms) Each(add func(term string, field int)) {
	for _, o := range ct.Occurs {
		add(ct.Terms[o>>2], int(o&3))
	}
}

// TermsOf returns c's keyword terms (text.FieldTerms of its PageTitle,
// HeadingText and Text).
func TermsOf(c kgagent.Chunk) ChunkTerms {
	return termsOf(PageTitle(c), HeadingText(c), c.Text)
}

func termsOf(title, headings, body string) ChunkTerms {
	return termsInto(map[string]uint32{}, nil, title, headings, body)
}

// termsInto is termsOf with idx (empty) as its table of distinct terms
// and the occurrences appended to occurs.
func termsInto(idx map[string]uint32, occurs []uint32, title, headings, body string) ChunkTerms {
	ct := ChunkTerms{Occurs: occurs}
	text.FieldTerms(title, headings, body, func(t string, f int) {
		i, ok := idx[t]
		if !ok {
			i = uint32(len(ct.Terms))
			idx[t] = i
			ct.Terms = append(ct.Terms, t)
		}
		ct.Occurs = append(ct.Occurs, i<<2|uint32(f))
	})
	return ct
}

// TermScratch makes chunks' keyword terms one after another (TermsOf)
// with one table of the distinct terms, cleared between chunks, and one
// buffer of occurrences, instead of a new map and slice each: a search
// copy built from SQLite tokenises every chunk of its collection (the
// OpenJDK docs' 209k, at the end of kgagent ingest), and those maps were
// ~19% of the bytes it allocated. Its zero value is ready to use; one
// goroutine at a time.
type TermScratch struct {
	idx    map[string]uint32
	occurs []uint32
}

// TermsOf is TermsOf(c), the same terms, with Occurs valid only until
// the next call (Terms are the caller's).
func (s *TermScratch) TermsOf(c kgagent.Chunk) ChunkTerms {
	if s.idx == nil {
		s.idx = map[string]uint32{}
	}
	clear(s.idx)
	ct := termsInto(s.idx, s.occurs[:0], PageTitle(c), HeadingText(c), c.Text)
	s.occurs = ct.Occurs
	return ct
}

// TermsIndex is an Index that takes a document's chunks with their keyword
// terms (terms[i] belongs to chunks[i]) besides their vectors, so that it
// need not tokenise them again. ReplaceDocumentTerms is ReplaceDocument
// otherwise.
type TermsIndex interface {
	ReplaceDocumentTerms(ctx context.Context, collection, docURL string, chunks []kgagent.Chunk, vectors [][]float32, terms []ChunkTerms) error
}

// embedChunks embeds each chunk's IndexText (its Text when asIs), as Embed
// does, and returns each chunk's terms (ChunkTerms) from the same pass over
// its words. A chunk whose title or headings hold a line break (the
// embedder's title line would end inside them) has its terms cut apart
// (TermsOf); with asIs, the title's and headings' terms are cut apart, the
// Text's taken in the pass.
func (l *Lexical) embedChunks(ctx context.Context, chunks []kgagent.Chunk, asIs bool) ([][]float32, []ChunkTerms, error) {
	out := make([][]float32, len(chunks))
	terms := make([]ChunkTerms, len(chunks))
	dim := l.cfg.Dim
	backing := make([]float32, len(chunks)*dim)
	sc := lexPool.Get().(*lexScratch)
	defer func() {
		sc.terms = false
		lexPool.Put(sc)
	}()
	for i := range chunks {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		c := &chunks[i]
		title, heads := PageTitle(*c), HeadingText(*c)
		v := backing[i*dim : (i+1)*dim : (i+1)*dim]
		if asIs {
			// the Text is field 2 throughout, after the other two's terms
			sc.tt.reset()
			text.FieldTerms(title, heads, "", func(t string, f int) { sc.tt.addTerm(t, uint32(f)) })
			sc.terms, sc.first = true, 2
			l.vector(sc, c.Text, v)
			terms[i] = sc.tt.take()
			out[i] = v
			continue
		}
		if strings.IndexByte(title, '\n') >= 0 || strings.IndexByte(heads, '\n') >= 0 {
			sc.terms = false
			l.vector(sc, indexText(title, heads, c.Text), v)
			terms[i] = termsOf(title, heads, c.Text)
		} else {
			// IndexText's title line (not the whole text: the body is
			// c.Text); its words before len(title) are the title's, the
			// rest (after " › ") the headings'
			line := title
			if heads != "" {
				line = title + headSep + heads
			}
			sc.terms, sc.first, sc.split = true, 0, len(title)
			sc.tt.reset()
			l.lines(sc, line, c.Text, len(line)+1+len(c.Text), v)
			terms[i] = sc.tt.take()
		}
		out[i] = v
	}
	return out, terms, nil
}

// termTable collects a chunk's terms while the embedder reads its words:
// the distinct terms (their bytes in buf, keyed by the hash of the word
// feature) and the occurrences. The last word is held back (pend) until
// the next one shows whether the two are a contraction (text.Contraction),
// which Terms reads as the words it stands for.
type termTable struct {
	hashSlots         // the term hashes (keys), in order of first occurrence
	ends      []int32 // each term's end in buf
	buf       []byte
	occ       []uint32 // index << 2 | field

	pend      bool   // a word is held back
	pendTerm  bool   // it makes a term: pendStem, hashed pendHash
	pendField uint32 // its field
	pendHash  uint64
	pendStem  []byte
	pendTok   []byte // the word, lower case
	tmp       []byte
}

// reset empties the table for the next chunk.
func (tt *termTable) reset() {
	tt.keys, tt.ends, tt.buf, tt.occ = tt.keys[:0], tt.ends[:0], tt.buf[:0], tt.occ[:0]
	tt.pend = false
	tt.setTable(6)
}

func (tt *termTable) term(k int) []byte {
	start := int32(0)
	if k > 0 {
		start = tt.ends[k-1]
	}
	return tt.buf[start:tt.ends[k]]
}

// add records an occurrence of the term s (hash h) in field.
func (tt *termTable) add(s []byte, h uint64, field uint32) {
	mask := uint64(len(tt.slots) - 1)
	for i := tt.slot(h); ; i = (i + 1) & mask {
		j := tt.slots[i]
		if j == 0 {
			tt.keys = append(tt.keys, h)
			tt.buf = append(tt.buf, s...)
			tt.ends = append(tt.ends, int32(len(tt.buf)))
			tt.slots[i] = int32(len(tt.keys))
			tt.occ = append(tt.occ, uint32(len(tt.keys)-1)<<2|field)
			if 2*len(tt.keys) > len(tt.slots) {
				tt.grow()
			}
			return
		}
		if tt.keys[j-1] == h && string(tt.term(int(j-1))) == string(s) {
			tt.occ = append(tt.occ, uint32(j-1)<<2|field)
			return
		}
	}
}

// word records w, a word a contraction stands for, as Terms would: left
// out when it is a stop word or too long, else stemmed.
func (tt *termTable) word(w string, field uint32) {
	if len(w) > text.MaxTermLen || text.IsStopWord(w) {
		return
	}
	tt.addTerm(text.Stem(w), field)
}

// addTerm records an occurrence of the term s in field.
func (tt *termTable) addTerm(s string, field uint32) {
	h := uint64(fnvW)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	tt.tmp = append(tt.tmp[:0], s...)
	tt.add(tt.tmp, h, field)
}

// flush records the held-back word's term, if it makes one.
func (tt *termTable) flush() {
	if tt.pend && tt.pendTerm {
		tt.add(tt.pendStem, tt.pendHash, tt.pendField)
	}
	tt.pend = false
}

// take returns the chunk's terms: the distinct terms share one string.
func (tt *termTable) take() ChunkTerms {
	tt.flush()
	all := string(tt.buf)
	terms := make([]string, len(tt.ends))
	start := int32(0)
	for k, e := range tt.ends {
		terms[k] = all[start:e]
		start = e
	}
	return ChunkTerms{Terms: terms, Occurs: slices.Clone(tt.occ)}
}
