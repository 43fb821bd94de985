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

// TestManagerRecordsSessions runs the real agent Manager (built-in model)
// with the store as its SessionStore and UserStorage, and checks what a
// restarted service reads back.
func TestManagerRecordsSessions(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agent.db")
	db, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := agent.New(agent.Config{Sessions: agent.SessionsConfig{Store: db.Sessions(), Record: true}, UserStorage: db.UserStorage()})
	if err != nil {
		t.Fatal(err)
	}
	counter := agent.Func{Name: "count", Handler: func(ctx context.Context, call agent.FuncCall) (agent.FuncResult, error) {
		st := call.Storage()
		n := int64(0)
		if v, err := st.Get(ctx, "n"); err == nil {
			n = v.(int64)
		} else if kgagent.ErrorCode(err) != kgagent.EUserStorageNotFound {
			return agent.FuncResult{}, err
		}
		if err := st.Set(ctx, "n", n+1); err != nil {
			return agent.FuncResult{}, err
		}
		return agent.FuncResult{Message: kgagent.Message{Text: fmt.Sprintf("count is now %d", n+1)}}, nil
	}}
	a, err := agent.NewCodeShotAgent(agent.AgentConfig{Name: "counter", Funcs: []agent.Func{counter}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Register(a); err != nil {
		t.Fatal(err)
	}
	s, err := db.Sessions().CreateSession(ctx, agent.Session{UserID: "alice", Agent: "default"})
	if err != nil {
		t.Fatal(err)
	}
	ans, err := m.Ask(ctx, agent.Request{Question: "How do I install it?", SessionID: s.ID, Caller: agent.Caller{UserID: "alice"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := m.CallFunc(ctx, "counter", "count", kgagent.Message{Text: "+1"}, agent.Caller{UserID: "alice"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = m.CallFunc(ctx, "counter", "count", kgagent.Message{Text: "+1"}, agent.Caller{Anonymous: true})
	if kgagent.ErrorCode(err) != kgagent.EUserStorageNeedsUser {
		t.Errorf("anonymous func call: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db2, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	msgs, err := db2.Sessions().Messages(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Role != "user" || msgs[0].Text != "How do I install it?" || msgs[1].Role != "agent" || msgs[1].Text != ans.Answer {
		t.Fatalf("messages = %+v", msgs)
	}
	evs := msgs[1].Events
	if len(evs) == 0 || evs[len(evs)-1].Kind != kgagent.EventAnswer || !evs[len(evs)-1].Final {
		t.Fatalf("events = %+v, want the run ending with the final answer", evs)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) || e.RequestID != evs[0].RequestID || e.Time.IsZero() {
			t.Errorf("event %d = %+v", i, e)
		}
	}
	v, err := db2.UserStorage().Get(ctx, "counter", "alice", "n")
	if err != nil || v != int64(2) {
		t.Errorf("counter = %#v %v, want 2", v, err)
	}
}
