package sqlite

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
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

const snapMagic = "kgagent-corpus-snapshot-1\n"

// exeIdentity names the running executable: snapshots of another build are
// not trusted. Empty when it cannot be told; then no snapshot is used.
var exeIdentity = sync.OnceValue(func() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	fi, err := os.Stat(p)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s|%d|%d", p, fi.Size(), fi.ModTime().UnixNano())
})

// snapPath is the snapshot file of collection; "" for in-memory indexes.
func (x *Index) snapPath(collection string) string {
	if x.cfg.Path == "" || x.cfg.NoSnapshots {
		return ""
	}
	return filepath.Join(x.cfg.Path+"-snap", hex.EncodeToString([]byte(collection)))
}

// snapHeader is what a snapshot must match to be used.
func (x *Index) snapHeader(collection string, version int64, dim int) string {
	return fmt.Sprintf("%s%s\n%q\n%d %d %g %g %g\n", snapMagic, exeIdentity(), collection, version, dim,
		x.cfg.TitleWeight, x.cfg.HeadingWeight, x.cfg.BodyWeight)
}

// encoder appends little-endian values to a buffer.
type encoder struct{ b []byte }

func (e *encoder) u64(v uint64)  { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *encoder) u32(v uint32)  { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *encoder) f32(v float32) { e.u32(math.Float32bits(v)) }
func (e *encoder) str(s string)  { e.u32(uint32(len(s))); e.b = append(e.b, s...) }
func (e *encoder) i8s(v []int8)  { e.u32(uint32(len(v))); e.b = append(e.b, int8Bytes(v)...) }
func (e *encoder) f32s(v []float32) {
	e.u32(uint32(len(v)))
	for _, f := range v {
		e.f32(f)
	}
}

func int8Bytes(v []int8) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(x)
	}
	return b
}

// encodeSnapshot writes the live slots of m, renumbered densely, so that a
// snapshot never carries tombstones.
func encodeSnapshot(m *memColl) []byte {
	newSlot := make([]int32, len(m.rids))
	live := 0
	for s := range m.rids {
		if m.docs[s] == "" {
			newSlot[s] = -1
			continue
		}
		newSlot[s] = int32(live)
		live++
	}
	e := &encoder{b: make([]byte, 0, live*(m.dim+64))}
	e.u32(uint32(live))
	// pages: the doc URLs of live slots, each once
	pageOf := map[string]uint32{}
	var pages []string
	for s, d := range m.docs {
		if newSlot[s] < 0 {
			continue
		}
		if _, ok := pageOf[d]; !ok {
			pageOf[d] = uint32(len(pages))
			pages = append(pages, d)
		}
	}
	e.u32(uint32(len(pages)))
	for _, p := range pages {
		e.str(p)
	}
	vecs := make([]int8, 0, live*m.dim)
	scales := make([]float32, 0, live)
	allLens := make([]float32, 0, live)
	headLens := make([]float32, 0, live)
	for s, rid := range m.rids {
		if newSlot[s] < 0 {
			continue
		}
		e.u64(uint64(rid))
		e.u32(pageOf[m.docs[s]])
		vecs = append(vecs, m.vecs[s*m.dim:(s+1)*m.dim]...)
		scales = append(scales, m.scales[s])
		allLens = append(allLens, m.all.lens[s])
		headLens = append(headLens, m.head.lens[s])
	}
	e.i8s(vecs)
	e.f32s(scales)
	for _, f := range []struct {
		fi   *fieldIndex
		lens []float32
	}{{&m.all, allLens}, {&m.head, headLens}} {
		e.f32s(f.lens)
		// terms left only in tombstones are dropped, as a reload would
		liveTerms := map[string]int{}
		for term, ps := range f.fi.post {
			for _, p := range ps {
				if newSlot[p.slot] >= 0 {
					liveTerms[term]++
				}
			}
		}
		e.u32(uint32(len(liveTerms)))
		for term, ps := range f.fi.post {
			n := liveTerms[term]
			if n == 0 {
				continue
			}
			e.str(term)
			e.u32(uint32(n))
			for _, p := range ps {
				if s := newSlot[p.slot]; s >= 0 {
					e.u32(uint32(s))
					e.f32(p.tf)
				}
			}
		}
	}
	return e.b
}

// decoder reads what encoder wrote; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

var errSnapshotShort = errors.New("snapshot is truncated")

func (d *decoder) take(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.b) {
		d.err = errSnapshotShort
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}
func (d *decoder) u32() uint32 {
	p := d.take(4)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(p)
}
func (d *decoder) u64() uint64 {
	p := d.take(8)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}
func (d *decoder) f32() float32 { return math.Float32frombits(d.u32()) }
func (d *decoder) str() string  { return string(d.take(int(d.u32()))) }
func (d *decoder) f32s() []float32 {
	n := int(d.u32())
	if d.err != nil || n*4 > len(d.b) {
		d.err = errSnapshotShort
		return nil
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = d.f32()
	}
	return out
}

// decodeSnapshot rebuilds a memColl from encodeSnapshot's bytes.
func decodeSnapshot(b []byte, dim int, weights [3]float32) (*memColl, error) {
	d := &decoder{b: b}
	live := int(d.u32())
	if d.err != nil || live < 0 || live > len(b) {
		return nil, errSnapshotShort
	}
	m := newMemColl(dim, weights)
	nPages := int(d.u32())
	if d.err != nil || nPages > len(b) {
		return nil, errSnapshotShort
	}
	pages := make([]string, nPages)
	for i := range pages {
		pages[i] = d.str()
	}
	m.rids = make([]int64, live)
	m.docs = make([]string, live)
	m.docID = make([]int32, live)
	m.pos = make(map[int64]int32, live)
	m.docLen = make([]float32, nPages)
	m.docLive = make([]int32, nPages)
	for i := range pages {
		m.docIdx[pages[i]] = int32(i)
	}
	for s := 0; s < live && d.err == nil; s++ {
		rid := int64(d.u64())
		p := d.u32()
		if int(p) >= nPages {
			return nil, fmt.Errorf("snapshot: page %d of %d", p, nPages)
		}
		m.rids[s], m.docs[s], m.docID[s] = rid, pages[p], int32(p)
		m.pos[rid] = int32(s)
		m.docLive[p]++
	}
	vecs := d.take(int(d.u32()))
	if d.err == nil && len(vecs) != live*dim {
		return nil, fmt.Errorf("snapshot: %d vector bytes for %d rows of %d", len(vecs), live, dim)
	}
	m.vecs = make([]int8, len(vecs))
	for i, v := range vecs {
		m.vecs[i] = int8(v)
	}
	m.scales = d.f32s()
	for _, fi := range []*fieldIndex{&m.all, &m.head} {
		fi.lens = d.f32s()
		if d.err == nil && len(fi.lens) != live {
			return nil, fmt.Errorf("snapshot: %d lengths for %d rows", len(fi.lens), live)
		}
		for _, l := range fi.lens {
			fi.totalLen += float64(l)
		}
		terms := int(d.u32())
		if d.err != nil || terms > len(d.b) {
			return nil, errSnapshotShort
		}
		fi.post = make(map[string][]posting, terms)
		for range terms {
			term := d.str()
			n := int(d.u32())
			if d.err != nil || n*8 > len(d.b) {
				return nil, errSnapshotShort
			}
			ps := make([]posting, n)
			for i := range ps {
				slot := d.u32()
				if int(slot) >= live {
					return nil, fmt.Errorf("snapshot: slot %d of %d", slot, live)
				}
				ps[i] = posting{int32(slot), d.f32()}
			}
			fi.post[term] = ps
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 || len(m.scales) != live {
		return nil, errors.New("snapshot: unexpected trailing data")
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
	// the column-major copy of the vectors
	for j := range m.cols {
		col := make([]int8, live)
		for s := range live {
			col[s] = m.vecs[s*dim+j]
		}
		m.cols[j] = col
	}
	return m, nil
}

// readSnapshot returns the snapshot of collection at version, or nil when
// there is none that may be used.
func (x *Index) readSnapshot(collection string, version int64, dim int) *memColl {
	path := x.snapPath(collection)
	if path == "" || exeIdentity() == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	header := x.snapHeader(collection, version, dim)
	if len(b) < len(header)+4 || string(b[:len(header)]) != header {
		return nil
	}
	body, sum := b[len(header):len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil
	}
	m, err := decodeSnapshot(body, dim, [3]float32{float32(x.cfg.TitleWeight), float32(x.cfg.HeadingWeight), float32(x.cfg.BodyWeight)})
	if err != nil {
		return nil
	}
	m.version = version
	m.snapVersion.Store(version)
	return m
}

// writeSnapshot writes m's snapshot: encoded under x.cacheMu (read), so no
// write changes m meanwhile, then written to a temporary file renamed into
// place without the lock held, so a crash leaves the old snapshot or the new
// one and searches and writes do not wait for the disk.
func (x *Index) writeSnapshot(collection string, m *memColl) error {
	path := x.snapPath(collection)
	if path == "" || exeIdentity() == "" {
		return nil
	}
	x.cacheMu.RLock()
	if x.cache[collection] != m || m.snapVersion.Load() == m.version {
		x.cacheMu.RUnlock()
		return nil // replaced, deleted or written meanwhile
	}
	version := m.version
	header := x.snapHeader(collection, version, m.dim)
	body := encodeSnapshot(m)
	x.cacheMu.RUnlock()

	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename: no such file
	w := bufio.NewWriterSize(tmp, 1<<20)
	_, _ = io.WriteString(w, header)
	_, _ = w.Write(body)
	_, _ = w.Write(binary.LittleEndian.AppendUint32(nil, crc32.ChecksumIEEE(body)))
	if err := w.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// A collection deleted meanwhile must not get its snapshot back.
	x.cacheMu.RLock()
	defer x.cacheMu.RUnlock()
	if x.cache[collection] != m {
		return nil
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
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
