package sqlite

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"unsafe"

	"github.com/kgagent/kgagent/internal/snapfile"
)

// Search-copy snapshots. Building a collection's in-memory search copy from
// SQLite means reading every chunk and tokenising it again: about 1.4 s of
// CPU for the Python docs (30k chunks), paid by every `kgagent ask` and by
// the first question a fresh `serve` gets. So the copy is also written to a
// file beside the database (<path>-snap/<hex collection>) and read back
// instead, which takes a small part of that time.
//
// A snapshot is used only when it is exactly the copy SQLite would give:
//   - its version is the collection's version in SQLite, which every write
//     transaction of the collection sets from one counter that only grows
//     (a collection deleted and created again never repeats a version);
//   - it was written by this very executable (path, size and modification
//     time), since a new build may tokenise or weight differently;
//   - its weights are this index's, and its checksum holds.
//
// Anything else, and any read error, falls back to loading from SQLite,
// after which a fresh snapshot is written in the background. Close writes
// the snapshots of loaded copies that writes moved past their snapshot.

// Format 2 writes the row ids and the posting lists as varints: a row id
// and a posting's slot as the difference from the one before (consecutive
// in a fresh load), a posting's weighted term frequency as its index in
// its field's table of distinct frequencies (70 on the OpenJDK API docs).
// That docs' search copy went 36.9 -> 28.9 MB on disk (its postings 12.4 ->
// 4 MB after compression), its entity copy 11.0 -> 9.3 MB. Vectors stay
// dense bytes: zstd makes them smaller than the sparse form does (23.2 vs
// 24.2 MB). A snapshot of format 1 fails the header check and is rebuilt,
// as one from another build always was.
const snapMagic = "kgagent-corpus-snapshot-2\n"

// snapPath is the snapshot file of collection; "" for in-memory indexes.
func (x *Index) snapPath(collection string) string {
	if x.cfg.Path == "" || x.cfg.NoSnapshots {
		return ""
	}
	return snapfile.Path(x.cfg.Path+"-snap", collection)
}

// snapHeader is what a snapshot must match to be used.
func (x *Index) snapHeader(collection string, version int64, dim int) string {
	return snapfile.Header(snapMagic, fmt.Sprintf("%q", collection), fmt.Sprintf("%d %d %g %g %g", version, dim,
		x.cfg.TitleWeight, x.cfg.HeadingWeight, x.cfg.BodyWeight))
}

// encodeSnapshot writes the live slots of m into e, renumbered densely,
// so that a snapshot never carries tombstones.
func encodeSnapshot(e *snapfile.Encoder, m *memColl) {
	newSlot := make([]int32, len(m.rids))
	live := 0
	for s := range m.rids {
		if m.doc(s) == "" {
			newSlot[s] = -1
			continue
		}
		newSlot[s] = int32(live)
		live++
	}
	e.U32(uint32(live))
	// pages: the doc URLs of live slots, each once
	pageOf := map[string]uint32{}
	var pages []string
	for s := range m.rids {
		if newSlot[s] < 0 {
			continue
		}
		d := m.doc(s)
		if _, ok := pageOf[d]; !ok {
			pageOf[d] = uint32(len(pages))
			pages = append(pages, d)
		}
	}
	e.U32(uint32(len(pages)))
	for _, p := range pages {
		e.Str(p)
	}
	scales := make([]float32, 0, live)
	allLens := make([]float32, 0, live)
	headLens := make([]float32, 0, live)
	prev := int64(0)
	for s, rid := range m.rids {
		if newSlot[s] < 0 {
			continue
		}
		e.Varint(rid - prev)
		e.Uvarint(uint64(pageOf[m.doc(s)]))
		prev = rid
		scales = append(scales, m.scales[s])
		allLens = append(allLens, m.all.lens[s])
		headLens = append(headLens, m.head.lens[s])
	}
	// the vectors, written slot by slot (no copy of them all)
	e.U32(uint32(live * m.dim))
	row := make([]byte, m.dim)
	q := make([]int8, m.dim)
	for s := range m.rids {
		if newSlot[s] >= 0 {
			for j, v := range m.rowOf(s, q) {
				row[j] = byte(v)
			}
			e.Raw(row)
		}
	}
	e.F32s(scales)
	for _, f := range []struct {
		fi   *fieldIndex
		lens []float32
	}{{&m.all, allLens}, {&m.head, headLens}} {
		e.F32s(f.lens)
		// terms left only in tombstones are dropped, as a reload would;
		// a term's live postings are counted where it is written (a map
		// of the counts was ~500k entries on the OpenJDK docs, live at
		// the ingest's end beside the copy)
		liveCount := func(ps []posting) int {
			if m.dead == 0 {
				return len(ps)
			}
			n := 0
			for _, p := range ps {
				if newSlot[p.slot()] >= 0 {
					n++
				}
			}
			return n
		}
		terms := 0
		for _, ps := range f.fi.lists {
			if liveCount(ps) > 0 {
				terms++
			}
		}
		// the distinct frequencies, sorted, then each term's live postings:
		// slots as differences, then the frequencies' indexes
		// (by their bits: a map keyed by float32 would lose NaNs)
		// (the codes in use are marked first: a map write per posting
		// only for the few coded wideCode)
		tfIdx := map[uint32]uint32{}
		var used [wideCode]bool
		for term, ps := range f.fi.lists {
			term := int32(term)
			for _, p := range ps {
				if newSlot[p.slot()] < 0 {
					continue
				}
				if c := p & 0xff; c != wideCode {
					used[c] = true
				} else {
					tfIdx[math.Float32bits(f.fi.tf(term, p))] = 0
				}
			}
		}
		for c, u := range used {
			if u {
				tfIdx[math.Float32bits(f.fi.tfs[c])] = 0
			}
		}
		bits := slices.Sorted(maps.Keys(tfIdx))
		tfs := make([]float32, len(bits))
		for i, b := range bits {
			tfIdx[b] = uint32(i)
			tfs[i] = math.Float32frombits(b)
		}
		e.F32s(tfs)
		// each code's index in the table
		var codeIdx [wideCode]uint32
		for c, u := range used {
			if u {
				codeIdx[c] = tfIdx[math.Float32bits(f.fi.tfs[c])]
			}
		}
		e.U32(uint32(terms))
		for term, ps := range f.fi.lists {
			term := int32(term)
			n := liveCount(ps)
			if n == 0 {
				continue
			}
			e.Str(f.fi.terms.term(term))
			e.Uvarint(uint64(n))
			last := int32(-1)
			for _, p := range ps {
				if s := newSlot[p.slot()]; s >= 0 {
					e.Varint(int64(s - last))
					last = s
				}
			}
			for _, p := range ps {
				if newSlot[p.slot()] >= 0 {
					if c := p & 0xff; c != wideCode {
						e.Uvarint(uint64(codeIdx[c]))
					} else {
						e.Uvarint(uint64(tfIdx[math.Float32bits(f.fi.tf(term, p))]))
					}
				}
			}
		}
	}
}

// decodeSnapshot rebuilds a memColl from encodeSnapshot's bytes.
func decodeSnapshot(b []byte, dim int, weights [3]float32) (*memColl, error) {
	d := &snapfile.Decoder{B: b}
	live := int(d.U32())
	if d.Err != nil || live < 0 || live > len(b) {
		return nil, snapfile.ErrShort
	}
	if live >= maxSlots {
		return nil, fmt.Errorf("snapshot: %d rows, more than a search copy holds", live)
	}
	m := newMemColl(dim, weights)
	nPages := int(d.U32())
	if d.Err != nil || nPages > len(b) {
		return nil, snapfile.ErrShort
	}
	pages := make([]string, nPages)
	for i := range pages {
		pages[i] = d.Str()
	}
	m.rids = make([]int64, live)
	m.docID = make([]int32, live)
	m.docLen = make([]float32, nPages)
	m.docLive = make([]int32, nPages)
	for i := range pages {
		m.docIdx[pages[i]] = int32(i)
	}
	m.pageURL = pages
	m.sortPages()
	rid := int64(0)
	for s := 0; s < live && d.Err == nil; s++ {
		rid += d.Varint()
		p := d.Uvarint()
		if p >= uint64(nPages) {
			return nil, fmt.Errorf("snapshot: page %d of %d", p, nPages)
		}
		m.rids[s], m.docID[s] = rid, int32(p)
		if m.pos == nil && s > 0 && rid < m.rids[s-1] {
			m.pos = make(map[int64]int32, live) // filled below
		}
		m.docLive[p]++
	}
	if m.pos != nil {
		for s := 0; s < live; s++ {
			m.pos[m.rids[s]] = int32(s)
		}
	}
	vecs := d.Bytes()
	if d.Err == nil && len(vecs) != live*dim {
		return nil, fmt.Errorf("snapshot: %d vector bytes for %d rows of %d", len(vecs), live, dim)
	}
	// the copy's memory, estimated as adding its rows counts it
	// (memColl.bytes): Keep bounds a copy read back this way too
	size := int64(live)*(rowCost+int64(dim/8)) + nonZero(vecs)
	var slots *slotArrays // in the columns' arena
	if d.Err == nil {
		// straight into the form searches read (reserve), one copy
		if live >= colMin {
			// each column sized for its non-zero values, then filled 64
			// rows at a time (24 KB of 384-dimension rows, read from L1
			// column by column)
			nz := make([]int, dim)
			for s := range live {
				for j, v := range vecs[s*dim : (s+1)*dim] {
					if v != 0 {
						nz[j]++
					}
				}
			}
			// all of them in one arena (colArena: huge pages), with
			// the slot arrays searches read at random (filled below)
			sizes := []int{8 * live, 4 * live, 4 * live, 4 * live, 4 * live}
			for j := range dim {
				sizes = append(sizes, spColSize(live, nz[j])...)
			}
			m.arena = newColArena(arenaSize(sizes...))
			slots = &slotArrays{
				rids:   arenaSlice[int64](m.arena, live),
				docID:  arenaSlice[int32](m.arena, live),
				scales: arenaSlice[float32](m.arena, live),
				lens:   [2][]float32{arenaSlice[float32](m.arena, live), arenaSlice[float32](m.arena, live)},
			}
			m.rids = append(slots.rids, m.rids...)
			m.docID = append(slots.docID, m.docID...)
			m.byCol = true
			m.cols = make([]spCol, dim)
			for j := range m.cols {
				m.cols[j] = newSpColIn(m.arena, live, nz[j])
			}
			for lo := 0; lo < live; lo += 64 {
				hi := min(lo+64, live)
				for j := range m.cols {
					m.cols[j].pushWord(vecs, dim, j, lo, hi)
				}
			}
		} else {
			m.reserve(live)
			m.vecs = m.vecs[:len(vecs)]
			for i, v := range vecs {
				m.vecs[i] = int8(v)
			}
		}
	}
	m.scales = d.F32s()
	if slots != nil && len(m.scales) == live {
		m.scales = append(slots.scales, m.scales...)
	}
	// the terms and posting lists are carved out of big blocks: a few
	// hundred allocations instead of two per term (~1M on the OpenJDK docs)
	var pa postingArena
	if slots != nil {
		// a big copy: all of them in one arena on huge pages, sized by
		// reading their counts ahead
		if n := postingsAhead(*d); n >= hugePostingsMin {
			pa.huge = newColArena(4 * n)
			m.postings = pa.huge
			pa.left = arenaSlice[posting](pa.huge, n)[:n]
		}
	}
	for f, fi := range []*fieldIndex{&m.all, &m.head} {
		fi.lens = d.F32s()
		if d.Err == nil && len(fi.lens) != live {
			return nil, fmt.Errorf("snapshot: %d lengths for %d rows", len(fi.lens), live)
		}
		if slots != nil {
			fi.lens = append(slots.lens[f], fi.lens...)
		}
		for _, l := range fi.lens {
			fi.totalLen += float64(l)
		}
		tfs := d.F32s()
		terms := int(d.U32())
		if d.Err != nil || terms > len(d.B) {
			return nil, snapfile.ErrShort
		}
		fi.terms.reserve(terms)
		fi.lists = make([][]posting, 0, terms)
		// the snapshot's frequency table gives the codes (its first
		// wideCode entries; the rest are coded wideCode)
		codes := make([]uint8, len(tfs))
		for k, tf := range tfs {
			codes[k] = fi.code(tf)
		}
		for range terms {
			b := d.Bytes()
			ts := unsafe.String(unsafe.SliceData(b), len(b)) // copied by add
			if _, ok := fi.terms.find(ts); ok {
				return nil, errors.New("snapshot: a term twice")
			}
			term := fi.terms.add(ts)
			n := d.Uvarint()
			if d.Err != nil || n > uint64(len(d.B)/2) { // two bytes at least a posting
				return nil, snapfile.ErrShort
			}
			size += termCost + int64(len(b)) + postingCost*int64(n)
			ps := pa.take(int(n))
			slot := int64(-1)
			for i := range ps {
				// rising: a slot repeated would count twice in BM25
				delta := d.Varint()
				slot += delta
				if delta < 1 || slot < 0 || slot >= int64(live) {
					return nil, fmt.Errorf("snapshot: slot %d of %d after a step of %d", slot, live, delta)
				}
				ps[i] = posting(uint32(slot) << 8)
			}
			for i := range ps {
				k := d.Uvarint()
				if k >= uint64(len(tfs)) {
					return nil, fmt.Errorf("snapshot: frequency %d of %d", k, len(tfs))
				}
				c := codes[k]
				if c == wideCode {
					if fi.wide == nil {
						fi.wide = map[wideKey]float32{}
					}
					fi.wide[wideKey{term, ps[i].slot()}] = tfs[k]
				}
				ps[i] |= posting(c)
			}
			if d.Err != nil {
				return nil, d.Err
			}
			fi.lists = append(fi.lists, ps)
		}
		fi.terms.shrink()
	}
	if d.Err != nil {
		return nil, d.Err
	}
	if len(d.B) != 0 || len(m.scales) != live {
		return nil, errors.New("snapshot: unexpected trailing data")
	}
	if m.arena != nil {
		m.arena.done()
	}
	if pa.huge != nil {
		pa.huge.done()
	}
	for s := range m.rids {
		m.docLen[m.docID[s]] += m.all.lens[s]
	}
	for _, n := range m.docLive {
		if n > 0 {
			m.livePage++
		}
	}
	m.live = live
	m.bytes = size
	return m, nil
}

// postingArena hands out posting lists from shared blocks: from one
// colArena (huge) holding them all when the copy is big (decodeSnapshot
// sizes it by postingsAhead), else from blocks of postingBlock.
type postingArena struct {
	block []posting
	huge  *colArena // the one arena, when sized ahead
	left  []posting // what is left of it
}

// hugePostingsMin is the fewest postings a copy read from its snapshot
// holds in one arena (a huge page of them); a test lowers it.
var hugePostingsMin = hugePage / 4

// postingsAhead is how many postings the two fields' lists at d hold,
// read ahead on a copy of d: their counts, the postings skipped as bytes;
// -1 when they do not parse (the decode proper then says why).
func postingsAhead(d snapfile.Decoder) int {
	total := 0
	for range 2 {
		d.Take(4 * d.Count(4)) // lengths
		d.Take(4 * d.Count(4)) // frequency table
		terms := int(d.U32())
		for range terms {
			d.Bytes()
			n := d.Uvarint()
			if d.Err != nil || n > uint64(len(d.B)/2) {
				return -1
			}
			// a slot step and a frequency a posting, each a varint
			// (its last byte below 0x80)
			k := 2 * int(n)
			i := 0
			for ; k > 0 && i < len(d.B); i++ {
				if d.B[i] < 0x80 {
					k--
				}
			}
			if k > 0 {
				return -1
			}
			d.B = d.B[i:]
			total += int(n)
		}
	}
	if d.Err != nil {
		return -1
	}
	return total
}

// postingBlock is how many postings a block holds.
const postingBlock = 1 << 15

// take returns a list of n postings whose capacity is its length, so an
// append to it (a later write) moves it rather than overwrite its
// neighbour.
func (a *postingArena) take(n int) []posting {
	if n <= len(a.left) {
		ps := a.left[:n:n]
		a.left = a.left[n:]
		return ps
	}
	a.left = nil // more than counted ahead: cannot be, the same bytes
	if n > postingBlock/4 {
		return make([]posting, n)
	}
	if len(a.block)+n > cap(a.block) {
		a.block = make([]posting, 0, postingBlock)
	}
	lo := len(a.block)
	a.block = a.block[:lo+n]
	return a.block[lo : lo+n : lo+n]
}

// readSnapshot returns the snapshot of collection at version, or nil when
// there is none that may be used.
func (x *Index) readSnapshot(collection string, version int64, dim int) *memColl {
	path := x.snapPath(collection)
	if path == "" {
		return nil
	}
	body := snapfile.Read(path, x.snapHeader(collection, version, dim))
	if body == nil {
		return nil
	}
	m, err := decodeSnapshot(body, dim, x.weights())
	if err != nil {
		return nil
	}
	m.version = version
	m.snapVersion.Store(version)
	return m
}

// writeSnapshot writes m's snapshot: encoded under x.writeMu, which every
// change to a search copy holds, so no write changes m meanwhile while
// searches go on (under x.cacheMu a waiting writer would hold them back for
// the whole encoding), and compressed into a temporary file as it is
// encoded; then renamed into place, so a crash leaves the old snapshot or
// the new one.
func (x *Index) writeSnapshot(collection string, m *memColl) error {
	path := x.snapPath(collection)
	if path == "" || snapfile.ExeIdentity() == "" {
		return nil
	}
	x.writeMu.Lock()
	x.cacheMu.RLock()
	current := x.cache[collection] == m
	x.cacheMu.RUnlock()
	if !current || m.snapVersion.Load() == m.version {
		x.writeMu.Unlock()
		return nil // replaced, deleted or written meanwhile
	}
	version := m.version
	header := x.snapHeader(collection, version, m.dim)
	// encoded, compressed and written to a temporary file under the lock,
	// as it goes: neither the encoded copy nor its compressed form is ever
	// whole in memory (the OpenJDK docs' compressed copy, ~30 MB grown by
	// doubling, was held beside the copy at the end of kgagent ingest, its
	// peak)
	e, err := snapfile.Create(path, header)
	if err != nil {
		x.writeMu.Unlock()
		return err
	}
	encodeSnapshot(e, m)
	tmp, err := e.Finish()
	x.writeMu.Unlock()
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // after the rename: no such file
	// A collection deleted meanwhile must not get its snapshot back.
	x.cacheMu.RLock()
	defer x.cacheMu.RUnlock()
	if x.cache[collection] != m {
		return nil
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	m.snapVersion.Store(version)
	return nil
}

// removeSnapshot deletes collection's snapshot (a deleted collection).
func (x *Index) removeSnapshot(collection string) {
	if p := x.snapPath(collection); p != "" {
		_ = os.Remove(p)
	}
}

// snapshotLater writes m's snapshot in the background (after a load from
// SQLite); Close waits for it.
func (x *Index) snapshotLater(collection string, m *memColl) {
	if x.snapPath(collection) == "" {
		return
	}
	x.snaps.Add(1)
	go func() {
		defer x.snaps.Done()
		_ = x.writeSnapshot(collection, m)
	}()
}

// flushSnapshots writes the snapshots that writes made stale (at Close).
func (x *Index) flushSnapshots() {
	x.snaps.Wait()
	x.cacheMu.RLock()
	stale := map[string]*memColl{}
	for c, m := range x.cache {
		if m.snapVersion.Load() != m.version {
			stale[c] = m
		}
	}
	x.cacheMu.RUnlock()
	for c, m := range stale {
		_ = x.writeSnapshot(c, m)
	}
}
