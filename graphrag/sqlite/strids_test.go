package sqlite

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestStrIDs: strings added get ids 1, 2, ... and are found by string and
// by id, across chunk boundaries (strings that just fill a chunk, empty
// strings at a full chunk's end, one longer than a chunk) and table
// growth; a rollback drops exactly the strings added since the last
// commit, which may then be added again under the same ids.
func TestStrIDs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var want []string // want[id-1]
	ids := map[string]int64{}
	tab := newStrIDs()
	add := func(s string) {
		if _, ok := ids[s]; ok {
			return
		}
		id := tab.add(s)
		want = append(want, s)
		ids[s] = id
		if id != int64(len(want)) {
			t.Fatalf("%d-byte string got id %d, want %d", len(s), id, len(want))
		}
	}
	check := func(when string) {
		t.Helper()
		if tab.len() != len(want) {
			t.Fatalf("%s: %d strings, want %d", when, tab.len(), len(want))
		}
		n := 0
		for i, s := range want {
			if got, ok := tab.str(int64(i + 1)); !ok || got != s {
				t.Fatalf("%s: id %d is %d bytes (%v), want %d", when, i+1, len(got), ok, len(s))
			}
			if id, ok := tab.get(s); !ok || id != int64(i+1) {
				t.Fatalf("%s: %d-byte string found as %d (%v), want %d", when, len(s), id, ok, i+1)
			}
			n += len(s)
		}
		if tab.bytes != n {
			t.Fatalf("%s: %d bytes counted, want %d", when, tab.bytes, n)
		}
		for _, s := range []string{"never added", strings.Repeat("z", 3000)} {
			if id, ok := tab.get(s); ok {
				t.Fatalf("%s: %q found as %d", when, s[:10], id)
			}
		}
		if _, ok := tab.str(int64(len(want) + 1)); ok {
			t.Fatalf("%s: id past the last found", when)
		}
		if _, ok := tab.str(0); ok {
			t.Fatalf("%s: id 0 found", when)
		}
	}
	add("")
	// fill the first chunk exactly, then an empty string at its end
	add(strings.Repeat("a", 1<<strChunkBits-10))
	add("123456789")
	add("b")
	add(strings.Repeat("c", 1<<strChunkBits+5)) // a chunk of its own
	add(strings.Repeat("d", 7))
	for i := range 20000 {
		add(fmt.Sprintf("s%d:%s", i, strings.Repeat("x", r.IntN(200))))
	}
	check("added")
	tab.commit()
	committed := len(want)
	for i := range 9000 {
		add(fmt.Sprintf("p%d:%s", i, strings.Repeat("y", r.IntN(300))))
	}
	add(strings.Repeat("e", 2<<strChunkBits))
	check("pending")
	tab.rollback()
	for _, s := range want[committed:] {
		delete(ids, s)
	}
	want = want[:committed]
	check("rolled back")
	for i := range 3000 {
		add(fmt.Sprintf("q%d", i))
	}
	tab.commit()
	tab.rollback() // nothing pending
	check("added again")
	if tab.memory() < tab.bytes {
		t.Errorf("memory %d below the %d string bytes", tab.memory(), tab.bytes)
	}
}

// FuzzStrIDs: any strings added (some repeated, checked before adding, as
// the writer does) are found by string and by id.
func FuzzStrIDs(f *testing.F) {
	f.Add("a\x00b\x00\x00a", 3)
	f.Add(strings.Repeat("x\x00", 40), 1)
	f.Fuzz(func(t *testing.T, in string, rollbackAt int) {
		tab := newStrIDs()
		var want []string
		for i, s := range strings.Split(in, "\x00") {
			if i == rollbackAt {
				tab.commit()
			}
			if _, ok := tab.get(s); ok {
				continue
			}
			if id := tab.add(s); id != int64(len(want)+1) {
				t.Fatalf("id %d, want %d", id, len(want)+1)
			}
			want = append(want, s)
		}
		if rollbackAt >= 0 && tab.committed > 0 {
			tab.rollback()
			want = want[:tab.committed]
		}
		for i, s := range want {
			if got, ok := tab.str(int64(i + 1)); !ok || got != s {
				t.Fatalf("id %d: %q, want %q", i+1, got, s)
			}
			if id, ok := tab.get(s); !ok || id != int64(i+1) {
				t.Fatalf("%q: id %d, want %d", s, id, i+1)
			}
		}
	})
}
