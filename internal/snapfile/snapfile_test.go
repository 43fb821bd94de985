package snapfile_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kgagent/kgagent/internal/snapfile"
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
	tmp, err := snapfile.WriteTemp(path, h, e.B)
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
