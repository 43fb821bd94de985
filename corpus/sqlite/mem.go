package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/internal/text"
)

// memColl is the in-memory search copy of one collection: vectors and an
// inverted index over slots. A deleted row's slot is a tombstone (doc "")
// until the collection is reloaded; document frequencies count tombstones
// until then, which barely moves BM25's IDF.
type memColl struct {
	dim  int
	rids []int64
	// The vectors, int8 scalar-quantised, held once: row by row in vecs
	// (dim per slot) while the collection is small, column by column in
	// cols (cols[j].at(slot), only the non-zero values held: spCol) from
	// colMin slots on (byCol), where dense search scans columns. The
	// other is nil.
	vecs  []int8
	cols  []spCol
	byCol bool
	// arena holds the columns' arrays of a copy read from its snapshot,
	// each sized exactly (colArena); nil once a write moved them out
	// (ownArena) and for a copy built from SQLite.
	arena *colArena
	// postings is the arena of the posting lists of a big copy read from
	// its snapshot (postingArena), nil for others.
	postings *colArena
	qtmp     []int8    // appendVec's scratch row
	scales   []float32 // per slot: the vector times scale approximates the float vector
	// pos is each live row's slot, by row id, once rids stopped
	// ascending (a write added a row below the last one: SQLite reuses a
	// deleted top rowid); nil before, when slotOf binary-searches rids.
	// A copy loaded in rowid order has none: the map was ~4 MB of the
	// OpenJDK API docs' 209k rows.
	pos map[int64]int32
	// page ids: every slot's document as a small integer, so keyword
	// search can rank whole pages from the chunk postings; -1 marks a
	// deleted slot. A slot's doc URL is pageURL[docID[slot]] (doc): no
	// string per slot, which the collector would visit at every
	// collection (200k of them in the OpenJDK API docs' copies).
	docID    []int32
	docIdx   map[string]int32
	pageURL  []string  // doc URL by page id
	byURL    []int32   // page ids in the order of their URLs (pagesUnder)
	docLen   []float32 // per page: summed BM25F length of its live chunks
	docLive  []int32   // per page: live chunks
	livePage int
	all      fieldIndex // BM25F over title, headings and body
	head     fieldIndex // BM25 over title and headings only
	bytes    int64      // roughly the memory its rows hold (postingCost): counted as they are added, estimated for a copy read from its snapshot

	live    int
	dead    int
	weights [3]float32 // title, headings, body

	// urlsLater: appendDoc appends to byURL unsorted, for a load that
	// adds every page before the copy is searched and then sorts once
	// (sortPages); inserting each page in its place moves half of byURL,
	// quadratic in the pages.
	urlsLater bool

	hits hitCache // chunks of recent hits, by slot

	// spans is each page's first and last slot (slotsUnder), computed
	// by the searches that need it, which share the copy.
	spans atomic.Pointer[pageSpans]

	sem map[string]*semSet // semantic vectors by model (semantic.go)

	// version is the collection's version in SQLite that this copy
	// reflects; snapVersion that of its snapshot file (see snapshot.go).
	version     int64
	snapVersion atomic.Int64
}

// hitCacheSize is how many loaded chunks a collection keeps in memory, and
// hitCacheBytes how many bytes they may take in all (chunkBytes): 16,384
// OpenJDK API docs chunks are ~25 MB, which a long-running serve would
// otherwise hold for good (~9 MB after 1,000 searches and answers).
const (
	hitCacheSize  = 16384
	hitCacheBytes = 8 << 20
)

// hitCache keeps the chunks recent searches returned, keyed by slot, so a
// hit found again needs no database read (reading the rows of 50 hits cost
// more than ranking them), each with the memo of its text
// (corpus.TextMemo), so the rules that read only a hit's text (the digest
// rules, the link-heavy rule) read a cached chunk's text once. Slots are
// never reused within a memColl: a replaced or re-inserted row gets a new
// slot and the old one is a tombstone no ranking returns, so an entry can
// never be stale; writes need not touch it. When full (hitCacheSize
// entries or hitCacheBytes), random entries make room.
type hitCache struct {
	mu    sync.Mutex
	m     map[int32]cachedHit
	bytes int // chunkBytes of the chunks in m
}

// cachedHit is a hit cache entry: a chunk and the memo of its text.
type cachedHit struct {
	ch   kgagent.Chunk
	memo *corpus.TextMemo
}

func (c *hitCache) get(slot int32) (kgagent.Chunk, *corpus.TextMemo, bool) {
	c.mu.Lock()
	e, ok := c.m[slot]
	c.mu.Unlock()
	return e.ch, e.memo, ok
}

func (c *hitCache) put(slot int32, ch kgagent.Chunk, memo *corpus.TextMemo) {
	n := chunkBytes(&ch)
	if n > hitCacheBytes/16 {
		return // one chunk would take a sixteenth of the cache
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[int32]cachedHit{}
	}
	if old, ok := c.m[slot]; ok {
		c.bytes -= chunkBytes(&old.ch)
		delete(c.m, slot)
	}
	for k, old := range c.m {
		if len(c.m) < hitCacheSize && c.bytes+n <= hitCacheBytes {
			break
		}
		c.bytes -= chunkBytes(&old.ch)
		delete(c.m, k)
	}
	c.m[slot] = cachedHit{ch, memo}
	c.bytes += n
}

// chunkBytes is about the memory a cached chunk holds: its strings, a
// fixed share for its struct and map entry, and one for the memo of its
// text (about 100 bytes, and a sentence key of 8 bytes for every 16 bytes
// of text at most: prose has one every 40-100 bytes).
func chunkBytes(ch *kgagent.Chunk) int {
	n := 256 + len(ch.ID) + len(ch.Collection) + len(ch.DocURL) + len(ch.URL) + len(ch.Title) + len(ch.Anchor) + len(ch.Text) + len(ch.Hash)
	n += 128 + len(ch.Text)/16
	for _, h := range ch.HeadingPath {
		n += 16 + len(h)
	}
	return n
}

// fieldIndex is an inverted index over slots. A posting is 4 bytes: its
// slot and a code for its term frequency (the distinct frequencies are few:
// field weights times small counts), see posting.
type fieldIndex struct {
	// terms and their posting lists: lists[i] is term i's (terms.term(i))
	terms    termTable
	lists    [][]posting
	lens     []float32 // weighted length per slot
	totalLen float64

	tfs    []float32           // term frequency by code (at most wideCode codes)
	tfCode map[uint32]uint8    // code by the frequency's bits, for add
	wide   map[wideKey]float32 // the frequency of a posting coded wideCode
}

// posting is one slot in a term's list: the slot in the high 24 bits, the
// code of its term frequency (fieldIndex.tfs) in the low 8 (8 bytes as two
// 32-bit fields before: the lists were a third of the search copy).
type posting uint32

// wideCode marks a posting whose frequency did not get a code (the codes
// ran out); fieldIndex.wide holds it.
const wideCode = 0xff

// wideKey is a wideCode posting: its term's number and its slot.
type wideKey struct {
	term, slot int32
}

// maxSlots is how many slots a search copy may hold (a posting's slot is 24
// bits): a collection with more rows is not searched in memory. A variable
// so that a test can lower it.
var maxSlots = 1 << 24

func (p posting) slot() int32 { return int32(p >> 8) }

// list is term t's posting list, nil when the index lacks it.
func (f *fieldIndex) list(t string) []posting {
	i, ok := f.terms.find(t)
	if !ok {
		return nil
	}
	return f.lists[i]
}

// tf is the term frequency of p, a posting in term number term's list.
func (f *fieldIndex) tf(term int32, p posting) float32 {
	if c := p & 0xff; c != wideCode {
		return f.tfs[c]
	}
	return f.wide[wideKey{term, p.slot()}]
}

// code is the code of term frequency tf, assigning the next free one;
// wideCode when they have run out.
func (f *fieldIndex) code(tf float32) uint8 {
	bits := math.Float32bits(tf)
	if c, ok := f.tfCode[bits]; ok {
		return c
	}
	if len(f.tfs) >= wideCode {
		return wideCode
	}
	if f.tfCode == nil {
		f.tfCode = map[uint32]uint8{}
	}
	c := uint8(len(f.tfs))
	f.tfs = append(f.tfs, tf)
	f.tfCode[bits] = c
	return c
}

// push appends (slot, tf) to term number term's list (slot above every
// slot in it).
func (f *fieldIndex) push(term, slot int32, tf float32) {
	c := f.code(tf)
	if c == wideCode {
		if f.wide == nil {
			f.wide = map[wideKey]float32{}
		}
		f.wide[wideKey{term, slot}] = tf
	}
	f.lists[term] = append(f.lists[term], posting(uint32(slot)<<8|uint32(c)))
}

// add adds slot's terms (distinct) with their frequencies tf. A term new
// to the index is copied into its term table (its number follows the
// order of terms).
// It returns the bytes of the new terms.
func (f *fieldIndex) add(slot int32, terms []string, tf []float32, length float32) int64 {
	var grown int64
	for k, t := range terms {
		n := tf[k]
		i, ok := f.terms.find(t)
		if !ok {
			i = f.terms.add(t)
			f.lists = append(f.lists, nil)
			grown += termCost + int64(len(t))
		}
		f.push(i, slot, n)
	}
	f.lens = append(f.lens, length)
	f.totalLen += float64(length)
	return grown
}

// What a search copy holds, in bytes, roughly (memColl.bytes): a posting
// (with its list's growth), a term (its list and term table entry besides
// its letters), a row (its ids, lengths, page, position and vector bitmap
// besides the vector's non-zero values). The Python docs' copy (29,883
// rows, 1.03M postings, 40k terms, 4.0M non-zero values) was 21.8 MB of
// heap and estimated 20.5 when a term was a map entry; a term takes ~40
// bytes less now, and termCost was left as it was (Keep's bound errs on
// the safe side).
const (
	postingCost = 8
	termCost    = 100
	rowCost     = 80
)

func (f *fieldIndex) compact() {
	for i, ps := range f.lists {
		if cap(ps) > len(ps) {
			f.lists[i] = append(make([]posting, 0, len(ps)), ps...)
		}
	}
	f.terms.shrink()
	if cap(f.lists) > len(f.lists) {
		f.lists = append(make([][]posting, 0, len(f.lists)), f.lists...)
	}
}

func newMemColl(dim int, w [3]float32) *memColl {
	return &memColl{dim: dim, weights: w, docIdx: map[string]int32{}}
}

func (m *memColl) add(rid int64, doc string, c kgagent.Chunk, v []float32) {
	ct := chunkTermsOf(&c, m.weights)
	m.addWith(rid, doc, &ct, v)
}

// addWith adds a row from its chunk's terms (chunkTermsOf) and its vector.
func (m *memColl) addWith(rid int64, doc string, ct *chunkTerms, v []float32) {
	if len(v) != m.dim || doc == "" || len(m.rids) >= maxSlots {
		return
	}
	m.appendVec(v)
	m.bytes += nonZero(m.qtmp)
	m.addTerms(rid, doc, ct)
}

// addQ8With adds a row from its chunk's terms and its vector as the
// insert quantised it (appendQ8Bytes: dim+4 bytes), as addWith would from
// the float vector.
func (m *memColl) addQ8With(rid int64, doc string, ct *chunkTerms, q8 []byte) {
	if len(q8) != m.dim+4 || doc == "" || len(m.rids) >= maxSlots {
		return
	}
	m.appendQ8(q8)
	m.bytes += nonZero(q8[4:])
	m.addTerms(rid, doc, ct)
}

// nonZero counts the non-zero values of a quantised row: what its column
// form holds (memColl.bytes).
func nonZero[T int8 | byte](row []T) int64 {
	n := int64(0)
	for _, x := range row {
		if x != 0 {
			n++
		}
	}
	return n
}

// appendVec quantises v and appends it.
func (m *memColl) appendVec(v []float32) {
	var scale float32
	m.qtmp, scale = quantize(m.qtmp[:0], v)
	m.appendRow(m.qtmp, scale)
}

// appendQ8 appends a stored vector (appendQ8Bytes) as it is.
func (m *memColl) appendQ8(b []byte) {
	m.appendRow(unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(b[4:]))), len(b)-4),
		math.Float32frombits(binary.LittleEndian.Uint32(b)))
}

// reserve sizes the vectors for count slots: by column from the start when
// count reaches colMin, so that a big collection never holds two copies.
func (m *memColl) reserve(count int) {
	if len(m.scales) != 0 || m.dim == 0 {
		return
	}
	m.scales = make([]float32, 0, count)
	if count < colMin {
		m.vecs = make([]int8, 0, count*m.dim)
		return
	}
	m.byCol, m.vecs = true, nil
	m.cols = make([]spCol, m.dim)
	for j := range m.cols {
		m.cols[j] = newSpCol(count, count/2)
	}
}

// appendRow appends one quantised vector (len dim) and its scale; the
// rows move to columns when the collection reaches colMin slots.
func (m *memColl) appendRow(row []int8, scale float32) {
	m.ownArena()
	m.scales = append(m.scales, scale)
	if m.byCol {
		for j, x := range row {
			m.cols[j].push(x)
		}
		return
	}
	m.vecs = append(m.vecs, row...)
	if len(m.scales) < colMin {
		return
	}
	n := len(m.scales)
	m.cols = make([]spCol, m.dim)
	for j := range m.cols {
		nz := 0
		for s := range n {
			if m.vecs[s*m.dim+j] != 0 {
				nz++
			}
		}
		c := newSpCol(n+n/4, nz+nz/4)
		for s := range n {
			c.push(m.vecs[s*m.dim+j])
		}
		m.cols[j] = c
	}
	m.byCol, m.vecs = true, nil
}

// ownArena moves the columns out of their arena before a write grows
// them: each array would otherwise leave it when it next grows, at
// different writes, and keep the whole arena alive beside its copies until
// the last one did. The slot arrays there (slotArrays) leave it at the
// write's appends, which every one of them gets.
func (m *memColl) ownArena() {
	if m.arena == nil {
		return
	}
	for j := range m.cols {
		m.cols[j].own()
	}
	m.arena = nil
}

// rowOf copies slot's vector into dst (len dim) and returns it.
func (m *memColl) rowOf(slot int, dst []int8) []int8 {
	if !m.byCol {
		return append(dst[:0], m.vecs[slot*m.dim:(slot+1)*m.dim]...)
	}
	dst = dst[:m.dim]
	for j := range m.cols {
		dst[j] = m.cols[j].at(slot)
	}
	return dst
}

// quantize appends v as int8 with one scale (max |v|/127) and returns it.
func quantize(dst []int8, v []float32) ([]int8, float32) {
	// Go's float min and max order NaNs and signed zeros, which made this
	// ~25 ns a value (a 384-dimension vector a chunk, every chunk and
	// entity entry an ingest writes); with every value and 1/scale finite
	// (all but degenerate vectors) plain comparisons give the same bytes.
	// the largest magnitude, by its bits: for floats that are not NaN
	// they order as the magnitudes do, and NaNs and infinities are above
	// the largest finite float's
	var mb uint32
	for _, f := range v {
		mb = max(mb, math.Float32bits(f)&^(1<<31))
	}
	if mb > math.Float32bits(math.MaxFloat32) {
		return quantizeSlow(dst, v)
	}
	mx := math.Float32frombits(mb)
	n := len(dst)
	dst = slices.Grow(dst, len(v))[:n+len(v)]
	out := dst[n:]
	if mx == 0 {
		clear(out)
		return dst, 0
	}
	scale := mx / 127
	inv := 1 / scale
	if inv > math.MaxFloat32 { // a subnormal scale
		return quantizeSlow(dst[:n], v)
	}
	for i, f := range v {
		// rounded half away from zero (0.5 with x's sign: -0 rounds to 0
		// either way), truncated, then clamped (|x| is at most ~127.5)
		x := f * inv
		x += math.Float32frombits(math.Float32bits(x)&(1<<31) | math.Float32bits(0.5))
		r := int32(x)
		r = min(127, max(-127, r))
		out[i] = int8(r)
	}
	return dst, scale
}

// quantizeSlow is quantize for a vector holding a NaN or an infinity, or
// whose scale is subnormal: Go's min and max decide those.
func quantizeSlow(dst []int8, v []float32) ([]int8, float32) {
	var mx float32
	for _, f := range v {
		mx = max(mx, f, -f)
	}
	if mx == 0 {
		for range v {
			dst = append(dst, 0)
		}
		return dst, 0
	}
	scale := mx / 127
	inv := 1 / scale
	for _, f := range v {
		x := f * inv
		if x >= 0 {
			x += 0.5
		} else {
			x -= 0.5
		}
		dst = append(dst, int8(max(-127, min(127, x))))
	}
	return dst, scale
}

// chunkTerms is what a chunk adds to the keyword index: its distinct
// terms and their weighted frequencies and its weighted length over all
// fields (terms, tf, length), and over title and headings only (hterms,
// htf, hlength), terms in order of first occurrence.
type chunkTerms struct {
	terms, hterms   []string
	tf, htf         []float32
	length, hlength float32
}

// chunkTermsOf tokenises c's fields under the field weights w (title,
// headings, body). A write computes it before it queues, outside the
// index's locks (see ReplaceDocument).
func chunkTermsOf(c *kgagent.Chunk, w [3]float32) chunkTerms {
	t := corpus.TermsOf(*c)
	return chunkTermsFrom(&t, w)
}

// chunkTermsWith is chunkTermsOf with s's tables (chunkTermsFrom keeps no
// occurrence).
func chunkTermsWith(s *corpus.TermScratch, c *kgagent.Chunk, w [3]float32) chunkTerms {
	t := s.TermsOf(*c)
	return chunkTermsFrom(&t, w)
}

// chunkTermsFrom is chunkTermsOf from the chunk's terms as its embedder
// took them (text.FieldTerms' occurrences, in order): each term's weights
// are added in the order of its occurrences, so the sums are those of
// adding them up as FieldTerms gives them, to the bit.
func chunkTermsFrom(t *corpus.ChunkTerms, w [3]float32) chunkTerms {
	n := len(t.Terms)
	sums := make([]float32, 2*n) // tf, then the title's and headings' counts
	ct := chunkTerms{terms: t.Terms, tf: sums[:n:n]}
	nh := 0
	for _, o := range t.Occurs {
		i, f := o>>2, o&3
		sums[i] += w[f]
		ct.length += w[f]
		if f < 2 {
			if sums[n+int(i)] == 0 {
				nh++
			}
			sums[n+int(i)]++
			ct.hlength++
		}
	}
	if nh == 0 {
		return ct
	}
	ct.hterms, ct.htf = make([]string, 0, nh), sums[n:n]
	for i, term := range t.Terms {
		if h := sums[n+i]; h != 0 {
			ct.hterms = append(ct.hterms, term)
			ct.htf = append(ct.htf, h) // overwrites only counts already read
		}
	}
	return ct
}

// addTerms adds a row whose vector was already appended, from its terms.
func (m *memColl) addTerms(rid int64, doc string, ct *chunkTerms) {
	m.ownArena()
	slot := m.appendRid(rid)
	d := m.appendDoc(doc)
	m.growSem()
	length := ct.length
	m.bytes += m.all.add(slot, ct.terms, ct.tf, length) + m.head.add(slot, ct.hterms, ct.htf, ct.hlength) +
		postingCost*int64(len(ct.terms)+len(ct.hterms)) + rowCost + int64(m.dim/8)
	m.live++
	if m.docLive[d] == 0 {
		m.livePage++
	}
	m.docLive[d]++
	m.docLen[d] += length
}

// appendRid gives row rid the next slot and returns it; a row id below
// the last one makes pos.
func (m *memColl) appendRid(rid int64) int32 {
	slot := int32(len(m.rids))
	if m.pos == nil && slot > 0 && rid < m.rids[slot-1] {
		m.pos = make(map[int64]int32, m.live+1)
		for s, r := range m.rids {
			if m.docID[s] >= 0 {
				m.pos[r] = int32(s)
			}
		}
	}
	m.rids = append(m.rids, rid)
	if m.pos != nil {
		m.pos[rid] = slot
	}
	return slot
}

// slotOf is the live slot holding row rid.
func (m *memColl) slotOf(rid int64) (int32, bool) {
	if m.pos != nil {
		s, ok := m.pos[rid]
		return s, ok
	}
	// rids ascend, not strictly: a reused rowid follows its tombstone
	i, _ := slices.BinarySearch(m.rids, rid)
	for ; i < len(m.rids) && m.rids[i] == rid; i++ {
		if m.docID[i] >= 0 {
			return int32(i), true
		}
	}
	return 0, false
}

// appendDoc gives the next slot the document doc (a page id, the page's
// first slot adding it) and returns its page id.
func (m *memColl) appendDoc(doc string) int32 {
	d, ok := m.docIdx[doc]
	if !ok {
		d = int32(len(m.docLen))
		m.docIdx[doc] = d
		m.pageURL = append(m.pageURL, doc)
		if m.urlsLater {
			m.byURL = append(m.byURL, d)
		} else {
			i, _ := slices.BinarySearchFunc(m.byURL, doc, func(p int32, u string) int { return strings.Compare(m.pageURL[p], u) })
			m.byURL = slices.Insert(m.byURL, i, d)
		}
		m.docLen = append(m.docLen, 0)
		m.docLive = append(m.docLive, 0)
	}
	m.docID = append(m.docID, d)
	return d
}

// sortPages sets byURL from pageURL.
func (m *memColl) sortPages() {
	m.byURL = make([]int32, len(m.pageURL))
	for i := range m.byURL {
		m.byURL[i] = int32(i)
	}
	slices.SortFunc(m.byURL, func(a, b int32) int {
		if c := strings.Compare(m.pageURL[a], m.pageURL[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
}

// pagesUnder sets under[d] (len(pageURL) long) to 1 for each page d whose
// URL starts with prefix and to 2 for every other: a binary search in
// byURL for the first URL not below prefix, then the pages from there that
// start with it. Testing every page's URL (strings.HasPrefix on 9,892
// OpenJDK pages, whose URLs share their first 40-odd bytes) cost each
// one-page search of followDigests ~0.2 ms, and grew with the pages.
func (m *memColl) pagesUnder(prefix string, under []uint8) {
	for i := range under {
		under[i] = 2
	}
	i, _ := slices.BinarySearchFunc(m.byURL, prefix, func(p int32, u string) int { return strings.Compare(m.pageURL[p], u) })
	for ; i < len(m.byURL) && strings.HasPrefix(m.pageURL[m.byURL[i]], prefix); i++ {
		under[m.byURL[i]] = 1
	}
}

// doc is slot's doc URL, "" for a deleted slot.
func (m *memColl) doc(slot int) string {
	d := m.docID[slot]
	if d < 0 {
		return ""
	}
	return m.pageURL[d]
}

func (m *memColl) remove(rids []int64) {
	for _, rid := range rids {
		slot, ok := m.slotOf(rid)
		if !ok {
			continue
		}
		if m.pos != nil {
			delete(m.pos, rid)
		}
		m.removeSem(slot)
		if d := m.docID[slot]; d >= 0 {
			m.docLen[d] -= m.all.lens[slot]
			if m.docLive[d]--; m.docLive[d] == 0 {
				m.livePage--
			}
			m.docID[slot] = -1
		}
		m.all.totalLen -= float64(m.all.lens[slot])
		m.head.totalLen -= float64(m.head.lens[slot])
		m.live--
		m.dead++
	}
}

// compact trims the posting lists to their length; big collections then
// hand the growth slack back to the OS.
func (m *memColl) compact() {
	m.all.compact()
	m.head.compact()
	for j := range m.cols {
		m.cols[j].trim()
	}
	if len(m.rids) >= 50000 {
		debug.FreeOSMemory()
	}
}

// needsCompaction says whether tombstones make up a fifth of the slots.
// A copy that reached maxSlots needs it too: add leaves out rows past it,
// and the reload refuses the collection (see collection) if it is still
// too big.
func (m *memColl) needsCompaction() bool {
	return (m.dead > 1000 && m.dead*5 > len(m.rids)) || len(m.rids) >= maxSlots
}

// tooManyChunks is the error for a collection of n chunks, at least
// maxSlots: more than a search copy holds.
func tooManyChunks(collection string, n int) error {
	return kgagent.Errorf(kgagent.ETOOLARGE, "corpus index: collection %q has at least %d chunks, more than the embedded index searches (%d)", collection, n, maxSlots-1)
}

// collection returns the search copy of a collection, loading it on first
// use; nil for a collection that does not exist.
func (x *Index) collection(ctx context.Context, collection string) (*memColl, error) {
	return x.loadCollection(ctx, collection, true)
}

// loadCollection is collection; without build, a copy that is not held
// and has no current snapshot is left unbuilt (nil).
func (x *Index) loadCollection(ctx context.Context, collection string, build bool) (*memColl, error) {
	x.cacheMu.RLock()
	m := x.cache[collection]
	x.cacheMu.RUnlock()
	if m != nil {
		return m, nil
	}
	// Load under writeMu so no write slips between the load and caching it.
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	x.cacheMu.RLock()
	m = x.cache[collection]
	x.cacheMu.RUnlock()
	if m != nil {
		return m, nil
	}
	var dim int
	var version int64
	err := x.db.QueryRowContext(ctx, `SELECT dim, version FROM collections WHERE name = ?`, collection).Scan(&dim, &version)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, dbErr(err, "load collection")
	}
	if m := x.readSnapshot(collection, version, dim); m != nil {
		if err := x.loadSem(ctx, collection, m); err != nil {
			return nil, err
		}
		x.snapHits.Add(1)
		x.cacheMu.Lock()
		x.cache[collection] = m
		x.cacheMu.Unlock()
		return m, nil
	}
	if !build {
		return nil, nil
	}
	x.sqlLoads.Add(1)
	var count int
	if err := x.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(n), 0) FROM docs WHERE collection = ?`, collection).Scan(&count); err != nil {
		return nil, dbErr(err, "load collection")
	}
	if count >= maxSlots {
		return nil, tooManyChunks(collection, count)
	}
	m = newMemColl(dim, x.weights())
	// size everything once: a 200k-chunk collection would otherwise copy
	// its vectors several times while growing
	m.rids = make([]int64, 0, count)
	m.docID = make([]int32, 0, count)
	m.all.lens = make([]float32, 0, count)
	m.head.lens = make([]float32, 0, count)
	m.reserve(count)
	m.urlsLater = true // sorted once below, before the copy is searched
	tmp := make([]float32, 0, dim)
	q8 := make([]byte, 0, dim+4) // a sparse vector unpacked
	// The rows are read (rowLoader.read), tokenised (on other cores) and added
	// here in the order SQLite gives them: the same copy as adding each
	// as it is read, in about half the time on two cores (tokenising was
	// ~45% of a load: the OpenJDK docs' copies at the end of an ingest).
	if err := x.eachRow(ctx, collection, "load collection", m.weights, func(r *loadRow) error {
		if len(m.rids) >= maxSlots { // docs counted fewer (a damaged file)
			return tooManyChunks(collection, len(m.rids)+1)
		}
		switch len(r.blob) {
		case dim + 4:
			m.appendQ8(r.blob)
		case 4 * dim: // written by a version before migrateQ8
			tmp = appendVec(tmp[:0], r.blob)
			m.appendVec(tmp)
		default:
			var ok bool
			if q8, ok = unpackQ8(q8[:0], r.blob, dim); !ok {
				return nil
			}
			m.appendQ8(q8)
		}
		m.addTerms(r.rid, r.doc, &r.ct)
		return nil
	}); err != nil {
		return nil, err
	}
	m.urlsLater = false
	m.sortPages()
	m.compact()
	if err := x.loadSem(ctx, collection, m); err != nil {
		return nil, err
	}
	m.version = version
	m.snapVersion.Store(-1)
	x.cacheMu.Lock()
	x.cache[collection] = m
	x.cacheMu.Unlock()
	x.snapshotLater(collection, m)
	return m, nil
}

// eachRow reads collection's rows from SQLite (ORDER BY d.lo) and calls fn
// on each in that order, its terms set (with weights w) by rowLoader's
// tokenisers on other cores; fn's error ends the read. A copy built from
// SQLite (loadCollection) and a snapshot streamed from SQLite
// (streamSnapshot) both read through it, so that they see the same rows in
// the same order and the streamed snapshot equals the copy's. what names
// the step in a database error.
func (x *Index) eachRow(ctx context.Context, collection, what string, w [3]float32, fn func(r *loadRow) error) error {
	rows, err := x.db.QueryContext(ctx, `SELECT k.rid, d.doc_url, COALESCE(k.title, d.title), k.headings, k.body, k.vec FROM `+collRows+` ORDER BY d.lo`, collection)
	if err != nil {
		return dbErr(err, what)
	}
	l := newRowLoader(w)
	go l.read(x, collection, rows)
	defer l.stop()
	for b := range l.ordered {
		<-b.done
		for i := range b.rows {
			if err := fn(&b.rows[i]); err != nil {
				return err
			}
		}
	}
	return l.wait()
}

// loadBatchRows is how many rows a collection's load reads into one batch
// for the tokenisers.
const loadBatchRows = 256

// loadRow is a row of a collection's load: its id, document, stored
// vector and terms.
type loadRow struct {
	rid  int64
	doc  string
	blob []byte
	c    kgagent.Chunk
	ct   chunkTerms
}

// loadBatch is a batch of rows read; done is closed once their terms are
// set.
type loadBatch struct {
	rows []loadRow
	done chan struct{}
}

// rowLoader reads a collection's rows from SQLite (read) and tokenises
// them on tokenisers goroutines; ordered gives the batches in the order
// read, each to wait for (done) before its rows are used.
type rowLoader struct {
	w       [3]float32
	ordered chan *loadBatch
	work    chan *loadBatch
	quit    chan struct{} // closed by stop: read ends early
	stopped sync.Once
	ended   chan struct{} // closed when read and the tokenisers have ended
	err     error         // read's error, once ended
}

func newRowLoader(w [3]float32) *rowLoader {
	n := max(1, runtime.GOMAXPROCS(0))
	l := &rowLoader{w: w, ordered: make(chan *loadBatch, 2*n+1), work: make(chan *loadBatch, 2*n),
		quit: make(chan struct{}), ended: make(chan struct{})}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var s corpus.TermScratch
			for b := range l.work {
				for i := range b.rows {
					b.rows[i].ct = chunkTermsWith(&s, &b.rows[i].c, l.w)
					b.rows[i].c = kgagent.Chunk{} // the text is not kept
				}
				close(b.done)
			}
		}()
	}
	go func() {
		wg.Wait()
		close(l.ended)
	}()
	return l
}

// read scans rows (closing them) into batches for the tokenisers and
// ordered, then closes both. A chunk whose body does not decode is left
// out (logged, counted): one corrupt row must not make the whole
// collection unsearchable.
func (l *rowLoader) read(x *Index, collection string, rows *sql.Rows) {
	defer close(l.work)
	defer close(l.ordered)
	defer rows.Close()
	corrupt := 0
	defer func() { corruptDone(corrupt, "load collection "+collection) }()
	docs := map[string]string{} // intern doc URLs
	var lastRid int64
	// A batch's rows are made whole at once and each read in its place:
	// appended one by one (and each scanned into a row of its own first),
	// they were a fifth of the bytes a load from SQLite allocated.
	batch := func() *loadBatch {
		return &loadBatch{rows: make([]loadRow, 0, loadBatchRows), done: make(chan struct{})}
	}
	b := batch()
	send := func() bool {
		for _, ch := range []chan *loadBatch{l.ordered, l.work} {
			select {
			case ch <- b:
			case <-l.quit:
				return false
			}
		}
		b = batch()
		return true
	}
	for rows.Next() {
		// r is the batch's next row, kept (the length grows) only at
		// the end of the loop
		at := len(b.rows)
		b.rows = append(b.rows, loadRow{})
		r := &b.rows[at]
		b.rows = b.rows[:at]
		var hp string
		body := bodyCol{text: &r.c.Text}
		if err := rows.Scan(&r.rid, &r.c.DocURL, &r.c.Title, &hp, &body, &r.blob); err != nil {
			l.err = dbErr(err, "load collection")
			return
		}
		if r.rid <= lastRid { // collRows reads in row id order
			l.err = kgagent.Errorf(kgagent.EUNAVAILABLE, "corpus index: load collection %s: row %d read after row %d", collection, r.rid, lastRid)
			return
		}
		lastRid = r.rid
		if body.err != nil {
			corrupt = x.corruptBody(corrupt, "load collection "+collection, body.err, "rid", r.rid, "doc_url", r.c.DocURL)
			continue
		}
		_ = json.Unmarshal([]byte(hp), &r.c.HeadingPath)
		if d, ok := docs[r.c.DocURL]; ok {
			r.c.DocURL = d
		} else {
			docs[r.c.DocURL] = r.c.DocURL
		}
		if r.c.DocURL == "" {
			continue
		}
		r.doc = r.c.DocURL
		b.rows = b.rows[:at+1]
		if len(b.rows) == loadBatchRows && !send() {
			return
		}
	}
	if err := rows.Err(); err != nil {
		l.err = dbErr(err, "load collection")
		return
	}
	if len(b.rows) > 0 {
		send()
	}
}

// stop ends the read early (the load failed) and waits for it and the
// tokenisers to end.
func (l *rowLoader) stop() {
	l.stopped.Do(func() { close(l.quit) })
	<-l.ended
}

// wait is stop after every batch was taken: the read's error, if any.
func (l *rowLoader) wait() error {
	l.stop()
	return l.err
}

// weights are the field weights of the index's keyword search (title,
// headings, body).
func (x *Index) weights() [3]float32 {
	return [3]float32{float32(x.cfg.TitleWeight), float32(x.cfg.HeadingWeight), float32(x.cfg.BodyWeight)}
}

// Keep makes the index hold collection's search copy from now on and keep
// it current with every write, as a search would, also when the collection
// does not exist yet: its first write then starts the copy empty, so the
// copy is never read back from SQLite. kgagent ingest keeps the
// collections it writes, whose snapshots it then writes at its end
// (Snapshot) without building the copies again: each chunk's terms are
// taken as the write queues, on the writer's goroutine, instead of from
// SQLite at the end (Python docs: ~1.6 CPU-s of reading and re-tokenising
// every chunk, all after the crawl). The copy costs its memory for as long
// as it is held (Release drops it and ends the keeping).
//
// The copies kept this way are held to maxBytes together (0: no bound),
// counting what writes added to them (memColl.bytes, roughly their heap):
// a write that takes them past it drops its collection's copy and stops
// keeping it, so that a big crawl does not hold a big copy all along (the
// OpenJDK docs' two copies are ~110 MB); Snapshot then builds that copy
// from SQLite at the end, as without Keep. A collection that exists is
// loaded now, and a copy past the bound already is dropped at once (an
// ingest run again on the OpenJDK docs would otherwise hold their copies,
// read from the snapshot, through its whole crawl). Under a bound, a copy
// is loaded only from a current snapshot: one Keep had to build from
// SQLite might be past the bound, and dropped, and built again at the end
// after the crawl's writes (the OpenJDK docs: twice, ~15 s each on a
// loaded 2-core box); it is left to
// the end, built once, as without Keep.
func (x *Index) Keep(ctx context.Context, collection string, maxBytes int64) error {
	x.cacheMu.Lock()
	if x.keep == nil {
		x.keep = map[string]bool{}
	}
	x.keep[collection] = true
	x.keepMax = maxBytes
	x.cacheMu.Unlock()
	if _, err := x.loadCollection(ctx, collection, maxBytes == 0); err != nil {
		return err
	}
	x.cacheMu.Lock()
	defer x.cacheMu.Unlock()
	if x.keep[collection] && maxBytes > 0 && x.keptBytes() > maxBytes {
		delete(x.cache, collection)
		delete(x.keep, collection)
	}
	if x.keepFrom == nil {
		x.keepFrom = map[string]int64{}
	}
	x.keepFrom[collection] = 0
	if m := x.cache[collection]; m != nil {
		x.keepFrom[collection] = m.bytes
	}
	return nil
}

// Crawled tells the index how far the ingest that keeps its copies (Keep)
// has come: done of the total pages it knows of so far (the crawler's
// pages with an outcome, of those it queued). When the kept copies, grown
// at their rate so far to all those pages, would pass Keep's bound, they
// are dropped and no longer kept now, as a write past the bound would drop
// them later: a crawl that will not fit never grows the copies it will
// drop (the OpenJDK docs queue ~10,000 pages early; held until the bound,
// their copies cost the ingest ~25 CPU-s of collection work near the
// memory limit and ~20 MB of peak RSS). What a copy held when Keep loaded
// it is not projected, only what the crawl's writes added since: an ingest
// run again over unchanged pages keeps the copies it read back (the Python
// docs' two, ~27 MB under a 50 MiB bound, were dropped 100 pages into such
// a run, to be built from SQLite at its end if a page changed). total only
// ever grows in a crawl, so the projection errs short: a site that reveals
// its pages late is caught by the bound itself. Before crawledMin pages are done the rate
// is not yet telling (a site's first pages are its indexes, and the index
// may have written pages not yet done) and nothing is decided. It reports
// whether it dropped copies.
func (x *Index) Crawled(done, total int64) bool {
	if done < crawledMin || total <= done {
		return false
	}
	x.cacheMu.RLock()
	over := false
	if x.keepMax > 0 && len(x.keep) > 0 {
		var from, grown int64
		for c := range x.keep {
			if m := x.cache[c]; m != nil {
				from += min(x.keepFrom[c], m.bytes)
				grown += max(m.bytes-x.keepFrom[c], 0)
			}
		}
		over = float64(from)+float64(grown)*float64(total)/float64(done) > float64(x.keepMax)
	}
	x.cacheMu.RUnlock()
	if !over {
		return false
	}
	x.cacheMu.Lock()
	defer x.cacheMu.Unlock()
	dropped := len(x.keep) > 0
	for c := range x.keep {
		delete(x.cache, c)
		delete(x.keep, c)
	}
	return dropped
}

// crawledMin is how many pages an ingest has done before Crawled projects
// the kept copies' size from them. At 100 the Python docs' copies (~27 MB
// in the end, 0.52 of the 50 MiB bound) projected 0.64-1.08 of it, over
// in 2 of 6 ingests, which then built both copies from SQLite at the end
// (~1.5 s more); at ~200 pages 0.61-0.78. The OpenJDK docs' projected 3.9
// at 100 (5,405 queued).
const crawledMin = 200

// Holds reports whether the index holds collection's search copy in
// memory now (a Snapshot of it then only encodes it).
func (x *Index) Holds(collection string) bool {
	x.cacheMu.RLock()
	defer x.cacheMu.RUnlock()
	return x.cache[collection] != nil
}

// Warm loads a collection's search copy now rather than at its first search.
func (x *Index) Warm(ctx context.Context, collection string) error {
	_, err := x.collection(ctx, collection)
	return err
}

// Snapshot loads a collection's search copy (from its snapshot when that is
// current) and writes its snapshot now, unless a current one is on disk,
// returning when it is written: the next process on the data dir (serve,
// ask) then reads it back instead of building it from SQLite. kgagent
// ingest calls it for the collections it wrote, at its end. A collection
// that does not exist, or an in-memory index, has nothing to snapshot.
//
// A copy it does not hold and whose snapshot is not current is not built:
// its snapshot is written from SQLite in bounded pieces (streamSnapshot),
// byte for byte the one the copy would give, and the copy is left to be
// read back from it.
func (x *Index) Snapshot(ctx context.Context, collection string) error {
	if err := x.streamSnapshot(ctx, collection); !errors.Is(err, errNotStreamed) {
		return err
	}
	m, err := x.collection(ctx, collection)
	if err != nil || m == nil {
		return err
	}
	x.snaps.Wait() // a load's own background write
	return x.writeSnapshot(collection, m)
}

// Release drops collection's search copy from memory, once any snapshot
// being written of it is done; a later search loads it again (from its
// snapshot when that is current). kgagent ingest releases each copy as
// soon as its snapshot is written, so that two are never held at once.
func (x *Index) Release(collection string) {
	x.snaps.Wait()
	x.cacheMu.Lock()
	delete(x.cache, collection)
	delete(x.keep, collection)
	x.cacheMu.Unlock()
}

// Rebuilds counts the search copies this Index built from SQLite rather
// than read back from a current snapshot (serve logs it once warm).
func (x *Index) Rebuilds() int64 { return x.sqlLoads.Load() }

func (x *Index) dense(ctx context.Context, q corpus.Query, n int) ([]scored, error) {
	m, err := x.collection(ctx, q.Collection)
	if err != nil || m == nil {
		return nil, err
	}
	x.cacheMu.RLock()
	defer x.cacheMu.RUnlock()
	if len(q.Vector) != m.dim {
		return nil, invalid("query vector has length %d, collection %q holds %d", len(q.Vector), q.Collection, m.dim)
	}
	qv, qs := quantize(make([]int8, 0, len(q.Vector)), q.Vector)
	return m.topK(qv, qs, n, q.URLPrefix, x.cfg.PrefilterRows, x.cfg.PrefilterMass), nil
}

// parallelMin is the slot count above which a scan is split across cores.
const parallelMin = 16384

// colMin is the slot count from which dense search scans columns.
const colMin = 2048

// prefilterMinDims is the fewest query dimensions a prefilter scans.
const prefilterMinDims = 16

// prefilterKeep is how many rows the prefilter keeps for exact rescoring
// when n are asked for: each scan worker keeps that many, and the best
// that many of theirs are rescored, so the candidates are the same for
// any number of workers (it was that many a worker: 200 rescored for 50
// hits on two cores, 1,600 on sixteen).
func prefilterKeep(n int) int { return max(2*n, 64) }

// topK returns the n slots most similar to qv.
//
// Small collections are scanned row by row. Larger ones are scanned column
// by column over the query's non-zero dimensions only: a dimension where the
// quantised query is 0 adds nothing to any dot product, so this is the exact
// int8 score at a fraction of the memory traffic (a short question touches
// 50-100 of 384 dimensions). When the collection has at least prefilter rows
// (prefilter > 0), only the query's heaviest dimensions that together hold
// the share mass of its squared norm (at least prefilterMinDims of them)
// are scanned, the best prefilterKeep(n) rows are kept and rescored exactly: a
// question under the lexical embedder puts most of its weight on its words
// and little on each character trigram, so a dozen or two dimensions find
// the same candidates; a dense model's query spreads its weight and keeps
// most of its dimensions.
func (m *memColl) topK(qv []int8, qscale float32, n int, prefix string, prefilter int, mass float64) []scored {
	rows := len(m.rids)
	if !m.byCol {
		return m.scanTop(qv, qscale, n, prefix, m.dim)
	}
	dims := make([]int, 0, len(qv))
	for j, x := range qv {
		if x != 0 {
			dims = append(dims, j)
		}
	}
	limit := len(dims)
	if prefilter > 0 && rows >= prefilter && len(dims) > prefilterMinDims {
		limit = heaviest(qv, dims, mass)
	}
	if limit >= len(dims) {
		return best(m.colScan(qv, dims, qscale, n, prefix), n)
	}
	keep := prefilterKeep(n)
	cands := best(m.colScanSlots(qv, dims[:limit], qscale, keep, prefix), keep)
	// Rescore over the query's non-zero dimensions only (the rest add 0).
	// A candidate's prefilter score is its dot product over the heaviest
	// dimensions times sc, both exact in a float64 (an int32 below 2^24
	// times a float32), so dividing by sc gives that dot product back
	// exactly and only the other dimensions are read: each read is a
	// random access into a column (a cache miss on a big collection), and
	// they were a third of dense search's CPU on the OpenJDK API docs.
	// On a collection scanned in parallel the candidates are rescored in
	// two halves at once: the rescore came after the scan on the search's
	// critical path, ~0.35 ms on one core there. Each candidate's score is
	// computed alone, so the scores are the same.
	rescore := func(cands []scored) {
		for i, c := range cands {
			slot := int(c.rid)
			sc := qscale * m.scales[slot]
			var dot int32
			rest := dims[limit:]
			if sc != 0 {
				dot = int32(c.score / float64(sc))
			} else {
				rest = dims
			}
			for _, j := range rest {
				dot += int32(qv[j]) * int32(m.cols[j].at(slot))
			}
			cands[i] = scored{m.rids[slot], float64(dot) * float64(sc)}
		}
	}
	if h := len(cands) / 2; rows >= parallelMin && h >= rescoreSplitMin && runtime.GOMAXPROCS(0) > 1 {
		done := make(chan struct{})
		go func() { defer close(done); rescore(cands[h:]) }()
		rescore(cands[:h])
		<-done
	} else {
		rescore(cands)
	}
	return best(cands, n)
}

// rescoreSplitMin is the fewest candidates each half of a rescore split in
// two holds.
const rescoreSplitMin = 16

// heaviest orders dims by the query's weight on them, heaviest first, and
// returns how many of them hold the share mass of its squared norm (at least
// prefilterMinDims).
func heaviest(qv []int8, dims []int, mass float64) int {
	slices.SortFunc(dims, func(a, b int) int {
		if c := cmp.Compare(absInt8(qv[b]), absInt8(qv[a])); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	var total, sum int64
	for _, j := range dims {
		total += int64(qv[j]) * int64(qv[j])
	}
	for k, j := range dims {
		sum += int64(qv[j]) * int64(qv[j])
		if float64(sum) >= mass*float64(total) {
			return max(k+1, prefilterMinDims)
		}
	}
	return len(dims)
}

func absInt8(x int8) int32 {
	if x < 0 {
		return -int32(x)
	}
	return int32(x)
}

// colBlock is how many rows a column scan accumulates at a time (the
// accumulators stay in L1).
const colBlock = 2048

// colScan scores every live row by the dot product of qv with its vector
// over dims only, reading the columns, and keeps the best n.
func (m *memColl) colScan(qv []int8, dims []int, qscale float32, n int, prefix string) []scored {
	all := m.colScanSlots(qv, dims, qscale, n, prefix)
	for i := range all {
		all[i].rid = m.rids[all[i].rid]
	}
	return all
}

// colScanSlots is colScan with each row's slot, not its row id, in rid.
func (m *memColl) colScanSlots(qv []int8, dims []int, qscale float32, n int, prefix string) []scored {
	// With the AVX-512 kernel the sparse columns are summed for whole
	// bitmap words (expandAdd) into buf, whose first slot is then the
	// block's first slot rounded down to a word; without it the block's
	// sums start at buf[0]. One array for both: the worker's frame is on
	// the searching goroutine's stack (or a scan worker's), and two
	// (17 KB) made it grow to 32 KB where 16 KB held one.
	expand := hasExpand
	var shared sharedFloor
	return m.scanParallel(n, func(start, end int, h *topHeap) {
		var buf [colBlock + 128]int32
		var cur []expCursor
		if expand {
			cur = make([]expCursor, 0, len(dims))
		}
		floor := math.Inf(-1)
		for lo := start; lo < end; lo += colBlock {
			floor = max(floor, shared.below())
			hi := min(lo+colBlock, end)
			a := buf[:hi-lo]
			wlo, whi := lo/64, (hi+63)/64
			if expand {
				cur = cur[:0]
				for _, j := range dims {
					c := &m.cols[j]
					switch {
					case c.full == nil:
						cur = append(cur, c.cursor(wlo, int32(qv[j])))
					case 64*whi <= len(c.full):
						cur = append(cur, fullCursor(c.full, wlo, int32(qv[j])))
					}
				}
				expandAdd(buf[:64*(whi-wlo)], cur)
				a = buf[lo-64*wlo : hi-64*wlo]
			} else {
				clear(a)
			}
			// columns held in full four at a time (one pass over the
			// accumulators for four), sparse ones by their values; with
			// the kernel both were summed by it, but for a column held
			// in full whose last word the block holds part of (the
			// kernel would read past its end)
			var full [4]int
			nf := 0
			for _, j := range dims {
				c := &m.cols[j]
				if c.full == nil {
					if !expand {
						c.addTo(a, lo, hi, int32(qv[j]))
					}
					continue
				}
				if expand && 64*whi <= len(c.full) {
					continue
				}
				full[nf] = j
				if nf++; nf < 4 {
					continue
				}
				nf = 0
				c0 := m.cols[full[0]].full[lo:hi]
				c1 := m.cols[full[1]].full[lo:hi]
				c2 := m.cols[full[2]].full[lo:hi]
				c3 := m.cols[full[3]].full[lo:hi]
				w0, w1, w2, w3 := int32(qv[full[0]]), int32(qv[full[1]]), int32(qv[full[2]]), int32(qv[full[3]])
				c1, c2, c3 = c1[:len(c0)], c2[:len(c0)], c3[:len(c0)]
				a := a[:len(c0)]
				for i := range c0 {
					a[i] += w0*int32(c0[i]) + w1*int32(c1[i]) + w2*int32(c2[i]) + w3*int32(c3[i])
				}
			}
			for _, j := range full[:nf] {
				m.cols[j].addTo(a, lo, hi, int32(qv[j]))
			}
			// The floor is checked before the row's document: most rows
			// lose to it, and the document strings are the scan's largest
			// memory read after the columns. It is the higher of the
			// heap's own (a row at or below it cannot enter) and of the
			// other workers' (shared: a row below it is beaten by n of
			// theirs; one equal to it may still beat theirs on its slot),
			// so every worker keeps the rows of its range that are among
			// the best n of all, and fewer others: each row that enters
			// a heap is a push, 17% of the scan's CPU on the OpenJDK API
			// docs, and most of them were rows another worker had
			// already beaten n times.
			scales := m.scales[lo:hi]
			scales = scales[:len(a)]
			for i, v := range a {
				f := float64(v) * float64(qscale*scales[i])
				if f <= floor {
					continue
				}
				slot := lo + i
				doc := m.doc(int(slot))
				if doc == "" || (prefix != "" && !strings.HasPrefix(doc, prefix)) {
					continue
				}
				h.push(scored{int64(slot), f})
				if len(h.items) == h.n {
					own := h.items[0].score
					shared.raise(own)
					floor = max(floor, own, shared.below())
				}
			}
		}
	})
}

// sharedFloor is the highest floor (lowest score) of the full heaps of a
// parallel scan's workers: the complement of the float64's bits, 0 until
// one heap is full (the complement of a NaN's bits, never a score).
type sharedFloor struct{ v atomic.Uint64 }

// raise makes f the floor if it is higher.
func (s *sharedFloor) raise(f float64) {
	for {
		old := s.v.Load()
		if old != 0 && math.Float64frombits(^old) >= f {
			return
		}
		if s.v.CompareAndSwap(old, ^math.Float64bits(f)) {
			return
		}
	}
}

// below is the highest score a row may have and still lose to a full heap
// on its score alone: the float64 just below the floor (-Inf before any
// heap is full).
func (s *sharedFloor) below() float64 {
	old := s.v.Load()
	if old == 0 {
		return math.Inf(-1)
	}
	return math.Nextafter(math.Float64frombits(^old), math.Inf(-1))
}

// scanTop ranks every live row by the dot product of qv with the first pd
// dimensions of its vector.
func (m *memColl) scanTop(qv []int8, qscale float32, n int, prefix string, pd int) []scored {
	d := m.dim
	return best(m.scanParallel(n, func(lo, hi int, h *topHeap) {
		for i := lo; i < hi; i++ {
			doc := m.doc(i)
			if doc == "" || (prefix != "" && !strings.HasPrefix(doc, prefix)) {
				continue
			}
			h.push(scored{m.rids[i], float64(DotInt8(qv, m.vecs[i*d:i*d+pd])) * float64(qscale*m.scales[i])})
		}
	}), n)
}

// scanParallel splits the rows into contiguous ranges, one per worker once
// the collection has parallelMin rows, runs scan on each range with a top-n
// heap of its own, and returns the items of every heap, unsorted.
func (m *memColl) scanParallel(n int, scan func(lo, hi int, h *topHeap)) []scored {
	rows := len(m.rids)
	workers := 1
	if rows >= parallelMin {
		workers = max(1, min(runtime.GOMAXPROCS(0), rows/(parallelMin/2)))
	}
	parts := make([]topHeap, workers)
	per := (rows + workers - 1) / workers
	run := func(w int) {
		parts[w] = topHeap{n: n}
		scan(min(rows, w*per), min(rows, (w+1)*per), &parts[w])
	}
	if workers == 1 {
		run(0)
	} else {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() { defer wg.Done(); run(w) }()
		}
		wg.Wait()
	}
	var all []scored
	for _, p := range parts {
		all = append(all, p.items...)
	}
	return all
}

// best sorts by score (ties by row id) and keeps n.
func best(all []scored, n int) []scored {
	slices.SortFunc(all, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.rid, b.rid)
	})
	if len(all) > n {
		all = all[:n]
	}
	return all
}

var scorePool = sync.Pool{New: func() any { return new([]float32) }}

// slotPool holds keywordPages' lists of slots and pages (a common query
// touches thousands of chunks: growing a fresh list each time was a third of
// the bytes a search allocated).
var slotPool = sync.Pool{New: func() any { return new([]int32) }}

// Known reports, for each word, whether the collection's keyword index
// holds its keyword terms, or for a term it lacks one that shares its stem
// (one a prefix of the other, the shorter of three letters or more, at most
// three letters apart: "mac" and "macos"). It implements corpus.Vocabulary.
func (x *Index) Known(ctx context.Context, collection string, words []string) ([]bool, error) {
	m, err := x.collection(ctx, collection)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(words))
	if m == nil {
		return out, nil
	}
	x.cacheMu.RLock()
	defer x.cacheMu.RUnlock()
	for i, w := range words {
		out[i] = true
		for _, t := range text.Terms(w) {
			if len(m.all.list(t)) > 0 || m.all.hasNear(t) {
				continue
			}
			out[i] = false
			break
		}
	}
	return out, nil
}

// hasNear reports whether a term sharing t's stem is indexed (see Known).
func (f *fieldIndex) hasNear(t string) bool {
	if len(t) < 3 {
		return false
	}
	for i, ps := range f.lists {
		if len(ps) == 0 {
			continue
		}
		u := f.terms.term(int32(i))
		if u == t {
			continue
		}
		short, long := t, u
		if len(short) > len(long) {
			short, long = long, short
		}
		if len(short) >= 3 && len(long)-len(short) <= 3 && strings.HasPrefix(long, short) {
			return true
		}
	}
	return false
}

// keyword ranks by BM25F over all fields (headOnly false) or by BM25 over
// title and headings alone (headOnly true).
func (x *Index) keyword(ctx context.Context, q corpus.Query, n int, headOnly bool) ([]scored, error) {
	chunks, _, err := x.keywordPages(ctx, q, n, headOnly, 0)
	return chunks, err
}

// keywordPages is keyword that, with pages > 0, also ranks whole pages: BM25F
// over each page's summed chunk term frequencies and lengths, with page
// document frequencies, which is the classic page-level ranking computed
// from the chunk postings (so deletes and updates need no second index).
// Each of the best pages is represented by its best-scoring chunk.
func (x *Index) keywordPages(ctx context.Context, q corpus.Query, n int, headOnly bool, pages int) ([]scored, []scored, error) {
	m, err := x.collection(ctx, q.Collection)
	if err != nil || m == nil {
		return nil, nil, err
	}
	terms := text.QuestionTerms(q.Text)
	x.cacheMu.RLock()
	defer x.cacheMu.RUnlock()
	if m.live == 0 {
		return nil, nil, nil
	}
	fi := &m.all
	if headOnly {
		fi = &m.head
		pages = 0
	}
	bufp := scorePool.Get().(*[]float32)
	defer scorePool.Put(bufp)
	if cap(*bufp) < len(m.rids) {
		*bufp = make([]float32, len(m.rids))
	}
	acc := (*bufp)[:len(m.rids)]
	var ptf, pacc, bestAcc []float32
	// ptouched and pterm are the pages with a score and those of the term
	// being scored; bestSlot[d] is 1 + the best chunk slot of page d (0:
	// none yet). All three come from slotPool, as touched does: made
	// afresh, they were a third of the bytes serve allocated on the
	// OpenJDK API docs (9,892 pages), and so of its collections.
	var ptouched, pterm, bestSlot []int32
	if pages > 0 {
		nd := len(m.docLen)
		pbuf := scorePool.Get().(*[]float32)
		defer scorePool.Put(pbuf)
		if cap(*pbuf) < 3*nd {
			*pbuf = make([]float32, 3*nd)
		}
		ptf, pacc, bestAcc = (*pbuf)[:nd], (*pbuf)[nd:2*nd], (*pbuf)[2*nd:3*nd]
		defer clear(bestAcc) // the pool's buffers are all zero
		bp, tp, pp := slotPool.Get().(*[]int32), slotPool.Get().(*[]int32), slotPool.Get().(*[]int32)
		if cap(*bp) < nd {
			*bp = make([]int32, nd)
		}
		bestSlot, ptouched, pterm = (*bp)[:nd], (*tp)[:0], (*pp)[:0]
		clear(bestSlot) // as make did; the pool's lists hold slots
		defer func() {
			*bp, *tp, *pp = bestSlot[:0], ptouched[:0], pterm[:0]
			slotPool.Put(bp)
			slotPool.Put(tp)
			slotPool.Put(pp)
		}()
	}
	// Under a URL prefix, and without the page ranking (whose page
	// frequencies count the pages outside it), a posting of a page outside
	// the prefix is left before it is scored: its score would be dropped
	// at the end (followDigests' one-page search scored every posting of
	// the description's words). The pages under it are found first in the
	// pages sorted by URL (pagesUnder: inPrefix 1 under the prefix, 2 not).
	// The scores of the chunks under it and the order they are met in are
	// the same. Each list is first cut to the slots between the first and
	// last of those pages (slotsUnder): followDigests' search of one page
	// for a description's words walked every posting of them, ~0.5 ms on
	// the OpenJDK API docs.
	var inPrefix []uint8
	slo, shi := int32(0), int32(len(m.rids)-1)
	if q.URLPrefix != "" && pages == 0 {
		inPrefix = make([]uint8, len(m.pageURL))
		m.pagesUnder(q.URLPrefix, inPrefix)
		slo, shi = m.slotsUnder(q.URLPrefix)
	}
	tp := slotPool.Get().(*[]int32)
	touched := (*tp)[:0]
	defer func() { *tp = touched[:0]; slotPool.Put(tp) }()
	N := float64(m.live)
	avg := float32(max(fi.totalLen/N, 1e-3))
	NP := float64(max(m.livePage, 1))
	pavg := float32(max(fi.totalLen/NP, 1e-3))
	k1, b := float32(x.cfg.K1), float32(x.cfg.B)
	// Terms found in more than half the chunks are dropped when the query
	// has a rarer one: the classic Robertson-Sparck Jones IDF is <= 0 for
	// them, and with the exponent their weight is a few percent of a
	// telling word's while their posting lists are the longest.
	seen := map[string]bool{}
	lists := make([][]posting, 0, len(terms))
	listTerms := make([]int32, 0, len(terms))
	rare := false
	for _, t := range terms {
		if seen[t] {
			continue
		}
		seen[t] = true
		if i, ok := fi.terms.find(t); ok && len(fi.lists[i]) > 0 {
			ps := fi.lists[i]
			lists, listTerms = append(lists, ps), append(listTerms, i)
			rare = rare || 2*len(ps) <= m.live
		}
	}
	for li, ps := range lists {
		term := listTerms[li]
		if rare && 2*len(ps) > m.live {
			continue
		}
		df := float64(len(ps))
		idf := float32(text.BM25IDF(N, df))
		if idf <= 0 {
			idf = 1e-3
		}
		if x.cfg.IDFExponent != 1 {
			idf = float32(math.Pow(float64(idf), x.cfg.IDFExponent))
		}
		bt := text.NewBM25Term(idf, k1, b, avg)
		if inPrefix != nil && prefixSpans {
			// only the postings of the slots the pages under the
			// prefix span: the others' pages are not under it
			if slo > shi {
				ps = nil
			} else {
				ps = ps[postingAt(ps, slo):postingAt(ps, shi+1)]
			}
		}
		switch {
		case inPrefix == nil && pages > 0:
			touched, pterm = m.scorePages(fi, term, ps, bt, acc, ptf, touched, pterm)
		case inPrefix == nil:
			touched = m.scoreChunks(fi, term, ps, bt, acc, touched)
		default:
			touched, pterm = m.scoreList(fi, term, ps, bt, acc, ptf, touched, pterm, inPrefix, pages > 0)
		}
		if pages > 0 {
			pdf := float64(len(pterm))
			pidf := float32(text.BM25IDF(NP, pdf))
			if x.cfg.IDFExponent != 1 {
				pidf = float32(math.Pow(float64(pidf), x.cfg.IDFExponent))
			}
			pt := text.NewBM25Term(max(pidf, 1e-6), k1, b, pavg)
			for _, d := range pterm {
				if pacc[d] == 0 {
					ptouched = append(ptouched, d)
				}
				pacc[d] += pt.Score(ptf[d], m.docLen[d])
				ptf[d] = 0
			}
			pterm = pterm[:0]
		}
	}
	// Without a URL prefix every page the page ranking scored has a
	// touched chunk, so its heap is filled first and only the pages it
	// keeps look for their best chunk (bestSlots), not every touched
	// chunk for its page's.
	late := pages > 0 && q.URLPrefix == ""
	rankPages := func() []scored {
		ph := topHeap{n: pages}
		for _, d := range ptouched {
			if late {
				// the page for now, its best slot below
				ph.push(scored{int64(d), float64(pacc[d])})
			} else if s := bestSlot[d] - 1; s >= 0 {
				// the slot for now: the heap orders by score
				// alone, and only its items' row ids are read
				ph.push(scored{int64(s), float64(pacc[d])})
			}
			pacc[d] = 0
		}
		if late {
			m.bestSlots(ph.items, acc, touched)
		}
		for i := range ph.items {
			ph.items[i].rid = m.rids[ph.items[i].rid]
		}
		return best(ph.items, pages)
	}
	var pageList []scored
	if late {
		// before the chunks' heap, which clears acc as it reads it
		pageList = rankPages()
	}
	h := topHeap{n: n}
	for _, s := range touched {
		if q.URLPrefix == "" || inPrefix != nil || strings.HasPrefix(m.doc(int(s)), q.URLPrefix) {
			if pages > 0 && !late {
				d := m.docID[s]
				// bestAcc[d] is acc of the best slot so far: reading
				// it from acc was a cache miss a touched chunk
				if b := bestSlot[d] - 1; b < 0 || acc[s] > bestAcc[d] || (acc[s] == bestAcc[d] && s < b) {
					bestSlot[d], bestAcc[d] = s+1, acc[s]
				}
			}
			if f := float64(acc[s]); h.admits(f) {
				h.push(scored{m.rids[s], f})
			}
		}
		acc[s] = 0
	}
	if pages > 0 && !late {
		pageList = rankPages()
	}
	return best(h.items, n), pageList, nil
}

// prefixSpans turns on keywordPages' use of the pages' slot spans under
// a URL prefix (slotsUnder); a test turns it off to compare.
var prefixSpans = true

// postingAt is the index of the first posting of ps (in slot order) at or
// above slot s.
func postingAt(ps []posting, s int32) int {
	i, _ := slices.BinarySearchFunc(ps, s, func(p posting, s int32) int { return cmp.Compare(p.slot(), s) })
	return i
}

// pageSpans is the first and last slot of each page, for the slots
// below n: slots are only appended (a write adds new ones, a delete
// leaves its tombstone), so spans computed for as many slots as the copy
// holds cover every live slot of every page.
type pageSpans struct {
	n      int
	lo, hi []int32 // by page id; lo > hi for a page without a live slot
}

// pageSpans returns the pages' spans, which it computes (one pass over the
// slots) when slots were added since they were last computed.
func (m *memColl) pageSpans() *pageSpans {
	sp := m.spans.Load()
	if sp == nil || sp.n != len(m.rids) || len(sp.lo) != len(m.pageURL) {
		sp = &pageSpans{n: len(m.rids), lo: make([]int32, len(m.pageURL)), hi: make([]int32, len(m.pageURL))}
		for d := range sp.lo {
			sp.lo[d], sp.hi[d] = math.MaxInt32, -1
		}
		for s, d := range m.docID {
			if d >= 0 {
				sp.lo[d], sp.hi[d] = min(sp.lo[d], int32(s)), max(sp.hi[d], int32(s))
			}
		}
		m.spans.Store(sp)
	}
	return sp
}

// bestSlots replaces each page d of items (rid) with its best chunk's
// slot: the highest score in acc of its slots in touched (those with a
// score: acc is positive there and 0 elsewhere), the lowest slot of those
// tied. Each page's span of slots is read (a page's chunks are written
// together, so a span holds little else), or, when the spans hold more
// slots than touched, touched once.
func (m *memColl) bestSlots(items []scored, acc []float32, touched []int32) {
	sp := m.pageSpans()
	var total int
	for _, it := range items {
		if d := it.rid; sp.lo[d] <= sp.hi[d] {
			total += int(sp.hi[d]-sp.lo[d]) + 1
		}
	}
	if total <= len(touched) {
		for i, it := range items {
			d := int32(it.rid)
			b, ba := int32(-1), float32(0)
			for s := sp.lo[d]; s <= sp.hi[d]; s++ {
				if m.docID[s] == d && acc[s] > ba {
					b, ba = s, acc[s]
				}
			}
			items[i].rid = int64(b)
		}
		return
	}
	at := make(map[int32]int, len(items))
	best := make([]float32, len(items))
	for i, it := range items {
		at[int32(it.rid)] = i
		items[i].rid = -1
	}
	for _, s := range touched {
		if i, ok := at[m.docID[s]]; ok {
			if b := int32(items[i].rid); b < 0 || acc[s] > best[i] || (acc[s] == best[i] && s < b) {
				items[i].rid, best[i] = int64(s), acc[s]
			}
		}
	}
}

// slotsUnder is the first and last slot of the pages whose URL starts
// with prefix (lo > hi when there are none), from the pages' spans.
func (m *memColl) slotsUnder(prefix string) (lo, hi int32) {
	sp := m.pageSpans()
	lo, hi = math.MaxInt32, -1
	i, _ := slices.BinarySearchFunc(m.byURL, prefix, func(p int32, u string) int { return strings.Compare(m.pageURL[p], u) })
	for ; i < len(m.byURL) && strings.HasPrefix(m.pageURL[m.byURL[i]], prefix); i++ {
		d := m.byURL[i]
		lo, hi = min(lo, sp.lo[d]), max(hi, sp.hi[d])
	}
	return lo, hi
}

// scoreList adds the BM25 scores of the postings ps (term number term of
// fi, bt its scorer) to acc, appending each slot it scores for the first
// time to touched, and, with pages, their term frequencies to their pages'
// in ptf, appending each page it adds to first to pterm. Slots of deleted
// rows, and with inPrefix those of pages not marked 1 in it, are left out.
func (m *memColl) scoreList(fi *fieldIndex, term int32, ps []posting, bt text.BM25Term[float32], acc, ptf []float32, touched, pterm []int32, inPrefix []uint8, pages bool) ([]int32, []int32) {
	for _, p := range ps {
		slot := p.slot()
		d := m.docID[slot]
		if d < 0 { // deleted
			continue
		}
		if inPrefix != nil && inPrefix[d] != 1 {
			continue
		}
		if acc[slot] == 0 {
			touched = append(touched, slot)
		}
		tf := fi.tf(term, p)
		acc[slot] += bt.Score(tf, fi.lens[slot])
		if pages {
			if ptf[d] == 0 {
				pterm = append(pterm, d)
			}
			ptf[d] += tf
		}
	}
	return touched, pterm
}

// scorePages is scoreList with pages and without inPrefix (hybrid
// search's loop), written without a branch on whether a slot or a page was
// met before: each is appended to its list in any case and the list's
// length counts it only when it is new. On the OpenJDK API docs the
// per-slot arrays (acc, docID, lens: 1.6 MB) do not fit in a core's L2,
// and a branch on a value still being read from memory, mispredicted for
// about half the postings of a common term, kept the reads of the
// postings after it from starting; the lists and sums are the same.
func (m *memColl) scorePages(fi *fieldIndex, term int32, ps []posting, bt text.BM25Term[float32], acc, ptf []float32, touched, pterm []int32) ([]int32, []int32) {
	// Room for every slot and page the list can add, and the one more
	// that each write past the last one it adds needs.
	nt, np := len(touched), 0
	tn := min(nt+len(ps), len(acc)+1)
	touched = slices.Grow(touched, tn-nt)[:tn]
	pn := min(len(ps), len(ptf)+1)
	pterm = slices.Grow(pterm[:0], pn)[:pn]
	lens, docID, tfs := fi.lens, m.docID, fi.tfs
	for _, p := range ps {
		slot := p.slot()
		d := docID[slot]
		if d < 0 { // deleted
			continue
		}
		var tf float32
		if c := p & 0xff; c != wideCode {
			tf = tfs[c]
		} else {
			tf = fi.wide[wideKey{term, slot}]
		}
		a := acc[slot]
		touched[nt] = slot
		nt += isZero(a)
		acc[slot] = a + bt.Score(tf, lens[slot])
		t := ptf[d]
		pterm[np] = d
		np += isZero(t)
		ptf[d] = t + tf
	}
	return touched[:nt], pterm[:np]
}

// scoreChunks is scorePages without the pages (the headings' ranking; a
// test of pages in the loop cost the chunks and pages' loop ~4%).
func (m *memColl) scoreChunks(fi *fieldIndex, term int32, ps []posting, bt text.BM25Term[float32], acc []float32, touched []int32) []int32 {
	nt := len(touched)
	tn := min(nt+len(ps), len(acc)+1)
	touched = slices.Grow(touched, tn-nt)[:tn]
	lens, docID, tfs := fi.lens, m.docID, fi.tfs
	for _, p := range ps {
		slot := p.slot()
		if docID[slot] < 0 { // deleted
			continue
		}
		var tf float32
		if c := p & 0xff; c != wideCode {
			tf = tfs[c]
		} else {
			tf = fi.wide[wideKey{term, slot}]
		}
		a := acc[slot]
		touched[nt] = slot
		nt += isZero(a)
		acc[slot] = a + bt.Score(tf, lens[slot])
	}
	return touched[:nt]
}

// isZero is 1 when x is 0 (either sign), else 0, computed without a branch.
func isZero(x float32) int {
	var z int
	if math.Float32bits(x)<<1 == 0 {
		z = 1
	}
	return z
}

// topHeap keeps the n best scores seen (a min-heap on score).
type topHeap struct {
	n     int
	items []scored
}

// admits reports whether a score would enter the heap. It is small enough
// to inline, so scans test it before building an item or calling push: most
// candidates fail it.
func (h *topHeap) admits(score float64) bool {
	return h.n > 0 && (len(h.items) < h.n || score > h.items[0].score)
}

func (h *topHeap) push(s scored) {
	if !h.admits(s.score) {
		return
	}
	if len(h.items) < h.n {
		h.items = append(h.items, s)
		for i := len(h.items) - 1; i > 0; {
			p := (i - 1) / 2
			if h.items[p].score <= h.items[i].score {
				break
			}
			h.items[p], h.items[i] = h.items[i], h.items[p]
			i = p
		}
		return
	}
	h.items[0] = s
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h.items) && h.items[l].score < h.items[m].score {
			m = l
		}
		if r < len(h.items) && h.items[r].score < h.items[m].score {
			m = r
		}
		if m == i {
			break
		}
		h.items[m], h.items[i] = h.items[i], h.items[m]
		i = m
	}
}

// DotInt8 is the dot product of two equally long int8 vectors, unrolled by 8
// without bounds checks.
func DotInt8(a, b []int8) int32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 int32
	for len(a) >= 8 {
		x, y := a[:8:8], b[:8:8]
		s0 += int32(x[0])*int32(y[0]) + int32(x[4])*int32(y[4])
		s1 += int32(x[1])*int32(y[1]) + int32(x[5])*int32(y[5])
		s2 += int32(x[2])*int32(y[2]) + int32(x[6])*int32(y[6])
		s3 += int32(x[3])*int32(y[3]) + int32(x[7])*int32(y[7])
		a, b = a[8:], b[8:]
	}
	for i := range a {
		s0 += int32(a[i]) * int32(b[i])
	}
	return s0 + s1 + s2 + s3
}

// Dot is the float32 dot product of two equally long vectors, unrolled by 8
// over re-sliced windows so the compiler drops the bounds checks.
func Dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	for len(a) >= 8 {
		x, y := a[:8:8], b[:8:8]
		s0 += x[0] * y[0]
		s1 += x[1] * y[1]
		s2 += x[2] * y[2]
		s3 += x[3] * y[3]
		s4 += x[4] * y[4]
		s5 += x[5] * y[5]
		s6 += x[6] * y[6]
		s7 += x[7] * y[7]
		a, b = a[8:], b[8:]
	}
	for i := range a {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3) + (s4 + s5) + (s6 + s7)
}
