package corpus

import "sync"

// A text memo keeps what search's rules derive from one chunk's text alone
// — its digest entries (DigestEntries), the keys of its sentences and of
// its entries' descriptions (DemoteDigests), other packages' shape rules
// (Hit.TextFlag: the knowledge layer's link-heavy rule) — so that a chunk
// found by many searches is read once rather than once a search. An index
// that keeps the chunks of recent hits in memory (corpus/sqlite's hit
// cache) gives every hit of that chunk the same memo (Hit.Memo); a hit
// without one reads its text each time, as before. Nothing in it depends
// on a query: a memo belongs to a chunk's text, and a hit whose text is
// not the one its memo was made for reads its own text (TextMemo.For).

// TextMemo is the derived values of one chunk's text, each computed on
// first use. Safe for concurrent use; the zero value is not usable (see
// NewTextMemo).
type TextMemo struct {
	text string

	mu         sync.Mutex
	digest     []DigestEntry // digestEntries(text, 1), once digestRead
	digestRead bool
	keys       []uint64 // sentenceKeys(text), once keysRead
	keysRead   bool
	descKeys   []uint64 // the keys of digest's descriptions' first sentences, once descRead
	descRead   bool
	flags      map[any]bool // TextFlag's rules by key
}

// NewTextMemo returns an empty memo for a chunk's text.
func NewTextMemo(text string) *TextMemo { return &TextMemo{text: text} }

// For reports whether m is the memo of text: the same text it was made
// for (the same string, as the hit cache shares it, compares at once).
func (m *TextMemo) For(text string) bool { return m != nil && m.text == text }

// String is empty: a memo is no part of what a hit says, and hits printed
// for a comparison (fmt's %v) print the same with and without one.
func (m *TextMemo) String() string { return "" }

// digestOf is digestEntries(m.text, 1), read once.
func (m *TextMemo) digestOf() []DigestEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.digestRead {
		m.digest, m.digestRead = digestEntries(m.text, 1), true
	}
	return m.digest
}

// sentenceKeys is every key sentenceKeys(m.text) adds, in order, read
// once.
func (m *TextMemo) sentenceKeys() []uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.keysRead {
		m.keys, m.keysRead = appendSentenceKeys(nil, m.text), true
	}
	return m.keys
}

// descriptionKeys is descriptionKeys(es), es being m's digest entries,
// read once.
func (m *TextMemo) descriptionKeys(es []DigestEntry) []uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.descRead {
		m.descKeys, m.descRead = descriptionKeys(es), true
	}
	return m.descKeys
}

// flag is rule(h) for the rule known by key, read once.
func (m *TextMemo) flag(key any, h *Hit, rule func(*Hit) bool) bool {
	m.mu.Lock()
	v, ok := m.flags[key]
	m.mu.Unlock()
	if ok {
		return v
	}
	// The rule runs outside the lock (it may read the memo's digest); two
	// first callers both run it, with the same answer.
	v = rule(h)
	m.mu.Lock()
	if m.flags == nil {
		m.flags = map[any]bool{}
	}
	m.flags[key] = v
	m.mu.Unlock()
	return v
}

// memo is h's memo when it is the memo of h's text, else nil.
func (h *Hit) memo() *TextMemo {
	if h.Memo.For(h.Text) {
		return h.Memo
	}
	return nil
}

// TextFlag is rule(h), a yes-or-no rule on h's text alone (nothing else of
// the hit, nothing of the query), known by key (a comparable value of the
// caller's own type): read once per chunk when h has a memo, else once per
// call.
func (h *Hit) TextFlag(key any, rule func(*Hit) bool) bool {
	if m := h.memo(); m != nil {
		return m.flag(key, h, rule)
	}
	return rule(h)
}

// appendSentenceKeys appends the keys sentenceKeys(text) adds, in order.
func appendSentenceKeys(keys []uint64, text string) []uint64 {
	sentenceKeys(text, func(k uint64) { keys = append(keys, k) })
	return keys
}

// descriptionKeys is the keys of the first sentence of each entry's
// description, in order.
func descriptionKeys(es []DigestEntry) []uint64 {
	var keys []uint64
	for _, d := range es {
		keys = appendSentenceKeys(keys, firstSentence(d.Description))
	}
	return keys
}
