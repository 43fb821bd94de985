// Package neo4j is the graphrag.Store on a Neo4j 5 server (5.26 LTS or newer),
// through the official github.com/neo4j/neo4j-go-driver/v5.
//
// Graph model (see DECISIONS.md for why):
//
//	(:Entity {collection, id, name, type, norm})
//	(:Entity)-[:REL {collection, p, doc_url, source_url, chunk_id}]->(:Entity)
//	(:Entity)-[:REL {...}]->(:Literal {collection, value, h})
//
// An entity is one node per (collection, id), held unique by a constraint;
// norm is graphrag.NormalizeName(name). A literal object is a node of its own
// per triple (h is a hash of value, indexed so Find can match literals
// exactly), so retracting a triple never touches another document's literal.
//
// Open creates the constraint and indexes (idempotently) and waits until they
// are online. Writes run in managed transactions (ExecuteWrite), so the driver
// retries transient errors such as deadlocks and leader switches; a
// document's old triples are retracted and its new ones written with UNWIND
// batches of Config.BatchSize rows in one transaction, so a failure leaves the
// old triples in place. The replace calls of one Store go through one writer,
// which commits the calls queued together in one transaction (group commit,
// write.go), so an ingest's concurrent pages do not deadlock each other; a
// call whose context ends while queued returns at once, unwritten. Reads run
// in ExecuteRead. Expand walks the graph one
// hop per query with a per-entity LIMIT (a bounded expansion that stays cheap
// on hub entities), inside one read transaction.
//
// Errors: EINVALID for bad arguments, EUNAVAILABLE when Neo4j cannot be
// reached (at Open or later) or gave up after retries, EUNAUTH / EFORBIDDEN
// for rejected credentials, ETIMEOUT / ECANCELED from the context, EINTERNAL
// otherwise.
package neo4j

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"
	"github.com/neo4j/neo4j-go-driver/v5/neo4j/config"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
)

// Compile-time check that *Store is a graphrag.Store.
var _ graphrag.Store = (*Store)(nil)

// Defaults of Config.
const (
	DefaultURL            = "bolt://127.0.0.1:7687"
	DefaultBatchSize      = 5000
	DefaultConnectTimeout = 10 * time.Second
	DefaultRetryTime      = 30 * time.Second
	DefaultFindLimit      = graphrag.DefaultFindLimit
	MaxFindLimit          = 100000
	DefaultEntityLimit    = 50
	DefaultHops           = 2
	MaxHops               = 64
	DefaultPerEntity      = 30
)

// Config says how to reach Neo4j. The zero value connects to
// bolt://127.0.0.1:7687 without authentication, to the server's default
// database.
type Config struct {
	// URL of the server: bolt://, neo4j:// (routing), or their TLS variants
	// bolt+s://, neo4j+s:// (verified certificate) and bolt+ssc://,
	// neo4j+ssc:// (self-signed accepted). Default DefaultURL.
	URL string
	// User and Password for basic authentication; both empty means none.
	// A Password without User authenticates as "neo4j".
	User     string
	Password string
	// Database to use; empty means the server's default database.
	Database string
	// TLS customises TLS for the +s and +ssc schemes (e.g. RootCAs, client
	// certificates, MinVersion). Nil uses the system roots.
	TLS *tls.Config
	// CAFile is a PEM file of CA certificates to trust for +s schemes, added
	// to TLS.RootCAs (or to a new pool). Empty adds none.
	CAFile string
	// BatchSize is the number of rows per UNWIND statement; a document of any
	// size is still written in one transaction. Default DefaultBatchSize.
	BatchSize int
	// ConnectTimeout bounds connecting at Open and per socket connect.
	// Default DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// RetryTime is how long a managed transaction keeps retrying transient
	// errors. Default DefaultRetryTime.
	RetryTime time.Duration
	// MaxConnections caps the driver's connection pool (default 100).
	MaxConnections int
}

// Store is a graphrag.Store on Neo4j. It is safe for concurrent use.
type Store struct {
	driver neo4j.DriverWithContext
	cfg    Config
	group  *groupWriter // see write.go: one write transaction at a time
}

// Open connects to Neo4j, checks that it answers, and creates the schema.
// An unreachable server gives EUNAVAILABLE, rejected credentials EUNAUTH.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.URL == "" {
		cfg.URL = DefaultURL
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.RetryTime <= 0 {
		cfg.RetryTime = DefaultRetryTime
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Host == "" {
		return nil, kgagent.Errorf(kgagent.EINVALID, "neo4j: bad URL %q (want bolt://host:port or neo4j+s://host)", cfg.URL)
	}
	if u.User != nil {
		return nil, kgagent.Errorf(kgagent.EINVALID, "neo4j: put credentials in Config.User and Config.Password, not in the URL")
	}
	tlsCfg, err := tlsConfig(cfg)
	if err != nil {
		return nil, err
	}
	auth := neo4j.NoAuth()
	switch {
	case cfg.User != "":
		auth = neo4j.BasicAuth(cfg.User, cfg.Password, "")
	case cfg.Password != "":
		auth = neo4j.BasicAuth("neo4j", cfg.Password, "")
	}
	driver, err := neo4j.NewDriverWithContext(cfg.URL, auth, func(c *config.Config) {
		c.SocketConnectTimeout = cfg.ConnectTimeout
		c.ConnectionAcquisitionTimeout = cfg.ConnectTimeout
		c.MaxTransactionRetryTime = cfg.RetryTime
		if cfg.MaxConnections > 0 {
			c.MaxConnectionPoolSize = cfg.MaxConnections
		}
		if tlsCfg != nil {
			c.TlsConfig = tlsCfg
		}
	})
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EINVALID, err, "neo4j: cannot use URL %q", cfg.URL)
	}
	s := &Store{driver: driver, cfg: cfg, group: &groupWriter{}}
	vctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	if err := driver.VerifyConnectivity(vctx); err != nil {
		_ = driver.Close(context.Background())
		if code := codeOf(ctx, err); code == kgagent.EUNAUTH || code == kgagent.EFORBIDDEN || code == kgagent.ECANCELED {
			return nil, kgagent.WrapError(code, err, "neo4j at %s rejected the connection", redact(cfg.URL))
		}
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err,
			"neo4j at %s is unreachable (is it running? for tests: eval \"$(deploy/neo4j/start.sh)\")", redact(cfg.URL))
	}
	if err := s.createSchema(ctx); err != nil {
		_ = driver.Close(context.Background())
		return nil, err
	}
	return s, nil
}

// Close releases the driver and its connections.
func (s *Store) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.driver.Close(ctx)
}

// Driver returns the underlying driver, for health checks and tools.
func (s *Store) Driver() neo4j.DriverWithContext { return s.driver }

func tlsConfig(cfg Config) (*tls.Config, error) {
	if cfg.TLS == nil && cfg.CAFile == "" {
		return nil, nil
	}
	var t *tls.Config
	if cfg.TLS != nil {
		t = cfg.TLS.Clone()
	} else {
		t = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, kgagent.WrapError(kgagent.EINVALID, err, "neo4j: cannot read CA file %q", cfg.CAFile)
		}
		if t.RootCAs == nil {
			t.RootCAs = x509.NewCertPool()
		}
		if !t.RootCAs.AppendCertsFromPEM(pem) {
			return nil, kgagent.Errorf(kgagent.EINVALID, "neo4j: no PEM certificates in CA file %q", cfg.CAFile)
		}
	}
	return t, nil
}

// schema is created at Open. Every statement is idempotent.
var schema = []string{
	// One node per (collection, id); also the index every write and seed
	// lookup seeks on.
	`CREATE CONSTRAINT kg_entity_key IF NOT EXISTS FOR (e:Entity) REQUIRE (e.collection, e.id) IS UNIQUE`,
	// Find by normalised name (exact) and Entities by substring.
	`CREATE INDEX kg_entity_norm IF NOT EXISTS FOR (e:Entity) ON (e.collection, e.norm)`,
	`CREATE TEXT INDEX kg_entity_norm_text IF NOT EXISTS FOR (e:Entity) ON (e.norm)`,
	// Retract by document, and scan a collection (doc_url IS NOT NULL).
	`CREATE INDEX kg_rel_doc IF NOT EXISTS FOR ()-[r:REL]-() ON (r.collection, r.doc_url)`,
	// Find by predicate.
	`CREATE INDEX kg_rel_p IF NOT EXISTS FOR ()-[r:REL]-() ON (r.collection, r.p)`,
	// Find literal objects exactly, and delete a collection's literals.
	`CREATE INDEX kg_literal_h IF NOT EXISTS FOR (l:Literal) ON (l.collection, l.h)`,
}

func (s *Store) createSchema(ctx context.Context) error {
	for _, q := range schema {
		_, err := neo4j.ExecuteQuery(ctx, s.driver, q, nil, neo4j.EagerResultTransformer,
			neo4j.ExecuteQueryWithDatabase(s.cfg.Database), neo4j.ExecuteQueryWithWritersRouting())
		if err != nil && !isCode(err, "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists") &&
			!isCode(err, "Neo.ClientError.Schema.IndexAlreadyExists") &&
			!isCode(err, "Neo.ClientError.Schema.ConstraintAlreadyExists") {
			return s.mapErr(ctx, err, "create schema")
		}
	}
	_, err := neo4j.ExecuteQuery(ctx, s.driver, `CALL db.awaitIndexes(300)`, nil, neo4j.EagerResultTransformer,
		neo4j.ExecuteQueryWithDatabase(s.cfg.Database))
	return s.mapErr(ctx, err, "wait for indexes")
}

func (s *Store) session(ctx context.Context, mode neo4j.AccessMode) neo4j.SessionWithContext {
	return s.driver.NewSession(ctx, neo4j.SessionConfig{AccessMode: mode, DatabaseName: s.cfg.Database})
}

// write runs fn in one managed write transaction, which the driver retries on
// transient errors (deadlocks, leader changes, lost connections). It also
// retries, a few times, a transaction that found a node deleted under it by a
// concurrent writer's orphan cleanup: a fresh attempt sees the committed
// state and recreates what it needs.
func (s *Store) write(ctx context.Context, what string, fn func(tx neo4j.ManagedTransaction) error) error {
	var err error
	for attempt := range 5 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return s.mapErr(ctx, ctx.Err(), what)
			case <-time.After(time.Duration(attempt*attempt) * 10 * time.Millisecond):
			}
		}
		sess := s.session(ctx, neo4j.AccessModeWrite)
		_, err = sess.ExecuteWrite(ctx, func(tx neo4j.ManagedTransaction) (any, error) {
			return nil, fn(tx)
		})
		_ = sess.Close(context.Background())
		if !errors.Is(err, errEntityGone) && !isCode(err, "Neo.ClientError.Statement.EntityNotFound") {
			break
		}
	}
	return s.mapErr(ctx, err, what)
}

// read runs fn in one managed read transaction.
func (s *Store) read(ctx context.Context, what string, fn func(tx neo4j.ManagedTransaction) error) error {
	sess := s.session(ctx, neo4j.AccessModeRead)
	defer sess.Close(context.Background())
	_, err := sess.ExecuteRead(ctx, func(tx neo4j.ManagedTransaction) (any, error) {
		return nil, fn(tx)
	})
	return s.mapErr(ctx, err, what)
}

// run runs one statement in tx and collects its records.
func run(ctx context.Context, tx neo4j.ManagedTransaction, q string, params map[string]any) ([]*neo4j.Record, error) {
	res, err := tx.Run(ctx, q, params)
	if err != nil {
		return nil, err
	}
	return res.Collect(ctx)
}

// ---- errors ----

// mapErr turns a driver error into a *kgagent.Error with a stable code.
func (s *Store) mapErr(ctx context.Context, err error, what string) error {
	if err == nil {
		return nil
	}
	var ke *kgagent.Error
	if errors.As(err, &ke) {
		return err
	}
	code := codeOf(ctx, err)
	msg := "neo4j: " + what
	switch code {
	case kgagent.EUNAVAILABLE:
		msg += fmt.Sprintf(": neo4j at %s is unavailable", redact(s.cfg.URL))
	case kgagent.EUNAUTH, kgagent.EFORBIDDEN:
		msg += ": credentials rejected"
	case kgagent.ETIMEOUT:
		msg += ": deadline exceeded"
	case kgagent.ECANCELED:
		msg += ": canceled"
	}
	if code != kgagent.EUNAUTH && code != kgagent.EFORBIDDEN && code != kgagent.ECANCELED {
		msg += " (" + causeOf(err) + ")"
	}
	return kgagent.WrapError(code, err, "%s", msg)
}

// causeOf says in a line what the server or driver answered, so that a
// failed page's reason tells a deadlock from a lost connection or a retry
// budget spent: the Neo4j status code and message when there is one (of the
// last attempt, for a retried transaction), else the driver's error text,
// without any credentials and at most maxCause bytes.
func causeOf(err error) string {
	var ne *neo4j.Neo4jError
	var limitErr *neo4j.TransactionExecutionLimit
	why := err.Error()
	if !errors.As(err, &limitErr) && errors.As(err, &ne) {
		why = ne.Code + ": " + ne.Msg
	}
	why = strings.Join(strings.Fields(why), " ")
	if len(why) > maxCause {
		why = strings.ToValidUTF8(why[:maxCause], "") + "…"
	}
	return why
}

// maxCause caps the cause quoted in an error message.
const maxCause = 300

// codeOf classifies a driver error.
func codeOf(ctx context.Context, err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return kgagent.ECANCELED
	case errors.Is(err, context.DeadlineExceeded):
		return kgagent.ETIMEOUT
	}
	if errors.Is(err, errEntityGone) {
		return kgagent.ECONFLICT
	}
	var authErr *neo4j.InvalidAuthenticationError
	if errors.As(err, &authErr) {
		return kgagent.EUNAUTH
	}
	var ne *neo4j.Neo4jError
	if errors.As(err, &ne) {
		c := ne.Code
		switch {
		case strings.HasPrefix(c, "Neo.ClientError.Security.Unauthorized"),
			strings.HasPrefix(c, "Neo.ClientError.Security.AuthenticationRateLimit"),
			strings.HasPrefix(c, "Neo.ClientError.Security.CredentialsExpired"),
			strings.HasPrefix(c, "Neo.ClientError.Security.TokenExpired"):
			return kgagent.EUNAUTH
		case strings.HasPrefix(c, "Neo.ClientError.Security."):
			return kgagent.EFORBIDDEN
		case strings.HasPrefix(c, "Neo.ClientError.Transaction.TransactionTimedOut"),
			strings.HasPrefix(c, "Neo.TransientError.Transaction.LockAcquisitionTimeout"):
			return kgagent.ETIMEOUT
		case strings.HasPrefix(c, "Neo.TransientError."),
			strings.HasPrefix(c, "Neo.ClientError.Database.DatabaseNotFound"),
			strings.HasPrefix(c, "Neo.ClientError.Cluster."),
			strings.HasPrefix(c, "Neo.DatabaseError."):
			return kgagent.EUNAVAILABLE
		case strings.HasPrefix(c, "Neo.ClientError.Schema.ConstraintValidationFailed"):
			return kgagent.ECONFLICT
		}
		return kgagent.EINTERNAL
	}
	var connErr *neo4j.ConnectivityError
	var limitErr *neo4j.TransactionExecutionLimit
	if errors.As(err, &connErr) || errors.As(err, &limitErr) {
		if ctx.Err() != nil {
			return codeOf(context.Background(), ctx.Err())
		}
		return kgagent.EUNAVAILABLE
	}
	if ctx.Err() != nil {
		return codeOf(context.Background(), ctx.Err())
	}
	return kgagent.EINTERNAL
}

// unreachable reports whether err says the server could not be reached:
// a connectivity error, or the driver's retries given up with one as their
// last error.
func unreachable(err error) bool {
	var limitErr *neo4j.TransactionExecutionLimit
	if errors.As(err, &limitErr) {
		return len(limitErr.Errors) > 0 && neo4j.IsConnectivityError(limitErr.Errors[len(limitErr.Errors)-1])
	}
	return neo4j.IsConnectivityError(err)
}

func isCode(err error, code string) bool {
	var ne *neo4j.Neo4jError
	return errors.As(err, &ne) && ne.Code == code
}

// redact drops any userinfo from a URL for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(bad url)"
	}
	u.User = nil
	return u.String()
}

// ---- small helpers ----

func str(v any) string {
	s, _ := v.(string)
	return s
}

func literalHash(v string) string {
	h := sha256.Sum256([]byte(v))
	return hex.EncodeToString(h[:16])
}
