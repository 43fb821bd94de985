// Package qdranttest is an in-memory stand-in for the gRPC API that the
// corpus/qdrant adapter talks to, for tests that cannot run the real server.
//
// It is built on the service interfaces generated in
// github.com/qdrant/go-client/qdrant and served over a real gRPC listener on
// 127.0.0.1, so the adapter under test uses the unmodified go-client. It
// implements only the calls the adapter makes (health check; create, get,
// exists, list and delete collection; create field index; upsert; delete
// by ids or filter; count; facet; query; scroll by point id) and answers
// every other call with Unimplemented, as it does any request shape it does
// not model. Where it does answer, it follows the documented semantics of
// the real service:
//
//   - cosine distance normalises stored and query vectors, score = dot product;
//   - sparse score = Σ over shared dimensions of query·stored value, and with
//     the IDF modifier each query value is first multiplied by
//     ln(1 + (N − n + 0.5)/(n + 0.5)), N the points holding that sparse
//     vector in the collection and n those holding the dimension; a sparse
//     search returns only points sharing at least one dimension;
//   - RRF fusion of prefetches adds 1/(k + position) per list, positions
//     counted from 0, k = 2 for plain Fusion.RRF or the k of a
//     parametrised Rrf (weights w: 1/((position+1)/w + k − 1));
//   - the top-level filter also applies inside every prefetch;
//   - match-keyword conditions match a string payload or any string of a
//     list payload; must, should and must_not combine as documented.
//
// Search is exact (no HNSW), so rankings can differ from a real server's
// approximate ones on large collections. It is a test double, not a
// database: everything lives in memory behind one mutex.
package qdranttest

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"math"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	qc "github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Options configures a stand-in. The zero value serves plaintext gRPC and
// accepts every call.
type Options struct {
	// APIKey, when set, must come in the "api-key" header of every call but
	// the health check, else the call fails with Unauthenticated.
	APIKey string
	// TLS, when set, makes the listener serve TLS with this config.
	TLS *tls.Config
	// Activation, when set, is how long a new collection's shard stays
	// inactive after Create: until then Upsert and Delete of its points fail
	// with Internal "Failed to apply operation to at least one `Active`
	// replica ... Please retry", as a real Qdrant answers updates sent while
	// it is still creating the collection.
	Activation time.Duration
}

// Server is a running stand-in.
type Server struct {
	opts Options
	lis  net.Listener
	grpc *grpc.Server

	mu          sync.Mutex
	collections map[string]*collection
	calls       map[string]int
	upserts     []int
	keys        []string
	fail        map[string][]error
	opID        uint64
}

type collection struct {
	activeAt time.Time // updates are refused before (Options.Activation)
	dense    map[string]*qc.VectorParams
	sparse   map[string]*qc.SparseVectorParams
	hnsw     *qc.HnswConfigDiff
	quant    *qc.QuantizationConfig
	meta     map[string]*qc.Value
	indexes  map[string]qc.FieldType
	points   map[string]*point
}

type point struct {
	key     string
	id      *qc.PointId
	dense   map[string][]float32
	sparse  map[string]sparseVec
	payload map[string]*qc.Value
}

type sparseVec struct {
	idx []uint32
	val []float32
}

// Start serves a new, empty stand-in on 127.0.0.1 on a free port.
func Start(opts Options) (*Server, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{
		opts:        opts,
		lis:         lis,
		collections: map[string]*collection{},
		calls:       map[string]int{},
		fail:        map[string][]error{},
	}
	sopts := []grpc.ServerOption{grpc.UnaryInterceptor(s.intercept)}
	if opts.TLS != nil {
		sopts = append(sopts, grpc.Creds(credentials.NewTLS(opts.TLS)))
	}
	s.grpc = grpc.NewServer(sopts...)
	qc.RegisterQdrantServer(s.grpc, qdrantService{s: s})
	qc.RegisterCollectionsServer(s.grpc, collectionsService{s: s})
	qc.RegisterPointsServer(s.grpc, pointsService{s: s})
	go s.grpc.Serve(lis) //nolint:errcheck // returns when Close stops it
	return s, nil
}

// Addr is the host:port the stand-in listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Close stops the server and drops every connection.
func (s *Server) Close() { s.grpc.Stop() }

// Calls returns how many times the named method (e.g. "Upsert", "Create",
// "CreateFieldIndex", "Query") was called, successful or not.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// UpsertSizes returns the number of points of every successful upsert, in order.
func (s *Server) UpsertSizes() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.upserts...)
}

// APIKeys returns the "api-key" header of every call, in order ("" when absent).
func (s *Server) APIKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...)
}

// FailNext makes the next calls of method fail with err, one call per error.
func (s *Server) FailNext(method string, errs ...error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[method] = append(s.fail[method], errs...)
}

// Collections returns the names of the existing collections, sorted.
func (s *Server) Collections() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for n := range s.collections {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Payloads returns a copy of the payload of every point of collection name,
// sorted by point id.
func (s *Server) Payloads(name string) []map[string]*qc.Value {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.collections[name]
	if c == nil {
		return nil
	}
	var out []map[string]*qc.Value
	for _, p := range c.sorted() {
		m := make(map[string]*qc.Value, len(p.payload))
		for k, v := range p.payload {
			m[k] = proto.Clone(v).(*qc.Value)
		}
		out = append(out, m)
	}
	return out
}

func (s *Server) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	method := info.FullMethod[strings.LastIndexByte(info.FullMethod, '/')+1:]
	key := ""
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get("api-key"); len(v) > 0 {
			key = v[0]
		}
	}
	s.mu.Lock()
	s.calls[method]++
	s.keys = append(s.keys, key)
	var injected error
	if q := s.fail[method]; len(q) > 0 {
		injected, s.fail[method] = q[0], q[1:]
	}
	s.mu.Unlock()
	if injected != nil {
		return nil, injected
	}
	if s.opts.APIKey != "" && method != "HealthCheck" && key != s.opts.APIKey {
		return nil, status.Error(codes.Unauthenticated, "Invalid api-key")
	}
	return handler(ctx, req)
}

// ---- qdrant.Qdrant

type qdrantService struct {
	qc.UnimplementedQdrantServer
	s *Server
}

func (q qdrantService) HealthCheck(context.Context, *qc.HealthCheckRequest) (*qc.HealthCheckReply, error) {
	return &qc.HealthCheckReply{Title: "kgagent qdranttest stand-in", Version: "1.17.0"}, nil
}

// ---- qdrant.Collections

type collectionsService struct {
	qc.UnimplementedCollectionsServer
	s *Server
}

// inactive is Qdrant's answer to a point update that reaches a collection
// whose shard replica is not active yet (Options.Activation).
func (col *collection) inactive() error {
	if time.Now().Before(col.activeAt) {
		return status.Error(codes.Internal, "Service internal error: Failed to apply operation to at least one `Active` replica. Consistency of this update is not guaranteed. Please retry.")
	}
	return nil
}

func notFound(name string) error {
	return status.Errorf(codes.NotFound, "Not found: Collection `%s` doesn't exist!", name)
}

func badInput(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, "Wrong input: "+format, args...)
}

func unsupported(what string) error {
	return status.Errorf(codes.Unimplemented, "qdranttest stand-in does not model %s", what)
}

func checkCollectionName(name string) error {
	if name == "" || len(name) > 255 || strings.ContainsAny(name, "<>:\"/\\|?*\x00") {
		return badInput("Invalid collection name %q", name)
	}
	return nil
}

func (c collectionsService) Create(_ context.Context, req *qc.CreateCollection) (*qc.CollectionOperationResponse, error) {
	name := req.GetCollectionName()
	if err := checkCollectionName(name); err != nil {
		return nil, err
	}
	col := &collection{
		dense:   map[string]*qc.VectorParams{},
		sparse:  map[string]*qc.SparseVectorParams{},
		indexes: map[string]qc.FieldType{},
		points:  map[string]*point{},
		hnsw:    req.GetHnswConfig(),
		quant:   req.GetQuantizationConfig(),
		meta:    map[string]*qc.Value{},
	}
	for k, v := range req.GetMetadata() {
		col.meta[k] = proto.Clone(v).(*qc.Value)
	}
	vc := req.GetVectorsConfig()
	switch {
	case vc.GetParams() != nil:
		col.dense[""] = vc.GetParams()
	case vc.GetParamsMap() != nil:
		for n, p := range vc.GetParamsMap().GetMap() {
			col.dense[n] = p
		}
	}
	for n, p := range col.dense {
		if p.GetSize() == 0 {
			return nil, badInput("vector %q: size must be positive", n)
		}
		switch p.GetDistance() {
		case qc.Distance_Cosine, qc.Distance_Dot:
		default:
			return nil, unsupported("distance " + p.GetDistance().String())
		}
		if p.MultivectorConfig != nil {
			return nil, unsupported("multivectors")
		}
	}
	for n, p := range req.GetSparseVectorsConfig().GetMap() {
		if _, clash := col.dense[n]; clash {
			return nil, badInput("vector name %q is both dense and sparse", n)
		}
		col.sparse[n] = p
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if _, ok := c.s.collections[name]; ok {
		return nil, badInput("Collection `%s` already exists!", name)
	}
	col.activeAt = time.Now().Add(c.s.opts.Activation)
	c.s.collections[name] = col
	return &qc.CollectionOperationResponse{Result: true}, nil
}

func (c collectionsService) Get(_ context.Context, req *qc.GetCollectionInfoRequest) (*qc.GetCollectionInfoResponse, error) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	col := c.s.collections[req.GetCollectionName()]
	if col == nil {
		return nil, notFound(req.GetCollectionName())
	}
	params := &qc.CollectionParams{ShardNumber: 1}
	if p, ok := col.dense[""]; ok && len(col.dense) == 1 {
		params.VectorsConfig = qc.NewVectorsConfig(proto.Clone(p).(*qc.VectorParams))
	} else {
		m := map[string]*qc.VectorParams{}
		for n, p := range col.dense {
			m[n] = proto.Clone(p).(*qc.VectorParams)
		}
		params.VectorsConfig = qc.NewVectorsConfigMap(m)
	}
	if len(col.sparse) > 0 {
		m := map[string]*qc.SparseVectorParams{}
		for n, p := range col.sparse {
			m[n] = proto.Clone(p).(*qc.SparseVectorParams)
		}
		params.SparseVectorsConfig = qc.NewSparseVectorsConfig(m)
	}
	schema := map[string]*qc.PayloadSchemaInfo{}
	for f, t := range col.indexes {
		schema[f] = &qc.PayloadSchemaInfo{DataType: schemaType(t)}
	}
	hnsw := &qc.HnswConfigDiff{M: qc.PtrOf(uint64(16)), EfConstruct: qc.PtrOf(uint64(100))}
	if col.hnsw != nil {
		if col.hnsw.M != nil {
			hnsw.M = qc.PtrOf(col.hnsw.GetM())
		}
		if col.hnsw.EfConstruct != nil {
			hnsw.EfConstruct = qc.PtrOf(col.hnsw.GetEfConstruct())
		}
	}
	info := &qc.CollectionInfo{
		Status:        qc.CollectionStatus_Green,
		SegmentsCount: 1,
		Config:        &qc.CollectionConfig{Params: params, HnswConfig: hnsw},
		PayloadSchema: schema,
		PointsCount:   qc.PtrOf(uint64(len(col.points))),
	}
	if len(col.meta) > 0 {
		info.Config.Metadata = map[string]*qc.Value{}
		for k, v := range col.meta {
			info.Config.Metadata[k] = proto.Clone(v).(*qc.Value)
		}
	}
	if col.quant != nil {
		info.Config.QuantizationConfig = proto.Clone(col.quant).(*qc.QuantizationConfig)
	}
	return &qc.GetCollectionInfoResponse{Result: info}, nil
}

func schemaType(t qc.FieldType) qc.PayloadSchemaType {
	switch t {
	case qc.FieldType_FieldTypeKeyword:
		return qc.PayloadSchemaType_Keyword
	case qc.FieldType_FieldTypeInteger:
		return qc.PayloadSchemaType_Integer
	case qc.FieldType_FieldTypeFloat:
		return qc.PayloadSchemaType_Float
	case qc.FieldType_FieldTypeBool:
		return qc.PayloadSchemaType_Bool
	case qc.FieldType_FieldTypeText:
		return qc.PayloadSchemaType_Text
	}
	return qc.PayloadSchemaType_UnknownType
}

func (c collectionsService) List(context.Context, *qc.ListCollectionsRequest) (*qc.ListCollectionsResponse, error) {
	resp := &qc.ListCollectionsResponse{}
	for _, n := range c.s.Collections() {
		resp.Collections = append(resp.Collections, &qc.CollectionDescription{Name: n})
	}
	return resp, nil
}

func (c collectionsService) CollectionExists(_ context.Context, req *qc.CollectionExistsRequest) (*qc.CollectionExistsResponse, error) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	_, ok := c.s.collections[req.GetCollectionName()]
	return &qc.CollectionExistsResponse{Result: &qc.CollectionExists{Exists: ok}}, nil
}

// Delete drops a collection; result is false when there was none.
func (c collectionsService) Delete(_ context.Context, req *qc.DeleteCollection) (*qc.CollectionOperationResponse, error) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	_, ok := c.s.collections[req.GetCollectionName()]
	delete(c.s.collections, req.GetCollectionName())
	return &qc.CollectionOperationResponse{Result: ok}, nil
}

// ---- qdrant.Points

type pointsService struct {
	qc.UnimplementedPointsServer
	s *Server
}

// done answers a completed update; callers hold s.mu.
func (s *Server) done() *qc.PointsOperationResponse {
	s.opID++
	return &qc.PointsOperationResponse{Result: &qc.UpdateResult{OperationId: qc.PtrOf(s.opID), Status: qc.UpdateStatus_Completed}}
}

func (p pointsService) CreateFieldIndex(_ context.Context, req *qc.CreateFieldIndexCollection) (*qc.PointsOperationResponse, error) {
	if req.GetFieldName() == "" {
		return nil, badInput("field name is empty")
	}
	if req.FieldType == nil {
		return nil, badInput("field type is required")
	}
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	col := p.s.collections[req.GetCollectionName()]
	if col == nil {
		return nil, notFound(req.GetCollectionName())
	}
	col.indexes[req.GetFieldName()] = req.GetFieldType()
	return p.s.done(), nil
}

func pointKey(id *qc.PointId) (string, error) {
	switch v := id.GetPointIdOptions().(type) {
	case *qc.PointId_Num:
		return fmt.Sprintf("n:%020d", v.Num), nil
	case *qc.PointId_Uuid:
		u, err := uuid.Parse(v.Uuid)
		if err != nil {
			return "", badInput("Unable to parse UUID: %s", v.Uuid)
		}
		return "u:" + u.String(), nil
	}
	return "", badInput("point id is missing")
}

func (p pointsService) Upsert(_ context.Context, req *qc.UpsertPoints) (*qc.PointsOperationResponse, error) {
	if req.UpdateFilter != nil || req.UpdateMode != nil {
		return nil, unsupported("conditional upserts")
	}
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	col := p.s.collections[req.GetCollectionName()]
	if col == nil {
		return nil, notFound(req.GetCollectionName())
	}
	if err := col.inactive(); err != nil {
		return nil, err
	}
	// Validate the whole batch before applying any of it.
	batch := make([]*point, 0, len(req.GetPoints()))
	for _, ps := range req.GetPoints() {
		pt, err := col.parsePoint(ps)
		if err != nil {
			return nil, err
		}
		batch = append(batch, pt)
	}
	for _, pt := range batch {
		col.points[pt.key] = pt
	}
	p.s.upserts = append(p.s.upserts, len(batch))
	return p.s.done(), nil
}

func (col *collection) parsePoint(ps *qc.PointStruct) (*point, error) {
	key, err := pointKey(ps.GetId())
	if err != nil {
		return nil, err
	}
	pt := &point{
		key:     key,
		id:      proto.Clone(ps.GetId()).(*qc.PointId),
		dense:   map[string][]float32{},
		sparse:  map[string]sparseVec{},
		payload: map[string]*qc.Value{},
	}
	for k, v := range ps.GetPayload() {
		pt.payload[k] = proto.Clone(v).(*qc.Value)
	}
	named := map[string]*qc.Vector{}
	switch v := ps.GetVectors().GetVectorsOptions().(type) {
	case *qc.Vectors_Vector:
		named[""] = v.Vector
	case *qc.Vectors_Vectors:
		named = v.Vectors.GetVectors()
	}
	for name, vec := range named {
		if params, ok := col.dense[name]; ok {
			if vec.GetDense() == nil {
				// The deprecated plain data/indices form is not modelled.
				return nil, unsupported("vectors other than the dense oneof for a dense name")
			}
			data := vec.GetDense().GetData()
			if uint64(len(data)) != params.GetSize() {
				return nil, badInput("Vector dimension error: expected dim: %d, got %d", params.GetSize(), len(data))
			}
			if params.GetDistance() == qc.Distance_Cosine {
				data = normalize(data)
			} else {
				data = append([]float32(nil), data...)
			}
			pt.dense[name] = data
			continue
		}
		if _, ok := col.sparse[name]; ok {
			s := vec.GetSparse()
			if s == nil {
				return nil, unsupported("vectors other than the sparse oneof for a sparse name")
			}
			sv := sparseVec{idx: s.GetIndices(), val: s.GetValues()}
			if err := checkSparse(sv); err != nil {
				return nil, err
			}
			pt.sparse[name] = sparseVec{idx: append([]uint32(nil), sv.idx...), val: append([]float32(nil), sv.val...)}
			continue
		}
		return nil, badInput("Not existing vector name error: %s", name)
	}
	return pt, nil
}

func checkSparse(sv sparseVec) error {
	if len(sv.idx) != len(sv.val) {
		return badInput("Sparse vector: indices and values must have the same length")
	}
	seen := make(map[uint32]bool, len(sv.idx))
	for _, i := range sv.idx {
		if seen[i] {
			return badInput("Sparse vector: indices must be unique")
		}
		seen[i] = true
	}
	return nil
}

// normalize returns v scaled to unit length, or a copy of v when its length
// is zero (as the real service leaves zero vectors alone).
func normalize(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if n == 0 {
		copy(out, v)
		return out
	}
	n = math.Sqrt(n)
	for i, x := range v {
		out[i] = float32(float64(x) / n)
	}
	return out
}

func (p pointsService) Delete(_ context.Context, req *qc.DeletePoints) (*qc.PointsOperationResponse, error) {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	col := p.s.collections[req.GetCollectionName()]
	if col == nil {
		return nil, notFound(req.GetCollectionName())
	}
	if err := col.inactive(); err != nil {
		return nil, err
	}
	switch sel := req.GetPoints().GetPointsSelectorOneOf().(type) {
	case *qc.PointsSelector_Points:
		for _, id := range sel.Points.GetIds() {
			key, err := pointKey(id)
			if err != nil {
				return nil, err
			}
			delete(col.points, key)
		}
	case *qc.PointsSelector_Filter:
		var doomed []string
		for key, pt := range col.points {
			ok, err := matches(sel.Filter, pt)
			if err != nil {
				return nil, err
			}
			if ok {
				doomed = append(doomed, key)
			}
		}
		for _, key := range doomed {
			delete(col.points, key)
		}
	default:
		return nil, badInput("points selector is missing")
	}
	return p.s.done(), nil
}

func (p pointsService) Count(_ context.Context, req *qc.CountPoints) (*qc.CountResponse, error) {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	col := p.s.collections[req.GetCollectionName()]
	if col == nil {
		return nil, notFound(req.GetCollectionName())
	}
	n := uint64(0)
	for _, pt := range col.points {
		ok, err := matches(req.GetFilter(), pt)
		if err != nil {
			return nil, err
		}
		if ok {
			n++
		}
	}
	return &qc.CountResponse{Result: &qc.CountResult{Count: n}}, nil
}

// Facet counts the points per value of a keyword payload field (a list
// counts each distinct value once), most frequent first, ties by value;
// limit defaults to 10. The field needs a keyword index, as on the real
// service.
func (p pointsService) Facet(_ context.Context, req *qc.FacetCounts) (*qc.FacetResponse, error) {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	col := p.s.collections[req.GetCollectionName()]
	if col == nil {
		return nil, notFound(req.GetCollectionName())
	}
	if t, ok := col.indexes[req.GetKey()]; !ok || t != qc.FieldType_FieldTypeKeyword {
		return nil, badInput("Index required but not found for \"%s\" of one of the following types: [keyword]", req.GetKey())
	}
	counts := map[string]uint64{}
	for _, pt := range col.points {
		ok, err := matches(req.GetFilter(), pt)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		values := []*qc.Value{pt.payload[req.GetKey()]}
		if l := values[0].GetListValue(); l != nil {
			values = l.GetValues()
		}
		seen := map[string]bool{}
		for _, v := range values {
			if s, ok := v.GetKind().(*qc.Value_StringValue); ok && !seen[s.StringValue] {
				seen[s.StringValue] = true
				counts[s.StringValue]++
			}
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c := cmp.Compare(counts[b], counts[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	limit := uint64(10)
	if req.Limit != nil {
		limit = req.GetLimit()
	}
	resp := &qc.FacetResponse{}
	for _, k := range keys {
		if uint64(len(resp.Hits)) == limit {
			break
		}
		resp.Hits = append(resp.Hits, &qc.FacetHit{Value: qc.NewFacetValue(k), Count: counts[k]})
	}
	return resp, nil
}

// ---- filters

// matches evaluates a filter on a point; a nil filter matches everything.
func matches(f *qc.Filter, pt *point) (bool, error) {
	if f == nil {
		return true, nil
	}
	if f.MinShould != nil {
		return false, unsupported("min_should")
	}
	for _, c := range f.GetMust() {
		ok, err := condition(c, pt)
		if err != nil || !ok {
			return false, err
		}
	}
	for _, c := range f.GetMustNot() {
		ok, err := condition(c, pt)
		if err != nil || ok {
			return false, err
		}
	}
	if len(f.GetShould()) == 0 {
		return true, nil
	}
	for _, c := range f.GetShould() {
		ok, err := condition(c, pt)
		if err != nil {
			return false, err
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

func condition(c *qc.Condition, pt *point) (bool, error) {
	switch v := c.GetConditionOneOf().(type) {
	case *qc.Condition_Filter:
		return matches(v.Filter, pt)
	case *qc.Condition_HasId:
		for _, id := range v.HasId.GetHasId() {
			key, err := pointKey(id)
			if err != nil {
				return false, err
			}
			if key == pt.key {
				return true, nil
			}
		}
		return false, nil
	case *qc.Condition_Field:
		return fieldCondition(v.Field, pt)
	}
	return false, unsupported(fmt.Sprintf("condition %T", c.GetConditionOneOf()))
}

func fieldCondition(fc *qc.FieldCondition, pt *point) (bool, error) {
	if strings.ContainsAny(fc.GetKey(), ".[") {
		return false, unsupported("nested payload keys")
	}
	if fc.Match == nil || fc.Range != nil || fc.GeoBoundingBox != nil || fc.GeoRadius != nil ||
		fc.ValuesCount != nil || fc.GeoPolygon != nil || fc.DatetimeRange != nil || fc.IsEmpty != nil || fc.IsNull != nil {
		return false, unsupported("field conditions other than match")
	}
	values := []*qc.Value{pt.payload[fc.GetKey()]}
	if l := values[0].GetListValue(); l != nil {
		values = l.GetValues()
	}
	anyOf := func(pred func(*qc.Value) bool) bool {
		for _, v := range values {
			if v != nil && pred(v) {
				return true
			}
		}
		return false
	}
	switch m := fc.GetMatch().GetMatchValue().(type) {
	case *qc.Match_Keyword:
		return anyOf(func(v *qc.Value) bool {
			s, ok := v.GetKind().(*qc.Value_StringValue)
			return ok && s.StringValue == m.Keyword
		}), nil
	case *qc.Match_Keywords:
		return anyOf(func(v *qc.Value) bool {
			s, ok := v.GetKind().(*qc.Value_StringValue)
			if !ok {
				return false
			}
			for _, k := range m.Keywords.GetStrings() {
				if s.StringValue == k {
					return true
				}
			}
			return false
		}), nil
	case *qc.Match_Integer:
		return anyOf(func(v *qc.Value) bool {
			i, ok := v.GetKind().(*qc.Value_IntegerValue)
			return ok && i.IntegerValue == m.Integer
		}), nil
	case *qc.Match_Boolean:
		return anyOf(func(v *qc.Value) bool {
			b, ok := v.GetKind().(*qc.Value_BoolValue)
			return ok && b.BoolValue == m.Boolean
		}), nil
	}
	return false, unsupported(fmt.Sprintf("match %T", fc.GetMatch().GetMatchValue()))
}

// ---- query

type scored struct {
	pt    *point
	score float64
}

func (p pointsService) Query(_ context.Context, req *qc.QueryPoints) (*qc.QueryResponse, error) {
	if req.LookupFrom != nil || req.ShardKeySelector != nil || req.Offset != nil && len(req.GetPrefetch()) > 0 {
		return nil, unsupported("lookup_from, shard keys or offsets with prefetch")
	}
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	col := p.s.collections[req.GetCollectionName()]
	if col == nil {
		return nil, notFound(req.GetCollectionName())
	}
	limit := uint64(10)
	if req.Limit != nil {
		limit = req.GetLimit()
	}
	res, err := col.run(req.GetPrefetch(), req.GetQuery(), req.GetUsing(), req.GetFilter(), nil, req.ScoreThreshold, limit+req.GetOffset())
	if err != nil {
		return nil, err
	}
	if off := int(req.GetOffset()); off < len(res) {
		res = res[off:]
	} else {
		res = nil
	}
	out := &qc.QueryResponse{}
	for _, r := range res {
		out.Result = append(out.Result, &qc.ScoredPoint{
			Id:      proto.Clone(r.pt.id).(*qc.PointId),
			Payload: selectPayload(r.pt.payload, req.GetWithPayload()),
			Score:   float32(r.score),
		})
	}
	return out, nil
}

// run evaluates one query level: its prefetches (each under the parent
// filter too), then its own query over them or over the whole collection.
func (col *collection) run(prefetch []*qc.PrefetchQuery, q *qc.Query, using string, filter, parent *qc.Filter, threshold *float32, limit uint64) ([]scored, error) {
	filter = and(parent, filter)
	var lists [][]scored
	for _, pf := range prefetch {
		pl := uint64(10)
		if pf.Limit != nil {
			pl = pf.GetLimit()
		}
		if pf.LookupFrom != nil {
			return nil, unsupported("lookup_from")
		}
		l, err := col.run(pf.GetPrefetch(), pf.GetQuery(), pf.GetUsing(), pf.GetFilter(), filter, pf.ScoreThreshold, pl)
		if err != nil {
			return nil, err
		}
		lists = append(lists, l)
	}
	var out []scored
	var err error
	switch v := q.GetVariant().(type) {
	case *qc.Query_Nearest:
		if len(prefetch) > 0 {
			return nil, unsupported("rescoring prefetch results with a nearest query")
		}
		out, err = col.nearest(v.Nearest, using, filter)
	case *qc.Query_Fusion:
		if v.Fusion != qc.Fusion_RRF {
			return nil, unsupported("fusion " + v.Fusion.String())
		}
		out, err = rrf(lists, 2, nil)
	case *qc.Query_Rrf:
		k := uint32(2)
		if v.Rrf.K != nil {
			k = v.Rrf.GetK()
		}
		out, err = rrf(lists, k, v.Rrf.GetWeights())
	case nil:
		return nil, unsupported("queries without a query")
	default:
		return nil, unsupported(fmt.Sprintf("query %T", v))
	}
	if err != nil {
		return nil, err
	}
	if threshold != nil {
		kept := out[:0]
		for _, s := range out {
			if s.score >= float64(*threshold) {
				kept = append(kept, s)
			}
		}
		out = kept
	}
	if uint64(len(out)) > limit {
		out = out[:limit]
	}
	return out, nil
}

func and(a, b *qc.Filter) *qc.Filter {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return &qc.Filter{Must: []*qc.Condition{qc.NewFilterAsCondition(a), qc.NewFilterAsCondition(b)}}
}

func (col *collection) nearest(in *qc.VectorInput, using string, filter *qc.Filter) ([]scored, error) {
	var out []scored
	switch v := in.GetVariant().(type) {
	case *qc.VectorInput_Dense:
		params, ok := col.dense[using]
		if !ok {
			return nil, badInput("Not existing vector name error: %s", using)
		}
		query := v.Dense.GetData()
		if uint64(len(query)) != params.GetSize() {
			return nil, badInput("Vector dimension error: expected dim: %d, got %d", params.GetSize(), len(query))
		}
		if params.GetDistance() == qc.Distance_Cosine {
			query = normalize(query)
		}
		for _, pt := range col.points {
			vec, has := pt.dense[using]
			if !has {
				continue
			}
			ok, err := matches(filter, pt)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			var dot float64
			for i := range vec {
				dot += float64(vec[i]) * float64(query[i])
			}
			out = append(out, scored{pt, dot})
		}
	case *qc.VectorInput_Sparse:
		params, ok := col.sparse[using]
		if !ok {
			return nil, badInput("Not existing vector name error: %s", using)
		}
		query := sparseVec{idx: v.Sparse.GetIndices(), val: v.Sparse.GetValues()}
		if err := checkSparse(query); err != nil {
			return nil, err
		}
		weights := make(map[uint32]float64, len(query.idx))
		for i, d := range query.idx {
			weights[d] = float64(query.val[i])
		}
		if params.GetModifier() == qc.Modifier_Idf {
			col.applyIDF(using, weights)
		}
		for _, pt := range col.points {
			vec, has := pt.sparse[using]
			if !has {
				continue
			}
			var dot float64
			shared := false
			for i, d := range vec.idx {
				if w, ok := weights[d]; ok {
					shared = true
					dot += w * float64(vec.val[i])
				}
			}
			if !shared {
				continue
			}
			ok, err := matches(filter, pt)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, scored{pt, dot})
			}
		}
	default:
		return nil, unsupported(fmt.Sprintf("nearest input %T", v))
	}
	sortScored(out)
	return out, nil
}

// applyIDF multiplies each query weight by the dimension's inverse document
// frequency over the whole collection (filters do not change it):
// ln(1 + (N − n + 0.5)/(n + 0.5)).
func (col *collection) applyIDF(name string, weights map[uint32]float64) {
	n := 0
	df := make(map[uint32]int, len(weights))
	for _, pt := range col.points {
		vec, has := pt.sparse[name]
		if !has {
			continue
		}
		n++
		for _, d := range vec.idx {
			if _, ok := weights[d]; ok {
				df[d]++
			}
		}
	}
	for d, w := range weights {
		weights[d] = w * IDF(n, df[d])
	}
}

// IDF is the inverse document frequency of a dimension held by df of n
// points, as the sparse IDF modifier defines it: ln(1 + (n − df + 0.5)/(df + 0.5)).
func IDF(n, df int) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// rrf fuses ranked lists: each point gets Σ 1/((position+1)/w + k − 1) over
// the lists it is in, positions from 0 and w = 1 unless weights are given.
func rrf(lists [][]scored, k uint32, weights []float32) ([]scored, error) {
	if len(lists) == 0 {
		return nil, badInput("fusion needs at least one prefetch")
	}
	if len(weights) > 0 && len(weights) != len(lists) {
		return nil, badInput("Number of weights in RRF should match number of pre-fetches: got %d, expected %d", len(weights), len(lists))
	}
	total := map[string]*scored{}
	var order []*scored
	for li, l := range lists {
		w := 1.0
		if len(weights) > 0 {
			w = float64(weights[li])
		}
		for pos, s := range l {
			var add float64
			if w > 0 {
				add = 1 / (float64(pos+1)/w + float64(k) - 1)
			}
			if t, ok := total[s.pt.key]; ok {
				t.score += add
				continue
			}
			t := &scored{s.pt, add}
			total[s.pt.key] = t
			order = append(order, t)
		}
	}
	out := make([]scored, len(order))
	for i, t := range order {
		out[i] = *t
	}
	sortScored(out)
	return out, nil
}

// RRF is the score a point gets from RRF fusion with constant k when it sits
// at the given 0-based positions of the fused lists.
func RRF(k int, positions ...int) float64 {
	var s float64
	for _, p := range positions {
		s += 1 / float64(p+k)
	}
	return s
}

// sortScored orders by score, best first, ties by point id.
func sortScored(s []scored) {
	slices.SortFunc(s, func(a, b scored) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return strings.Compare(a.pt.key, b.pt.key)
	})
}

func (col *collection) sorted() []*point {
	out := make([]*point, 0, len(col.points))
	for _, pt := range col.points {
		out = append(out, pt)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// selectPayload applies with_payload; the default (nil) returns none.
func selectPayload(pl map[string]*qc.Value, sel *qc.WithPayloadSelector) map[string]*qc.Value {
	keep := func(string) bool { return false }
	switch v := sel.GetSelectorOptions().(type) {
	case *qc.WithPayloadSelector_Enable:
		keep = func(string) bool { return v.Enable }
	case *qc.WithPayloadSelector_Include:
		keep = func(k string) bool { return contains(v.Include.GetFields(), k) }
	case *qc.WithPayloadSelector_Exclude:
		keep = func(k string) bool { return !contains(v.Exclude.GetFields(), k) }
	}
	out := map[string]*qc.Value{}
	for k, val := range pl {
		if keep(k) {
			out[k] = proto.Clone(val).(*qc.Value)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Scroll returns the points matching the filter in point-id order (ids as
// their string form), from offset, at most limit (default 10), with their
// payload when asked, and the next page's first id. Ordering by a payload
// field is not modelled.
func (p pointsService) Scroll(_ context.Context, req *qc.ScrollPoints) (*qc.ScrollResponse, error) {
	if req.OrderBy != nil {
		return nil, unsupported("scroll order_by")
	}
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	col := p.s.collections[req.GetCollectionName()]
	if col == nil {
		return nil, notFound(req.GetCollectionName())
	}
	from := ""
	if req.Offset != nil {
		k, err := pointKey(req.Offset)
		if err != nil {
			return nil, err
		}
		from = k
	}
	var keys []string
	for k, pt := range col.points {
		if k < from {
			continue
		}
		ok, err := matches(req.GetFilter(), pt)
		if err != nil {
			return nil, err
		}
		if ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	limit := int(req.GetLimit())
	if req.Limit == nil {
		limit = 10
	}
	resp := &qc.ScrollResponse{Result: []*qc.RetrievedPoint{}}
	for i, k := range keys {
		pt := col.points[k]
		if i == limit {
			resp.NextPageOffset = pt.id
			break
		}
		rp := &qc.RetrievedPoint{Id: pt.id}
		if req.GetWithPayload().GetEnable() {
			rp.Payload = pt.payload
		}
		resp.Result = append(resp.Result, rp)
	}
	return resp, nil
}
