package sqlite

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/internal/snapfile"
)

// WriterCacheSize is the writer connection's PRAGMA cache_size.
func WriterCacheSize(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.w.conn.QueryRowContext(context.Background(), `PRAGMA cache_size`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// StrsComplete reports whether the writer's string cache is complete (a
// bulk load gives new strings ids without looking them up).
func StrsComplete(s *Store) bool { return s.w.strs.complete }

// SetMaxCachedStrs lowers the string cache's cap for the test.
func SetMaxCachedStrs(t *testing.T, n int) {
	old := maxCachedStrs
	maxCachedStrs = n
	t.Cleanup(func() { maxCachedStrs = old })
}

// SetEarlyNamesTriples changes the cap on the bulk loads whose name index
// Snapshot reads while the load finishes, for the test.
func SetEarlyNamesTriples(t *testing.T, n int) {
	old := earlyNamesTriples
	earlyNamesTriples = n
	t.Cleanup(func() { earlyNamesTriples = old })
}

// SetMaxCompleteStrBytes lowers the complete string cache's cap for the
// test.
func SetMaxCompleteStrBytes(t *testing.T, n int) {
	old := maxCompleteStrBytes
	maxCompleteStrBytes = n
	t.Cleanup(func() { maxCompleteStrBytes = old })
}

// DuplicateStrs is how many rows of strs repeat another's string.
func DuplicateStrs(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.rdb.QueryRowContext(context.Background(), `SELECT count(*) - count(DISTINCT s) FROM strs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// MemNames counts the name indexes Snapshot built from a bulk load's rows
// in memory rather than from SQLite.
func MemNames(s *Store) int { return s.memNames }

// WaitedWords counts the large bulk loads whose entities' words were made
// beside the index builds, after SnapshotAfter's wait.
func WaitedWords(s *Store) int { return s.w.waitedWords }

// SnapWaits counts SnapshotAfter's waits for its ready.
func SnapWaits(s *Store) int { return int(s.snapWaits.Load()) }

// EarlyNames counts the name indexes whose triples Snapshot read while the
// bulk load finished.
func EarlyNames(s *Store) int { return s.earlyNames }

// EarlyEnts counts the name indexes whose entities Snapshot took from the
// bulk load's finish rather than from SQLite.
func EarlyEnts(s *Store) int { return s.earlyEnts }

// KnownStrs counts the name indexes whose triples' strings Snapshot looked
// up in the bulk load's string cache rather than strs.
func KnownStrs(s *Store) int { return s.knownStrs }

// EarlySnaps counts the name-index snapshots Snapshot wrote while the bulk
// load finished and renamed into place after it.
func EarlySnaps(s *Store) int { return s.earlySnaps }

// SnapDir is the directory of the store's snapshots.
func SnapDir(s *Store) string { return s.snapDir() }

// SnapshotBody is the body of collection's name-index snapshot on disk,
// nil when there is none current.
func SnapshotBody(t *testing.T, s *Store, collection string) []byte {
	t.Helper()
	header, err := snapState(context.Background(), s.rdb, collection)
	if err != nil {
		t.Fatal(err)
	}
	return snapfile.Read(snapfile.Path(s.snapDir(), collection), header)
}

// SnapshotFileBody is the body of collection's name-index snapshot beside
// the store at path whatever executable wrote it (its header's first four
// lines are taken as they are), nil when there is none or it is corrupt.
func SnapshotFileBody(path, collection string) []byte {
	file := snapfile.Path(path+"-snap", collection)
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	end := 0
	for range 4 {
		i := bytes.IndexByte(b[end:], '\n')
		if i < 0 {
			return nil
		}
		end += i + 1
	}
	return snapfile.Read(file, string(b[:end]))
}

// SetEarlyEntities sets the cap on the bulk loads whose entities' rows
// finishBulk makes while the writer builds the indexes, for the test.
func SetEarlyEntities(t *testing.T, n int) {
	old := earlyEntities
	earlyEntities = n
	t.Cleanup(func() { earlyEntities = old })
}

// SetBulkRows sets the size of bulkRows' chunks and the bytes they may
// take for the test's length.
func SetBulkRows(t *testing.T, chunk, max int) {
	oc, om := bulkChunk, maxBulkRowsBytes
	bulkChunk, maxBulkRowsBytes = chunk, max
	t.Cleanup(func() { bulkChunk, maxBulkRowsBytes = oc, om })
}

// WriterSynchronous is the writer connection's PRAGMA synchronous (1
// NORMAL, 2 FULL).
func WriterSynchronous(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.w.conn.QueryRowContext(context.Background(), `PRAGMA synchronous`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// WALSyncs reports the writer's commits made without an fsync, how many
// of them an fsync of the WAL has covered, and the fsyncs made.
func WALSyncs(s *Store) (committed, synced uint64, syncs int) {
	w := s.w.wal
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.committed, w.synced, w.syncs
}

// SetMaxIndexedTriples lowers the bound past which a collection's name
// index holds its entities alone, for the test.
func SetMaxIndexedTriples(t *testing.T, n int) {
	old := maxIndexedTriples
	maxIndexedTriples = n
	t.Cleanup(func() { maxIndexedTriples = old })
}

// EntitiesOnly reports whether the snapshot body b decodes to an index of
// the entities alone (false, err: it does not decode).
func EntitiesOnly(b []byte) (bool, error) {
	x, err := decodeNames(b)
	if err != nil {
		return false, err
	}
	return x.entsOnly, nil
}

// CompareLookups decodes the snapshot body b and checks that Entities and
// Expand answered from it are what SQL answers, for n words spread over
// its word index (and each word's first four bytes and all but its last
// byte, for the prefix fallback),
// as a term and as a seed of its entities, with several limits. It returns
// how many lookups it compared and the first difference ("" when none).
func CompareLookups(ctx context.Context, s *Store, collection string, b []byte, n int) (int, string, error) {
	x, err := decodeNames(b)
	if err != nil {
		return 0, "", err
	}
	checked := 0
	step := max(len(x.words)/max(n, 1), 1)
	for w := 0; w < len(x.words); w += step {
		word := x.str(x.words[w])
		terms := [][]string{{word}, {strings.ToUpper(word)}}
		if len(word) > 4 {
			terms = append(terms, []string{word[:4]}, []string{word[:len(word)-1]})
		}
		for _, ts := range terms {
			for _, limit := range []int{3, 20} {
				forms := termForms(ts)
				want, err := s.entitiesSQL(ctx, collection, forms, limit)
				if err != nil {
					return checked, "", err
				}
				got := x.entities(forms, limit)
				checked++
				if fmt.Sprint(got) != fmt.Sprint(want) {
					return checked, fmt.Sprintf("Entities(%q, %d): snapshot %v, SQL %v", ts, limit, got, want), nil
				}
			}
		}
		var seeds []string
		list := span(x.wordEnts, x.wordEnd, int32(w))
		for _, e := range list[:min(3, len(list))] {
			seeds = append(seeds, x.str(x.ents[e].id))
		}
		lim := graphrag.ExpandLimits{Hops: 2, TriplesPerEntity: 10}
		want, err := s.expand(ctx, collection, seeds, lim, nil)
		if err != nil {
			return checked, "", err
		}
		got, err := s.expand(ctx, collection, seeds, lim, x)
		if err != nil {
			return checked, "", err
		}
		checked++
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return checked, fmt.Sprintf("Expand(%q): snapshot %d triples, SQL %d", seeds, len(got), len(want)), nil
		}
	}
	return checked, "", nil
}

// SetWordRuns makes finishBulk make the words of a tallied load of more
// than entities entities in runs of at most rows rows and bytes of strings,
// for the test.
func SetWordRuns(t *testing.T, entities, rows, bytes int) {
	oe, or, ob := streamEntities, wordRunRows, wordRunBytes
	streamEntities, wordRunRows, wordRunBytes = entities, rows, bytes
	t.Cleanup(func() { streamEntities, wordRunRows, wordRunBytes = oe, or, ob })
}

// WordsHeld is the most entity word rows the store's bulk load finish
// held at once, and the runs on file it merged them from.
func WordsHeld(s *Store) (rows, runs int) { return s.w.wordsHeld, s.w.wordRuns }
