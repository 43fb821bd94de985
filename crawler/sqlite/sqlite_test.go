package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/crawler/crawlertest"
	"github.com/kgagent/kgagent/crawler/sqlite"
	"github.com/kgagent/kgagent/knowledge"
)

func TestConformance(t *testing.T) {
	open := func(t *testing.T) knowledge.PageStates {
		s, err := sqlite.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	crawlertest.TestPageStateStore(t, open)
	crawlertest.TestSpecLog(t, open)
}

func TestPersistsAcrossOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state", "pages.db")
	s, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutPage(ctx, knowledge.PageState{Collection: "c", URL: "http://h/a", ETag: `"x"`, ContentHash: "h"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got, err := s2.ListPages(ctx, "c")
	if err != nil || len(got) != 1 || got[0].ETag != `"x"` {
		t.Fatalf("after reopen: %+v, %v", got, err)
	}
}

func TestClosedAndBadPath(t *testing.T) {
	if _, err := sqlite.Open(""); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("Open(\"\") = %v", err)
	}
	s, err := sqlite.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := s.ListPages(context.Background(), "c"); kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
		t.Errorf("ListPages on closed store = %v", err)
	}
}
