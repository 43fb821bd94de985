// Package crawlertest is the conformance suite every knowledge.PageStates
// passes (the in-memory one and crawler/sqlite), in the manner of
// testing/slogtest.
package crawlertest

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/knowledge"
)

// TestPageStateStore runs the conformance suite against stores made by
// open; each subtest gets a fresh, empty store.
func TestPageStateStore(t *testing.T, open func(t *testing.T) knowledge.PageStates) {
	ctx := context.Background()
	seen := time.Date(2026, 5, 2, 10, 0, 0, 0, time.UTC)
	a := knowledge.PageState{Collection: "c1", URL: "http://h/a", ETag: `"e1"`, LastModified: "Sat, 02 May 2026 10:00:00 GMT", ContentHash: "h1", LastSeen: seen, Links: []string{"http://h/b", "http://h/c?x=1"}}
	b := knowledge.PageState{Collection: "c1", URL: "http://h/b", ContentHash: "h2", LastSeen: seen}
	other := knowledge.PageState{Collection: "c2", URL: "http://h/a", ContentHash: "h3", LastSeen: seen}

	list := func(t *testing.T, s knowledge.PageStates, col string) []knowledge.PageState {
		t.Helper()
		got, err := s.ListPages(ctx, col)
		if err != nil {
			t.Fatal(err)
		}
		sort.Slice(got, func(i, j int) bool { return got[i].URL < got[j].URL })
		return got
	}
	t.Run("put and list per collection", func(t *testing.T) {
		s := open(t)
		for _, st := range []knowledge.PageState{a, b, other} {
			if err := s.PutPage(ctx, st); err != nil {
				t.Fatal(err)
			}
		}
		got := list(t, s, "c1")
		if len(got) != 2 || !equal(got[0], a) || !equal(got[1], b) {
			t.Fatalf("c1 = %+v", got)
		}
		if got := list(t, s, "c2"); len(got) != 1 || !equal(got[0], other) {
			t.Fatalf("c2 = %+v", got)
		}
		if got := list(t, s, "none"); len(got) != 0 {
			t.Fatalf("unknown collection = %+v", got)
		}
	})
	t.Run("put replaces", func(t *testing.T) {
		s := open(t)
		_ = s.PutPage(ctx, a)
		a2 := a
		a2.ETag, a2.ContentHash, a2.LastSeen = `"e2"`, "h9", seen.Add(time.Hour)
		if err := s.PutPage(ctx, a2); err != nil {
			t.Fatal(err)
		}
		if got := list(t, s, "c1"); len(got) != 1 || !equal(got[0], a2) {
			t.Fatalf("after replace = %+v", got)
		}
	})
	t.Run("delete page and collection", func(t *testing.T) {
		s := open(t)
		for _, st := range []knowledge.PageState{a, b, other} {
			_ = s.PutPage(ctx, st)
		}
		if err := s.DeletePage(ctx, "c1", a.URL); err != nil {
			t.Fatal(err)
		}
		if err := s.DeletePage(ctx, "c1", "http://h/unknown"); err != nil {
			t.Fatalf("deleting an unknown page: %v", err)
		}
		if got := list(t, s, "c1"); len(got) != 1 || got[0].URL != b.URL {
			t.Fatalf("after delete = %+v", got)
		}
		if got := list(t, s, "c2"); len(got) != 1 {
			t.Fatalf("other collection touched: %+v", got)
		}
		if err := s.DeleteCollection(ctx, "c1"); err != nil {
			t.Fatal(err)
		}
		if got := list(t, s, "c1"); len(got) != 0 {
			t.Fatalf("after delete collection = %+v", got)
		}
		if got := list(t, s, "c2"); len(got) != 1 {
			t.Fatalf("delete collection touched another: %+v", got)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		s := open(t)
		_ = s.PutPage(ctx, a)
		for _, bad := range []knowledge.PageState{{URL: "http://h/x"}, {Collection: "c1"}} {
			if err := s.PutPage(ctx, bad); kgagent.ErrorCode(err) != kgagent.EINVALID {
				t.Errorf("PutPage(%+v) = %v, want %s", bad, err, kgagent.EINVALID)
			}
		}
		if got := list(t, s, "c1"); len(got) != 1 || !equal(got[0], a) {
			t.Fatalf("bad input changed the store: %+v", got)
		}
	})
}

// TestSpecLog runs the conformance suite of crawler.SpecLog against stores
// made by open (knowledge.PageStates that are also a SpecLog); each subtest gets
// a fresh, empty store.
func TestSpecLog(t *testing.T, open func(t *testing.T) knowledge.PageStates) {
	ctx := context.Background()
	log := func(t *testing.T) (knowledge.PageStates, crawler.SpecLog) {
		s := open(t)
		l, ok := s.(crawler.SpecLog)
		if !ok {
			t.Fatalf("%T is not a crawler.SpecLog", s)
		}
		return s, l
	}
	specs := func(t *testing.T, l crawler.SpecLog, col string) string {
		t.Helper()
		got, err := l.CompleteSpecs(ctx, col)
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(got)
		return strings.Join(got, " ")
	}
	t.Run("add, dedupe, per collection", func(t *testing.T) {
		_, l := log(t)
		if got := specs(t, l, "c1"); got != "" {
			t.Fatalf("empty store has %q", got)
		}
		for _, k := range []string{"k2", "k1", "k2"} {
			if err := l.AddCompleteSpec(ctx, "c1", k); err != nil {
				t.Fatal(err)
			}
		}
		_ = l.AddCompleteSpec(ctx, "c2", "k3")
		if got := specs(t, l, "c1"); got != "k1 k2" {
			t.Fatalf("c1 = %q, want k1 k2", got)
		}
		if got := specs(t, l, "c2"); got != "k3" {
			t.Fatalf("c2 = %q, want k3", got)
		}
	})
	t.Run("delete collection forgets its specs", func(t *testing.T) {
		s, l := log(t)
		_ = l.AddCompleteSpec(ctx, "c1", "k1")
		_ = l.AddCompleteSpec(ctx, "c2", "k2")
		if err := s.DeleteCollection(ctx, "c1"); err != nil {
			t.Fatal(err)
		}
		if got := specs(t, l, "c1"); got != "" {
			t.Fatalf("c1 after delete = %q", got)
		}
		if got := specs(t, l, "c2"); got != "k2" {
			t.Fatalf("delete touched c2: %q", got)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		_, l := log(t)
		for _, bad := range [][2]string{{"", "k"}, {"c", ""}} {
			if err := l.AddCompleteSpec(ctx, bad[0], bad[1]); kgagent.ErrorCode(err) != kgagent.EINVALID {
				t.Errorf("AddCompleteSpec(%q, %q) = %v, want %s", bad[0], bad[1], err, kgagent.EINVALID)
			}
		}
	})
}

func equal(x, y knowledge.PageState) bool {
	return x.Collection == y.Collection && x.URL == y.URL && x.ETag == y.ETag && x.LastModified == y.LastModified &&
		x.ContentHash == y.ContentHash && x.LastSeen.Equal(y.LastSeen) && strings.Join(x.Links, " ") == strings.Join(y.Links, " ")
}
