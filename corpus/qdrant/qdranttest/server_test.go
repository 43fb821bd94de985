package qdranttest_test

import (
	"context"
	"math"
	"net"
	"slices"
	"strconv"
	"testing"

	qc "github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kgagent/kgagent/corpus/qdrant/qdranttest"
)

func client(t *testing.T) (*qdranttest.Server, *qc.Client) {
	t.Helper()
	srv, err := qdranttest.Start(qdranttest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(srv.Addr())
	p, _ := strconv.Atoi(port)
	c, err := qc.NewClient(&qc.Config{Host: host, Port: p, SkipCompatibilityCheck: true, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return srv, c
}

var ctx = context.Background()

// fixture creates collection "c" with a 2-d cosine vector "d", an IDF sparse
// vector "s" and a plain sparse vector "p", and four points:
//
//	id  d       s / p          tags
//	1   (1,0)   {7:2}          [x]
//	2   (3,4)   {7:1, 8:1}     [x, y]
//	3   (0,1)   {8:3}          [y]
//	4   (1,1)   {9:1}          []
func fixture(t *testing.T, c *qc.Client) {
	t.Helper()
	err := c.CreateCollection(ctx, &qc.CreateCollection{
		CollectionName: "c",
		VectorsConfig:  qc.NewVectorsConfigMap(map[string]*qc.VectorParams{"d": {Size: 2, Distance: qc.Distance_Cosine}}),
		SparseVectorsConfig: qc.NewSparseVectorsConfig(map[string]*qc.SparseVectorParams{
			"s": {Modifier: qc.Modifier_Idf.Enum()},
			"p": {},
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	pt := func(id uint64, d []float32, idx []uint32, val []float32, tags ...string) *qc.PointStruct {
		var tv []*qc.Value
		for _, s := range tags {
			tv = append(tv, qc.NewValueString(s))
		}
		return &qc.PointStruct{
			Id: qc.NewIDNum(id),
			Vectors: qc.NewVectorsMap(map[string]*qc.Vector{
				"d": qc.NewVectorDense(d), "s": qc.NewVectorSparse(idx, val), "p": qc.NewVectorSparse(idx, val),
			}),
			Payload: map[string]*qc.Value{"tags": qc.NewValueFromList(tv...), "n": qc.NewValueInt(int64(id)), "name": qc.NewValueString("p" + strconv.Itoa(int(id)))},
		}
	}
	_, err = c.Upsert(ctx, &qc.UpsertPoints{CollectionName: "c", Wait: qc.PtrOf(true), Points: []*qc.PointStruct{
		pt(1, []float32{1, 0}, []uint32{7}, []float32{2}, "x"),
		pt(2, []float32{3, 4}, []uint32{7, 8}, []float32{1, 1}, "x", "y"),
		pt(3, []float32{0, 1}, []uint32{8}, []float32{3}, "y"),
		pt(4, []float32{1, 1}, []uint32{9}, []float32{1}),
	}})
	if err != nil {
		t.Fatal(err)
	}
}

type result struct {
	id    uint64
	score float64
}

func query(t *testing.T, c *qc.Client, q *qc.QueryPoints) []result {
	t.Helper()
	q.CollectionName = "c"
	pts, err := c.Query(ctx, q)
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	var out []result
	for _, p := range pts {
		out = append(out, result{p.GetId().GetNum(), float64(p.GetScore())})
	}
	return out
}

func check(t *testing.T, name string, got, want []result) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %v, want %v", name, got, want)
	}
	for i := range got {
		if got[i].id != want[i].id || math.Abs(got[i].score-want[i].score) > 1e-5 {
			t.Errorf("%s: got %v, want %v", name, got, want)
			return
		}
	}
}

func TestScoring(t *testing.T) {
	_, c := client(t)
	fixture(t, c)
	idf := func(n, df float64) float64 { return math.Log(1 + (n-df+0.5)/(df+0.5)) }
	dense := &qc.PrefetchQuery{Query: qc.NewQueryDense([]float32{1, 0}), Using: qc.PtrOf("d"), Limit: qc.PtrOf(uint64(3))}
	sparse := &qc.PrefetchQuery{Query: qc.NewQuerySparse([]uint32{8}, []float32{1}), Using: qc.PtrOf("s"), Limit: qc.PtrOf(uint64(3))}
	// dense order for (1,0): 1 (1.0), 4 (0.7071), 2 (0.6), 3 (0)
	// sparse order for {8:1}: 3 (3·idf), 2 (1·idf); idf(4 points, 2 hold 8)
	tests := []struct {
		name string
		q    *qc.QueryPoints
		want []result
	}{
		{"cosine normalises both sides", &qc.QueryPoints{Query: qc.NewQueryDense([]float32{6, 8}), Using: qc.PtrOf("d")},
			[]result{{2, 1}, {4, 0.98995}, {3, 0.8}, {1, 0.6}}},
		{"sparse with IDF", &qc.QueryPoints{Query: qc.NewQuerySparse([]uint32{7, 9}, []float32{0.5, 1}), Using: qc.PtrOf("s")},
			[]result{{4, idf(4, 1)}, {1, 0.5 * 2 * idf(4, 2)}, {2, 0.5 * idf(4, 2)}}},
		{"sparse without modifier", &qc.QueryPoints{Query: qc.NewQuerySparse([]uint32{7, 9}, []float32{0.5, 1}), Using: qc.PtrOf("p")},
			[]result{{1, 1}, {4, 1}, {2, 0.5}}},
		{"limit and offset", &qc.QueryPoints{Query: qc.NewQueryDense([]float32{1, 0}), Using: qc.PtrOf("d"), Limit: qc.PtrOf(uint64(2)), Offset: qc.PtrOf(uint64(1))},
			[]result{{4, 0.70711}, {2, 0.6}}},
		{"RRF fusion, k=2", &qc.QueryPoints{Prefetch: []*qc.PrefetchQuery{dense, sparse}, Query: qc.NewQueryFusion(qc.Fusion_RRF)},
			[]result{{2, qdranttest.RRF(2, 2, 1)}, {1, qdranttest.RRF(2, 0)}, {3, qdranttest.RRF(2, 0)}, {4, qdranttest.RRF(2, 1)}}},
		{"parametrised RRF, k=60", &qc.QueryPoints{Prefetch: []*qc.PrefetchQuery{dense, sparse}, Query: qc.NewQueryRRF(&qc.Rrf{K: qc.PtrOf(uint32(60))})},
			[]result{{2, 1.0/62 + 1.0/61}, {1, 1.0 / 60}, {3, 1.0 / 60}, {4, 1.0 / 61}}},
		{"weighted RRF", &qc.QueryPoints{Prefetch: []*qc.PrefetchQuery{dense, sparse}, Query: qc.NewQueryRRF(&qc.Rrf{K: qc.PtrOf(uint32(2)), Weights: []float32{3, 1}})},
			[]result{{2, 1/(3.0/3+1) + 1/(2.0+1)}, {1, 1 / (1.0/3 + 1)}, {4, 1 / (2.0/3 + 1)}, {3, 1 / (1.0 + 1)}}},
		{"top-level filter reaches prefetches", &qc.QueryPoints{Prefetch: []*qc.PrefetchQuery{dense, sparse}, Query: qc.NewQueryFusion(qc.Fusion_RRF),
			Filter: &qc.Filter{Must: []*qc.Condition{qc.NewMatchKeyword("tags", "y")}}},
			[]result{{2, qdranttest.RRF(2, 0, 1)}, {3, qdranttest.RRF(2, 1, 0)}}},
	}
	for _, tt := range tests {
		check(t, tt.name, query(t, c, tt.q), tt.want)
	}
}

func TestFilters(t *testing.T) {
	_, c := client(t)
	fixture(t, c)
	tests := []struct {
		name   string
		filter *qc.Filter
		want   []uint64
	}{
		{"none", nil, []uint64{1, 2, 3, 4}},
		{"must keyword in list", &qc.Filter{Must: []*qc.Condition{qc.NewMatchKeyword("tags", "x")}}, []uint64{1, 2}},
		{"must two", &qc.Filter{Must: []*qc.Condition{qc.NewMatchKeyword("tags", "x"), qc.NewMatchKeyword("tags", "y")}}, []uint64{2}},
		{"must_not", &qc.Filter{MustNot: []*qc.Condition{qc.NewMatchKeyword("tags", "y")}}, []uint64{1, 4}},
		{"should", &qc.Filter{Should: []*qc.Condition{qc.NewMatchKeyword("name", "p1"), qc.NewMatchKeyword("name", "p4")}}, []uint64{1, 4}},
		{"keywords any", &qc.Filter{Must: []*qc.Condition{qc.NewMatchKeywords("name", "p2", "p3")}}, []uint64{2, 3}},
		{"integer", &qc.Filter{Must: []*qc.Condition{qc.NewMatchInt("n", 3)}}, []uint64{3}},
		{"keyword does not match integers", &qc.Filter{Must: []*qc.Condition{qc.NewMatchKeyword("n", "3")}}, nil},
		{"nested filter", &qc.Filter{Must: []*qc.Condition{qc.NewFilterAsCondition(&qc.Filter{MustNot: []*qc.Condition{qc.NewMatchKeyword("tags", "x")}})}}, []uint64{3, 4}},
		{"has id", &qc.Filter{Must: []*qc.Condition{qc.NewHasID(qc.NewIDNum(4))}}, []uint64{4}},
	}
	for _, tt := range tests {
		res := query(t, c, &qc.QueryPoints{Query: qc.NewQueryDense([]float32{1, 1}), Using: qc.PtrOf("d"), Filter: tt.filter})
		var got []uint64
		for _, r := range res {
			got = append(got, r.id)
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
		n, err := c.Count(ctx, &qc.CountPoints{CollectionName: "c", Filter: tt.filter})
		if err != nil || n != uint64(len(tt.want)) {
			t.Errorf("%s: count %d (%v), want %d", tt.name, n, err, len(tt.want))
		}
	}
	// delete by filter removes exactly the matching points
	_, err := c.Delete(ctx, &qc.DeletePoints{CollectionName: "c", Points: qc.NewPointsSelectorFilter(&qc.Filter{Must: []*qc.Condition{qc.NewMatchKeyword("tags", "x")}})})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Count(ctx, &qc.CountPoints{CollectionName: "c"}); n != 2 {
		t.Errorf("after delete by filter %d points, want 2", n)
	}
}

func TestPayloadSelector(t *testing.T) {
	_, c := client(t)
	fixture(t, c)
	tests := []struct {
		name string
		sel  *qc.WithPayloadSelector
		want []string
	}{
		{"default none", nil, nil},
		{"all", qc.NewWithPayload(true), []string{"n", "name", "tags"}},
		{"include", qc.NewWithPayloadInclude("name"), []string{"name"}},
		{"exclude", qc.NewWithPayloadExclude("tags"), []string{"n", "name"}},
	}
	for _, tt := range tests {
		pts, err := c.Query(ctx, &qc.QueryPoints{CollectionName: "c", Query: qc.NewQueryDense([]float32{1, 0}), Using: qc.PtrOf("d"), Limit: qc.PtrOf(uint64(1)), WithPayload: tt.sel})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for k := range pts[0].GetPayload() {
			got = append(got, k)
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: payload keys %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestErrors(t *testing.T) {
	srv, c := client(t)
	fixture(t, c)
	bad := func(id uint64, v *qc.Vector) *qc.UpsertPoints {
		return &qc.UpsertPoints{CollectionName: "c", Points: []*qc.PointStruct{
			{Id: qc.NewIDNum(10), Vectors: qc.NewVectorsMap(map[string]*qc.Vector{"d": qc.NewVectorDense([]float32{1, 2})})},
			{Id: qc.NewIDNum(id), Vectors: qc.NewVectorsMap(map[string]*qc.Vector{"d": v})},
		}}
	}
	tests := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"create twice", func() error {
			return c.CreateCollection(ctx, &qc.CreateCollection{CollectionName: "c", VectorsConfig: qc.NewVectorsConfig(&qc.VectorParams{Size: 2, Distance: qc.Distance_Cosine})})
		}, codes.InvalidArgument},
		{"bad name", func() error {
			return c.CreateCollection(ctx, &qc.CreateCollection{CollectionName: "a/b", VectorsConfig: qc.NewVectorsConfig(&qc.VectorParams{Size: 2, Distance: qc.Distance_Cosine})})
		}, codes.InvalidArgument},
		{"query missing collection", func() error {
			_, err := c.Query(ctx, &qc.QueryPoints{CollectionName: "nope", Query: qc.NewQueryDense([]float32{1, 0})})
			return err
		}, codes.NotFound},
		{"wrong dimension", func() error { _, err := c.Upsert(ctx, bad(11, qc.NewVectorDense([]float32{1, 2, 3}))); return err }, codes.InvalidArgument},
		{"sparse under a dense name", func() error {
			_, err := c.Upsert(ctx, bad(11, qc.NewVectorSparse([]uint32{1}, []float32{1})))
			return err
		}, codes.Unimplemented},
		{"duplicate sparse index", func() error {
			_, err := c.Upsert(ctx, &qc.UpsertPoints{CollectionName: "c", Points: []*qc.PointStruct{{Id: qc.NewIDNum(12), Vectors: qc.NewVectorsMap(map[string]*qc.Vector{"s": qc.NewVectorSparse([]uint32{1, 1}, []float32{1, 2})})}}})
			return err
		}, codes.InvalidArgument},
		{"unknown vector name", func() error {
			_, err := c.Upsert(ctx, &qc.UpsertPoints{CollectionName: "c", Points: []*qc.PointStruct{{Id: qc.NewIDNum(13), Vectors: qc.NewVectorsMap(map[string]*qc.Vector{"zz": qc.NewVectorDense([]float32{1, 2})})}}})
			return err
		}, codes.InvalidArgument},
		{"bad uuid", func() error {
			_, err := c.Upsert(ctx, &qc.UpsertPoints{CollectionName: "c", Points: []*qc.PointStruct{{Id: qc.NewID("not-a-uuid")}}})
			return err
		}, codes.InvalidArgument},
		{"unmodelled call", func() error { _, err := c.Get(ctx, &qc.GetPoints{CollectionName: "c"}); return err }, codes.Unimplemented},
		{"unmodelled scroll order", func() error {
			_, err := c.Scroll(ctx, &qc.ScrollPoints{CollectionName: "c", OrderBy: &qc.OrderBy{Key: "n"}})
			return err
		}, codes.Unimplemented},
		{"unmodelled fusion", func() error {
			_, err := c.Query(ctx, &qc.QueryPoints{CollectionName: "c", Prefetch: []*qc.PrefetchQuery{{Query: qc.NewQueryDense([]float32{1, 0}), Using: qc.PtrOf("d")}}, Query: qc.NewQueryFusion(qc.Fusion_DBSF)})
			return err
		}, codes.Unimplemented},
		{"unmodelled condition", func() error {
			_, err := c.Query(ctx, &qc.QueryPoints{CollectionName: "c", Query: qc.NewQueryDense([]float32{1, 0}), Using: qc.PtrOf("d"), Filter: &qc.Filter{Must: []*qc.Condition{qc.NewIsEmpty("tags")}}})
			return err
		}, codes.Unimplemented},
	}
	for _, tt := range tests {
		if got := status.Code(tt.call()); got != tt.want {
			t.Errorf("%s: code %v, want %v", tt.name, got, tt.want)
		}
	}
	// A rejected batch writes nothing, not even its valid points.
	if n, _ := c.Count(ctx, &qc.CountPoints{CollectionName: "c"}); n != 4 {
		t.Errorf("%d points after rejected upserts, want 4", n)
	}
	if got := srv.Calls("Upsert"); got != 6 {
		t.Errorf("Upsert counted %d times, want 6", got)
	}
	// Dropping: true when there was something, false when not.
	for _, want := range []bool{true, false} {
		res, err := c.GetCollectionsClient().Delete(ctx, &qc.DeleteCollection{CollectionName: "c"})
		if err != nil || res.GetResult() != want {
			t.Errorf("delete collection: %v %v, want result %v", res.GetResult(), err, want)
		}
	}
}

func TestIDF(t *testing.T) {
	tests := []struct {
		n, df int
		want  float64
	}{
		{1, 1, math.Log(1 + 0.5/1.5)},
		{10, 1, math.Log(1 + 9.5/1.5)},
		{10, 10, math.Log(1 + 0.5/10.5)},
	}
	for _, tt := range tests {
		if got := qdranttest.IDF(tt.n, tt.df); math.Abs(got-tt.want) > 1e-12 || got <= 0 {
			t.Errorf("IDF(%d,%d) = %v, want %v", tt.n, tt.df, got, tt.want)
		}
	}
}

func TestFacet(t *testing.T) {
	_, c := client(t)
	fixture(t, c)
	if _, err := c.Facet(ctx, &qc.FacetCounts{CollectionName: "c", Key: "tags"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("facet without a keyword index: %v, want InvalidArgument", err)
	}
	if _, err := c.CreateFieldIndex(ctx, &qc.CreateFieldIndexCollection{CollectionName: "c", FieldName: "tags", FieldType: qc.FieldType_FieldTypeKeyword.Enum()}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		limit  *uint64
		filter *qc.Filter
		want   []string
	}{
		{"all", nil, nil, []string{"x=2", "y=2"}},
		{"limit", qc.PtrOf(uint64(1)), nil, []string{"x=2"}},
		{"filtered", nil, &qc.Filter{MustNot: []*qc.Condition{qc.NewMatchKeyword("name", "p1")}}, []string{"y=2", "x=1"}},
	}
	for _, tt := range tests {
		hits, err := c.Facet(ctx, &qc.FacetCounts{CollectionName: "c", Key: "tags", Limit: tt.limit, Filter: tt.filter})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range hits {
			got = append(got, h.GetValue().GetStringValue()+"="+strconv.Itoa(int(h.GetCount())))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
