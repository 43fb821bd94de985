package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kgagent/kgagent/gateway"
	"github.com/kgagent/kgagent/internal/poll"
)

// natsErrors collects the asynchronous errors the server sends a client.
type natsErrors struct {
	mu   sync.Mutex
	errs []string
}

func (e *natsErrors) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	e.mu.Lock()
	e.errs = append(e.errs, err.Error())
	e.mu.Unlock()
}

// wait waits for an error containing every part of want.
func (e *natsErrors) wait(t *testing.T, want ...string) {
	t.Helper()
	poll.True(t, 5*time.Second, "a NATS error with "+strings.Join(want, ", "), func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, s := range e.errs {
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(strings.ToLower(s), strings.ToLower(w))
			}
			if ok {
				return true
			}
		}
		return false
	})
}

// TestNATSClientLeastPrivilege is finding 2 of issue 21, against the real
// serve and its in-process NATS server: the credential `kgagent nats-url`
// prints is the client user's, which may ask (single reply and streamed)
// but gets "Permissions Violation" when it subscribes to `>` (it would see
// every caller's Authorization header), joins the queue group kgagent on
// kgagent.request.* (it would receive requests and answer them), publishes
// kgagent.jobs.ingest, or touches the JetStream buckets (kgagent_jobs,
// kgagent_state). On main the one credential could do all of it.
func TestNATSClientLeastPrivilege(t *testing.T) {
	s := startServeFull(t)
	if !strings.HasPrefix(s.natsURL, "nats://"+natsClientUser+":") {
		t.Fatalf("kgagent nats-url printed %q, want the client user %s", s.natsURL, natsClientUser)
	}
	var errs natsErrors
	nc, err := nats.Connect(s.natsURL, nats.ErrorHandler(errs.handler), nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()

	// What it may do: ask, with one reply or streamed frames.
	m, err := nc.Request("kgagent.ask.search", []byte(`{"query":"port"}`), 20*time.Second)
	if err != nil {
		t.Fatalf("request/reply on kgagent.ask.search: %v", err)
	}
	var f gateway.Frame
	if err := json.Unmarshal(m.Data, &f); err != nil || !f.Complete {
		t.Errorf("single reply: %s %v", m.Data, err)
	}
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishRequest("kgagent.request.search", inbox, []byte(`{"query":"port"}`)); err != nil {
		t.Fatal(err)
	}
	if m, err := sub.NextMsg(20 * time.Second); err != nil {
		t.Fatalf("streamed frames: %v", err)
	} else if json.Unmarshal(m.Data, &f) != nil || f.Seq != 1 {
		t.Errorf("first streamed frame: %s", m.Data)
	}

	// What it may not.
	if _, err := nc.SubscribeSync(">"); err != nil {
		t.Fatal(err)
	}
	errs.wait(t, "Permissions Violation", `Subscription to ">"`)
	if _, err := nc.QueueSubscribe("kgagent.request.*", "kgagent", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	errs.wait(t, "Permissions Violation", `Subscription to "kgagent.request.*"`)
	if err := nc.Publish("kgagent.jobs.ingest", []byte(`{"collection":"default","urls":["https://example.org/"]}`)); err != nil {
		t.Fatal(err)
	}
	errs.wait(t, "Permissions Violation", `Publish to "kgagent.jobs.ingest"`)

	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for _, bucket := range []string{"kgagent_jobs", "kgagent_state"} {
		if kv, err := js.KeyValue(ctx, bucket); err == nil {
			if _, err := kv.Put(ctx, "forged", []byte("x")); err == nil {
				t.Errorf("the client credential wrote to bucket %s", bucket)
			}
		}
	}
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "forged"}); err == nil {
		t.Error("the client credential created a bucket")
	}
	errs.wait(t, "Permissions Violation", `Publish to "$JS.API.`)

	// The service still answers (its own user is unaffected), and the
	// forged job never ran.
	if _, err := nc.Request("kgagent.ask.search", []byte(`{"query":"port"}`), 20*time.Second); err != nil {
		t.Errorf("after the violations: %v", err)
	}
}
