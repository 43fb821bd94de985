package sqlite

import (
	"testing"

	"github.com/kgagent/kgagent"
)

// The two-stage scan finds what the exact scan finds when the query is one
// of the stored vectors, and respects the URL prefix.
func TestTopKPrefilter(t *testing.T) {
	const n, dim = 3000, 64
	m := newMemColl(dim, [3]float32{1, 1, 1})
	vs := randVecs(n, dim)
	for i := range n {
		m.appendVec(vs[i*dim : (i+1)*dim])
		m.rids = append(m.rids, int64(i))
		m.pos[int64(i)] = int32(i)
		doc := "https://a/"
		if i%2 == 1 {
			doc = "https://b/"
		}
		m.docs = append(m.docs, doc)
	}
	tests := []struct {
		query  int
		prefix string
		want   int64 // top hit
	}{
		{17, "", 17},
		{2048, "", 2048},
		{17, "https://b/", -1}, // 17 is under a/, so not the top hit
		{1001, "https://b/", 1001},
	}
	for _, tt := range tests {
		q, qs := quantize(nil, vs[tt.query*dim:(tt.query+1)*dim])
		exact := m.topK(q, qs, 10, tt.prefix, -1)
		fast := m.topK(q, qs, 10, tt.prefix, 1000)
		if len(fast) != 10 || len(exact) != 10 {
			t.Fatalf("query %d: %d and %d hits", tt.query, len(fast), len(exact))
		}
		if tt.want >= 0 && (fast[0].rid != tt.want || exact[0].rid != tt.want) {
			t.Errorf("query %d: top %d (two-stage) and %d (exact), want %d", tt.query, fast[0].rid, exact[0].rid, tt.want)
		}
		for _, h := range fast {
			if tt.prefix != "" && m.docs[h.rid][:len(tt.prefix)] != tt.prefix {
				t.Errorf("query %d: hit %d outside prefix", tt.query, h.rid)
			}
		}
		same := 0
		for _, f := range fast {
			for _, e := range exact {
				if f.rid == e.rid {
					same++
				}
			}
		}
		if same < 6 { // random vectors have near-tied neighbours; real ones agree more
			t.Errorf("query %d: two-stage top-10 shares only %d with exact", tt.query, same)
		}
	}
}

// The column scan over a sparse query's non-zero dimensions gives exactly
// the scores of the row scan, with and without a URL prefix, and keeps
// working after rows are added and removed.
func TestColumnScanExact(t *testing.T) {
	const n, dim = 5000, 96
	m := newMemColl(dim, [3]float32{1, 1, 1})
	vs := randVecs(n, dim)
	for i := range n {
		doc := "https://a/"
		if i%3 == 1 {
			doc = "https://b/"
		}
		m.add(int64(i+1), doc, kgagent.Chunk{Text: "x"}, vs[i*dim:(i+1)*dim])
	}
	m.remove([]int64{5, 6, 7})
	for _, tt := range []struct {
		name   string
		nonzer int // non-zero query dimensions
		prefix string
	}{
		{"sparse", 20, ""},
		{"sparse prefix", 20, "https://b/"},
		{"one dim", 1, ""},
		{"dense exact", dim, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := make([]float32, dim)
			copy(q[:tt.nonzer], vs[4*dim:4*dim+tt.nonzer]) // row 4 (rid 5) is deleted
			qv, qs := quantize(nil, q)
			cols := m.topK(qv, qs, 20, tt.prefix, -1)
			rows := best(m.scanTop(qv, qs, 20, tt.prefix, dim), 20)
			if len(cols) != 20 || len(rows) != 20 {
				t.Fatalf("got %d and %d hits", len(cols), len(rows))
			}
			for i := range rows {
				if cols[i] != rows[i] {
					t.Fatalf("hit %d: column scan %+v, row scan %+v", i, cols[i], rows[i])
				}
				if cols[i].rid >= 5 && cols[i].rid <= 7 {
					t.Fatalf("deleted row %d returned", cols[i].rid)
				}
			}
		})
	}
}
