package sqlite

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// TestCorruptBodyLeftOut: a chunk whose stored body does not decode is left
// out of the search copy (counted), and the rest of the collection stays
// searchable; DocumentChunks returns the document's other chunks. Before,
// one such row failed the search copy's load, so every search of the
// collection failed until a re-ingest.
func TestCorruptBodyLeftOut(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "index.db")
	x, err := Open(Config{Path: path, NoSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"alpha", "bravo", "charlie"}
	for i, w := range words {
		url := fmt.Sprintf("https://x/%d", i)
		var cs []kgagent.Chunk
		var vs [][]float32
		for j := range 2 {
			text := strings.Repeat(w+" appears in this body of text, over and over. ", 4) + fmt.Sprint(j)
			cs = append(cs, kgagent.Chunk{ID: corpus.ChunkID("c", url, j), Collection: "c", DocURL: url, URL: url, Title: "t", Text: text, Ordinal: j})
			vs = append(vs, []float32{1, float32(i)})
		}
		if err := x.ReplaceDocument(ctx, "c", url, cs, vs); err != nil {
			t.Fatal(err)
		}
	}
	x.Close()

	x, err = Open(Config{Path: path, NoSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	// the first chunk of document 1: an S2 block whose data is garbage
	res, err := x.db.Exec(`UPDATE chunks SET body = X'01ffffffff' WHERE rid IN (SELECT k.rid FROM docs d JOIN chunks k ON k.rid BETWEEN d.lo AND d.hi WHERE d.doc_url = 'https://x/1') AND ordinal = 0 AND typeof(body) = 'blob'`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("corrupted %d rows, want 1 (bodies not stored as blobs?)", n)
	}
	for _, w := range words {
		hits, err := x.Search(ctx, corpus.Query{Collection: "c", Text: w, K: 10, Mode: corpus.ModeKeyword})
		if err != nil {
			t.Fatalf("search %q: %v", w, err)
		}
		want := 2
		if w == "bravo" {
			want = 1
		}
		if len(hits) != want {
			t.Errorf("search %q: %d hits, want %d", w, len(hits), want)
		}
	}
	if n := x.corruptBodies.Load(); n != 1 {
		t.Errorf("%d corrupt bodies counted, want 1", n)
	}
	cs, err := x.DocumentChunks(ctx, "c", "https://x/1")
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Ordinal != 1 || !strings.HasPrefix(cs[0].Text, "bravo") {
		t.Errorf("document chunks %+v, want ordinal 1 alone", cs)
	}
}

// TestPackedTextHugeHeader: a body blob whose header claims a huge decoded
// length is refused without allocating it (s2.Decode trusted the header
// and allocated it first; a zstd frame's content size the same).
func TestPackedTextHugeHeader(t *testing.T) {
	s2Huge := append([]byte{tagS2}, binary.AppendUvarint(nil, 1<<30)...)
	s2Huge = append(s2Huge, 0x00, 0x01, 0x02)
	// zstd frame: magic, descriptor 0xE0 (single segment, 8-byte content
	// size), content size 1 GiB, then a truncated block
	zHuge := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0}
	zHuge = binary.LittleEndian.AppendUint64(zHuge, 1<<30)
	zHuge = append(zHuge, 0x01, 0x00, 0x00)
	for _, b := range [][]byte{s2Huge, zHuge} {
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		var body packedText
		err := body.Scan(b)
		runtime.ReadMemStats(&ms1)
		if kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
			t.Errorf("%x: %v, want %s", b, err, kgagent.EUNAVAILABLE)
		}
		if d := ms1.TotalAlloc - ms0.TotalAlloc; d > 64<<20 {
			t.Errorf("%x: allocated %d bytes", b, d)
		}
	}
}

// FuzzPackedText: whatever a body blob holds, packedText never panics,
// never allocates far past maxTextLen, and what packText stores reads
// back.
func FuzzPackedText(f *testing.F) {
	long := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 5)
	f.Add(packText(long).([]byte))
	f.Add([]byte{tagS2, 0xff, 0xff, 0xff})
	f.Add(append([]byte{tagS2}, binary.AppendUvarint(nil, 1<<30)...))
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0, 0, 0, 0, 0x40, 0, 0, 0, 0})
	f.Add(textDecoderTestEncode(f, long))
	f.Fuzz(func(t *testing.T, b []byte) {
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		var body packedText
		err := body.Scan(b)
		runtime.ReadMemStats(&ms1)
		if err == nil && len(body) > maxTextLen {
			t.Errorf("decoded %d bytes", len(body))
		}
		if err != nil && kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
			t.Errorf("error %v, want %s", err, kgagent.EUNAVAILABLE)
		}
		if d := ms1.TotalAlloc - ms0.TotalAlloc; d > 4*maxTextLen {
			t.Errorf("allocated %d bytes for %d stored", d, len(b))
		}
		s := string(b)
		if p, ok := packText(s).([]byte); ok {
			var back packedText
			if err := back.Scan(p); err != nil || string(back) != s {
				t.Errorf("packText(%q) read back %q, %v", s, back, err)
			}
		}
	})
}
