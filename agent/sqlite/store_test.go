package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/agent/sqlite"
)

func open(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func code(err error) string { return kgagent.ErrorCode(err) }

func TestUserStorage(t *testing.T) {
	ctx := context.Background()
	us := open(t, filepath.Join(t.TempDir(), "agent.db")).UserStorage()

	tests := []struct {
		name string
		op   func() error
		code string
	}{
		{"set then get", func() error {
			if err := us.Set(ctx, "a", "u1", "k", map[string]any{"n": 1 << 60, "b": []byte{0, 255}}); err != nil {
				return err
			}
			v, err := us.Get(ctx, "a", "u1", "k")
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(v, map[string]any{"n": int64(1) << 60, "b": []byte{0, 255}}) {
				return fmt.Errorf("got %#v", v)
			}
			return nil
		}, ""},
		{"overwrite", func() error {
			if err := us.Set(ctx, "a", "u1", "k", "second"); err != nil {
				return err
			}
			v, err := us.Get(ctx, "a", "u1", "k")
			if v != "second" {
				return fmt.Errorf("got %#v, %v", v, err)
			}
			return err
		}, ""},
		{"nil value is stored, not deleted", func() error {
			if err := us.Set(ctx, "a", "u1", "nil", nil); err != nil {
				return err
			}
			v, err := us.Get(ctx, "a", "u1", "nil")
			if v != nil {
				return fmt.Errorf("got %#v", v)
			}
			return err
		}, ""},
		{"missing key", func() error { _, err := us.Get(ctx, "a", "u1", "missing"); return err }, kgagent.EUserStorageNotFound},
		{"other user does not see it", func() error { _, err := us.Get(ctx, "a", "u2", "k"); return err }, kgagent.EUserStorageNotFound},
		{"other agent does not see it", func() error { _, err := us.Get(ctx, "b", "u1", "k"); return err }, kgagent.EUserStorageNotFound},
		{"anonymous get", func() error { _, err := us.Get(ctx, "a", "", "k"); return err }, kgagent.EUserStorageNeedsUser},
		{"anonymous set", func() error { return us.Set(ctx, "a", "", "k", 1) }, kgagent.EUserStorageNeedsUser},
		{"anonymous delete", func() error { return us.Delete(ctx, "a", "", "k") }, kgagent.EUserStorageNeedsUser},
		{"anonymous keys", func() error { _, err := us.Keys(ctx, "a", ""); return err }, kgagent.EUserStorageNeedsUser},
		{"bad type keeps old value", func() error {
			err := us.Set(ctx, "a", "u1", "k", struct{}{})
			if v, _ := us.Get(ctx, "a", "u1", "k"); v != "second" {
				return fmt.Errorf("old value lost: %#v", v)
			}
			return err
		}, kgagent.EINVALID},
		{"nested list", func() error { return us.Set(ctx, "a", "u1", "x", []any{[]any{}}) }, kgagent.EINVALID},
		{"empty key", func() error { return us.Set(ctx, "a", "u1", "", 1) }, kgagent.EINVALID},
		{"long key", func() error { return us.Set(ctx, "a", "u1", string(make([]byte, sqlite.MaxKeyLen+1)), 1) }, kgagent.EINVALID},
		{"no agent", func() error { return us.Set(ctx, "", "u1", "k", 1) }, kgagent.EINVALID},
		{"too large", func() error { return us.Set(ctx, "a", "u1", "big", make([]byte, sqlite.MaxValueSize)) }, kgagent.ETOOLARGE},
		{"delete missing", func() error { return us.Delete(ctx, "a", "u1", "missing") }, kgagent.EUserStorageNotFound},
		{"keys sorted", func() error {
			keys, err := us.Keys(ctx, "a", "u1")
			if !reflect.DeepEqual(keys, []string{"k", "nil"}) {
				return fmt.Errorf("keys %q", keys)
			}
			return err
		}, ""},
		{"delete then get", func() error {
			if err := us.Delete(ctx, "a", "u1", "nil"); err != nil {
				return err
			}
			_, err := us.Get(ctx, "a", "u1", "nil")
			return err
		}, kgagent.EUserStorageNotFound},
		{"keys of nobody", func() error {
			keys, err := us.Keys(ctx, "a", "nobody")
			if keys == nil || len(keys) != 0 {
				return fmt.Errorf("keys %#v", keys)
			}
			return err
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := code(tt.op()); got != tt.code {
				t.Fatalf("code = %q, want %q", got, tt.code)
			}
		})
	}
	_, err := us.Get(ctx, "a", "", "k")
	if kgagent.HTTPStatus(code(err)) != 400 {
		t.Errorf("anonymous caller maps to HTTP %d, want 400", kgagent.HTTPStatus(code(err)))
	}
	if d := kgagent.ErrorDetails(func() error { _, err := us.Get(ctx, "a", "u1", "zz"); return err }()); d["key"] != "zz" {
		t.Errorf("not-found details = %v", d)
	}
}

func TestPersistsAcrossReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sub", "agent.db")
	db, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.UserStorage().Set(ctx, "a", "u", "k", []any{int64(1), 2.5, "x"}); err != nil {
		t.Fatal(err)
	}
	s, err := db.Sessions().CreateSession(ctx, agent.Session{UserID: "u", Agent: "a", Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Sessions().AppendMessage(ctx, agent.SessionMessage{SessionID: s.ID, Role: "user", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UserStorage().Get(ctx, "a", "u", "k"); code(err) != kgagent.EUNAVAILABLE {
		t.Errorf("use after close: %v", err)
	}

	db2 := open(t, path)
	v, err := db2.UserStorage().Get(ctx, "a", "u", "k")
	if err != nil || !reflect.DeepEqual(v, []any{int64(1), 2.5, "x"}) {
		t.Fatalf("after reopen: %#v %v", v, err)
	}
	msgs, err := db2.Sessions().Messages(ctx, s.ID)
	if err != nil || len(msgs) != 1 || msgs[0].Text != "hi" {
		t.Fatalf("messages after reopen: %+v %v", msgs, err)
	}
}

func TestOpenRejects(t *testing.T) {
	if _, err := sqlite.Open(""); code(err) != kgagent.EINVALID {
		t.Errorf("empty path: %v", err)
	}
	junk := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(junk, []byte("this is not a database, just text long enough to have a header......"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Open(junk); code(err) != kgagent.EUNAVAILABLE {
		t.Errorf("junk file: %v", err)
	}
}

func TestSessions(t *testing.T) {
	ctx := context.Background()
	db := open(t, filepath.Join(t.TempDir(), "agent.db"))
	clock := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	db.Now = func() time.Time { clock = clock.Add(time.Second); return clock }
	st := db.Sessions()

	s1, err := st.CreateSession(ctx, agent.Session{UserID: "alice", Agent: "default", Title: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if s1.ID == "" || s1.CreatedAt.IsZero() {
		t.Fatalf("not filled: %+v", s1)
	}
	s2, err := st.CreateSession(ctx, agent.Session{ID: "fixed-id", UserID: "alice", Title: "second"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateSession(ctx, agent.Session{UserID: "bob"}); err != nil {
		t.Fatal(err)
	}

	got, err := st.GetSession(ctx, s1.ID)
	if err != nil || !reflect.DeepEqual(got, s1) {
		t.Fatalf("get = %+v %v, want %+v", got, err, s1)
	}
	list, err := st.ListSessions(ctx, "alice")
	if err != nil || len(list) != 2 || list[0].ID != s2.ID || list[1].ID != s1.ID {
		t.Fatalf("list alice = %+v %v, want newest first", list, err)
	}
	if list, _ := st.ListSessions(ctx, "carol"); list == nil || len(list) != 0 {
		t.Errorf("list carol = %#v, want empty", list)
	}

	ev := []kgagent.Event{
		{RequestID: "r1", Seq: 1, Time: clock, Kind: kgagent.EventThought, Text: "I should search"},
		{RequestID: "r1", Seq: 2, Time: clock, Kind: kgagent.EventAction, Func: "fixie_query_corpus", Text: "x"},
		{RequestID: "r1", Seq: 3, Time: clock, Kind: kgagent.EventAnswer, Text: "42", Final: true,
			Sources: []kgagent.Source{{URL: "https://d/x#a", Title: "X", Score: 0.5}}, Usage: &kgagent.Usage{PromptTokens: 3, CompletionTokens: 4}},
		{RequestID: "r1", Seq: 4, Kind: kgagent.EventError, Error: &kgagent.Error{Code: kgagent.ETIMEOUT, Message: "late"}},
	}
	m1, err := st.AppendMessage(ctx, agent.SessionMessage{SessionID: s1.ID, Role: "user", Text: "what?"})
	if err != nil {
		t.Fatal(err)
	}
	m2, err := st.AppendMessage(ctx, agent.SessionMessage{SessionID: s1.ID, Role: "agent", Agent: "default", Text: "42",
		Sources: []kgagent.Source{{URL: "https://d/x#a", Title: "X", Score: 0.5, HeadingPath: []string{"A", "B"}}}, Events: ev})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := st.Messages(ctx, s1.ID)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("messages = %+v %v", msgs, err)
	}
	if !reflect.DeepEqual(msgs[0], m1) {
		t.Errorf("user message = %+v, want %+v", msgs[0], m1)
	}
	g := msgs[1]
	if g.ID != m2.ID || g.Role != "agent" || g.Agent != "default" || !g.CreatedAt.Equal(m2.CreatedAt) || !reflect.DeepEqual(g.Sources, m2.Sources) {
		t.Errorf("agent message = %+v, want %+v", g, m2)
	}
	if len(g.Events) != len(ev) {
		t.Fatalf("events = %+v", g.Events)
	}
	for i := range ev {
		a, b := g.Events[i], ev[i]
		if !a.Time.Equal(b.Time) || a.Kind != b.Kind || a.Seq != b.Seq || a.Text != b.Text || a.Func != b.Func || a.Final != b.Final ||
			!reflect.DeepEqual(a.Sources, b.Sources) || !reflect.DeepEqual(a.Usage, b.Usage) || !reflect.DeepEqual(a.Error, b.Error) {
			t.Errorf("event %d = %+v, want %+v", i, a, b)
		}
	}

	errCases := []struct {
		name string
		err  error
		code string
	}{
		{"duplicate session", func() error { _, err := st.CreateSession(ctx, agent.Session{ID: "fixed-id"}); return err }(), kgagent.ECONFLICT},
		{"session id with slash", func() error { _, err := st.CreateSession(ctx, agent.Session{ID: "a/b"}); return err }(), kgagent.EINVALID},
		{"get unknown", func() error { _, err := st.GetSession(ctx, "nope"); return err }(), kgagent.ENOTFOUND},
		{"messages of unknown", func() error { _, err := st.Messages(ctx, "nope"); return err }(), kgagent.ENOTFOUND},
		{"append to unknown", func() error {
			_, err := st.AppendMessage(ctx, agent.SessionMessage{SessionID: "nope", Role: "user"})
			return err
		}(), kgagent.ENOTFOUND},
		{"bad role", func() error {
			_, err := st.AppendMessage(ctx, agent.SessionMessage{SessionID: s1.ID, Role: "system"})
			return err
		}(), kgagent.EINVALID},
		{"duplicate message", func() error {
			_, err := st.AppendMessage(ctx, agent.SessionMessage{ID: m1.ID, SessionID: s1.ID, Role: "user"})
			return err
		}(), kgagent.ECONFLICT},
		{"delete unknown", st.DeleteSession(ctx, "nope"), kgagent.ENOTFOUND},
	}
	for _, c := range errCases {
		if got := code(c.err); got != c.code {
			t.Errorf("%s: code %q (%v), want %q", c.name, got, c.err, c.code)
		}
	}
	if msgs, _ := st.Messages(ctx, s1.ID); len(msgs) != 2 {
		t.Errorf("failed appends changed the session: %d messages", len(msgs))
	}

	if err := st.DeleteSession(ctx, s1.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Messages(ctx, s1.ID); code(err) != kgagent.ENOTFOUND {
		t.Errorf("messages after delete: %v", err)
	}
	// A new session with the old id starts empty: the messages went too.
	if _, err := st.CreateSession(ctx, agent.Session{ID: s1.ID}); err != nil {
		t.Fatal(err)
	}
	if msgs, err := st.Messages(ctx, s1.ID); err != nil || len(msgs) != 0 {
		t.Errorf("recreated session has %d messages, %v", len(msgs), err)
	}
}

func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	db := open(t, filepath.Join(t.TempDir(), "agent.db"))
	us, st := db.UserStorage(), db.Sessions()
	s, err := st.CreateSession(ctx, agent.Session{UserID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers*each*2)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := us.Set(ctx, "a", "u", fmt.Sprintf("w%d-%d", w, i), int64(i)); err != nil {
					errs <- err
				}
				if _, err := st.AppendMessage(ctx, agent.SessionMessage{SessionID: s.ID, Role: "user", Text: "x"}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	keys, err := us.Keys(ctx, "a", "u")
	if err != nil || len(keys) != workers*each {
		t.Fatalf("%d keys, %v", len(keys), err)
	}
	msgs, err := st.Messages(ctx, s.ID)
	if err != nil || len(msgs) != workers*each {
		t.Fatalf("%d messages, %v", len(msgs), err)
	}
}

func TestCanceledContext(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "agent.db"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := db.UserStorage().Set(ctx, "a", "u", "k", 1)
	if code(err) != kgagent.ECANCELED {
		t.Fatalf("err = %v, want %s", err, kgagent.ECANCELED)
	}
	if _, err := db.UserStorage().Get(context.Background(), "a", "u", "k"); code(err) != kgagent.EUserStorageNotFound {
		t.Errorf("canceled write was stored: %v", err)
	}
}
