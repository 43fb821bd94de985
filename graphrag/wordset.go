package graphrag

import (
	"math/bits"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kgagent/kgagent/internal/text"
)

// wordSet is a question's words (termSet) numbered, so overlap can count
// the distinct ones a text uses without allocating, and the bytes they start
// with, so most of a text's words need no lookup at all.
type wordSet struct {
	idx      map[string]int
	first    [256]bool
	subjects map[string]hitEntry // entityHits of subjects (name and id), by id
	names    map[string]hitEntry // entityHits of objects (name only), by id
}

// newWordSet numbers the words of q; entities is how many distinct
// entities entityHits will likely see (its caches are sized for them).
func newWordSet(q map[string]bool, entities int) *wordSet {
	ws := new(wordSet)
	ws.reset(q, entities)
	return ws
}

// reset makes ws the word set of q, its caches sized for entities when it
// has none yet (else emptied, keeping their room).
func (ws *wordSet) reset(q map[string]bool, entities int) {
	if ws.idx == nil {
		ws.idx = make(map[string]int, len(q))
		ws.subjects, ws.names = make(map[string]hitEntry, entities), make(map[string]hitEntry, entities)
	} else {
		ws.clear()
	}
	for w := range q {
		if w != "" {
			ws.idx[w] = len(ws.idx)
			ws.first[w[0]] = true
		}
	}
}

// clear empties ws, keeping its maps' room.
func (ws *wordSet) clear() {
	clear(ws.idx)
	clear(ws.subjects)
	clear(ws.names)
	ws.first = [256]bool{}
}

// entityHits are the question words an entity's name, and with withID its
// id, use, cached per entity id (an entity is the subject or object of many
// candidate edges; the name is compared, not hashed). Only for questions of
// at most 64 words.
func (q *wordSet) entityHits(id, name string, withID bool) uint64 {
	cache := q.names
	if withID {
		cache = q.subjects
	}
	if e, ok := cache[id]; ok && e.name == name {
		return e.bits
	}
	var h hits
	q.scan(name, &h)
	if withID {
		q.scan(id, &h)
	}
	cache[id] = hitEntry{name, h.bits}
	return h.bits
}

// hitEntry is a cached entityHits result.
type hitEntry struct {
	name string
	bits uint64
}

// hits are the distinct words of a wordSet found so far.
type hits struct {
	bits uint64       // words 0..63
	more map[int]bool // words 64 and above
}

func (h *hits) add(i int) {
	if i < 64 {
		h.bits |= 1 << i
		return
	}
	if h.more == nil {
		h.more = map[int]bool{}
	}
	h.more[i] = true
}

func (h *hits) count() int { return bits.OnesCount64(h.bits) + len(h.more) }

// overlap is the share of the question's words found in the words of texts.
func overlap(q *wordSet, texts ...string) float64 {
	if len(q.idx) == 0 {
		return 0
	}
	var h hits
	for _, text := range texts {
		q.scan(text, &h)
	}
	return float64(h.count()) / float64(len(q.idx))
}

// scan adds the question words text uses to h: text is split into runs of
// letters, digits, '_' and '.', each lower-cased and trimmed of dots, found
// as is, as its singular, or by its dotted parts.
func (q *wordSet) scan(text string, h *hits) {
	start := -1
	upper := false // the run has upper-case or non-ASCII bytes
	for i := 0; i <= len(text); {
		word := false
		size := 1
		if i < len(text) {
			if c := text[i]; c < utf8.RuneSelf {
				word = 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '.'
				if 'A' <= c && c <= 'Z' {
					word, upper = true, true
				}
			} else {
				var r rune
				r, size = utf8.DecodeRuneInString(text[i:])
				word = unicode.IsLetter(r) || unicode.IsDigit(r)
				upper = upper || word
			}
		}
		if word {
			if start < 0 {
				start = i
			}
			i += size
			continue
		}
		if start >= 0 {
			if f := text[start:i]; q.mayHit(f, upper) {
				if upper {
					f = strings.ToLower(f)
				}
				q.word(strings.Trim(f, "."), h)
			}
			start, upper = -1, false
		}
		i += size
	}
}

// mayHit reports whether a run of text can contain a question word: whether
// it or one of its dotted parts starts with a byte a question word starts
// with. Runs with non-ASCII upper case are always looked at.
func (q *wordSet) mayHit(f string, upper bool) bool {
	at := true // at the start of the run or of a dotted part
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c == '.' {
			at = true
			continue
		}
		if at {
			if c >= utf8.RuneSelf && upper {
				return true
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if q.first[c] {
				return true
			}
			at = false
		}
	}
	return false
}

func (q *wordSet) word(f string, h *hits) {
	if f == "" {
		return
	}
	if !q.first[f[0]] {
		// No question word starts like f (nor like its singular).
	} else if i, ok := q.idx[f]; ok {
		h.add(i)
	} else if len(f) > 4 && f[len(f)-1] == 's' {
		if i, ok := q.idx[text.Singular(f)]; ok {
			h.add(i)
		}
	}
	if strings.IndexByte(f, '.') >= 0 {
		for rest := f; ; {
			p, tail, more := strings.Cut(rest, ".")
			if p == "" || !q.first[p[0]] {
				// not a question word
			} else if i, ok := q.idx[p]; ok {
				h.add(i)
			}
			if !more {
				break
			}
			rest = tail
		}
	}
}
