// Package natskv is what kgagent's users of NATS JetStream share: how many
// replicas to ask for on the server a connection reaches, how to open a
// key-value bucket with them, and how a lost compare-and-set race looks.
package natskv

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kgagent/kgagent"
)

// Replicas is how many copies JetStream should keep of what kgagent stores
// on the server nc is connected to: 3 when it is one of a cluster of three or
// more servers (so a stream or bucket survives the loss of any one node), 1
// for a single server. The servers are the ones the connection knows: those
// configured plus those the cluster announced. A server of a cluster
// announces its peers only once its routes are up, so a connection made
// while the cluster forms may know fewer: Replicas then waits for the
// announcement up to 10 s (or until ctx ends) before it settles
// for 1.
func Replicas(ctx context.Context, nc *nats.Conn) int {
	if nc.ConnectedClusterName() == "" {
		return 1
	}
	ctx, cancel := context.WithTimeout(ctx, discoveryWait)
	defer cancel()
	for len(nc.Servers()) < 3 {
		select {
		case <-ctx.Done():
			return 1
		case <-time.After(50 * time.Millisecond):
		}
	}
	return 3
}

// discoveryWait bounds how long Replicas waits for a forming cluster to
// announce its servers (a variable for the tests).
var discoveryWait = 10 * time.Second

// Bucket creates (or updates and opens) the key-value bucket cfg, with
// Replicas copies unless cfg sets them. Errors: EUNAVAILABLE, naming
// what the bucket is for.
func Bucket(ctx context.Context, nc *nats.Conn, cfg jetstream.KeyValueConfig, what string) (jetstream.KeyValue, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "JetStream")
	}
	var kv jetstream.KeyValue
	err = ensureReplicated(ctx, nc, js, "KV_"+cfg.Bucket, cfg.Replicas, func(ctx context.Context, replicas int) (err error) {
		c := cfg
		c.Replicas = replicas
		kv, err = js.CreateOrUpdateKeyValue(ctx, c)
		return err
	})
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "creating the %s bucket", what)
	}
	return kv, nil
}

// Stream creates (or updates) the stream cfg, with Replicas copies
// unless cfg sets them, retrying as Ensure does. Errors: EUNAVAILABLE,
// naming what the stream is for.
func Stream(ctx context.Context, nc *nats.Conn, cfg jetstream.StreamConfig, what string) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "JetStream")
	}
	err = ensureReplicated(ctx, nc, js, cfg.Name, cfg.Replicas, func(ctx context.Context, replicas int) error {
		c := cfg
		c.Replicas = replicas
		_, err := js.CreateOrUpdateStream(ctx, c)
		return err
	})
	if err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "creating the %s stream", what)
	}
	return nil
}

// ensureReplicated runs create (a create-or-update of the stream name, or
// of the bucket whose stream it is) as Ensure does, with replicas copies
// when the caller chose (replicas > 0), else Replicas — but then never
// fewer than the stream already has, so that a process that connected
// while the cluster was forming (and so counted one server) does not
// shrink a replicated stream with its update. The lookup runs in each try,
// sharing Ensure's retries and deadline.
func ensureReplicated(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, name string, replicas int, create func(ctx context.Context, replicas int) error) error {
	if replicas > 0 {
		return Ensure(ctx, func(ctx context.Context) error { return create(ctx, replicas) })
	}
	want := Replicas(ctx, nc)
	return Ensure(ctx, func(ctx context.Context) error {
		info, err := js.Stream(ctx, name)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			return create(ctx, want)
		case err != nil:
			return err
		}
		return create(ctx, max(want, info.CachedInfo().Config.Replicas))
	})
}

// IsConflict reports whether err is a lost compare-and-set race on a
// key-value entry (Create of an existing key, Update on a stale revision):
// single servers report it as 10071, replicated streams as 10164.
func IsConflict(err error) bool {
	var apiErr *jetstream.APIError
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return true
	}
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// EnsureTimeout bounds how long Ensure retries; ensureTry bounds one try.
const (
	EnsureTimeout = 30 * time.Second
	ensureTry     = 5 * time.Second
)

// Ensure runs create, which creates or updates a JetStream stream, consumer
// or bucket, until it succeeds or fails for good. A JetStream that is still
// forming (a new cluster electing its leaders, a node restarting, two
// processes creating the same replicated stream at once) times out or
// answers 503 for a while: those answers are retried with backoff for up to
// EnsureTimeout, or until ctx ends; each try has its own 5 s deadline. Any
// other error (a configuration the server refuses) is returned at once.
func Ensure(ctx context.Context, create func(context.Context) error) error {
	give := time.Now().Add(EnsureTimeout)
	wait := 100 * time.Millisecond
	for {
		tctx, cancel := context.WithTimeout(ctx, ensureTry)
		err := create(tctx)
		cancel()
		if err == nil || !transient(err) || ctx.Err() != nil || time.Now().After(give) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// transient reports whether err is what a forming or recovering JetStream
// answers: a timeout, no responders, a 503 from its API, or no peers for
// placement because one is offline (the meta leader of a cluster under
// load can count a live peer offline for a moment, right after every node
// reported healthy and an R3 stream was placed).
func transient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) {
		return true
	}
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.Code == http.StatusServiceUnavailable ||
		(apiErr.ErrorCode == jsClusterNoPeers && strings.Contains(apiErr.Description, "peer offline"))
}

// jsClusterNoPeers is JetStream's error code for "no suitable peers for
// placement" (the reasons follow in the description).
const jsClusterNoPeers = 10005
