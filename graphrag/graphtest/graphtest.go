// Package graphtest is the conformance suite every graphrag.Store passes: the
// embedded graphrag/sqlite store and the Neo4j adapter run the same tests, in
// the manner of testing/fstest and testing/slogtest.
//
// Usage, from an adapter's _test.go:
//
//	func TestConformance(t *testing.T) {
//		graphtest.Run(t, func(t *testing.T) graphrag.Store { return openFreshStore(t) })
//	}
//
// newStore is called once per subtest and must return an empty store (or one
// whose collections do not collide: every subtest uses collection names with a
// random suffix, so a shared server works too). Entities is tested with whole
// words and dot-separated components of names ("json" finds "json.dumps");
// stores may match more (substrings), never less.
package graphtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
)

// Run runs the conformance suite against stores made by newStore.
func Run(t *testing.T, newStore func(t *testing.T) graphrag.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s graphrag.Store)
	}{
		{"ProvenanceRoundTrip", testRoundTrip},
		{"ReplaceRetractsOld", testReplace},
		{"EmptyReplaceDeletes", testEmptyReplace},
		{"DeleteDocument", testDeleteDocument},
		{"DeleteCollection", testDeleteCollection},
		{"CollectionIsolation", testIsolation},
		{"FindPatterns", testFind},
		{"FindLimit", testFindLimit},
		{"ExpandHops", testExpandHops},
		{"ExpandPerEntityLimit", testExpandLimit},
		{"ExpandCycleTerminates", testExpandCycle},
		{"ExpandLiterals", testExpandLiterals},
		{"EntitiesByTerms", testEntities},
		{"BadInputNothingWritten", testBadInput},
		{"ConcurrentWriters", testConcurrent},
		{"Unicode", testUnicode},
		{"StructuredAnswers", testStructured},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

// Collection returns a collection name unique to this run, so suites can share
// one server.
func Collection(t testing.TB, base string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return base + "_" + hex.EncodeToString(b[:])
}

// T builds an entity-to-entity triple with provenance pointing at anchor.
func T(coll, doc, s, p, o, anchor string) kgagent.Triple {
	return kgagent.Triple{
		Collection: coll,
		Subject:    graphrag.NewEntity(s, graphrag.TypeTerm),
		Predicate:  p,
		Object:     graphrag.NewEntity(o, graphrag.TypeTerm),
		ChunkID:    "chunk-" + anchor,
		DocURL:     doc,
		SourceURL:  graphrag.SectionURL(doc, anchor),
	}
}

// L builds a triple with a literal object.
func L(coll, doc, s, p, lit, anchor string) kgagent.Triple {
	t := T(coll, doc, s, p, "", anchor)
	t.Object = kgagent.Entity{}
	t.Literal = lit
	return t
}

// Key identifies a triple for set comparisons.
func Key(t kgagent.Triple) string {
	return strings.Join([]string{t.Collection, t.Subject.ID, t.Predicate, t.Object.ID, t.Literal, t.DocURL, t.SourceURL}, "\x00")
}

func keys(ts []kgagent.Triple) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = Key(t)
	}
	sort.Strings(out)
	return out
}

func ctx(t *testing.T) context.Context { return t.Context() }

func replace(t *testing.T, s graphrag.Store, coll, doc string, ts ...kgagent.Triple) {
	t.Helper()
	if err := s.ReplaceDocument(ctx(t), coll, doc, ts); err != nil {
		t.Fatalf("ReplaceDocument(%s, %s): %v", coll, doc, err)
	}
}

func find(t *testing.T, s graphrag.Store, p graphrag.Pattern) []kgagent.Triple {
	t.Helper()
	got, err := s.Find(ctx(t), p)
	if err != nil {
		t.Fatalf("Find(%+v): %v", p, err)
	}
	return got
}

func all(t *testing.T, s graphrag.Store, coll string) []kgagent.Triple {
	return find(t, s, graphrag.Pattern{Collection: coll, Limit: 10000})
}

func sameSet(t *testing.T, what string, got, want []kgagent.Triple) {
	t.Helper()
	g, w := keys(got), keys(want)
	if !slices.Equal(g, w) {
		t.Errorf("%s: got %d triples, want %d\n got: %q\nwant: %q", what, len(g), len(w), g, w)
	}
}

func noDuplicates(t *testing.T, what string, ts []kgagent.Triple) {
	t.Helper()
	seen := map[string]bool{}
	for _, tr := range ts {
		k := Key(tr)
		if seen[k] {
			t.Errorf("%s: duplicate triple %q", what, k)
		}
		seen[k] = true
	}
}

func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if got := kgagent.ErrorCode(err); got != code {
		t.Errorf("%s: error code %q (%v), want %q", what, got, err, code)
	}
}

func testRoundTrip(t *testing.T, s graphrag.Store) {
	coll := Collection(t, "rt")
	doc := "https://docs.example.com/library/json.html"
	want := []kgagent.Triple{
		{
			Collection: coll,
			Subject:    graphrag.NewEntity("json", graphrag.TypeModule),
			Predicate:  graphrag.PredDefines,
			Object:     graphrag.NewEntity("json.dumps", graphrag.TypeFunction),
			ChunkID:    "c1",
			DocURL:     doc,
			SourceURL:  doc + "#json.dumps",
		},
		{
			Collection: coll,
			Subject:    graphrag.NewEntity("json.dumps", graphrag.TypeFunction),
			Predicate:  graphrag.PredIsDefinedAs,
			Literal:    "Serialize obj to a JSON formatted str.",
			ChunkID:    "c2",
			DocURL:     doc,
			SourceURL:  doc + "#json.dumps",
		},
		{
			Collection: coll,
			Subject:    graphrag.PageEntity(doc, "json — JSON encoder and decoder"),
			Predicate:  graphrag.PredHasSection,
			Object:     graphrag.SectionEntity(doc+"#basic-usage", "Basic Usage"),
			ChunkID:    "c3",
			DocURL:     doc,
			SourceURL:  doc + "#basic-usage",
		},
	}
	replace(t, s, coll, doc, want...)
	got := all(t, s, coll)
	if len(got) != len(want) {
		t.Fatalf("got %d triples, want %d: %+v", len(got), len(want), got)
	}
	byKey := map[string]kgagent.Triple{}
	for _, g := range got {
		byKey[Key(g)] = g
	}
	for _, w := range want {
		g, ok := byKey[Key(w)]
		if !ok {
			t.Errorf("missing %+v", w)
			continue
		}
		if g != w {
			t.Errorf("round trip:\n got %+v\nwant %+v", g, w)
		}
	}
}

func testReplace(t *testing.T, s graphrag.Store) {
	coll := Collection(t, "rep")
	a, b := "https://x.test/a.html", "https://x.test/b.html"
	replace(t, s, coll, a, T(coll, a, "alpha", "is_a", "letter", "s1"), T(coll, a, "beta", "is_a", "letter", "s2"))
	replace(t, s, coll, b, T(coll, b, "gamma", "is_a", "letter", "s1"))
	newA := []kgagent.Triple{T(coll, a, "alpha", "is_a", "symbol", "s1"), L(coll, a, "alpha", "is_defined_as", "the first letter", "s1")}
	replace(t, s, coll, a, newA...)
	sameSet(t, "after replace", all(t, s, coll), append(newA, T(coll, b, "gamma", "is_a", "letter", "s1")))
	if got := find(t, s, graphrag.Pattern{Collection: coll, S: "beta"}); len(got) != 0 {
		t.Errorf("retracted triple still found: %+v", got)
	}
	// Replacing with the same triples twice is idempotent.
	replace(t, s, coll, a, newA...)
	sameSet(t, "idempotent replace", find(t, s, graphrag.Pattern{Collection: coll, S: "alpha"}), newA)
}

func testEmptyReplace(t *testing.T, s graphrag.Store) {
	coll := Collection(t, "empty")
	a := "https://x.test/a.html"
	replace(t, s, coll, a, T(coll, a, "alpha", "is_a", "letter", "s1"))
	replace(t, s, coll, a)
	if got := all(t, s, coll); len(got) != 0 {
		t.Errorf("empty replace left %d triples", len(got))
	}
}

func testDeleteDocument(t *testing.T, s graphrag.Store) {
	coll := Collection(t, "deldoc")
	a, b := "https://x.test/a.html", "https://x.test/b.html"
	replace(t, s, coll, a, T(coll, a, "alpha", "links_to", "beta", "s1"))
	keep := T(coll, b, "beta", "is_a", "letter", "")
	replace(t, s, coll, b, keep)
	if err := s.DeleteDocument(ctx(t), coll, a); err != nil {
		t.Fatal(err)
	}
	sameSet(t, "after DeleteDocument", all(t, s, coll), []kgagent.Triple{keep})
	// Deleting a document that is not there is not an error.
	if err := s.DeleteDocument(ctx(t), coll, "https://x.test/none.html"); err != nil {
		t.Errorf("DeleteDocument of an absent document: %v", err)
	}
	if ents, err := s.Entities(ctx(t), coll, []string{"alpha"}, 10); err != nil || len(ents) != 0 {
		t.Errorf("entity of a deleted document still listed: %+v, %v", ents, err)
	}
}

func testDeleteCollection(t *testing.T, s graphrag.Store) {
	c1, c2 := Collection(t, "delc1"), Collection(t, "delc2")
	a := "https://x.test/a.html"
	replace(t, s, c1, a, T(c1, a, "alpha", "is_a", "letter", ""))
	replace(t, s, c1, "https://x.test/b.html", T(c1, "https://x.test/b.html", "beta", "is_a", "letter", ""))
	keep := T(c2, a, "alpha", "is_a", "letter", "")
	replace(t, s, c2, a, keep)
	if err := s.DeleteCollection(ctx(t), c1); err != nil {
		t.Fatal(err)
	}
	if got := all(t, s, c1); len(got) != 0 {
		t.Errorf("deleted collection still has %d triples", len(got))
	}
	if ents, _ := s.Entities(ctx(t), c1, []string{"alpha", "beta"}, 10); len(ents) != 0 {
		t.Errorf("deleted collection still has entities %+v", ents)
	}
	sameSet(t, "other collection", all(t, s, c2), []kgagent.Triple{keep})
	if err := s.DeleteCollection(ctx(t), Collection(t, "never")); err != nil {
		t.Errorf("DeleteCollection of an absent collection: %v", err)
	}
}

func testIsolation(t *testing.T, s graphrag.Store) {
	c1, c2 := Collection(t, "iso1"), Collection(t, "iso2")
	a := "https://x.test/a.html"
	t1 := T(c1, a, "alpha", "links_to", "beta", "s1")
	t2 := T(c2, a, "alpha", "links_to", "gamma", "s1")
	replace(t, s, c1, a, t1)
	replace(t, s, c2, a, t2)
	sameSet(t, "find c1", find(t, s, graphrag.Pattern{Collection: c1, S: "alpha"}), []kgagent.Triple{t1})
	sameSet(t, "find c2", find(t, s, graphrag.Pattern{Collection: c2, S: "alpha"}), []kgagent.Triple{t2})
	got, err := s.Expand(ctx(t), c1, []string{"alpha"}, graphrag.ExpandLimits{Hops: 3, TriplesPerEntity: 10})
	if err != nil {
		t.Fatal(err)
	}
	sameSet(t, "expand c1", got, []kgagent.Triple{t1})
	ents, err := s.Entities(ctx(t), c1, []string{"gamma"}, 10)
	if err != nil || len(ents) != 0 {
		t.Errorf("Entities leaked across collections: %+v, %v", ents, err)
	}
	// Replacing a document in one collection leaves the same URL in another.
	replace(t, s, c1, a)
	sameSet(t, "c2 after c1 cleared", all(t, s, c2), []kgagent.Triple{t2})
}

func testFind(t *testing.T, s graphrag.Store) {
	coll := Collection(t, "find")
	a := "https://docs.example.com/json.html"
	t1 := T(coll, a, "json", "defines", "json.dumps", "json.dumps")
	t2 := T(coll, a, "json", "defines", "json.loads", "json.loads")
	t3 := L(coll, a, "json.dumps", "is_defined_as", "Serialize obj to a JSON formatted str.", "json.dumps")
	t4 := T(coll, a, "JSONDecoder", "is_a", "class", "decoder")
	long := strings.Repeat("A long literal that shares its first hundred bytes with another. ", 3)
	t5 := L(coll, a, "json.loads", "is_defined_as", long+"One.", "json.loads")
	t6 := L(coll, a, "json.load", "is_defined_as", long+"Two.", "json.load")
	replace(t, s, coll, a, t1, t2, t3, t4, t5, t6)
	tests := []struct {
		name string
		p    graphrag.Pattern
		want []kgagent.Triple
	}{
		{"all", graphrag.Pattern{}, []kgagent.Triple{t1, t2, t3, t4, t5, t6}},
		{"long literal", graphrag.Pattern{O: long + "Two."}, []kgagent.Triple{t6}},
		{"literal prefix is no match", graphrag.Pattern{O: long}, nil},
		{"s by id", graphrag.Pattern{S: "json"}, []kgagent.Triple{t1, t2}},
		{"s by name", graphrag.Pattern{S: "JSON"}, []kgagent.Triple{t1, t2}},
		{"s camel name", graphrag.Pattern{S: "JSONDecoder"}, []kgagent.Triple{t4}},
		{"p", graphrag.Pattern{P: "defines"}, []kgagent.Triple{t1, t2}},
		{"o entity", graphrag.Pattern{O: "json.loads"}, []kgagent.Triple{t2}},
		{"o literal", graphrag.Pattern{O: "Serialize obj to a JSON formatted str."}, []kgagent.Triple{t3}},
		{"s and p", graphrag.Pattern{S: "json.dumps", P: "is_defined_as"}, []kgagent.Triple{t3}},
		{"s p o", graphrag.Pattern{S: "json", P: "defines", O: "json.dumps"}, []kgagent.Triple{t1}},
		{"no match", graphrag.Pattern{S: "yaml"}, nil},
		{"p no match", graphrag.Pattern{S: "json", P: "is_a"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.p.Collection = coll
			sameSet(t, tc.name, find(t, s, tc.p), tc.want)
		})
	}
	_, err := s.Find(ctx(t), graphrag.Pattern{})
	wantCode(t, "Find without collection", err, kgagent.EINVALID)
	_, err = s.Find(ctx(t), graphrag.Pattern{Collection: coll, Limit: -1})
	wantCode(t, "Find with negative limit", err, kgagent.EINVALID)
}

func testFindLimit(t *testing.T, s graphrag.Store) {
	coll := Collection(t, "limit")
	a := "https://x.test/a.html"
	var ts []kgagent.Triple
	for i := range 130 {
		ts = append(ts, T(coll, a, "hub", "links_to", fmt.Sprintf("node%03d", i), ""))
	}
	replace(t, s, coll, a, ts...)
	for _, tc := range []struct{ limit, want int }{{0, 100}, {5, 5}, {1, 1}, {1000, 130}} {
		got := find(t, s, graphrag.Pattern{Collection: coll, S: "hub", Limit: tc.limit})
		if len(got) != tc.want {
			t.Errorf("limit %d: got %d triples, want %d", tc.limit, len(got), tc.want)
		}
		noDuplicates(t, "find", got)
	}
}

func expand(t *testing.T, s graphrag.Store, coll string, seeds []string, hops, per int) []kgagent.Triple {
	t.Helper()
	got, err := s.Expand(ctx(t), coll, seeds, graphrag.ExpandLimits{Hops: hops, TriplesPerEntity: per})
	if err != nil {
		t.Fatalf("Expand(%v, %d): %v", seeds, hops, err)
	}
	noDuplicates(t, "expand", got)
	return got
}

func testExpandHops(t *testing.T, s graphrag.Store) {
	coll := Collection(t, "hops")
	a := "https://x.test/a.html"
	ab := T(coll, a, "a", "links_to", "b", "")
	bc := T(coll, a, "b", "links_to", "c", "")
	cd := T(coll, a, "c", "links_to", "d", "")
	xy := T(coll, a, "x", "links_to", "y", "")
	replace(t, s, coll, a, ab, bc, cd, xy)
	tests := []struct {
		seeds []string
		hops  int
		want  []kgagent.Triple
	}{
		{[]string{"a"}, 1, []kgagent.Triple{ab}},
		{[]string{"a"}, 2, []kgagent.Triple{ab, bc}},
		{[]string{"a"}, 3, []kgagent.Triple{ab, bc, cd}},
		{[]string{"c"}, 1, []kgagent.Triple{bc, cd}}, // both directions
		{[]string{"d"}, 2, []kgagent.Triple{cd, bc}},
		{[]string{"a", "x"}, 1, []kgagent.Triple{ab, xy}},
		{[]string{"nobody"}, 2, nil},
		{nil, 2, nil},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%v/%d", tc.seeds, tc.hops), func(t *testing.T) {
			sameSet(t, "expand", expand(t, s, coll, tc.seeds, tc.hops, 30), tc.want)
		})
	}
	// Zero hops means the default (2).
	sameSet(t, "default hops", expand(t, s, coll, []string{"a"}, 0, 30), []kgagent.Triple{ab, bc})
}

func testExpandLimit(t *testing.T, s graphrag.Store) {
	coll := Collection(t, "elimit")
	a := "https://x.test/a.html"
	var ts []kgagent.Triple
	for i := range 40 {
		ts = append(ts, T(coll, a, "hub", "links_to", fmt.Sprintf("spoke%02d", i), ""))
	}
	replace(t, s, coll, a, ts...)
	if got := expand(t, s, coll, []string{"hub"}, 1, 7); len(got) != 7 {
		t.Errorf("per-entity limit 7: got %d triples", len(got))
	}
	if got := expand(t, s, coll, []string{"hub"}, 1, 0); len(got) != 30 {
		t.Errorf("default per-entity limit: got %d triples, want 30", len(got))
	}
	// From one spoke, two hops reach the hub, whose own expansion is bounded.
	got := expand(t, s, coll, []string{"spoke00"}, 2, 5)
	if len(got) < 1 || len(got) > 1+5 {
		t.Errorf("spoke, 2 hops, limit 5: got %d triples, want 1..6", len(got))
	}
}

func testExpandCycle(t *testing.T, s graphrag.Store) {
	coll := Collection(t, "cycle")
	a := "https://x.test/a.html"
	ts := []kgagent.Triple{
		T(coll, a, "a", "links_to", "b", ""),
		T(coll, a, "b", "links_to", "c", ""),
		T(coll, a, "c", "links_to", "a", ""),
		T(coll, a, "a", "links_to", "a", ""), // self loop
	}
	replace(t, s, coll, a, ts...)
	sameSet(t, "cycle", expand(t, s, coll, []string{"a"}, 50, 30), ts)
}

func testExpandLiterals(t *testing.T, s graphrag.Store) {
	coll := Collection(t, "elit")
	a := "https://x.test/a.html"
	def := L(coll, a, "gil", "is_defined_as", "b", "glossary") // a literal equal to an entity id is not an edge
	ab := T(coll, a, "gil", "is_a", "lock", "glossary")
	bc := T(coll, a, "b", "is_a", "letter", "")
	replace(t, s, coll, a, def, ab, bc)
	sameSet(t, "literals", expand(t, s, coll, []string{"gil"}, 1, 30), []kgagent.Triple{def, ab})
}

func testEntities(t *testing.T, s graphrag.Store) {
	coll := Collection(t, "ents")
	a := "https://x.test/a.html"
	replace(t, s, coll, a,
		T(coll, a, "json", "defines", "json.dumps", ""),
		T(coll, a, "Global Interpreter Lock", "is_a", "lock", ""),
		T(coll, a, "dictionary", "is_a", "mapping", ""),
		L(coll, a, "list comprehension", "is_defined_as", "a compact way to build lists", ""),
	)
	ids := func(terms []string, limit int) []string {
		t.Helper()
		got, err := s.Entities(ctx(t), coll, terms, limit)
		if err != nil {
			t.Fatalf("Entities(%v): %v", terms, err)
		}
		var out []string
		for _, e := range got {
			if e.ID == "" || e.Name == "" {
				t.Errorf("entity without id or name: %+v", e)
			}
			out = append(out, e.ID)
		}
		sort.Strings(out)
		return out
	}
	tests := []struct {
		terms    []string
		limit    int
		want     []string // all of these
		wantNot  []string // none of these
		maxCount int
	}{
		{[]string{"json"}, 10, []string{"json", "json.dumps"}, []string{"lock", "mapping"}, 10},
		{[]string{"json.dumps"}, 10, []string{"json.dumps"}, []string{"lock"}, 10},
		{[]string{"lock"}, 10, []string{"global interpreter lock", "lock"}, []string{"json"}, 10},
		{[]string{"interpreter"}, 10, []string{"global interpreter lock"}, []string{"lock"}, 10},
		{[]string{"dictionary", "mapping"}, 10, []string{"dictionary", "mapping"}, []string{"json"}, 10},
		{[]string{"list comprehension"}, 10, []string{"list comprehension"}, []string{"json"}, 10},
		{[]string{"json", "lock", "mapping"}, 2, nil, nil, 2},
		{[]string{"nothing"}, 10, nil, []string{"json"}, 0},
		{nil, 10, nil, nil, 0},
	}
	for _, tc := range tests {
		got := ids(tc.terms, tc.limit)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("Entities(%v) = %v, missing %q", tc.terms, got, w)
			}
		}
		for _, w := range tc.wantNot {
			if slices.Contains(got, w) {
				t.Errorf("Entities(%v) = %v, should not contain %q", tc.terms, got, w)
			}
		}
		if len(got) > tc.maxCount {
			t.Errorf("Entities(%v, limit %d) returned %d", tc.terms, tc.limit, len(got))
		}
	}
	// Literals are not entities.
	if got := ids([]string{"compact"}, 10); len(got) != 0 {
		t.Errorf("literal text listed as entity: %v", got)
	}
}

func testBadInput(t *testing.T, s graphrag.Store) {
	coll := Collection(t, "bad")
	a := "https://x.test/a.html"
	old := []kgagent.Triple{T(coll, a, "alpha", "is_a", "letter", "s1")}
	replace(t, s, coll, a, old...)
	long := strings.Repeat("n", 10*1024)
	good := T(coll, a, "beta", "is_a", "letter", "s2")
	longSubject := T(coll, a, "x", "is_a", "letter", "")
	longSubject.Subject = kgagent.Entity{ID: long, Name: long}
	longObject := T(coll, a, "x", "is_a", "letter", "")
	longObject.Object.Name = long
	noPred := T(coll, a, "x", "", "y", "")
	noSubject := T(coll, a, "x", "is_a", "y", "")
	noSubject.Subject = kgagent.Entity{}
	noObject := T(coll, a, "x", "is_a", "y", "")
	noObject.Object = kgagent.Entity{}
	wrongColl := T("other", a, "x", "is_a", "y", "")
	wrongDoc := T(coll, "https://x.test/b.html", "x", "is_a", "y", "")
	badUTF8 := T(coll, a, "x", "is_a", "y", "")
	badUTF8.Subject.Name = "bad\xff"
	tests := []struct {
		name      string
		coll, doc string
		triples   []kgagent.Triple
		wantsCode string
	}{
		{"entity name of 10 KiB", coll, a, []kgagent.Triple{good, longSubject}, kgagent.EINVALID},
		{"object name of 10 KiB", coll, a, []kgagent.Triple{good, longObject}, kgagent.EINVALID},
		{"no predicate", coll, a, []kgagent.Triple{good, noPred}, kgagent.EINVALID},
		{"no subject", coll, a, []kgagent.Triple{good, noSubject}, kgagent.EINVALID},
		{"no object", coll, a, []kgagent.Triple{good, noObject}, kgagent.EINVALID},
		{"wrong collection", coll, a, []kgagent.Triple{good, wrongColl}, kgagent.EINVALID},
		{"wrong doc", coll, a, []kgagent.Triple{good, wrongDoc}, kgagent.EINVALID},
		{"invalid utf-8", coll, a, []kgagent.Triple{good, badUTF8}, kgagent.EINVALID},
		{"empty collection", "", a, nil, kgagent.EINVALID},
		{"empty doc", coll, "", nil, kgagent.EINVALID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.ReplaceDocument(ctx(t), tc.coll, tc.doc, tc.triples)
			wantCode(t, "ReplaceDocument", err, tc.wantsCode)
			sameSet(t, "old triples kept", all(t, s, coll), old)
		})
	}
	_, err := s.Expand(ctx(t), "", []string{"alpha"}, graphrag.ExpandLimits{})
	wantCode(t, "Expand without collection", err, kgagent.EINVALID)
	_, err = s.Entities(ctx(t), "", []string{"alpha"}, 10)
	wantCode(t, "Entities without collection", err, kgagent.EINVALID)
	wantCode(t, "DeleteDocument without collection", s.DeleteDocument(ctx(t), "", a), kgagent.EINVALID)
	wantCode(t, "DeleteCollection without collection", s.DeleteCollection(ctx(t), ""), kgagent.EINVALID)
}

func testConcurrent(t *testing.T, s graphrag.Store) {
	coll := Collection(t, "conc")
	const writers, rounds = 6, 4
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			doc := fmt.Sprintf("https://x.test/%d.html", w)
			for r := range rounds {
				var ts []kgagent.Triple
				for i := range 20 {
					ts = append(ts, T(coll, doc, fmt.Sprintf("w%d", w), "links_to", fmt.Sprintf("r%d-n%d", r, i), ""))
				}
				if err := s.ReplaceDocument(context.Background(), coll, doc, ts); err != nil {
					errs <- err
					return
				}
				if _, err := s.Find(context.Background(), graphrag.Pattern{Collection: coll, S: fmt.Sprintf("w%d", w)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent writer: %v", err)
	}
	got := all(t, s, coll)
	if len(got) != writers*20 {
		t.Fatalf("got %d triples, want %d", len(got), writers*20)
	}
	for _, tr := range got {
		if !strings.HasPrefix(tr.Object.Name, fmt.Sprintf("r%d-", rounds-1)) {
			t.Errorf("triple from an old round survived: %+v", tr)
			break
		}
	}
}

func testUnicode(t *testing.T, s graphrag.Store) {
	coll := Collection(t, "uni")
	a := "https://x.test/ünï.html"
	t1 := T(coll, a, "Straße", "is_a", "Wort", "straße")
	t2 := L(coll, a, "東京", "is_defined_as", "日本の首都 — the capital", "東京")
	replace(t, s, coll, a, t1, t2)
	sameSet(t, "unicode", all(t, s, coll), []kgagent.Triple{t1, t2})
	sameSet(t, "unicode find", find(t, s, graphrag.Pattern{Collection: coll, S: "東京"}), []kgagent.Triple{t2})
}

// api builds the triples the built-in extractor reads from a Sphinx API
// page (module shutil at doc): entries that define their items in their own
// sections, their descriptions, parameters, raised exceptions and version
// notes, and a code example elsewhere that also "defines" an item.
func api(coll, doc, other string) []kgagent.Triple {
	ent := func(name, typ string) kgagent.Entity { return graphrag.NewEntity(name, typ) }
	tr := func(s kgagent.Entity, p string, o kgagent.Entity, lit, src string) kgagent.Triple {
		return kgagent.Triple{Collection: coll, Subject: s, Predicate: p, Object: o, Literal: lit,
			DocURL: src[:strings.IndexByte(src, '#')], SourceURL: src}
	}
	mod := ent("shutil", graphrag.TypeModule)
	cf, cp, rm := ent("shutil.copyfile", graphrag.TypeFunction), ent("shutil.copy", graphrag.TypeFunction), ent("shutil.rmtree", graphrag.TypeFunction)
	sfe, oe := ent("shutil.SameFileError", graphrag.TypeException), ent("OSError", graphrag.TypeException)
	at := func(a string) string { return graphrag.SectionURL(doc, a) }
	none := kgagent.Entity{}
	return []kgagent.Triple{
		tr(mod, graphrag.PredIsDefinedAs, none, "High-level file operations", at("module-shutil")),
		tr(mod, graphrag.PredDefines, cf, "", at("shutil.copyfile")),
		tr(cf, graphrag.PredIsDefinedAs, none, "Copy the contents (no metadata) of the file named src to a file named dst. More.", at("shutil.copyfile")),
		tr(cf, graphrag.PredHasParameter, none, "src", at("shutil.copyfile")),
		tr(cf, graphrag.PredHasParameter, none, "follow_symlinks=True", at("shutil.copyfile")),
		tr(cf, graphrag.PredHasSignature, none, "shutil.copyfile(src, *, follow_symlinks=True)", at("shutil.copyfile")),
		tr(cf, graphrag.PredRaises, sfe, "", at("shutil.copyfile")),
		tr(cf, graphrag.PredRaises, oe, "", at("shutil.copyfile")),
		tr(mod, graphrag.PredDefines, cp, "", at("shutil.copy")),
		tr(cp, graphrag.PredIsDefinedAs, none, "Copies the file src to the file or directory dst.", at("shutil.copy")),
		tr(cp, graphrag.PredAddedIn, none, "3.3", at("shutil.copy")),
		tr(mod, graphrag.PredDefines, rm, "", at("shutil.rmtree")),
		tr(rm, graphrag.PredIsDefinedAs, none, "Delete an entire directory tree.", at("shutil.rmtree")),
		tr(mod, graphrag.PredDefines, sfe, "", at("shutil.SameFileError")),
		tr(sfe, graphrag.PredIsDefinedAs, none, "This exception is raised if source and destination are the same file.", at("shutil.SameFileError")),
		tr(sfe, graphrag.PredSubclassOf, ent("Error", graphrag.TypeException), "", at("shutil.SameFileError")),
		// A code example on another page calls shutil.move: not an entry.
		tr(mod, graphrag.PredDefines, ent("shutil.move", graphrag.TypeFunction), "", graphrag.SectionURL(other, "example")),
	}
}

// testStructured checks graphrag.Service.Structured over the store: the
// list, relation and attribute answers read through Find are the same on
// every store (items by name, each with its own section).
func testStructured(t *testing.T, s graphrag.Store) {
	coll := Collection(t, "structured")
	doc, other := "https://docs.test/library/shutil.html", "https://docs.test/howto/files.html"
	ts := api(coll, doc, other)
	var onDoc, onOther []kgagent.Triple
	for _, tr := range ts {
		if tr.DocURL == doc {
			onDoc = append(onDoc, tr)
		} else {
			onOther = append(onOther, tr)
		}
	}
	replace(t, s, coll, doc, onDoc...)
	replace(t, s, coll, other, onOther...)
	svc, err := graphrag.New(graphrag.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	at := func(a string) string { return graphrag.SectionURL(doc, a) }
	for _, c := range []struct {
		q     string
		items []string // name@anchor
		lead  string   // the list's own section anchor
	}{
		{"What arguments does shutil.copyfile accept?", []string{"follow_symlinks=True@shutil.copyfile", "src@shutil.copyfile"}, "shutil.copyfile"},
		{"What functions does the shutil module provide?", []string{"shutil.copy@shutil.copy", "shutil.copyfile@shutil.copyfile", "shutil.rmtree@shutil.rmtree"}, "module-shutil"},
		{"What functions does the shutil module provide for copying files?", []string{"shutil.copy@shutil.copy", "shutil.copyfile@shutil.copyfile"}, "module-shutil"},
		{"Which exceptions does shutil define?", []string{"shutil.SameFileError@shutil.SameFileError"}, "module-shutil"},
		{"Which exceptions can shutil.copyfile raise?", []string{"OSError@shutil.copyfile", "shutil.SameFileError@shutil.copyfile"}, "shutil.copyfile"},
		{"What is the default value of follow_symlinks in shutil.copyfile?", []string{"True@shutil.copyfile"}, "shutil.copyfile"},
		{"In which version was shutil.copy added?", []string{"3.3@shutil.copy"}, "shutil.copy"},
		{"What is shutil.SameFileError a subclass of?", []string{"Error@shutil.SameFileError"}, "shutil.SameFileError"},
		{"Which module is shutil.rmtree in?", []string{"shutil@shutil.rmtree"}, "shutil.rmtree"},
		{"What is the difference between shutil.copy and shutil.copyfile?", []string{"shutil.copy@shutil.copy", "shutil.copyfile(src, *, follow_symlinks=True)@shutil.copyfile"}, "shutil.copy"},
	} {
		l, err := svc.Structured(ctx(t), c.q, coll)
		if err != nil {
			t.Fatalf("%q: %v", c.q, err)
		}
		if l == nil {
			t.Errorf("%q: no structured answer", c.q)
			continue
		}
		var got []string
		for _, it := range l.Items {
			got = append(got, it.Name+"@"+strings.TrimPrefix(it.SourceURL, doc+"#"))
		}
		if !slices.Equal(got, c.items) {
			t.Errorf("%q: items %q, want %q", c.q, got, c.items)
		}
		if l.SourceURL != at(c.lead) {
			t.Errorf("%q: lead section %q, want %q", c.q, l.SourceURL, at(c.lead))
		}
	}
	// Questions without a shape, or about what the graph lacks, get none.
	for _, q := range []string{"How do I copy a file?", "Which exceptions can shutil.rmtree raise?", "What functions does nosuchmodule provide?"} {
		if l, err := svc.Structured(ctx(t), q, coll); err != nil || l != nil {
			t.Errorf("%q: %+v, %v; want nil", q, l, err)
		}
	}
}
