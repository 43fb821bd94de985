package natsstate

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/gateway"
)

// TestStreamSecretsSealed is part of finding 2 of issue 21: a stream's
// resume token, its recorded request (the question) and its frames cross
// the bus and sit in the bucket and the stream sealed (internal/seal, the
// crawl tokens' sealer), never in plain text; a replica with the same key
// resumes the stream, one with another key gets UNAVAILABLE, not the
// stream.
func TestStreamSecretsSealed(t *testing.T) {
	const (
		token    = "resume-token-0b6f1c9d"
		question = "what is the secret question 4711"
		thought  = "a thought about 4711 secrets"
	)
	s := startNATS(t)
	ctx := context.Background()
	spy := connect(t, s.ClientURL())
	sub, err := spy.SubscribeSync(">")
	if err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	a := newStreams(t, s.ClientURL(), StreamsConfig{SecretKey: testKey})
	st, err := a.Start(ctx, "key:bot\x00q1", token)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.(gateway.DurableStream).Record([]byte(`{"request":{"question":"` + question + `"}}`)); err != nil {
		t.Fatal(err)
	}
	st.Append(gateway.Frame{ID: "q1", Response: gateway.Response{Thought: thought}})
	st.Append(gateway.Frame{ID: "q1", Response: gateway.Response{Answer: gateway.Text("done")}, Complete: true})

	// The bucket's record, the stream's messages, and everything on the bus.
	e, err := a.kv.Get(ctx, recordKey("key:bot\x00q1"))
	if err != nil {
		t.Fatal(err)
	}
	var seen [][]byte
	seen = append(seen, e.Value())
	for {
		m, err := sub.NextMsg(200 * time.Millisecond)
		if err != nil {
			break
		}
		seen = append(seen, m.Data)
	}
	if len(seen) < 5 {
		t.Fatalf("saw %d messages on the bus", len(seen))
	}
	for _, b := range seen {
		for _, secret := range []string{token, question, thought} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%q crossed the bus or sits in JetStream in plain text: %.200s", secret, b)
			}
		}
	}

	// The same key resumes it: token and frames open.
	b := newStreams(t, s.ClientURL(), StreamsConfig{SecretKey: testKey})
	got, err := b.Get(ctx, "key:bot\x00q1")
	if err != nil || got.Token() != token {
		t.Fatalf("same key: %v %v", got, err)
	}
	c := newCollector()
	if err := got.Attach(1, 0, c.send); err != nil {
		t.Fatal(err)
	}
	if _, texts := c.waitFor(t, 10*time.Second); len(texts) != 2 || texts[0] != "1:"+thought {
		t.Errorf("frames resumed with the same key: %v", texts)
	}
	// Another key does not.
	other := newStreams(t, s.ClientURL(), StreamsConfig{SecretKey: []byte("another key")})
	if _, err := other.Get(ctx, "key:bot\x00q1"); kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
		t.Errorf("another key: %v, want UNAVAILABLE", err)
	}
}
