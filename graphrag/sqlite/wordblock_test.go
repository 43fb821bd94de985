package sqlite_test

import (
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag/graphtest"
	"github.com/kgagent/kgagent/graphrag/sqlite"
)

// blockWordRows are the words of db's word_blocks, decoded (WordRows:
// collection and entity as strs ids).
func blockWordRows(t *testing.T, db *sql.DB) [][3]any {
	t.Helper()
	rows, err := db.Query(`SELECT collection, first, words FROM word_blocks`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var all [][3]any
	for rows.Next() {
		var coll int64
		var first string
		var data []byte
		if err := rows.Scan(&coll, &first, &data); err != nil {
			t.Fatal(err)
		}
		ws, err := sqlite.WordRows(coll, first, data)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ws...)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return all
}

// wordRows are the (collection, word, entity id) rows, as strings, of the
// entity words of the store at path: entity_words' rows (format 2) or the
// words decoded from word_blocks (format 3).
func wordRows(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	str := func(id int64) string {
		var s string
		if err := db.QueryRow(`SELECT s FROM strs WHERE id = ?`, id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	var out []string
	var legacy int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'entity_words'`).Scan(&legacy); err != nil {
		t.Fatal(err)
	}
	if legacy > 0 {
		rows, err := db.Query(`SELECT c.s, w.word, i.s FROM entity_words AS w JOIN strs AS c ON c.id = w.collection JOIN strs AS i ON i.id = w.id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var c, w, i string
			if err := rows.Scan(&c, &w, &i); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%q", []string{c, w, i}))
		}
	} else {
		for _, w := range blockWordRows(t, db) {
			out = append(out, fmt.Sprintf("%q", []string{str(w[0].(int64)), w[1].(string), str(w[2].(int64))}))
		}
	}
	slices.Sort(out)
	return out
}

// TestMigrateWordBlocks opens a data dir's graph.db written by main at
// 651cf17 (testdata/graph-main-651cf17.db.gz: `kgagent ingest` of
// testdata/site served on 127.0.0.1:18770, by main's binary; format 2, a
// row of entity_words per word and entity): it is migrated to format 3 in
// one step, holds exactly the words it held, answers exactly as main did
// through SQL and through the name index (the fingerprint main's code
// computed on the same file), is smaller, and takes writes and deletes
// that keep its words those of its entities.
func TestMigrateWordBlocks(t *testing.T) {
	ctx := t.Context()
	path := gunzipFixture(t, "graph-main-651cf17.db.gz")
	if n := count(t, path, `PRAGMA user_version`); n != 2 {
		t.Fatalf("fixture: user_version %d, want 2", n)
	}
	before := wordRows(t, path)
	if len(before) < 500 {
		t.Fatalf("fixture: %d entity words", len(before))
	}
	size0, _ := os.Stat(path)

	const want = "triples=820 entities=298 entity_answers=451 triples_sha256=edfa7638a6918c44f8984fe727e3eb340cd532eb07fceeaced8b173ff93bffe0 entities_sha256=1349d2421a0964d8a39663fb5669ee7052c76f26aaf0ee758c094fcfe0520ce7"
	checkMigratedFingerprint(t, path, want)
	if n := count(t, path, `PRAGMA user_version`); n != 3 {
		t.Errorf("user_version %d after the migration, want 3", n)
	}
	if n := count(t, path, `SELECT count(*) FROM sqlite_schema WHERE name = 'entity_words'`); n != 0 {
		t.Error("entity_words is still there")
	}
	if after := wordRows(t, path); !slices.Equal(after, before) {
		t.Errorf("the migrated blocks hold %d words, entity_words held %d", len(after), len(before))
	}
	size1, _ := os.Stat(path)
	t.Logf("graph.db %d bytes before, %d after the migration", size0.Size(), size1.Size())
	if size1.Size() >= size0.Size() {
		t.Errorf("graph.db %d bytes after the migration, %d before: want it smaller", size1.Size(), size0.Size())
	}

	// SQL and the name index agree on every word, on prefixes of words,
	// and after writes and deletes.
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	terms := wordTerms(before)
	agree(t, s, "default", terms)
	doc := "http://127.0.0.1:18770/faq.html"
	if err := s.ReplaceDocument(ctx, "default", doc, []kgagent.Triple{
		graphtest.T("default", doc, "faq", "mentions", "migration", "c1"),
		graphtest.T("default", doc, "faq", "mentions", "lumen.config.reload", "c1")}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteDocument(ctx, "default", "http://127.0.0.1:18770/index.html"); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.CheckWordBlocks(ctx, s); err != nil {
		t.Error(err)
	}
	agree(t, s, "default", append(terms, "migration", "lumen.config.reload", "reload", "relo"))
	ents, err := s.Entities(ctx, "default", []string{"reload"}, 5)
	if err != nil || !slices.ContainsFunc(ents, func(e kgagent.Entity) bool { return e.ID == "lumen.config.reload" }) {
		t.Errorf("Entities(reload) after the write = %v, %v", ents, err)
	}
}

// wordTerms are the words of rows (from wordRows) and their first four
// and six bytes, as Entities terms.
func wordTerms(rows []string) []string {
	set := map[string]bool{}
	for _, r := range rows {
		var f []string
		fmt.Sscanf(r, "%q", &f)
		if len(f) != 3 {
			continue
		}
		w := f[1]
		set[w] = true
		for _, n := range []int{4, 6} {
			if len(w) > n {
				set[w[:n]] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for w := range set {
		out = append(out, w)
	}
	slices.Sort(out)
	return out
}

// agree checks that Entities answers each term alike by SQL (the word
// blocks) and by a name index built from the entities table.
func agree(t *testing.T, s *sqlite.Store, coll string, terms []string) {
	t.Helper()
	bad := 0
	for _, term := range terms {
		viaSQL, viaIndex, err := sqlite.EntitiesBothWays(t.Context(), s, coll, []string{term}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(viaSQL, viaIndex) {
			if bad++; bad <= 5 {
				t.Errorf("Entities(%q): SQL %v, name index %v", term, viaSQL, viaIndex)
			}
		}
	}
	if bad > 5 {
		t.Errorf("... %d terms in all disagree", bad)
	}
}

// TestWordBlocksIncremental writes and deletes documents at random, page
// by page, with names that share words and prefixes so that blocks grow,
// split and empty: after every round the blocks are well formed and hold
// exactly their entities' words, and SQL answers as the name index does.
func TestWordBlocksIncremental(t *testing.T) {
	ctx := t.Context()
	sqlite.SmallWordBlocks(t, 300)
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "graph.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(25, 3))
	parts := []string{"java", "util", "map", "entry", "hash", "concurrent", "stream", "collector", "in", "of"}
	name := func() string {
		n := 1 + rng.IntN(3)
		var ws []string
		for range n {
			ws = append(ws, parts[rng.IntN(len(parts))]+fmt.Sprint(rng.IntN(40)))
		}
		sep := " "
		if rng.IntN(2) == 0 {
			sep = "."
		}
		return strings.Join(ws, sep)
	}
	maxBlocks := 0
	for round := range 30 {
		for range 8 {
			coll := []string{"a", "b"}[rng.IntN(2)]
			doc := fmt.Sprintf("https://x.test/%d.html", rng.IntN(25))
			if rng.IntN(5) == 0 {
				if err := s.DeleteDocument(ctx, coll, doc); err != nil {
					t.Fatal(err)
				}
				continue
			}
			var ts []kgagent.Triple
			for range 1 + rng.IntN(30) {
				ts = append(ts, graphtest.T(coll, doc, name(), "mentions", name(), "c1"))
			}
			if err := s.ReplaceDocument(ctx, coll, doc, ts); err != nil {
				t.Fatal(err)
			}
		}
		n, err := sqlite.CheckWordBlocks(ctx, s)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		maxBlocks = max(maxBlocks, n)
	}
	if maxBlocks < 10 {
		t.Errorf("at most %d blocks: the test did not split any much", maxBlocks)
	}
	var terms []string
	for _, p := range parts {
		terms = append(terms, p, p+"1", p+"12", p[:min(len(p), 4)])
	}
	for _, coll := range []string{"a", "b"} {
		agree(t, s, coll, terms)
	}
	if err := s.DeleteCollection(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.CheckWordBlocks(ctx, s); err != nil {
		t.Fatal(err)
	}
	agree(t, s, "b", terms)
	if ents, err := s.Entities(ctx, "a", []string{"java1"}, 5); err != nil || len(ents) != 0 {
		t.Errorf("a deleted collection's entities: %v, %v", ents, err)
	}
}

// FuzzWordBlock decodes arbitrary blocks without panicking, and a block
// that decodes encodes back to the same words.
func FuzzWordBlock(f *testing.F) {
	first, data := sqlite.EncodeWordBlock([]string{"java", "java.util", "javax", "map"}, [][]int64{{3, 9}, {4}, {5, 6, 700000}, {2}})
	f.Add(first, data)
	f.Add("", []byte{0, 1, 'a', 1, 1})
	f.Add("a", []byte{1, 0, 1, 0})
	f.Fuzz(func(t *testing.T, first string, data []byte) {
		words, ids, err := sqlite.DecodeWordBlock(first, data)
		if err != nil || len(words) == 0 {
			return
		}
		f2, d2 := sqlite.EncodeWordBlock(words, ids)
		w2, i2, err := sqlite.DecodeWordBlock(f2, d2)
		if err != nil || !slices.Equal(w2, words) || !reflect.DeepEqual(i2, ids) {
			t.Fatalf("re-encoded block decodes to %q %v, %v; want %q %v", w2, i2, err, words, ids)
		}
	})
}

// TestWordBlocksPerCommit queues page-by-page writes that all add entities
// under a common word ("in") behind a held writer, so that they share one
// transaction: its word blocks are written once at its end, not once per
// document (each rewrote the common word's block: +17% CPU on a second
// collection's ingest). A collection deleted inside the group keeps none
// of its earlier writes' words; a group with a failing write (run again
// with a savepoint per write) keeps the others'. After each group the
// blocks hold exactly the entities' words and SQL answers as the name
// index does.
func TestWordBlocksPerCommit(t *testing.T) {
	ctx := t.Context()
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "graph.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	doc := func(i int) string { return fmt.Sprintf("https://x.test/%d.html", i) }
	page := func(coll string, i int) []kgagent.Triple {
		return []kgagent.Triple{graphtest.T(coll, doc(i), fmt.Sprintf("in alpha%d", i), "mentions", fmt.Sprintf("in beta%d", i), "c1")}
	}
	for _, coll := range []string{"a", "b"} {
		if err := s.ReplaceDocument(ctx, coll, doc(0), page(coll, 0)); err != nil {
			t.Fatal(err)
		}
	}
	// group runs the writes in order behind a held writer, so that they
	// share a transaction, and returns the blocks it wrote and the writes'
	// errors.
	group := func(writes []func() error) (int, []error) {
		hold, held := make(chan struct{}), make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			_ = sqlite.WriteForTest(ctx, s, func(func(string, ...any) error) error {
				close(held)
				<-hold
				return nil
			})
		})
		<-held
		errs := make([]error, len(writes))
		for i, w := range writes {
			wg.Go(func() { errs[i] = w() })
			waitQueue(t, s, i+1)
		}
		before := sqlite.BlockWrites(s)
		close(hold)
		wg.Wait()
		return sqlite.BlockWrites(s) - before, errs
	}
	check := func(what string) {
		t.Helper()
		if _, err := sqlite.CheckWordBlocks(ctx, s); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		terms := []string{"in", "alpha1", "alpha", "beta2", "beta", "in alpha3"}
		for _, coll := range []string{"a", "b"} {
			agree(t, s, coll, terms)
		}
	}

	const docs = 20
	var writes []func() error
	for i := 1; i <= docs; i++ {
		writes = append(writes, func() error { return s.ReplaceDocument(ctx, "a", doc(i), page("a", i)) })
	}
	writes = append(writes,
		func() error { return s.DeleteDocument(ctx, "a", doc(0)) },
		func() error { return s.ReplaceDocument(ctx, "b", doc(1), page("b", 1)) },
		func() error { return s.DeleteCollection(ctx, "b") },
		func() error { return s.ReplaceDocument(ctx, "b", doc(2), page("b", 2)) },
	)
	n, errs := group(writes)
	for i, err := range errs {
		if err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
	// a's block and b's, before b is deleted, then b's again: one block
	// per collection and flush. Per document it was at least 23.
	t.Logf("%d word blocks written for %d writes", n, len(writes))
	if n > 4 {
		t.Errorf("%d word blocks written for one transaction of %d writes, want at most 4", n, len(writes))
	}
	check("after the group")
	if ents, err := s.Entities(ctx, "b", []string{"alpha1"}, 5); err != nil || len(ents) != 0 {
		t.Errorf("Entities(b, alpha1) after b was deleted in the group: %v, %v", ents, err)
	}
	if ents, err := s.Entities(ctx, "b", []string{"alpha2"}, 5); err != nil || len(ents) != 1 {
		t.Errorf("Entities(b, alpha2) written after b was deleted in the group: %v, %v", ents, err)
	}

	// A failing write: the group runs again, each write in a savepoint.
	fail := errors.New("fail")
	_, errs = group([]func() error{
		func() error { return s.ReplaceDocument(ctx, "a", doc(30), page("a", 30)) },
		func() error {
			return sqlite.WriteForTest(ctx, s, func(exec func(string, ...any) error) error { return fail })
		},
		func() error { return s.DeleteDocument(ctx, "a", doc(1)) },
		func() error { return s.ReplaceDocument(ctx, "b", doc(3), page("b", 3)) },
	})
	if !errors.Is(errs[1], fail) || errs[0] != nil || errs[2] != nil || errs[3] != nil {
		t.Errorf("errors %v, want only the second", errs)
	}
	check("after the failed group")
	if ents, err := s.Entities(ctx, "a", []string{"alpha30"}, 5); err != nil || len(ents) != 1 {
		t.Errorf("Entities(a, alpha30) = %v, %v", ents, err)
	}
	if ents, err := s.Entities(ctx, "a", []string{"alpha1"}, 50); err != nil || slices.ContainsFunc(ents, func(e kgagent.Entity) bool { return e.ID == "in alpha1" }) {
		t.Errorf("Entities(a, alpha1) after its document was deleted = %v, %v", ents, err)
	}
}
