// Package snapfile is the file format of the embedded stores' snapshots: an
// in-memory copy of data kept in SQLite (corpus/sqlite's search copy,
// graphrag/sqlite's name index) written beside the database so that a
// process can read it back instead of rebuilding it from every row.
//
// A snapshot file is a text header, the body compressed with zstd, the
// body's length (8 bytes) and its CRC-32 (4 bytes). An Encoder made by
// NewEncoder compresses the body as it is encoded, so a large body is never
// whole in memory while written. The
// header names everything the body depends on: the format, the executable
// that wrote it (Header adds ExeIdentity: another build may build the copy
// differently) and whatever the store adds (the collection, the version its
// rows were at). Read returns the body only when the header is exactly the
// one asked for and the checksum holds; anything else means "rebuild from
// SQLite". Files are written to a temporary name and renamed into place, so
// a crash leaves the old snapshot or the new one.
package snapfile

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Compression. The bodies repeat a lot (interned strings, posting lists,
// fixed-width ids): zstd at its default level makes the OpenJDK API docs'
// graph name index 165 -> 27 MB and its search copy 98 -> 37 MB (29 MB
// since its postings are varints, 67 MB before compression), for
// ~2.5 s of one core when written (at the end of an ingest) and well under a
// second when read back.
//
// Each Read decodes with a decoder of its own, closed after: a shared
// decoder keeps references to the last frame it decoded, its input and
// output, so the largest snapshot a process read (the OpenJDK docs' graph
// name index: 184 MB decoded, 27 MB on disk) stayed on the heap for good.
func decode(z, dst []byte) ([]byte, error) {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.DecodeAll(z, dst)
}

// trailer is the length of what follows the compressed body: its
// uncompressed length and its CRC-32.
const trailer = 8 + 4

// ExeIdentity names the running executable (path, size, modification
// time). Empty when it cannot be told; then Header returns "" and no
// snapshot is written or read.
var ExeIdentity = sync.OnceValue(func() string {
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

// Header is a snapshot header: magic (one line, ending in a newline), the
// executable's identity and each part on a line of its own. It is "" when
// the executable cannot be identified.
func Header(magic string, parts ...string) string {
	exe := ExeIdentity()
	if exe == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString(magic)
	b.WriteString(exe)
	b.WriteByte('\n')
	for _, p := range parts {
		b.WriteString(p)
		b.WriteByte('\n')
	}
	return b.String()
}

// Path is the snapshot file of key (a collection name) in dir.
func Path(dir, key string) string {
	return filepath.Join(dir, hex.EncodeToString([]byte(key)))
}

// Read returns the body of the snapshot at path when its header is header
// and its checksum holds; nil otherwise (no file, another header, a torn
// or corrupt file).
func Read(path, header string) []byte {
	if header == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) < len(header)+trailer || string(b[:len(header)]) != header {
		return nil
	}
	z, t := b[len(header):len(b)-trailer], b[len(b)-trailer:]
	n, sum := binary.LittleEndian.Uint64(t), binary.LittleEndian.Uint32(t[8:])
	var dst []byte
	if n <= uint64(1024*len(z)+1<<20) { // else a corrupt length: no allocation on its word
		dst = make([]byte, 0, n)
	}
	body, err := decode(z, dst)
	if err != nil || uint64(len(body)) != n || crc32.ChecksumIEEE(body) != sum {
		return nil
	}
	return body
}

// WriteTemp writes header and the snapshot body e holds (e is closed) to
// a new temporary file in path's directory (created if needed) and returns
// the file's name: the caller renames it to path (os.Rename) when the
// snapshot is still wanted, and removes it in any case (a no-op after the
// rename).
func WriteTemp(path, header string, e *Encoder) (string, error) {
	if header == "" {
		return "", errors.New("snapshot: executable not identified")
	}
	payload, err := e.Close()
	if err != nil {
		return "", err
	}
	tmp, err := createTemp(path)
	if err != nil {
		return "", err
	}
	w := bufio.NewWriterSize(tmp, 1<<20)
	_, _ = io.WriteString(w, header)
	_, _ = w.Write(payload)
	if err := w.Flush(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}

// createTemp creates a new temporary file in path's directory (created
// if needed), for a snapshot that is renamed to path once complete, first
// removing the temporary files killed writers left there (removeStale).
func createTemp(path string) (*os.File, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	removeStale(dir)
	return os.CreateTemp(dir, ".tmp-*")
}

// staleTemp is how long a temporary file of WriteTemp or Create goes
// unwritten before removeStale takes it for one a killed process left: one
// being written changes at least every few seconds (Create's compressed
// output), and a snapshot is written in well under a minute.
const staleTemp = time.Hour

// removeStale removes the temporary files in dir that processes killed
// while writing a snapshot left behind (Create holds its file for the
// whole encoding, ~2.5 s on the OpenJDK docs' graph): those not modified
// for staleTemp. Errors are ignored: the files are only wasted space.
func removeStale(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, ent := range ents {
		if !strings.HasPrefix(ent.Name(), ".tmp-") || !ent.Type().IsRegular() {
			continue
		}
		if info, err := ent.Info(); err == nil && time.Since(info.ModTime()) > staleTemp {
			_ = os.Remove(filepath.Join(dir, ent.Name()))
		}
	}
}

// spillSize is how many encoded bytes a streaming Encoder buffers before
// compressing them.
const spillSize = 1 << 20

// Encoder appends little-endian values to B. One made by NewEncoder moves
// B into its compressor whenever B reaches spillSize, so only the
// compressed body and a small buffer are in memory; a zero Encoder keeps
// the whole body in B (Close compresses it at once).
type Encoder struct {
	B []byte

	zw  *zstd.Encoder // nil: not streaming
	z   bytes.Buffer  // the compressed body so far (not for Create's)
	crc hash.Hash32
	n   uint64 // bytes moved into zw
	err error

	// Create's: the temporary file the compressed body goes to as it
	// is made, through w
	f *os.File
	w *bufio.Writer
}

// Create starts a snapshot written straight to a file: a new temporary
// file in path's directory (created if needed) holding header, to which
// the returned Encoder moves the body compressed as it is encoded, so that
// neither the body nor its compressed form is ever whole in memory (the
// OpenJDK API docs' graph name index: 23 MB compressed, held whole and
// grown by doubling before). Finish completes the file; the caller renames
// it to path (os.Rename) when the snapshot is still wanted, and removes it
// in any case. A failed Create leaves no file.
func Create(path, header string) (*Encoder, error) {
	if header == "" {
		return nil, errors.New("snapshot: executable not identified")
	}
	f, err := createTemp(path)
	if err != nil {
		return nil, err
	}
	e := &Encoder{B: make([]byte, 0, spillSize+4096), crc: crc32.NewIEEE(), f: f, w: bufio.NewWriterSize(f, 1<<20)}
	_, _ = io.WriteString(e.w, header)
	e.zw, e.err = zstd.NewWriter(e.w, encoderOptions...)
	if e.err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, e.err
	}
	return e, nil
}

// Finish completes the file of an Encoder made by Create (the body's end,
// its length and checksum) and closes it, returning its name. On an error
// the file is removed.
func (e *Encoder) Finish() (string, error) {
	if e.f == nil {
		return "", errors.New("snapshot: Finish of an Encoder that Create did not make")
	}
	e.put(e.B)
	e.B = nil
	if e.err == nil {
		e.err = e.zw.Close()
	}
	if e.err == nil {
		var t [trailer]byte
		binary.LittleEndian.PutUint64(t[:], e.n)
		binary.LittleEndian.PutUint32(t[8:], e.crc.Sum32())
		_, _ = e.w.Write(t[:])
		e.err = e.w.Flush()
	}
	if err := e.f.Close(); e.err == nil {
		e.err = err
	}
	name := e.f.Name()
	if e.err != nil {
		os.Remove(name)
		return "", e.err
	}
	return name, nil
}

// NewEncoder returns an Encoder that compresses the body as it goes.
func NewEncoder() *Encoder {
	e := &Encoder{B: make([]byte, 0, spillSize+4096), crc: crc32.NewIEEE()}
	// A 2 MiB window instead of the level's 8 MiB: the encoder's history
	// buffers are sized by it (a heap profile at the peak of an OpenJDK
	// docs ingest, while the graph's snapshot was written, held 24 MB of
	// them), and the bodies grow 0.2% (that graph name index 27.08 ->
	// 27.14 MB, its search copy 36.68 -> 36.77 MB).
	e.zw, e.err = zstd.NewWriter(&e.z, encoderOptions...)
	return e
}

// encoderOptions are the compressor's settings (see NewEncoder).
var encoderOptions = []zstd.EOption{zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(2 << 20)}

// spill moves B into the compressor once it is big enough.
func (e *Encoder) spill() {
	if e.zw != nil && len(e.B) >= spillSize {
		e.put(e.B)
		e.B = e.B[:0]
	}
}

// put compresses p.
func (e *Encoder) put(p []byte) {
	if e.err != nil || len(p) == 0 {
		return
	}
	e.crc.Write(p)
	e.n += uint64(len(p))
	_, e.err = e.zw.Write(p)
}

// Close finishes the body and returns it as stored after the header:
// compressed, then its length and checksum.
func (e *Encoder) Close() ([]byte, error) {
	if e.f != nil {
		return nil, errors.New("snapshot: Close of an Encoder that Create made (Finish it)")
	}
	if e.zw == nil {
		s := NewEncoder()
		s.put(e.B)
		e.B = nil
		return s.Close()
	}
	e.put(e.B)
	e.B = nil
	if e.err == nil {
		e.err = e.zw.Close()
	}
	if e.err != nil {
		return nil, e.err
	}
	out := e.z.Bytes()
	out = binary.LittleEndian.AppendUint64(out, e.n)
	return binary.LittleEndian.AppendUint32(out, e.crc.Sum32()), nil
}

// U64 appends v.
func (e *Encoder) U64(v uint64) { e.B = binary.LittleEndian.AppendUint64(e.B, v); e.spill() }

// U32 appends v.
func (e *Encoder) U32(v uint32) { e.B = binary.LittleEndian.AppendUint32(e.B, v); e.spill() }

// F32 appends v.
func (e *Encoder) F32(v float32) { e.U32(math.Float32bits(v)) }

// Uvarint appends v as a varint (1 byte below 128, one more per 7 bits).
func (e *Encoder) Uvarint(v uint64) { e.B = binary.AppendUvarint(e.B, v); e.spill() }

// Varint appends v as a zig-zag varint (small magnitudes take 1 byte).
func (e *Encoder) Varint(v int64) { e.B = binary.AppendVarint(e.B, v); e.spill() }

// Str appends s with its length.
func (e *Encoder) Str(s string) { e.U32(uint32(len(s))); e.B = append(e.B, s...); e.spill() }

// Bytes appends p with its length.
func (e *Encoder) Bytes(p []byte) { e.U32(uint32(len(p))); e.Raw(p) }

// Raw appends p as it is (a caller that wrote its length before).
func (e *Encoder) Raw(p []byte) {
	if e.zw != nil && len(p) >= spillSize {
		e.put(e.B)
		e.B = e.B[:0]
		e.put(p)
		return
	}
	e.B = append(e.B, p...)
	e.spill()
}

// F32s appends v with its length.
func (e *Encoder) F32s(v []float32) {
	e.U32(uint32(len(v)))
	for _, f := range v {
		e.F32(f)
	}
}

// ErrShort is the error of a Decoder that ran out of bytes.
var ErrShort = errors.New("snapshot is truncated")

// Decoder reads what Encoder wrote; the first error sticks in Err and
// every later read returns zero values.
type Decoder struct {
	B   []byte
	Err error
}

// Take returns the next n bytes (nil once out of bytes).
func (d *Decoder) Take(n int) []byte {
	if d.Err != nil {
		return nil // the first error sticks
	}
	if n < 0 || n > len(d.B) {
		d.Err = ErrShort
		return nil
	}
	p := d.B[:n]
	d.B = d.B[n:]
	return p
}

// U32 reads a uint32.
func (d *Decoder) U32() uint32 {
	p := d.Take(4)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(p)
}

// U64 reads a uint64.
func (d *Decoder) U64() uint64 {
	p := d.Take(8)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

// ErrVarint is the error of a Decoder that met a malformed varint: one
// running past the buffer or past 64 bits, or one longer than Encoder
// writes it (a last byte of 0), so a body that decodes encodes back to the
// same bytes.
var ErrVarint = errors.New("snapshot holds a malformed varint")

// Uvarint reads what Encoder.Uvarint wrote.
func (d *Decoder) Uvarint() uint64 {
	if d.Err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.B)
	if n <= 0 || (n > 1 && d.B[n-1] == 0) {
		d.Err = ErrVarint
		return 0
	}
	d.B = d.B[n:]
	return v
}

// Varint reads what Encoder.Varint wrote.
func (d *Decoder) Varint() int64 {
	u := d.Uvarint()
	v := int64(u >> 1) // zig-zag, as binary.Varint
	if u&1 != 0 {
		v = ^v
	}
	return v
}

// F32 reads a float32.
func (d *Decoder) F32() float32 { return math.Float32frombits(d.U32()) }

// Str reads a string.
func (d *Decoder) Str() string { return string(d.Take(int(d.U32()))) }

// Bytes reads a byte slice (aliasing the decoder's buffer).
func (d *Decoder) Bytes() []byte { return d.Take(int(d.U32())) }

// Count reads a length that each of its items needs at least min bytes for,
// failing (and returning 0) when the rest of the buffer cannot hold them.
func (d *Decoder) Count(min int) int {
	n := int(d.U32())
	if d.Err == nil && n*max(min, 1) > len(d.B) {
		d.Err = ErrShort
	}
	if d.Err != nil {
		return 0
	}
	return n
}

// F32s reads a []float32.
func (d *Decoder) F32s() []float32 {
	n := d.Count(4)
	if d.Err != nil {
		return nil
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = d.F32()
	}
	return out
}
