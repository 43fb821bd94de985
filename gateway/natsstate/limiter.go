// Package natsstate keeps the gateway's shared state in NATS JetStream, so
// several serve replicas behind a load balancer act as one: daily query
// limits counted in a key-value bucket with compare-and-set (Limiter), and
// resumable websocket streams kept in a stream with a byte budget, whose
// requests another replica takes over and finishes when the one running
// them dies (Streams, a gateway.DurableStreams).
// cmd/kgagent plugs them into gateway.Config when serve runs on a NATS
// server it shares with other processes.
package natsstate

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/gateway"
	"github.com/kgagent/kgagent/internal/natskv"
)

// LimiterConfig names the limiter's bucket. The zero value works.
type LimiterConfig struct {
	Bucket   string // key-value bucket of the counters; "kgagent_limits"
	Replicas int    // bucket replicas; 0: natskv.Replicas
}

// Limiter is a gateway.Limiter whose counters live in a JetStream key-value
// bucket: one key per bucket and UTC day, incremented with compare-and-set,
// so N requests are allowed in total however many replicas serve them.
// Counters expire after two days.
//
// A request charged to several buckets (an API key and its user) is counted
// in each in turn and, when one is full, taken back from those already
// counted. A concurrent request may see such a count for a moment and be
// refused although the total stays under the limit; a limit is never
// exceeded.
type Limiter struct {
	kv jetstream.KeyValue
}

var _ gateway.Limiter = (*Limiter)(nil)

// NewLimiter creates (or opens) the counters' bucket. Errors: EUNAVAILABLE
// when JetStream cannot be reached.
func NewLimiter(ctx context.Context, nc *nats.Conn, cfg LimiterConfig) (*Limiter, error) {
	if cfg.Bucket == "" {
		cfg.Bucket = "kgagent_limits"
	}
	kv, err := natskv.Bucket(ctx, nc, jetstream.KeyValueConfig{
		Bucket:   cfg.Bucket,
		TTL:      48 * time.Hour,
		Storage:  jetstream.FileStorage,
		Replicas: cfg.Replicas,
		History:  1,
	}, "daily limits")
	if err != nil {
		return nil, err
	}
	return &Limiter{kv: kv}, nil
}

// Take counts one query in every bucket for day, all or none (see Limiter).
func (l *Limiter) Take(ctx context.Context, day string, buckets []gateway.Bucket) (gateway.Bucket, bool, error) {
	for i, b := range buckets {
		ok, err := l.add(ctx, key(day, b.Key), 1, b.Limit)
		if err != nil || !ok {
			// Take back what was counted; a failure to do so errs on the
			// side of refusing later requests, never of allowing more.
			for _, prev := range buckets[:i] {
				_, _ = l.add(context.WithoutCancel(ctx), key(day, prev.Key), -1, 0)
			}
			if err != nil {
				return gateway.Bucket{}, false, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "counting the daily limit")
			}
			return b, false, nil
		}
	}
	return gateway.Bucket{}, true, nil
}

// key is the counter of one limit bucket on one day. Bucket keys hold
// characters a NATS key may not (":", "@"), so they are base64url-encoded.
func key(day, bucket string) string {
	return day + "." + base64.RawURLEncoding.EncodeToString([]byte(bucket))
}

// add adds delta to the counter k with compare-and-set. An increment is
// refused (false) when the counter has reached limit; a decrement never
// goes below 0.
func (l *Limiter) add(ctx context.Context, k string, delta, limit int) (bool, error) {
	for {
		var n int
		var rev uint64
		e, err := l.kv.Get(ctx, k)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return false, err
		default:
			n, _ = strconv.Atoi(string(e.Value()))
			rev = e.Revision()
		}
		if delta > 0 && n+delta > limit {
			return false, nil
		}
		n = max(n+delta, 0)
		v := []byte(strconv.Itoa(n))
		if rev == 0 {
			_, err = l.kv.Create(ctx, k, v)
		} else {
			_, err = l.kv.Update(ctx, k, v, rev)
		}
		if err == nil {
			return true, nil
		}
		if !natskv.IsConflict(err) {
			return false, err
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		// Another replica wrote first: read again.
	}
}
