package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/agent/sqlite"
)

func benchDB(b *testing.B) *sqlite.DB {
	db, err := sqlite.Open(filepath.Join(b.TempDir(), "agent.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// BenchmarkUserStorageSet measures one committed write of a small map.
func BenchmarkUserStorageSet(b *testing.B) {
	us := benchDB(b).UserStorage()
	ctx := context.Background()
	v := map[string]any{"token": "abc", "n": 42, "b": []byte("xyz")}
	i := 0
	for b.Loop() {
		if err := us.Set(ctx, "a", "u", fmt.Sprint("k", i%100), v); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkUserStorageGet measures one read and decode.
func BenchmarkUserStorageGet(b *testing.B) {
	us := benchDB(b).UserStorage()
	ctx := context.Background()
	if err := us.Set(ctx, "a", "u", "k", map[string]any{"token": "abc", "n": 42, "b": []byte("xyz")}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := us.Get(ctx, "a", "u", "k"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendMessage measures appending an agent message with 10 events.
func BenchmarkAppendMessage(b *testing.B) {
	st := benchDB(b).Sessions()
	ctx := context.Background()
	s, err := st.CreateSession(ctx, agent.Session{UserID: "u"})
	if err != nil {
		b.Fatal(err)
	}
	evs := make([]kgagent.Event, 10)
	for i := range evs {
		evs[i] = kgagent.Event{RequestID: "r", Seq: int64(i + 1), Kind: kgagent.EventThought, Text: "some thought text of a step"}
	}
	for b.Loop() {
		if _, err := st.AppendMessage(ctx, agent.SessionMessage{SessionID: s.ID, Role: "agent", Text: "answer", Events: evs}); err != nil {
			b.Fatal(err)
		}
	}
}
