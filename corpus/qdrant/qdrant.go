package qdrant

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	qc "github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// Names of the two vectors every collection holds, and of the payload fields.
const (
	DenseVector  = "dense"
	SparseVector = "bm25f"

	fieldCollection = "collection"
	fieldDocURL     = "doc_url"
	fieldURL        = "url"
	fieldTitle      = "title"
	fieldHeading    = "heading_path"
	fieldAnchor     = "anchor"
	fieldOrdinal    = "ordinal"
	fieldText       = "text"
	fieldHash       = "hash"
	fieldChunkID    = "chunk_id"
	fieldPrefixes   = "url_prefixes"
	fieldGen        = "gen"
)

// Defaults of Config.
const (
	DefaultAddr      = "localhost:6334"
	DefaultTimeout   = 10 * time.Second
	DefaultBatchSize = 256
	DefaultPrefix    = "kg"
	DefaultRRFK      = 60
	// MaxK is the largest number of hits one search may ask for.
	MaxK = 1000
)

// Config says how to reach Qdrant and how to lay out its collections. The
// zero value talks plaintext gRPC to localhost:6334 without an API key.
type Config struct {
	// Addr is the gRPC endpoint as host:port (Qdrant's gRPC port is 6334,
	// not the REST port 6333). Default DefaultAddr.
	Addr string
	// APIKey is sent as the "api-key" header on every call when set.
	APIKey string
	// TLS turns on transport security (TLS 1.3 with the system roots unless
	// TLSConfig says otherwise). Use it whenever APIKey is set off-host.
	TLS bool
	// TLSConfig, when set, is used for TLS (and implies TLS).
	TLSConfig *tls.Config
	// Timeout bounds every single call to Qdrant. Default DefaultTimeout.
	Timeout time.Duration
	// BatchSize is the number of points per upsert call. Default DefaultBatchSize.
	BatchSize int
	// HNSWM and HNSWEfConstruct set the dense index's graph degree and build
	// beam width for new collections; 0 keeps Qdrant's defaults (16, 100).
	HNSWM           int
	HNSWEfConstruct int
	// SearchEf sets hnsw_ef for searches; 0 keeps Qdrant's default.
	SearchEf int
	// ScalarQuantization stores the dense vectors of new collections as
	// int8 too (quantile 0.99, kept in RAM) and searches those first.
	ScalarQuantization bool
	// Prefetch is how many candidates each side of a hybrid search fetches
	// before fusion; 0 means max(4·k, 40).
	Prefetch int
	// RRFK is the constant k of reciprocal rank fusion, score = Σ 1/(k+rank)
	// with rank counted from 1. Default DefaultRRFK, the value of the RRF
	// paper. It is sent as the parametrised RRF of Qdrant ≥ 1.16.
	RRFK int
	// BM25 tunes the client-side sparse vectors.
	BM25 BM25
	// Prefix starts every Qdrant collection name. Default DefaultPrefix.
	Prefix string
	// PoolSize is the number of gRPC connections. Default 1.
	PoolSize int
	// DialOptions are extra gRPC options (tests use them; most callers don't).
	DialOptions []grpc.DialOption
}

func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.RRFK <= 0 {
		c.RRFK = DefaultRRFK
	}
	if c.PoolSize <= 0 {
		c.PoolSize = 1
	}
	if c.TLSConfig != nil {
		c.TLS = true
	}
	return c
}

// Index is the Qdrant implementation of corpus.Index. It keeps one Qdrant
// collection per kgagent collection for the embedder it was built with, so
// vectors of different embedders never meet. It is safe for concurrent use.
type Index struct {
	cfg      Config
	client   *qc.Client
	dim      int
	embedder string

	mu    sync.Mutex
	ready map[string]bool        // Qdrant collections known to exist with our schema
	locks map[string]*sync.Mutex // serialises creation per Qdrant collection

	docs keyedMutex // serialises writes per document (see ReplaceDocument)
}

// keyedMutex hands out one mutex per key and forgets keys nobody holds.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*refMutex
}

type refMutex struct {
	sync.Mutex
	refs int
}

// lock locks key and returns its unlock function.
func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*refMutex{}
	}
	l := k.m[key]
	if l == nil {
		l = &refMutex{}
		k.m[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}

var _ corpus.Index = (*Index)(nil)

// New connects to Qdrant and checks that it answers (a health check bounded
// by ctx and cfg.Timeout). dimension is the embedder's vector length and
// embedderName its corpus.Embedder.Name(). Errors: EINVALID for a bad
// config, EUNAVAILABLE when Qdrant cannot be reached or refuses the API key.
func New(ctx context.Context, cfg Config, dimension int, embedderName string) (*Index, error) {
	cfg = cfg.withDefaults()
	if dimension <= 0 || dimension > 65536 {
		return nil, kgagent.Errorf(kgagent.EINVALID, "qdrant: dimension %d out of range", dimension)
	}
	if strings.TrimSpace(embedderName) == "" {
		return nil, kgagent.Errorf(kgagent.EINVALID, "qdrant: embedder name is empty")
	}
	host, portStr, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EINVALID, err, "qdrant: address %q is not host:port", cfg.Addr)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 || port > 65535 {
		return nil, kgagent.Errorf(kgagent.EINVALID, "qdrant: bad port in address %q", cfg.Addr)
	}
	client, err := qc.NewClient(&qc.Config{
		Host:                   host,
		Port:                   port,
		APIKey:                 cfg.APIKey,
		UseTLS:                 cfg.TLS,
		TLSConfig:              cfg.TLSConfig,
		SkipCompatibilityCheck: true, // we run our own health check below
		PoolSize:               uint(cfg.PoolSize),
		GrpcOptions:            cfg.DialOptions,
	})
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EINVALID, err, "qdrant: cannot set up client for %s", cfg.Addr)
	}
	ix := &Index{
		cfg:      cfg,
		client:   client,
		dim:      dimension,
		embedder: embedderName,
		ready:    map[string]bool{},
		locks:    map[string]*sync.Mutex{},
	}
	if err := ix.Ping(ctx); err != nil {
		client.Close()
		return nil, notGRPC(cfg.Addr, err)
	}
	// The health check needs no API key: list collections, which does, so a
	// key the server refuses is reported now, not at the first search.
	cctx, cancel := ix.callCtx(ctx)
	defer cancel()
	if _, err := ix.client.ListCollections(cctx); err != nil {
		client.Close()
		return nil, mapErr(cctx, err, "list collections (checking the API key)")
	}
	return ix, nil
}

// notGRPC explains a failed health check against an address that answers,
// but not in gRPC (Qdrant's REST port 6333 instead of its gRPC port 6334).
func notGRPC(addr string, err error) error {
	msg := strings.ToLower(err.Error())
	for _, sign := range []string{"http2", "malformed http", "frame too large", "server preface", "http/1"} {
		if strings.Contains(msg, sign) {
			return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "qdrant at %s is not a gRPC endpoint (is it the REST port 6333? kgagent speaks gRPC: use Qdrant's gRPC port, 6334 by default)", addr)
		}
	}
	return err
}

// Close releases the gRPC connections.
func (ix *Index) Close() error {
	return ix.client.Close()
}

// Ping runs Qdrant's health check.
func (ix *Index) Ping(ctx context.Context) error {
	ctx, cancel := ix.callCtx(ctx)
	defer cancel()
	if _, err := ix.client.HealthCheck(ctx); err != nil {
		return mapErr(ctx, err, "health check")
	}
	return nil
}

// CollectionName is the Qdrant collection that holds collection's chunks for
// this index's embedder: prefix, the sanitised kgagent collection and
// embedder names, and a short hash of both unsanitised names, so that names
// differing only in characters Qdrant cannot take never share a collection.
func (ix *Index) CollectionName(collection string) string {
	sum := sha256.Sum256([]byte(collection + "\x00" + ix.embedder))
	return fmt.Sprintf("%s_%s_%s_%s", ix.cfg.Prefix, sanitize(collection, 64), sanitize(ix.embedder, 48), hex.EncodeToString(sum[:4]))
}

// sanitize keeps ASCII letters, digits, '-' and '_' and replaces the rest.
func sanitize(s string, max int) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= max {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// pointID is the Qdrant point id of a chunk: a UUIDv5 of collection and
// chunk id, so re-indexing a chunk overwrites its point.
func pointID(collection, chunkID string) string {
	return uuid.NewSHA1(pointNamespace, []byte(collection+"\x00"+chunkID)).String()
}

// pointNamespace is the UUID namespace of point ids (a UUIDv5 of the URL
// namespace and this package's import path).
var pointNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://github.com/kgagent/kgagent/corpus/qdrant"))

// callCtx bounds one call by the configured timeout.
func (ix *Index) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, ix.cfg.Timeout)
}

// ensure creates the Qdrant collection of collection, with its vectors and
// payload indexes, unless this Index already knows it exists. An existing
// collection whose dense vector has another size is a CONFLICT.
func (ix *Index) ensure(ctx context.Context, collection string) (string, error) {
	name := ix.CollectionName(collection)
	lock := ix.creationLock(name)
	if lock == nil {
		return name, nil
	}
	lock.Lock()
	defer lock.Unlock()
	ix.mu.Lock()
	done := ix.ready[name]
	ix.mu.Unlock()
	if done {
		return name, nil
	}

	exists, err := ix.exists(ctx, name)
	if err != nil {
		return "", err
	}
	if !exists {
		if err := ix.create(ctx, name, collection); err != nil {
			// Another process may have created it meanwhile.
			if again, err2 := ix.exists(ctx, name); err2 != nil || !again {
				return "", err
			}
		}
	}
	if err := ix.checkSchema(ctx, name); err != nil {
		return "", err
	}
	ix.mu.Lock()
	ix.ready[name] = true
	ix.mu.Unlock()
	return name, nil
}

// creationLock returns the lock that serialises the creation of the Qdrant
// collection name within this Index, or nil when name is known to exist.
func (ix *Index) creationLock(name string) *sync.Mutex {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.ready[name] {
		return nil
	}
	lock := ix.locks[name]
	if lock == nil {
		lock = &sync.Mutex{}
		ix.locks[name] = lock
	}
	return lock
}

// waitCreation returns once no creation of the Qdrant collection name is in
// flight in this Index. Qdrant refuses point updates on a collection whose
// shards are still being activated ("Please retry"), so a delete sent while
// ensure is creating the collection waits for it instead of racing it.
func (ix *Index) waitCreation(name string) {
	if lock := ix.creationLock(name); lock != nil {
		lock.Lock()
		//lint:ignore SA2001 waiting for the holder is the point
		lock.Unlock()
	}
}

// Retries of Qdrant's transient "Please retry" answers (see retry).
var (
	retryAttempts = 8
	retryBase     = 50 * time.Millisecond
	retryMax      = 2 * time.Second
)

// retryable reports whether err is Qdrant asking the client to send an
// update again: right after a collection is created, until its shard
// replicas are active, updates fail with "Failed to apply operation to at
// least one `Active` replica ... Please retry" (Internal), seen on Qdrant
// 1.17.1 under concurrent deletes during creation.
func retryable(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.Internal, codes.Unknown, codes.Unavailable, codes.Aborted:
		return strings.Contains(strings.ToLower(st.Message()), "please retry")
	}
	return false
}

// retry runs call, an idempotent update, again while it fails with a
// retryable answer: at most retryAttempts tries, sleeping retryBase,
// doubling up to retryMax, between them, and never past ctx. It returns
// call's last error, unmapped (a raw client error).
func (ix *Index) retry(ctx context.Context, call func() error) error {
	delay := retryBase
	for attempt := 1; ; attempt++ {
		err := call()
		if err == nil || attempt >= retryAttempts || !retryable(err) {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, retryMax)
	}
}

// forget drops name from the known collections (after a drop, or when a call
// finds it gone).
func (ix *Index) forget(name string) {
	ix.mu.Lock()
	delete(ix.ready, name)
	ix.mu.Unlock()
}

func (ix *Index) exists(ctx context.Context, name string) (bool, error) {
	cctx, cancel := ix.callCtx(ctx)
	defer cancel()
	ok, err := ix.client.CollectionExists(cctx, name)
	if err != nil {
		return false, mapErr(ctx, err, "check collection")
	}
	return ok, nil
}

// create makes the collection and its payload indexes.
func (ix *Index) create(ctx context.Context, name, collection string) error {
	dense := &qc.VectorParams{Size: uint64(ix.dim), Distance: qc.Distance_Cosine}
	req := &qc.CreateCollection{
		CollectionName: name,
		VectorsConfig:  qc.NewVectorsConfigMap(map[string]*qc.VectorParams{DenseVector: dense}),
		SparseVectorsConfig: qc.NewSparseVectorsConfig(map[string]*qc.SparseVectorParams{
			SparseVector: {Modifier: qc.Modifier_Idf.Enum()},
		}),
		Metadata: map[string]*qc.Value{
			metaCollection: qc.NewValueString(collection),
			metaEmbedder:   qc.NewValueString(ix.embedder),
		},
	}
	if ix.cfg.HNSWM > 0 || ix.cfg.HNSWEfConstruct > 0 {
		h := &qc.HnswConfigDiff{}
		if ix.cfg.HNSWM > 0 {
			h.M = qc.PtrOf(uint64(ix.cfg.HNSWM))
		}
		if ix.cfg.HNSWEfConstruct > 0 {
			h.EfConstruct = qc.PtrOf(uint64(ix.cfg.HNSWEfConstruct))
		}
		req.HnswConfig = h
	}
	if ix.cfg.ScalarQuantization {
		req.QuantizationConfig = qc.NewQuantizationScalar(&qc.ScalarQuantization{
			Type:      qc.QuantizationType_Int8,
			Quantile:  qc.PtrOf(float32(0.99)),
			AlwaysRam: qc.PtrOf(true),
		})
	}
	cctx, cancel := ix.callCtx(ctx)
	err := ix.client.CreateCollection(cctx, req)
	cancel()
	if err != nil {
		return mapErr(ctx, err, "create collection")
	}
	return ix.createIndexes(ctx, name, indexedFields)
}

// indexedFields are the payload fields with a keyword index.
var indexedFields = []string{fieldCollection, fieldDocURL, fieldPrefixes, fieldGen}

func (ix *Index) createIndexes(ctx context.Context, name string, fields []string) error {
	for _, field := range fields {
		err := ix.retry(ctx, func() error {
			cctx, cancel := ix.callCtx(ctx)
			defer cancel()
			_, err := ix.client.CreateFieldIndex(cctx, &qc.CreateFieldIndexCollection{
				CollectionName: name,
				Wait:           qc.PtrOf(true),
				FieldName:      field,
				FieldType:      qc.FieldType_FieldTypeKeyword.Enum(),
			})
			return err
		})
		if err != nil {
			return mapErr(ctx, err, "create payload index")
		}
	}
	return nil
}

// checkSchema verifies that an existing collection has our dense vector with
// our dimension and our sparse vector, and adds missing payload indexes.
func (ix *Index) checkSchema(ctx context.Context, name string) error {
	cctx, cancel := ix.callCtx(ctx)
	defer cancel()
	info, err := ix.client.GetCollectionInfo(cctx, name)
	if err != nil {
		return mapErr(ctx, err, "get collection")
	}
	params := info.GetConfig().GetParams()
	dense := params.GetVectorsConfig().GetParamsMap().GetMap()[DenseVector]
	if dense == nil || dense.GetSize() != uint64(ix.dim) {
		return kgagent.Errorf(kgagent.ECONFLICT, "qdrant collection %s exists without a %d-dimensional %q vector", name, ix.dim, DenseVector)
	}
	if params.GetSparseVectorsConfig().GetMap()[SparseVector] == nil {
		return kgagent.Errorf(kgagent.ECONFLICT, "qdrant collection %s exists without a %q sparse vector", name, SparseVector)
	}
	// A creation that failed half-way (or an index dropped by hand) leaves
	// payload indexes missing: add them now.
	var missing []string
	for _, f := range indexedFields {
		if info.GetPayloadSchema()[f] == nil {
			missing = append(missing, f)
		}
	}
	return ix.createIndexes(ctx, name, missing)
}

// mapErr turns a client error into a *kgagent.Error with a stable code.
// Qdrant's own messages stay in the wrapped cause (logged, never shown).
func mapErr(ctx context.Context, err error, op string) error {
	if err == nil {
		return nil
	}
	if ce := ctx.Err(); ce != nil {
		code := kgagent.ETIMEOUT
		if ce == context.Canceled {
			code = kgagent.ECANCELED
		}
		return kgagent.WrapError(code, err, "qdrant %s: %v", op, ce)
	}
	var rl *qc.QdrantResourceExhaustedError
	if errors.As(err, &rl) {
		return kgagent.WrapError(kgagent.ERATELIMIT, err, "qdrant %s: rate limited, retry after %ds", op, rl.RetryAfterS)
	}
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.Unavailable:
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "qdrant %s: server unreachable", op)
	case codes.Unauthenticated, codes.PermissionDenied:
		// Our credentials for a dependency, not the caller's: the store is
		// unusable until the configuration is fixed.
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "qdrant %s: API key rejected", op)
	case codes.DeadlineExceeded:
		return kgagent.WrapError(kgagent.ETIMEOUT, err, "qdrant %s: deadline exceeded", op)
	case codes.Canceled:
		return kgagent.WrapError(kgagent.ECANCELED, err, "qdrant %s: canceled", op)
	case codes.ResourceExhausted:
		return kgagent.WrapError(kgagent.ERATELIMIT, err, "qdrant %s: rate limited", op)
	case codes.NotFound:
		return kgagent.WrapError(kgagent.ENOTFOUND, err, "qdrant %s: not found", op)
	case codes.AlreadyExists:
		return kgagent.WrapError(kgagent.ECONFLICT, err, "qdrant %s: already exists", op)
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
		return kgagent.WrapError(kgagent.EINVALID, err, "qdrant %s: request rejected", op)
	}
	return kgagent.WrapError(kgagent.EINTERNAL, err, "qdrant %s failed", op)
}
