package neo4j

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent/internal/testdep"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/graphtest"
)

// envConfig is the Config of the real Neo4j the tests use: NEO4J_URL (and
// NEO4J_USER, NEO4J_PASSWORD, NEO4J_DATABASE), as deploy/neo4j/start.sh
// exports them. Without NEO4J_URL the test is skipped, unless
// KGAGENT_REQUIRE_NEO4J=1 (set in CI), where it fails: the suite must never be
// skipped silently there.
func envConfig(t testing.TB) Config {
	t.Helper()
	u := testdep.Env(t, "NEO4J_URL", "KGAGENT_REQUIRE_NEO4J",
		"NEO4J_URL not set: no real Neo4j (start one with eval \"$(deploy/neo4j/start.sh)\"; make test sets KGAGENT_REQUIRE_NEO4J=1 so these tests never skip there)")
	return Config{
		URL:      u,
		User:     os.Getenv("NEO4J_USER"),
		Password: os.Getenv("NEO4J_PASSWORD"),
		Database: os.Getenv("NEO4J_DATABASE"),
	}
}

var (
	sharedOnce  sync.Once
	sharedStore *Store
	sharedErr   error
)

// realStore opens one Store per test binary on the configured Neo4j. Tests
// isolate themselves by random collection names (graphtest.Collection).
func realStore(t testing.TB) *Store {
	t.Helper()
	cfg := envConfig(t)
	sharedOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		sharedStore, sharedErr = Open(ctx, cfg)
	})
	if sharedErr != nil {
		t.Fatalf("Open(%s): %v", cfg.URL, sharedErr)
	}
	return sharedStore
}

func TestConformance(t *testing.T) {
	s := realStore(t)
	graphtest.Run(t, func(t *testing.T) graphrag.Store { return s })
}

// TestSchemaCreated checks that Open created the constraint and indexes and
// that they are online.
func TestSchemaCreated(t *testing.T) {
	s := realStore(t)
	res, err := neo4j.ExecuteQuery(t.Context(), s.Driver(), `SHOW INDEXES YIELD name, state RETURN name, state`, nil,
		neo4j.EagerResultTransformer, neo4j.ExecuteQueryWithDatabase(s.cfg.Database))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range res.Records {
		got[r.Values[0].(string)] = r.Values[1].(string)
	}
	for _, name := range []string{"kg_entity_key", "kg_entity_norm", "kg_entity_norm_text", "kg_rel_doc", "kg_rel_p", "kg_literal_h"} {
		if got[name] != "ONLINE" {
			t.Errorf("index %s: state %q, want ONLINE (all: %v)", name, got[name], got)
		}
	}
	// Open is idempotent: a second store on the same server works.
	s2, err := Open(t.Context(), envConfig(t))
	if err != nil {
		t.Fatalf("second Open: %v", err)
	}
	_ = s2.Close()
}

// TestEntityUnique checks that an entity shared by many documents is one
// node, and that it goes away only with its last triple.
func TestEntityUnique(t *testing.T) {
	s := realStore(t)
	coll := graphtest.Collection(t, "uniq")
	docs := []string{"https://x.test/1.html", "https://x.test/2.html", "https://x.test/3.html"}
	for i, d := range docs {
		if err := s.ReplaceDocument(t.Context(), coll, d, []kgagent.Triple{
			graphtest.T(coll, d, "shared", "links_to", fmt.Sprintf("own%d", i), ""),
		}); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int64 {
		t.Helper()
		res, err := neo4j.ExecuteQuery(t.Context(), s.Driver(),
			`MATCH (e:Entity {collection: $c, id: 'shared'}) RETURN count(e)`, map[string]any{"c": coll},
			neo4j.EagerResultTransformer, neo4j.ExecuteQueryWithDatabase(s.cfg.Database))
		if err != nil {
			t.Fatal(err)
		}
		return res.Records[0].Values[0].(int64)
	}
	for i, d := range docs {
		if got := count(); got != 1 {
			t.Fatalf("before deleting doc %d: %d nodes for entity 'shared', want 1", i, got)
		}
		if err := s.DeleteDocument(t.Context(), coll, d); err != nil {
			t.Fatal(err)
		}
	}
	if got := count(); got != 0 {
		t.Errorf("after deleting every document: %d nodes for entity 'shared', want 0", got)
	}
}

// TestReplaceDocumentsBulk writes many documents in one transaction, larger
// than one UNWIND batch, and replaces them again.
func TestReplaceDocumentsBulk(t *testing.T) {
	s := realStore(t)
	coll := graphtest.Collection(t, "bulk")
	docs := synthDocs(coll, 40, 60, 500) // 2,400 triples, batches of 5,000 rows... and of 7 below
	small := *s
	small.cfg.BatchSize = 7
	if err := small.ReplaceDocuments(t.Context(), coll, docMap(docs)); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, d := range docs {
		want += len(d.Triples)
	}
	got, err := s.Find(t.Context(), graphrag.Pattern{Collection: coll, Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != want {
		t.Fatalf("got %d triples, want %d", len(got), want)
	}
	// A bad triple in the last document: nothing changes in any document.
	bad := append([]document(nil), docs...)
	bad[0] = document{URL: docs[0].URL} // would delete doc 0
	last := &bad[len(bad)-1]
	last.Triples = append(append([]kgagent.Triple(nil), last.Triples...), kgagent.Triple{Collection: coll, DocURL: last.URL, Predicate: "p"})
	err = s.ReplaceDocuments(t.Context(), coll, docMap(bad))
	if kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Fatalf("bad batch: %v, want EINVALID", err)
	}
	got, err = s.Find(t.Context(), graphrag.Pattern{Collection: coll, Limit: 100000})
	if err != nil || len(got) != want {
		t.Fatalf("after rejected batch: %d triples (%v), want %d", len(got), err, want)
	}
	if err := s.DeleteCollection(t.Context(), coll); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Find(t.Context(), graphrag.Pattern{Collection: coll, Limit: 10})
	if len(got) != 0 {
		t.Errorf("collection not deleted: %d triples", len(got))
	}
}

// TestOpenUnreachable checks that Open gives EUNAVAILABLE, quickly and with a
// message naming the server, when nothing listens or when something that is
// not Neo4j answers. It needs no Neo4j.
func TestOpenUnreachable(t *testing.T) {
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return addr
	}()
	garbage := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
				c.Close()
			}
		}()
		return l.Addr().String()
	}()
	tests := []struct {
		name, url string
		code      string
	}{
		{"nothing listening", "bolt://" + closed, kgagent.EUNAVAILABLE},
		{"not neo4j", "bolt://" + garbage, kgagent.EUNAVAILABLE},
		{"bad url", "bolt://", kgagent.EINVALID},
		{"credentials in url", "bolt://u:p@" + closed, kgagent.EINVALID},
		{"bad scheme", "http://" + closed, kgagent.EINVALID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			s, err := Open(t.Context(), Config{URL: tc.url, ConnectTimeout: 3 * time.Second})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if got := kgagent.ErrorCode(err); got != tc.code {
				t.Errorf("code %q (%v), want %q", got, err, tc.code)
			}
			if tc.code == kgagent.EUNAVAILABLE && !strings.Contains(kgagent.ErrorMessage(err), "unreachable") {
				t.Errorf("message %q does not say unreachable", kgagent.ErrorMessage(err))
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestOpenCAFile(t *testing.T) {
	dir := t.TempDir()
	bad := dir + "/bad.pem"
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{bad, dir + "/missing.pem"} {
		_, err := Open(t.Context(), Config{URL: "bolt+s://127.0.0.1:1", CAFile: f})
		if kgagent.ErrorCode(err) != kgagent.EINVALID {
			t.Errorf("CAFile %s: %v, want EINVALID", f, err)
		}
	}
}

// TestUnavailableMidRun puts a TCP proxy between the store and Neo4j, opens
// through it, then cuts the proxy: reads and writes then fail with
// EUNAVAILABLE (after the driver's bounded retries), and the data written
// before is intact when the connection comes back.
func TestUnavailableMidRun(t *testing.T) {
	cfg := envConfig(t)
	realStore(t) // schema exists
	target := cfg.URL[len("bolt://"):]
	if cfg.URL[:7] != "bolt://" {
		t.Skip("proxy test needs a bolt:// URL")
	}
	p := newProxy(t, target)
	cfg.URL = "bolt://" + p.addr
	cfg.RetryTime = time.Second
	cfg.ConnectTimeout = time.Second
	s, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	coll := graphtest.Collection(t, "midrun")
	doc := "https://x.test/a.html"
	old := []kgagent.Triple{graphtest.T(coll, doc, "alpha", "is_a", "letter", "s1")}
	if err := s.ReplaceDocument(t.Context(), coll, doc, old); err != nil {
		t.Fatal(err)
	}
	p.cut()
	err = s.ReplaceDocument(t.Context(), coll, doc, []kgagent.Triple{graphtest.T(coll, doc, "beta", "is_a", "letter", "s1")})
	if got := kgagent.ErrorCode(err); got != kgagent.EUNAVAILABLE {
		t.Errorf("write while cut: %q (%v), want %q", got, err, kgagent.EUNAVAILABLE)
	}
	_, err = s.Find(t.Context(), graphrag.Pattern{Collection: coll})
	if got := kgagent.ErrorCode(err); got != kgagent.EUNAVAILABLE {
		t.Errorf("read while cut: %q (%v), want %q", got, err, kgagent.EUNAVAILABLE)
	}
	p.restore()
	got, err := s.Find(t.Context(), graphrag.Pattern{Collection: coll})
	if err != nil {
		t.Fatalf("read after restore: %v", err)
	}
	if len(got) != 1 || got[0] != old[0] {
		t.Errorf("after restore: %+v, want the old triple", got)
	}
	// A canceled context is ECANCELED, not UNAVAILABLE.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = s.Find(ctx, graphrag.Pattern{Collection: coll})
	if got := kgagent.ErrorCode(err); got != kgagent.ECANCELED {
		t.Errorf("canceled: %q (%v), want %q", got, err, kgagent.ECANCELED)
	}
}

// proxy forwards TCP connections to target until cut, which closes every
// connection and refuses new ones until restore.
type proxy struct {
	addr   string
	target string
	mu     sync.Mutex
	down   bool
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: l.Addr().String(), target: target}
	t.Cleanup(func() { l.Close(); p.cut() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			down := p.down
			p.mu.Unlock()
			if down {
				c.Close()
				continue
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			go func() { _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
	return p
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

func TestCodeOf(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want string
	}{
		{"unauthorized", context.Background(), &neo4j.Neo4jError{Code: "Neo.ClientError.Security.Unauthorized"}, kgagent.EUNAUTH},
		{"forbidden", context.Background(), &neo4j.Neo4jError{Code: "Neo.ClientError.Security.Forbidden"}, kgagent.EFORBIDDEN},
		{"deadlock", context.Background(), &neo4j.Neo4jError{Code: "Neo.TransientError.Transaction.DeadlockDetected"}, kgagent.EUNAVAILABLE},
		{"no database", context.Background(), &neo4j.Neo4jError{Code: "Neo.ClientError.Database.DatabaseNotFound"}, kgagent.EUNAVAILABLE},
		{"tx timeout", context.Background(), &neo4j.Neo4jError{Code: "Neo.ClientError.Transaction.TransactionTimedOut"}, kgagent.ETIMEOUT},
		{"constraint", context.Background(), &neo4j.Neo4jError{Code: "Neo.ClientError.Schema.ConstraintValidationFailed"}, kgagent.ECONFLICT},
		{"syntax", context.Background(), &neo4j.Neo4jError{Code: "Neo.ClientError.Statement.SyntaxError"}, kgagent.EINTERNAL},
		{"connectivity", context.Background(), &neo4j.ConnectivityError{Inner: errors.New("connection refused")}, kgagent.EUNAVAILABLE},
		{"retries exhausted", context.Background(), &neo4j.TransactionExecutionLimit{Cause: "timeout"}, kgagent.EUNAVAILABLE},
		{"canceled ctx", canceled, &neo4j.ConnectivityError{Inner: errors.New("x")}, kgagent.ECANCELED},
		{"context error", context.Background(), fmt.Errorf("x: %w", context.DeadlineExceeded), kgagent.ETIMEOUT},
		{"other", context.Background(), errors.New("boom"), kgagent.EINTERNAL},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := codeOf(tc.ctx, tc.err); got != tc.want {
				t.Errorf("codeOf = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestContainsWords(t *testing.T) {
	tests := []struct {
		norm, term string
		want       bool
	}{
		{"json.dumps", "json", true},
		{"json.dumps", "dumps", true},
		{"json.dumps", "dump", false},
		{"global interpreter lock", "lock", true},
		{"global interpreter lock", "interpreter lock", true},
		{"blocking", "lock", false},
		{"lock lockfile", "lockfile", true},
		{"ab ab", "b", false},
		{"", "x", false},
	}
	for _, tc := range tests {
		if got := graphrag.ContainsWords(tc.norm, tc.term); got != tc.want {
			t.Errorf("ContainsWords(%q, %q) = %v, want %v", tc.norm, tc.term, got, tc.want)
		}
	}
}

// synthDocs builds docs documents of per triples each over a vocabulary of
// vocab term entities, shaped like a documentation site: each page has
// sections, sections mention terms, terms relate to terms, and some terms
// have literal definitions.
func synthDocs(coll string, docs, per, vocab int) []document {
	out := make([]document, docs)
	term := func(i int) kgagent.Entity {
		return graphrag.NewEntity(fmt.Sprintf("term %d", i%vocab), graphrag.TypeTerm)
	}
	for d := range docs {
		u := fmt.Sprintf("https://docs.example.test/lib/page%04d.html", d)
		page := graphrag.PageEntity(u, fmt.Sprintf("Page %d", d))
		doc := document{URL: u}
		for i := range per {
			anchor := fmt.Sprintf("sec-%d", i/10)
			sec := graphrag.SectionEntity(graphrag.SectionURL(u, anchor), fmt.Sprintf("Section %d.%d", d, i/10))
			tr := kgagent.Triple{Collection: coll, DocURL: u, SourceURL: graphrag.SectionURL(u, anchor), ChunkID: fmt.Sprintf("c%d-%d", d, i/10)}
			switch {
			case i%10 == 0:
				tr.Subject, tr.Predicate, tr.Object = page, graphrag.PredHasSection, sec
			case i%10 < 6:
				tr.Subject, tr.Predicate, tr.Object = sec, graphrag.PredMentions, term(d*31+i*7)
			case i%10 < 9:
				tr.Subject, tr.Predicate, tr.Object = term(d*13+i), graphrag.PredLinksTo, term(d*17+i*3+1)
			default:
				tr.Subject, tr.Predicate = term(d*13+i), graphrag.PredIsDefinedAs
				tr.Literal = fmt.Sprintf("Definition of term %d as written on page %d, a sentence of ordinary length.", (d*13+i)%vocab, d)
			}
			doc.Triples = append(doc.Triples, tr)
		}
		out[d] = doc
	}
	return out
}

// TestAuthRejected checks that a wrong password fails at Open with EUNAUTH.
// It runs when the test server has authentication on (deploy/neo4j/start.sh
// enables it by default).
func TestAuthRejected(t *testing.T) {
	cfg := envConfig(t)
	if cfg.Password == "" {
		t.Skip("NEO4J_PASSWORD not set: the test server runs without authentication")
	}
	for _, c := range []Config{
		{URL: cfg.URL, User: cfg.User, Password: cfg.Password + "-wrong", Database: cfg.Database},
		{URL: cfg.URL, Database: cfg.Database}, // no credentials at all
	} {
		s, err := Open(t.Context(), c)
		if err == nil {
			s.Close()
			t.Fatalf("Open with password %q succeeded", c.Password)
		}
		if got := kgagent.ErrorCode(err); got != kgagent.EUNAUTH {
			t.Errorf("password %q: code %q (%v), want %q", c.Password, got, err, kgagent.EUNAUTH)
		}
	}
}

// FuzzRoundTrip stores a triple built from arbitrary strings and reads it
// back by subject and by literal: whatever the store accepts must come back
// byte for byte (quotes, Cypher fragments, NULs, any Unicode), and whatever
// it rejects must be EINVALID with the old triples intact. The seed corpus
// runs in normal `go test` when NEO4J_URL is set.
func FuzzRoundTrip(f *testing.F) {
	for _, seed := range [][3]string{
		{"json", "defines", "json.dumps"},
		{"O'Reilly \"quoted\"", "is_a", "publisher"},
		{"x'}) DETACH DELETE n //", "p` SET x=1", "MATCH (n) RETURN n"},
		{"nul\x00byte", "has\x00nul", "lit\x00eral"},
		{"東京", "is_defined_as", "日本の首都 🗼"},
		{"", "p", "o"},
		{"s", "", "o"},
		{"bad\xffutf8", "p", "o"},
		{strings.Repeat("n", 2000), "p", "o"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, subj, pred, lit string) {
		s := realStore(t)
		coll := graphtest.Collection(t, "fuzz")
		doc := "https://x.test/fuzz.html"
		old := graphtest.T(coll, doc, "anchor entity", "is_a", "thing", "s0")
		if err := s.ReplaceDocument(t.Context(), coll, doc, []kgagent.Triple{old}); err != nil {
			t.Fatal(err)
		}
		defer s.DeleteCollection(context.Background(), coll)
		tr := graphtest.L(coll, doc, "x", pred, lit, "s1")
		tr.Subject = kgagent.Entity{ID: graphrag.EntityID(subj), Name: subj, Type: graphrag.TypeTerm}
		err := s.ReplaceDocument(t.Context(), coll, doc, []kgagent.Triple{old, tr})
		if err != nil {
			if code := kgagent.ErrorCode(err); code != kgagent.EINVALID {
				t.Fatalf("ReplaceDocument: %v, want success or EINVALID", err)
			}
			got, ferr := s.Find(t.Context(), graphrag.Pattern{Collection: coll})
			if ferr != nil || len(got) != 1 || got[0] != old {
				t.Fatalf("after rejected write: %+v, %v; want only the old triple", got, ferr)
			}
			return
		}
		for _, p := range []graphrag.Pattern{
			{Collection: coll, S: tr.Subject.ID},
			{Collection: coll, O: lit},
			{Collection: coll, P: pred},
		} {
			got, err := s.Find(t.Context(), p)
			if err != nil {
				t.Fatalf("Find(%+v): %v", p, err)
			}
			found := false
			for _, g := range got {
				found = found || g == tr
			}
			if !found {
				t.Errorf("Find(%q, %q, %q) = %+v, missing %+v", p.S, p.P, p.O, got, tr)
			}
		}
	})
}

// TestEntitiesForms checks the matching rules beyond the conformance suite:
// the raw form of a term counts ("dumps" finds json.dumps though it
// normalises to "dump"), substrings are only a fallback, exact names rank
// first.
func TestEntitiesForms(t *testing.T) {
	s := realStore(t)
	coll := graphtest.Collection(t, "forms")
	a := "https://x.test/a.html"
	if err := s.ReplaceDocument(t.Context(), coll, a, []kgagent.Triple{
		graphtest.T(coll, a, "json", "defines", "json.dumps", ""),
		graphtest.T(coll, a, "serialization", "is_a", "process", ""),
		graphtest.T(coll, a, "lock", "is_a", "primitive", ""),
		graphtest.T(coll, a, "global interpreter lock", "is_a", "lock", ""),
		graphtest.T(coll, a, "blocking call", "is_a", "call", ""),
	}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		terms []string
		want  []string // exactly these ids, in this order when ordered is set
		first string
	}{
		{[]string{"dumps"}, []string{"json.dumps"}, ""},
		{[]string{"serializ"}, []string{"serialization"}, ""},                   // substring fallback
		{[]string{"lock"}, []string{"global interpreter lock", "lock"}, "lock"}, // not "blocking call"
		{[]string{"LOCKS"}, []string{"global interpreter lock", "lock"}, "lock"},
	}
	for _, tc := range tests {
		got, err := s.Entities(t.Context(), coll, tc.terms, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range got {
			ids = append(ids, e.ID)
		}
		sorted := append([]string(nil), ids...)
		sort.Strings(sorted)
		if !slices.Equal(sorted, tc.want) {
			t.Errorf("Entities(%v) = %v, want %v", tc.terms, ids, tc.want)
		}
		if tc.first != "" && (len(ids) == 0 || ids[0] != tc.first) {
			t.Errorf("Entities(%v) = %v, want %q first", tc.terms, ids, tc.first)
		}
	}
}

// TestTLS connects over TLS when the test server offers it
// (deploy/neo4j/start.sh does, with a self-signed certificate in
// NEO4J_TLS_CA): bolt+s:// with that CA works, bolt+ssc:// works without it,
// and bolt+s:// without it is refused because the certificate is unknown.
func TestTLS(t *testing.T) {
	cfg := envConfig(t)
	ca := os.Getenv("NEO4J_TLS_CA")
	if ca == "" {
		t.Skip("NEO4J_TLS_CA not set: the test server offers no TLS")
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		t.Fatal(err)
	}
	realStore(t) // schema exists
	tests := []struct {
		name   string
		scheme string
		caFile string
		code   string
	}{
		{"verified with CA file", "bolt+s", ca, ""},
		{"self-signed accepted", "bolt+ssc", "", ""},
		{"unknown CA refused", "bolt+s", "", kgagent.EUNAVAILABLE},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			c.URL = tc.scheme + "://" + u.Host
			c.CAFile = tc.caFile
			c.ConnectTimeout = 5 * time.Second
			s, err := Open(t.Context(), c)
			if got := kgagent.ErrorCode(err); got != tc.code {
				t.Fatalf("Open(%s): code %q (%v), want %q", c.URL, got, err, tc.code)
			}
			if err != nil {
				return
			}
			defer s.Close()
			coll := graphtest.Collection(t, "tls")
			doc := "https://x.test/tls.html"
			tr := graphtest.T(coll, doc, "secure", "is_a", "channel", "s1")
			if err := s.ReplaceDocument(t.Context(), coll, doc, []kgagent.Triple{tr}); err != nil {
				t.Fatal(err)
			}
			got, err := s.Find(t.Context(), graphrag.Pattern{Collection: coll})
			if err != nil || len(got) != 1 || got[0] != tr {
				t.Errorf("over TLS: %+v, %v", got, err)
			}
			_ = s.DeleteCollection(t.Context(), coll)
		})
	}
}

// TestHugeLookups checks that lookups by values larger than any index key
// (16 KiB) are answered, empty, rather than failing inside Neo4j.
func TestHugeLookups(t *testing.T) {
	s := realStore(t)
	coll := graphtest.Collection(t, "huge")
	a := "https://x.test/a.html"
	if err := s.ReplaceDocument(t.Context(), coll, a, []kgagent.Triple{graphtest.T(coll, a, "alpha", "is_a", "letter", "")}); err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("x", graphrag.MaxLiteralBytes)
	for _, p := range []graphrag.Pattern{{S: huge}, {O: huge}, {P: huge}, {S: "alpha", O: huge}} {
		p.Collection = coll
		got, err := s.Find(t.Context(), p)
		if err != nil || len(got) != 0 {
			t.Errorf("Find with a %d-byte field: %v, %v; want nothing, no error", len(huge), got, err)
		}
	}
	if got, err := s.Expand(t.Context(), coll, []string{huge, "alpha"}, graphrag.ExpandLimits{Hops: 1}); err != nil || len(got) != 1 {
		t.Errorf("Expand with a huge seed: %v, %v; want alpha's one triple", got, err)
	}
	if got, err := s.Entities(t.Context(), coll, []string{huge}, 10); err != nil || len(got) != 0 {
		t.Errorf("Entities with a huge term: %v, %v", got, err)
	}
	_, err := s.Find(t.Context(), graphrag.Pattern{Collection: coll, S: huge + "x"})
	if kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("Find with a field over the limit: %v, want EINVALID", err)
	}
}

// docMap turns documents into ReplaceDocuments' argument.
func docMap(docs []document) map[string][]kgagent.Triple {
	m := make(map[string][]kgagent.Triple, len(docs))
	for _, d := range docs {
		m[d.URL] = d.Triples
	}
	return m
}
