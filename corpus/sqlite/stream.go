package sqlite

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/kgagent/kgagent/internal/snapfile"
)

// Streamed snapshots. The end of kgagent ingest writes the snapshot of a
// collection whose search copy it did not keep (Keep's bound) by building
// the copy from SQLite and encoding it (Snapshot): the whole copy in memory
// at once, ~500 bytes a chunk (the OpenJDK docs' 134k chunks ~60 MB of live
// heap, ~85 MB while built; 422k chunks of the Python, OpenJDK, PostgreSQL
// and Rust docs together several hundred MB, the ingest's peak).
// streamSnapshot writes the same snapshot, byte for byte, from one read of
// the rows without the copy: the vectors go to a temporary file as read,
// and the posting lists, which the snapshot groups by term, are gathered
// in memory up to streamPostings postings, then written out as a run
// (term by term, in term order) to a temporary file; the snapshot's lists
// are the runs' parts of each term joined in run order (the runs hold
// consecutive slots). What stays in memory grows only with the terms and,
// by ~24 bytes, with the rows (ids, pages, scales, lengths).

// streamPostings is how many postings streamSnapshot gathers in memory (4
// bytes each, with their lists' growth up to twice that) before it writes
// them out as a run. A variable so that a test can lower it.
var streamPostings = 4 << 20

// streamTemp names streamSnapshot's temporary files (the vectors and the
// posting runs: ~50 MB on the OpenJDK docs). Their ".tmp-" prefix is the
// one snapfile's stale-file sweep removes, so the files of a process
// killed mid-snapshot are removed by a later snapshot's write, as the
// snapshot's own temporary file is.
const streamTemp = ".tmp-stream-*"

// errNotStreamed is streamSnapshot's answer when the collection is better
// written from its copy (held, or with a snapshot on disk that may be
// current, or too unusual for the streamed form): Snapshot then does as
// before.
var errNotStreamed = errors.New("snapshot not streamed")

// streamField is one field index's part of a streamed snapshot: its term
// table (numbers in order of first use, as fieldIndex's), its lengths by
// slot, its distinct term frequencies (coded as fieldIndex codes them, at
// most wideCode-1 of them), each term's postings count, the postings
// gathered since the last run, and the runs written.
type streamField struct {
	terms  termTable
	lens   []float32
	tfs    []float32
	tfCode map[uint32]uint8
	counts []uint32
	lists  [][]posting
	runs   *os.File
	w      *bufio.Writer
	ends   []int64 // each run's end offset in runs
	off    int64
}

// add adds slot's terms with their frequencies, as fieldIndex.add; false
// when the frequencies need more codes than a posting holds.
func (f *streamField) add(slot int32, terms []string, tf []float32, length float32) bool {
	for k, t := range terms {
		i, ok := f.terms.find(t)
		if !ok {
			i = f.terms.add(t)
			f.counts = append(f.counts, 0)
			f.lists = append(f.lists, nil)
		}
		bits := math.Float32bits(tf[k])
		c, ok := f.tfCode[bits]
		if !ok {
			if len(f.tfs) >= wideCode {
				return false
			}
			c = uint8(len(f.tfs))
			f.tfs = append(f.tfs, tf[k])
			f.tfCode[bits] = c
		}
		f.counts[i]++
		f.lists[i] = append(f.lists[i], posting(uint32(slot)<<8|uint32(c)))
	}
	f.lens = append(f.lens, length)
	return true
}

// flush writes the postings gathered as a run: for each term that has
// some, in term order, its number, their count and the postings.
func (f *streamField) flush() error {
	var b [2 * binary.MaxVarintLen64]byte
	var p [4]byte
	for i, ps := range f.lists {
		if len(ps) == 0 {
			continue
		}
		n := binary.PutUvarint(b[:], uint64(i))
		n += binary.PutUvarint(b[n:], uint64(len(ps)))
		_, _ = f.w.Write(b[:n])
		f.off += int64(n)
		for _, x := range ps {
			binary.LittleEndian.PutUint32(p[:], uint32(x))
			_, _ = f.w.Write(p[:])
		}
		f.off += 4 * int64(len(ps))
		f.lists[i] = nil
	}
	f.ends = append(f.ends, f.off)
	return f.w.Flush()
}

// runReader reads one run of a streamField back, term by term.
type runReader struct {
	r    *bufio.Reader
	term int64 // the next term's number; -1 at the run's end
	n    uint64
}

func (r *runReader) next() error {
	t, err := binary.ReadUvarint(r.r)
	if err == io.EOF {
		r.term = -1
		return nil
	}
	if err != nil {
		return err
	}
	r.term = int64(t)
	r.n, err = binary.ReadUvarint(r.r)
	return err
}

// encode writes the field's part of the snapshot, as encodeSnapshot does
// for a copy without tombstones: its lengths, its frequencies sorted, its
// terms and each one's postings, gathered from the runs.
func (f *streamField) encode(e *snapfile.Encoder) error {
	e.F32s(f.lens)
	bits := slices.Sorted(maps.Keys(f.tfCode))
	tfs := make([]float32, len(bits))
	idx := map[uint32]uint32{}
	for i, b := range bits {
		idx[b] = uint32(i)
		tfs[i] = math.Float32frombits(b)
	}
	e.F32s(tfs)
	var codeIdx [wideCode]uint32
	for c, tf := range f.tfs {
		codeIdx[c] = idx[math.Float32bits(tf)]
	}
	var readers []*runReader
	start := int64(0)
	for _, end := range f.ends {
		r := &runReader{r: bufio.NewReaderSize(io.NewSectionReader(f.runs, start, end-start), 64<<10)}
		if err := r.next(); err != nil {
			return err
		}
		readers = append(readers, r)
		start = end
	}
	e.U32(uint32(f.terms.len()))
	var ps []posting
	var p [4]byte
	for t := range f.terms.len() {
		e.Str(f.terms.term(int32(t)))
		e.Uvarint(uint64(f.counts[t]))
		ps = ps[:0]
		for _, r := range readers {
			if r.term != int64(t) {
				continue
			}
			for range r.n {
				if _, err := io.ReadFull(r.r, p[:]); err != nil {
					return err
				}
				ps = append(ps, posting(binary.LittleEndian.Uint32(p[:])))
			}
			if err := r.next(); err != nil {
				return err
			}
		}
		if len(ps) != int(f.counts[t]) {
			return fmt.Errorf("corpus index: streamed snapshot: term %d has %d postings in its runs, %d counted", t, len(ps), f.counts[t])
		}
		last := int32(-1)
		for _, x := range ps {
			e.Varint(int64(x.slot() - last))
			last = x.slot()
		}
		for _, x := range ps {
			e.Uvarint(uint64(codeIdx[x&0xff]))
		}
	}
	return nil
}

// streamSnapshot writes collection's snapshot from its rows in SQLite
// without building its search copy (see the comment at the top), unless
// the index holds the copy or a snapshot whose header is current is on
// disk (errNotStreamed: Snapshot does as before). It holds writeMu
// throughout, as a load does, so no write changes the rows meanwhile.
func (x *Index) streamSnapshot(ctx context.Context, collection string) error {
	path := x.snapPath(collection)
	if path == "" || snapfile.ExeIdentity() == "" {
		return errNotStreamed
	}
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	if x.Holds(collection) {
		return errNotStreamed
	}
	var dim int
	var version int64
	err := x.db.QueryRowContext(ctx, `SELECT dim, version FROM collections WHERE name = ?`, collection).Scan(&dim, &version)
	if err != nil {
		return errNotStreamed // none (nothing to write) or an error: as before
	}
	header := x.snapHeader(collection, version, dim)
	if headerCurrent(path, header) {
		return errNotStreamed
	}
	var count int
	if err := x.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(n), 0) FROM docs WHERE collection = ?`, collection).Scan(&count); err != nil {
		return dbErr(err, "snapshot collection")
	}
	if count >= maxSlots {
		return tooManyChunks(collection, count)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var temps []*os.File
	defer func() {
		for _, f := range temps {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	temp := func() (*os.File, *bufio.Writer, error) {
		f, err := os.CreateTemp(dir, streamTemp)
		if err != nil {
			return nil, nil, err
		}
		temps = append(temps, f)
		return f, bufio.NewWriterSize(f, 256<<10), nil
	}
	vecs, vw, err := temp()
	if err != nil {
		return err
	}
	var fields [2]streamField
	for i := range fields {
		f := &fields[i]
		f.tfCode = map[uint32]uint8{}
		if f.runs, f.w, err = temp(); err != nil {
			return err
		}
	}
	var (
		rids     []int64
		pageOf   []uint32
		pages    []string
		pageIdx  = map[string]uint32{}
		scales   []float32
		buffered int
		tmp      = make([]float32, 0, dim)
		q8       = make([]byte, 0, dim+4)
		qrow     []int8
	)
	if err := x.eachRow(ctx, collection, "snapshot collection", x.weights(), func(r *loadRow) error {
		if len(rids) >= maxSlots {
			return tooManyChunks(collection, len(rids)+1)
		}
		// the row's vector as the copy would hold it (appendQ8, appendVec)
		var row []byte
		var scale float32
		switch len(r.blob) {
		case dim + 4:
			row, scale = r.blob[4:], math.Float32frombits(binary.LittleEndian.Uint32(r.blob))
		case 4 * dim:
			tmp = appendVec(tmp[:0], r.blob)
			qrow, scale = quantize(qrow[:0], tmp)
			row = int8Bytes(qrow)
		default:
			var ok bool
			if q8, ok = unpackQ8(q8[:0], r.blob, dim); !ok {
				return nil
			}
			row, scale = q8[4:], math.Float32frombits(binary.LittleEndian.Uint32(q8))
		}
		_, _ = vw.Write(row)
		slot := int32(len(rids))
		rids = append(rids, r.rid)
		p, ok := pageIdx[r.doc]
		if !ok {
			p = uint32(len(pages))
			pageIdx[r.doc] = p
			pages = append(pages, r.doc)
		}
		pageOf = append(pageOf, p)
		scales = append(scales, scale)
		if !fields[0].add(slot, r.ct.terms, r.ct.tf, r.ct.length) || !fields[1].add(slot, r.ct.hterms, r.ct.htf, r.ct.hlength) {
			return errNotStreamed
		}
		buffered += len(r.ct.terms) + len(r.ct.hterms)
		if buffered >= streamPostings {
			for i := range fields {
				if err := fields[i].flush(); err != nil {
					return err
				}
			}
			buffered = 0
		}
		return nil
	}); err != nil {
		return err
	}
	for i := range fields {
		if err := fields[i].flush(); err != nil {
			return err
		}
	}
	if err := vw.Flush(); err != nil {
		return err
	}
	pageIdx = nil
	// encoded as encodeSnapshot encodes a copy loaded from these rows
	e, err := snapfile.Create(path, header)
	if err != nil {
		return err
	}
	live := len(rids)
	e.U32(uint32(live))
	e.U32(uint32(len(pages)))
	for _, p := range pages {
		e.Str(p)
	}
	prev := int64(0)
	for s, rid := range rids {
		e.Varint(rid - prev)
		e.Uvarint(uint64(pageOf[s]))
		prev = rid
	}
	e.U32(uint32(live * dim))
	vr := bufio.NewReaderSize(io.NewSectionReader(vecs, 0, int64(live*dim)), 256<<10)
	row := make([]byte, dim)
	for range live {
		if _, err := io.ReadFull(vr, row); err != nil {
			abandon(e)
			return err
		}
		e.Raw(row)
	}
	e.F32s(scales)
	for i := range fields {
		if err := fields[i].encode(e); err != nil {
			abandon(e)
			return err
		}
	}
	name, err := e.Finish()
	if err != nil {
		return err
	}
	defer os.Remove(name) // after the rename: no such file
	if err := os.Rename(name, path); err != nil {
		return err
	}
	x.sqlLoads.Add(1) // built from SQLite after all (Rebuilds), only not held
	return nil
}

// abandon finishes and removes the file of an encoding that failed.
func abandon(e *snapfile.Encoder) {
	if name, err := e.Finish(); err == nil {
		os.Remove(name)
	}
}

// int8Bytes is v's bytes.
func int8Bytes(v []int8) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(x)
	}
	return b
}

// headerCurrent says whether the file at path starts with header (a
// snapshot that may be current: Snapshot checks it whole).
func headerCurrent(path, header string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, len(header))
	if _, err := io.ReadFull(f, b); err != nil {
		return false
	}
	return string(b) == header
}
