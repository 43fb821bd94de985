package sqlite

import (
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/snapfile"
)

// BenchmarkDecodeSnapshotColumns reads back a snapshot of 100k rows of 384
// dimensions, 40% non-zero (the lexical embedder's chunk vectors), one
// short text a row: what serve spends on the vectors when it starts.
func BenchmarkDecodeSnapshotColumns(b *testing.B) {
	const dim, n = 384, 100_000
	vs := randVecs(4096, dim)
	for i := range vs {
		if i%5 >= 2 {
			vs[i] = 0
		}
	}
	m := newMemColl(dim, [3]float32{6, 2, 1})
	for i := range n {
		m.add(int64(i+1), "https://x/p", kgagent.Chunk{Text: "w"}, vs[(i%4096)*dim:(i%4096+1)*dim])
	}
	e := &snapfile.Encoder{}
	encodeSnapshot(e, m)
	for b.Loop() {
		if _, err := decodeSnapshot(e.B, dim, m.weights); err != nil {
			b.Fatal(err)
		}
	}
}
