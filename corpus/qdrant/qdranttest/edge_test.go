package qdranttest_test

import (
	"cmp"
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"

	qc "github.com/qdrant/go-client/qdrant"
)

// edgeCases mirrors testdata/edge_cases.json.
type edgeCases struct {
	Dim    int `json:"dim"`
	Points []struct {
		ID   uint64    `json:"id"`
		D    []float32 `json:"d"`
		S    sparseIn  `json:"s"`
		Tags []string  `json:"tags"`
	} `json:"points"`
	Queries []edgeQuery `json:"queries"`
}

type sparseIn struct {
	Indices []uint32  `json:"indices"`
	Values  []float32 `json:"values"`
}

type edgeFilter struct {
	Must    []string `json:"must"`
	MustNot []string `json:"must_not"`
}

type edgeQuery struct {
	Name     string      `json:"name"`
	Using    string      `json:"using"`
	Dense    []float32   `json:"dense"`
	Sparse   sparseIn    `json:"sparse"`
	Limit    uint64      `json:"limit"`
	Filter   *edgeFilter `json:"filter"`
	Prefetch []edgeQuery `json:"prefetch"`
	Fusion   *struct {
		K       uint32    `json:"k"`
		Weights []float32 `json:"weights"`
	} `json:"fusion"`
}

func (f *edgeFilter) filter() *qc.Filter {
	if f == nil {
		return nil
	}
	out := &qc.Filter{}
	for _, t := range f.Must {
		out.Must = append(out.Must, qc.NewMatchKeyword("tags", t))
	}
	for _, t := range f.MustNot {
		out.MustNot = append(out.MustNot, qc.NewMatchKeyword("tags", t))
	}
	return out
}

func (q edgeQuery) nearest() *qc.Query {
	if q.Using == "d" {
		return qc.NewQueryDense(q.Dense)
	}
	return qc.NewQuerySparse(q.Sparse.Indices, q.Sparse.Values)
}

// TestAgainstQdrantEdge holds the stand-in to the numbers Qdrant's own engine
// (qdrant-edge-py, the server's shard code embedded in Python) gave for the
// same points and queries: cosine scores, sparse scores with and without
// the IDF modifier, keyword filters on list payloads, RRF with k=2, k=61 and
// weights, and a top-level filter on a fused query. testdata/edge_golden.py
// regenerates the golden file.
func TestAgainstQdrantEdge(t *testing.T) {
	var cases edgeCases
	var golden struct {
		Engine  string                  `json:"engine"`
		Results map[string][][2]float64 `json:"results"`
	}
	for file, v := range map[string]any{"testdata/edge_cases.json": &cases, "testdata/edge_golden.json": &golden} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	_, c := client(t)
	err := c.CreateCollection(ctx, &qc.CreateCollection{
		CollectionName: "c",
		VectorsConfig:  qc.NewVectorsConfigMap(map[string]*qc.VectorParams{"d": {Size: uint64(cases.Dim), Distance: qc.Distance_Cosine}}),
		SparseVectorsConfig: qc.NewSparseVectorsConfig(map[string]*qc.SparseVectorParams{
			"s": {Modifier: qc.Modifier_Idf.Enum()}, "p": {},
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	var points []*qc.PointStruct
	for _, p := range cases.Points {
		vecs := map[string]*qc.Vector{"d": qc.NewVectorDense(p.D)}
		if len(p.S.Indices) > 0 {
			vecs["s"] = qc.NewVectorSparse(p.S.Indices, p.S.Values)
			vecs["p"] = qc.NewVectorSparse(p.S.Indices, p.S.Values)
		}
		var tags []*qc.Value
		for _, s := range p.Tags {
			tags = append(tags, qc.NewValueString(s))
		}
		points = append(points, &qc.PointStruct{Id: qc.NewIDNum(p.ID), Vectors: qc.NewVectorsMap(vecs), Payload: map[string]*qc.Value{"tags": qc.NewValueFromList(tags...)}})
	}
	if _, err := c.Upsert(ctx, &qc.UpsertPoints{CollectionName: "c", Points: points}); err != nil {
		t.Fatal(err)
	}
	if len(cases.Queries) == 0 || len(golden.Results) != len(cases.Queries) {
		t.Fatalf("%d queries, %d golden results", len(cases.Queries), len(golden.Results))
	}
	for _, q := range cases.Queries {
		req := &qc.QueryPoints{Limit: qc.PtrOf(q.Limit), Filter: q.Filter.filter()}
		if q.Fusion != nil {
			for _, pf := range q.Prefetch {
				req.Prefetch = append(req.Prefetch, &qc.PrefetchQuery{Query: pf.nearest(), Using: qc.PtrOf(pf.Using), Limit: qc.PtrOf(pf.Limit), Filter: pf.Filter.filter()})
			}
			req.Query = qc.NewQueryRRF(&qc.Rrf{K: qc.PtrOf(q.Fusion.K), Weights: q.Fusion.Weights})
		} else {
			req.Query, req.Using = q.nearest(), qc.PtrOf(q.Using)
		}
		got := query(t, c, req)
		var want []result
		for _, w := range golden.Results[q.Name] {
			want = append(want, result{uint64(w[0]), w[1]})
		}
		// Neither side promises an order among equal scores.
		tieOrder(got)
		tieOrder(want)
		ok := len(got) == len(want)
		for i := 0; ok && i < len(got); i++ {
			ok = got[i].id == want[i].id && math.Abs(got[i].score-want[i].score) < 1e-4
		}
		if !ok {
			t.Errorf("%s: stand-in %v\n%s: %v", q.Name, got, golden.Engine, want)
		}
	}
}

// tieOrder sorts runs of equal scores (within 1e-6) by id, leaving the order
// of different scores alone.
func tieOrder(r []result) {
	for i := 0; i < len(r); {
		j := i + 1
		for j < len(r) && math.Abs(r[j].score-r[i].score) < 1e-6 {
			j++
		}
		slices.SortFunc(r[i:j], func(a, b result) int { return cmp.Compare(a.id, b.id) })
		i = j
	}
}
