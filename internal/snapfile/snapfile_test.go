package snapfile_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/kgagent/kgagent/internal/snapfile"
	"github.com/klauspost/compress/zstd"
)

// TestWriteRead: a body comes back under its own header only, and not once
// a byte of the file changed.
func TestWriteRead(t *testing.T) {
	path := snapfile.Path(filepath.Join(t.TempDir(), "snap"), "coll")
	h := snapfile.Header("test-snapshot-1\n", `"coll"`, "7")
	if h == "" {
		t.Skip("executable not identified")
	}
	e := &snapfile.Encoder{}
	e.Str("hello")
	e.U64(42)
	e.F32s([]float32{1.5, -2})
	tmp, err := snapfile.WriteTemp(path, h, e)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	body := snapfile.Read(path, h)
	d := &snapfile.Decoder{B: body}
	if s, n, fs := d.Str(), d.U64(), d.F32s(); d.Err != nil || s != "hello" || n != 42 || !slices.Equal(fs, []float32{1.5, -2}) || len(d.B) != 0 {
		t.Fatalf("read back %q %d %v (err %v, %d bytes left)", s, n, fs, d.Err, len(d.B))
	}
	if d.U32(); d.Err != snapfile.ErrShort {
		t.Errorf("reading past the end: %v, want ErrShort", d.Err)
	}
	if snapfile.Read(path, snapfile.Header("test-snapshot-1\n", `"coll"`, "8")) != nil {
		t.Error("body returned under another header")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-6] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if snapfile.Read(path, h) != nil {
		t.Error("corrupt body returned")
	}
}

// TestCompressed: a body encoded by a streaming Encoder (NewEncoder:
// values, a raw block bigger than its buffer, more values) is stored
// compressed — a repetitive 3 MiB body in a small part of that — and reads
// back byte for byte what a plain Encoder holds for the same calls.
func TestCompressed(t *testing.T) {
	path := snapfile.Path(filepath.Join(t.TempDir(), "snap"), "coll")
	h := snapfile.Header("test-snapshot-1\n", `"coll"`)
	if h == "" {
		t.Skip("executable not identified")
	}
	block := make([]byte, 3<<19)
	for i := range block {
		block[i] = byte(i % 251)
	}
	fill := func(e *snapfile.Encoder) {
		for i := range 1 << 18 {
			e.U32(uint32(i % 1000))
		}
		e.Bytes(block)
		e.Str("tail")
		e.F32s([]float32{1, 2, 3})
	}
	plain := &snapfile.Encoder{}
	fill(plain)
	want := slices.Clone(plain.B)
	e := snapfile.NewEncoder()
	fill(e)
	if len(e.B) >= len(want)/2 {
		t.Errorf("streaming encoder holds %d of %d bytes", len(e.B), len(want))
	}
	tmp, err := snapfile.WriteTemp(path, h, e)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > int64(len(want))/10 {
		t.Errorf("%d-byte body stored in %d bytes: not compressed", len(want), fi.Size())
	}
	if got := snapfile.Read(path, h); !slices.Equal(got, want) {
		t.Errorf("read back %d bytes, want the %d written", len(got), len(want))
	}
}

// TestReadKeepsNothing: once a caller drops the body Read returned, the
// body and the file's bytes are garbage — no decoder keeps them. Serve read
// the OpenJDK docs' graph snapshot (184 MB decompressed, 27 MB on disk)
// and the shared zstd decoder held both for the life of the process.
func TestReadKeepsNothing(t *testing.T) {
	path := snapfile.Path(filepath.Join(t.TempDir(), "snap"), "coll")
	h := snapfile.Header("test-snapshot-1\n", `"coll"`)
	if h == "" {
		t.Skip("executable not identified")
	}
	const size = 16 << 20
	e := snapfile.NewEncoder()
	var x uint64 = 1
	for range size / 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		e.U64(x % 100000) // compressible, not trivially
	}
	tmp, err := snapfile.WriteTemp(path, h, e)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	body := snapfile.Read(path, h)
	if len(body) != size {
		t.Fatalf("read %d bytes, want %d", len(body), size)
	}
	body = nil
	_ = body
	if after := heap(); after > before+size/8 {
		t.Fatalf("heap %d MB after the body was dropped, %d MB before the read: something keeps it", after>>20, before>>20)
	}
}

// TestEncoderWindow: a streaming Encoder compresses with a 2 MiB window
// (the level's default, 8 MiB, kept ~24 MB of history buffers alive while
// an ingest wrote its snapshots), and the body still reads back.
func TestEncoderWindow(t *testing.T) {
	e := snapfile.NewEncoder()
	for i := range 1 << 18 {
		e.U32(uint32(i * 2654435761))
	}
	payload, err := e.Close()
	if err != nil {
		t.Fatal(err)
	}
	var h zstd.Header
	if err := h.Decode(payload); err != nil {
		t.Fatal(err)
	}
	if h.WindowSize == 0 || h.WindowSize > 2<<20 {
		t.Errorf("window %d bytes, want at most 2 MiB", h.WindowSize)
	}
	d, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	body, err := d.DecodeAll(payload[:len(payload)-12], nil) // less the length and CRC
	if err != nil || len(body) != 1<<20 {
		t.Fatalf("decoded %d bytes, %v", len(body), err)
	}
}

// TestVarints: varints read back as written, at their widths, and a
// truncated, over-long or not minimally encoded one stops the decoder with
// ErrVarint.
func TestVarints(t *testing.T) {
	e := &snapfile.Encoder{}
	us := []uint64{0, 1, 127, 128, 1 << 20, 1<<64 - 1}
	is := []int64{0, -1, 1, -64, 63, -1 << 40, 1<<63 - 1, -1 << 63}
	for _, v := range us {
		e.Uvarint(v)
	}
	for _, v := range is {
		e.Varint(v)
	}
	if want := 1 + 1 + 1 + 2 + 3 + 10 + 1 + 1 + 1 + 1 + 1 + 6 + 10 + 10; len(e.B) != want {
		t.Errorf("encoded %d bytes, want %d", len(e.B), want)
	}
	d := &snapfile.Decoder{B: e.B}
	for _, v := range us {
		if got := d.Uvarint(); got != v {
			t.Errorf("Uvarint %d, want %d", got, v)
		}
	}
	for _, v := range is {
		if got := d.Varint(); got != v {
			t.Errorf("Varint %d, want %d", got, v)
		}
	}
	if d.Err != nil || len(d.B) != 0 {
		t.Fatalf("err %v, %d bytes left", d.Err, len(d.B))
	}
	for _, bad := range [][]byte{{0x80}, {0xff, 0xff}, {0x80, 0x00}, {0xff, 0x80, 0x00}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}} {
		d := &snapfile.Decoder{B: bad}
		if v := d.Uvarint(); v != 0 || d.Err != snapfile.ErrVarint {
			t.Errorf("Uvarint(% x) = %d, %v; want 0, ErrVarint", bad, v, d.Err)
		}
		if d.U32(); d.Err != snapfile.ErrVarint {
			t.Errorf("error not kept: %v", d.Err)
		}
		d = &snapfile.Decoder{B: bad}
		if v := d.Varint(); v != 0 || d.Err != snapfile.ErrVarint {
			t.Errorf("Varint(% x) = %d, %v; want 0, ErrVarint", bad, v, d.Err)
		}
	}
}

// TestCreateStreamsToFile: an Encoder made by Create writes the file that
// WriteTemp writes for the same body, byte for byte, while holding a small
// part of the compressed body in memory: 32 MiB that do not compress (the
// file is as big) leave the heap under 12 MiB above where it was, where
// NewEncoder's holds the whole compressed body (32 MiB or more).
func TestCreateStreamsToFile(t *testing.T) {
	dir := t.TempDir()
	path := snapfile.Path(dir, "coll")
	h := snapfile.Header("test-snapshot-1\n", `"coll"`)
	if h == "" {
		t.Skip("executable not identified")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	chunk := make([]byte, 1<<16)
	fill := func(e *snapfile.Encoder) {
		r := rand.New(rand.NewPCG(3, 4))
		for range 512 { // 32 MiB
			for i := range chunk {
				chunk[i] = byte(r.Uint32())
			}
			e.Raw(chunk)
			e.U32(rng.Uint32() % 7)
		}
		e.Str("tail")
	}
	var before, peak runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	e, err := snapfile.Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	fill(e)
	runtime.GC()
	runtime.ReadMemStats(&peak)
	tmp, err := e.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if grew := int64(peak.HeapAlloc) - int64(before.HeapAlloc); grew > 12<<20 {
		t.Errorf("heap grew %d bytes while encoding 32 MiB to a file", grew)
	}
	got, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 32<<20 {
		t.Fatalf("file of %d bytes: the test's body compressed", len(got))
	}
	rng = rand.New(rand.NewPCG(1, 2))
	w := snapfile.NewEncoder()
	fill(w)
	tmp2, err := snapfile.WriteTemp(snapfile.Path(dir, "other"), h, w)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(tmp2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Create's file (%d bytes) differs from WriteTemp's (%d)", len(got), len(want))
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if body := snapfile.Read(path, h); len(body) != 32<<20+512*4+4+4 {
		t.Errorf("read back %d bytes", len(body))
	}
	if _, err := (&snapfile.Encoder{}).Finish(); err == nil {
		t.Error("Finish of a plain Encoder: no error")
	}
	if _, err := snapfile.Create(path, ""); err == nil {
		t.Error("Create without a header: no error")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("%d files left in the directory, want the snapshot and WriteTemp's", len(ents))
	}
}

// TestStaleTempFilesRemoved: a temporary file left by a process killed
// while writing a snapshot (Create holds its file for the whole encoding)
// is removed by the next write in its directory once it is older than
// staleTemp; one written to lately (another process's, in progress) and
// other files are left alone.
func TestStaleTempFilesRemoved(t *testing.T) {
	dir := t.TempDir()
	path := snapfile.Path(dir, "coll")
	h := snapfile.Header("test-snapshot-1\n", `"coll"`)
	if h == "" {
		t.Skip("executable not identified")
	}
	old, fresh, other := filepath.Join(dir, ".tmp-123"), filepath.Join(dir, ".tmp-456"), filepath.Join(dir, "keep")
	for _, f := range []string{old, fresh, other} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-2 * time.Hour)
	for _, f := range []string{old, other} {
		if err := os.Chtimes(f, long, long); err != nil {
			t.Fatal(err)
		}
	}
	for _, create := range []bool{true, false} {
		var tmp string
		var err error
		if create {
			e, cerr := snapfile.Create(path, h)
			if cerr != nil {
				t.Fatal(cerr)
			}
			e.Str("body")
			tmp, err = e.Finish()
		} else {
			e := snapfile.NewEncoder()
			e.Str("body")
			tmp, err = snapfile.WriteTemp(path, h, e)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(old); !os.IsNotExist(err) {
			t.Errorf("create %v: the stale temporary file is still there (%v)", create, err)
		}
		for _, f := range []string{fresh, other, path} {
			if _, err := os.Stat(f); err != nil {
				t.Errorf("create %v: %s: %v", create, filepath.Base(f), err)
			}
		}
		if err := os.WriteFile(old, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(old, long, long); err != nil {
			t.Fatal(err)
		}
	}
}
