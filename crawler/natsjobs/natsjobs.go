// Package natsjobs queues ingestion jobs on NATS JetStream so that a job
// survives a restart of the process: each job is a message on a work-queue
// stream, its status lives in a JetStream key-value bucket, and a worker
// acknowledges the message only when the job has finished. A worker that
// dies mid-job leaves the message unacknowledged; JetStream redelivers it
// after AckWait and the job runs again, cheaply, because the ingester's page
// state turns every page already done into a conditional request.
//
// It uses the jetstream package of github.com/nats-io/nats.go; the server
// may be the embedded nats-server or an external one.
package natsjobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/internal/natskv"
	"github.com/kgagent/kgagent/internal/text"
)

// DefaultAckWait is how long a job whose worker vanished waits before
// another worker takes it over, here and as kgagent's job_ack_wait
// setting; a running job renews it every second.
const DefaultAckWait = 30 * time.Second

// Config names the JetStream resources and tunes the worker. The zero value
// works; defaults are given with each field.
type Config struct {
	Stream         string        // work-queue stream; "KGAGENT_JOBS"
	Subject        string        // subject jobs are published on; "kgagent.jobs.ingest"
	Consumer       string        // durable consumer shared by all workers; "kgagent-ingest"
	Bucket         string        // key-value bucket of job statuses; "kgagent_jobs"
	AckWait        time.Duration // redelivery delay of a job whose worker vanished; DefaultAckWait (running jobs keep extending it)
	MaxDeliver     int           // attempts per job before it is marked failed; 5
	StatusInterval time.Duration // how often a running job's status is written; 1s
	StatusTTL      time.Duration // how long statuses are kept; 7 days
	// SecretKey seals the bearer tokens of job specs (AES-256-GCM under its
	// sha256): job records on the bus and in JetStream's files never hold
	// them in plain text. Every process of a deployment needs the same key;
	// empty: a random key of this Queue, so a token queued before a restart
	// cannot be read after it (the job fails, saying so).
	SecretKey []byte
	// Replicas of the stream and the bucket; 0 picks natskv.Replicas: 3 on a
	// NATS cluster of three or more servers, else 1.
	Replicas int
}

func (c Config) withDefaults() Config {
	if c.Stream == "" {
		c.Stream = "KGAGENT_JOBS"
	}
	if c.Subject == "" {
		c.Subject = "kgagent.jobs.ingest"
	}
	if c.Consumer == "" {
		c.Consumer = "kgagent-ingest"
	}
	if c.Bucket == "" {
		c.Bucket = "kgagent_jobs"
	}
	if c.AckWait <= 0 {
		c.AckWait = DefaultAckWait
	}
	if c.MaxDeliver <= 0 {
		c.MaxDeliver = 5
	}
	if c.StatusInterval <= 0 {
		c.StatusInterval = time.Second
	}
	if c.StatusTTL <= 0 {
		c.StatusTTL = 7 * 24 * time.Hour
	}
	return c
}

// Runner runs one ingestion; *crawler.Ingester implements it.
type Runner interface {
	Run(ctx context.Context, spec crawler.Spec, progress func(crawler.Counters)) (crawler.Report, error)
}

var _ Runner = (*crawler.Ingester)(nil)

// Queue submits jobs and reads their status; Run makes it a worker too.
type Queue struct {
	cfg  Config
	seal *sealer
	js   jetstream.JetStream
	kv   jetstream.KeyValue
	cons jetstream.Consumer
}

// job is the message body.
type job struct {
	ID string `json:"id"`
}

// New creates (or reuses) the stream, the consumer and the status bucket on
// the JetStream of nc. It fails with EUNAVAILABLE when JetStream is not
// reachable.
func New(ctx context.Context, nc *nats.Conn, cfg Config) (*Queue, error) {
	cfg = cfg.withDefaults()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "JetStream")
	}
	if err := natskv.Stream(ctx, nc, jetstream.StreamConfig{
		Name:      cfg.Stream,
		Subjects:  []string{cfg.Subject},
		Retention: jetstream.WorkQueuePolicy,
		Storage:   jetstream.FileStorage,
		Replicas:  cfg.Replicas,
	}, "job"); err != nil {
		return nil, err
	}
	var cons jetstream.Consumer
	err = natskv.Ensure(ctx, func(ctx context.Context) (err error) {
		cons, err = js.CreateOrUpdateConsumer(ctx, cfg.Stream, jetstream.ConsumerConfig{
			Durable:   cfg.Consumer,
			AckPolicy: jetstream.AckExplicitPolicy,
			AckWait:   cfg.AckWait,
			// Unlimited: handle counts the deliveries and marks a job
			// failed past cfg.MaxDeliver. A server-side limit drops the
			// message silently, leaving its status "running" for good.
			MaxDeliver:    -1,
			FilterSubject: cfg.Subject,
		})
		return err
	})
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "creating the job consumer")
	}
	kv, err := natskv.Bucket(ctx, nc, jetstream.KeyValueConfig{
		Bucket:   cfg.Bucket,
		TTL:      cfg.StatusTTL,
		Storage:  jetstream.FileStorage,
		Replicas: cfg.Replicas,
	}, "job status")
	if err != nil {
		return nil, err
	}
	seal, err := newSealer(cfg.SecretKey)
	if err != nil {
		return nil, err
	}
	return &Queue{cfg: cfg, seal: seal, js: js, kv: kv, cons: cons}, nil
}

// Submit validates spec, stores its status as queued and publishes the job.
// Errors: EINVALID for a spec that cannot run (no URLs, a malformed exclude
// pattern; malformed URLs are reported per page by the job instead),
// EUNAVAILABLE when JetStream is unreachable (nothing is left queued then).
func (q *Queue) Submit(ctx context.Context, spec crawler.Spec) (crawler.JobStatus, error) {
	if err := spec.Validate(); err != nil {
		return crawler.JobStatus{}, err
	}
	if spec.Collection == "" {
		spec.Collection = kgagent.DefaultCollection
	}
	spec.BearerToken = q.seal.seal(spec.BearerToken)
	st := crawler.JobStatus{ID: uuid.NewString(), Spec: spec, State: crawler.JobQueued, CreatedAt: time.Now().UTC()}
	if err := q.put(ctx, st); err != nil {
		return crawler.JobStatus{}, err
	}
	body, _ := json.Marshal(job{ID: st.ID})
	if _, err := q.js.Publish(ctx, q.cfg.Subject, body, jetstream.WithMsgID(st.ID)); err != nil {
		_ = q.kv.Delete(context.WithoutCancel(ctx), st.ID)
		return crawler.JobStatus{}, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "queueing the job")
	}
	return redact(st), nil
}

// Get returns the status of job id: ENOTFOUND for an unknown (or expired)
// id, EUNAVAILABLE when JetStream is unreachable. The bearer token of the
// spec is never returned.
//
// A running job whose worker has not written its status for a while (it
// was killed) says so in its message until another worker takes it over
// (after AckWait).
func (q *Queue) Get(ctx context.Context, id string) (crawler.JobStatus, error) {
	st, at, _, err := q.getAt(ctx, id)
	if err == nil {
		st = q.stalled(st, at, time.Now())
	}
	return redact(st), err
}

// stalled notes on a running job last written at that no worker has
// reported on it for 5 status intervals (at least 5 s).
func (q *Queue) stalled(st crawler.JobStatus, at, now time.Time) crawler.JobStatus {
	quiet := max(5*q.cfg.StatusInterval, 5*time.Second)
	if st.State == crawler.JobRunning && !at.IsZero() && now.Sub(at) > quiet {
		st.Message = fmt.Sprintf("stalled: no progress report for %s; the worker may have stopped, and another worker takes the job over within %s", now.Sub(at).Round(time.Second), q.cfg.AckWait)
	}
	return st
}

func (q *Queue) get(ctx context.Context, id string) (crawler.JobStatus, error) {
	st, _, _, err := q.getAt(ctx, id)
	return st, err
}

// getAt returns a job's status, when it was written and its revision (for
// update).
func (q *Queue) getAt(ctx context.Context, id string) (crawler.JobStatus, time.Time, uint64, error) {
	if _, err := uuid.Parse(id); err != nil {
		return crawler.JobStatus{}, time.Time{}, 0, kgagent.Errorf(kgagent.ENOTFOUND, "no job %q", text.Truncate(id, 64))
	}
	e, err := q.kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return crawler.JobStatus{}, time.Time{}, 0, kgagent.Errorf(kgagent.ENOTFOUND, "no job %q", id)
	}
	if err != nil {
		return crawler.JobStatus{}, time.Time{}, 0, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "reading the job status")
	}
	var st crawler.JobStatus
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		return crawler.JobStatus{}, time.Time{}, 0, kgagent.WrapError(kgagent.EINTERNAL, err, "decoding the job status")
	}
	return st, e.Created(), e.Revision(), nil
}

// List returns all known jobs, newest first.
func (q *Queue) List(ctx context.Context) ([]crawler.JobStatus, error) {
	keys, err := q.kv.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return []crawler.JobStatus{}, nil
	}
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "listing jobs")
	}
	out := make([]crawler.JobStatus, 0, len(keys))
	for _, k := range keys {
		st, err := q.Get(ctx, k)
		if kgagent.ErrorCode(err) == kgagent.ENOTFOUND {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}

// Cancel marks a queued or running job canceled; a running job stops at its
// next status update. Canceling a finished job is a no-op. It fails with
// EUNAVAILABLE when the status cannot be read or written.
func (q *Queue) Cancel(ctx context.Context, id string) (crawler.JobStatus, error) {
	for {
		e, err := q.kv.Get(ctx, id)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return crawler.JobStatus{}, kgagent.Errorf(kgagent.ENOTFOUND, "no job %q", text.Truncate(id, 64))
		}
		if err != nil {
			return crawler.JobStatus{}, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "reading the job status")
		}
		var st crawler.JobStatus
		if err := json.Unmarshal(e.Value(), &st); err != nil {
			return crawler.JobStatus{}, kgagent.WrapError(kgagent.EINTERNAL, err, "decoding the job status")
		}
		if finished(st.State) {
			return redact(st), nil
		}
		st.State = crawler.JobCanceled
		now := time.Now().UTC()
		st.FinishedAt = &now
		b, _ := json.Marshal(st)
		_, err = q.kv.Update(ctx, id, b, e.Revision())
		if err == nil {
			return redact(st), nil
		}
		if !natskv.IsConflict(err) {
			return crawler.JobStatus{}, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "writing the job status")
		}
		// Lost a race with the worker's update: read again.
	}
}

func (q *Queue) put(ctx context.Context, st crawler.JobStatus) error {
	b, err := json.Marshal(st)
	if err != nil {
		return kgagent.WrapError(kgagent.EINTERNAL, err, "encoding the job status")
	}
	if _, err := q.kv.Put(ctx, st.ID, b); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "writing the job status")
	}
	return nil
}

// update writes st over revision rev of its status: ECONFLICT when another
// write came in between (a Cancel, another delivery of the job), or when an
// earlier try of this one was stored though its answer was lost.
func (q *Queue) update(ctx context.Context, st crawler.JobStatus, rev uint64) error {
	b, err := json.Marshal(st)
	if err != nil {
		return kgagent.WrapError(kgagent.EINTERNAL, err, "encoding the job status")
	}
	if _, err := q.kv.Update(ctx, st.ID, b, rev); err != nil {
		if natskv.IsConflict(err) {
			return kgagent.WrapError(kgagent.ECONFLICT, err, "writing the job status")
		}
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "writing the job status")
	}
	return nil
}

func finished(s crawler.JobState) bool {
	return s == crawler.JobSucceeded || s == crawler.JobFailed || s == crawler.JobCanceled
}

func redact(st crawler.JobStatus) crawler.JobStatus {
	if st.Spec.BearerToken != "" {
		st.Spec.BearerToken = "REDACTED"
	}
	return st
}

// Run consumes jobs one at a time and runs them with r until ctx is done,
// riding out connection trouble (it returns nil once ctx is done).
// On shutdown the running job's message is not acknowledged: it is handed
// back (Nak) and runs again on the next worker, resuming cheaply.
func (q *Queue) Run(ctx context.Context, r Runner) error {
	for {
		err := q.consume(ctx, r)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			continue
		}
		// The connection or the consumer hiccuped: try again shortly.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// consume runs jobs from one message iterator until it fails or ctx ends.
func (q *Queue) consume(ctx context.Context, r Runner) error {
	it, err := q.cons.Messages(jetstream.PullMaxMessages(1))
	if err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "consuming jobs")
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer it.Stop()
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "consuming jobs")
		}
		if q.handle(ctx, r, msg) {
			// Shutting down: hand the job back to the next worker, once
			// this one can no longer be given it (see stopIterator).
			stopIterator(it)
			_ = msg.Nak()
		}
	}
}

// stopIterator stops it and waits, a second or two at most, until its
// subscription is gone. The iterator keeps a pull request open on the
// server while a job runs; a job handed back (Nak) before the
// iterator's own goroutine had unsubscribed went straight back to that
// request, was dropped with the subscription, and waited out AckWait
// (30 s) with one of its MaxDeliver deliveries spent
// (TestGivesUpAfterMaxDeliver's flake). Once the subscription is
// closed, the unsubscribe was written to the connection before any
// Nak sent after it, so the server gives the job to another worker.
func stopIterator(it jetstream.MessagesContext) {
	it.Stop()
	// The iterator's Closed (not part of MessagesContext) reports the
	// subscription closed once it is; poll it, as nothing signals it.
	c, ok := it.(interface{ Closed() <-chan struct{} })
	if !ok {
		time.Sleep(100 * time.Millisecond)
		return
	}
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		select {
		case <-c.Closed():
			return
		default:
		}
	}
}

// handle runs one delivery of a job. Reading and writing the job's status
// is retried in place while the status store is unreachable (see retry), so
// an outage of the store (its stream electing a new leader after a node of
// the cluster died) never costs the job one of its MaxDeliver attempts; a
// delivery past MaxDeliver (the job's worker stopped each time before it
// finished) marks the job failed instead of running it again. It reports
// whether the job is to be handed back because ctx ended (the caller Naks
// msg once its iterator is stopped: see stopIterator).
func (q *Queue) handle(ctx context.Context, r Runner, msg jetstream.Msg) (handBack bool) {
	var j job
	if err := json.Unmarshal(msg.Data(), &j); err != nil {
		_ = msg.Term() // garbage never becomes valid
		return false
	}
	meta, _ := msg.Metadata()
	var st crawler.JobStatus
	// The status is written over the revision read (update): a Cancel, or
	// another delivery finishing the job, in between is read again, not
	// overwritten.
	for {
		var rev uint64
		err := q.retry(ctx, msg, func(ctx context.Context) (err error) {
			st, _, rev, err = q.getAt(ctx, j.ID)
			return err
		})
		if kgagent.ErrorCode(err) == kgagent.ENOTFOUND || (err == nil && finished(st.State)) {
			_ = msg.Ack() // expired, canceled before it started, or done already
			return false
		}
		if err != nil {
			if ctx.Err() != nil {
				return true // shutting down: the next worker reads it
			}
			_ = msg.Term() // an undecodable status never becomes decodable
			return false
		}
		if meta != nil && int(meta.NumDelivered) > q.cfg.MaxDeliver {
			fin := time.Now().UTC()
			st.State, st.FinishedAt = crawler.JobFailed, &fin
			st.Message = fmt.Sprintf("gave up after %d attempts: the worker running the job stopped before it finished each time", q.cfg.MaxDeliver)
			err := q.retry(ctx, msg, func(ctx context.Context) error { return q.update(ctx, st, rev) })
			if kgagent.ErrorCode(err) == kgagent.ECONFLICT {
				continue
			}
			if err != nil {
				_ = msg.Nak()
				return false
			}
			_ = msg.Ack()
			return false
		}
		now := time.Now().UTC()
		st.State, st.StartedAt, st.FinishedAt = crawler.JobRunning, &now, nil
		if meta != nil && meta.NumDelivered > 1 {
			st.Message = "resumed (delivery " + itoa(int(meta.NumDelivered)) + ")"
		}
		err = q.retry(ctx, msg, func(ctx context.Context) error { return q.update(ctx, st, rev) })
		if kgagent.ErrorCode(err) == kgagent.ECONFLICT {
			continue
		}
		if err != nil {
			_ = msg.Nak()
			return false
		}
		break
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	latest := st.Counters
	started := time.Now()
	tick := time.NewTicker(q.cfg.StatusInterval)
	defer tick.Stop()
	done := make(chan struct{})
	writerDone := make(chan struct{})
	base := st
	go func() { // status writer and AckWait keeper
		defer close(writerDone)
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			_ = msg.InProgress()
			e, err := q.kv.Get(runCtx, base.ID)
			if err != nil {
				continue
			}
			var cur crawler.JobStatus
			if json.Unmarshal(e.Value(), &cur) == nil && finished(cur.State) {
				// Canceled, or finished by another delivery of the job
				// (this one was redelivered while the first still ran):
				// stop, and never write "running" over it.
				cancel()
				continue
			}
			mu.Lock()
			s := base
			s.Counters = latest
			mu.Unlock()
			s.PagesPerS = rate(s.Counters, time.Since(started))
			// Update on the revision read, so a concurrent Cancel is never
			// overwritten.
			if b, err := json.Marshal(s); err == nil {
				_, _ = q.kv.Update(runCtx, base.ID, b, e.Revision())
			}
		}
	}()
	spec := st.Spec
	var rep crawler.Report
	tok, runErr := q.seal.open(spec.BearerToken)
	if runErr == nil {
		spec.BearerToken = tok
		rep, runErr = r.Run(runCtx, spec, func(c crawler.Counters) {
			mu.Lock()
			latest = c
			mu.Unlock()
		})
	}
	close(done)
	<-writerDone

	if ctx.Err() != nil { // shutting down: hand the job back
		return true
	}
	if cur, err := q.get(ctx, st.ID); err == nil && finished(cur.State) {
		if cur.State != crawler.JobCanceled {
			_ = msg.Ack() // another delivery of the job finished it
			return false
		}
		runErr = kgagent.Errorf(kgagent.ECANCELED, "canceled")
	}
	fin := time.Now().UTC()
	st.Counters, st.Errors, st.Skipped, st.FinishedAt, st.KeptReason = rep.Counters, rep.Errors, rep.Skips, &fin, rep.KeptReason
	st.PagesPerS = rate(rep.Counters, time.Since(started))
	switch {
	case runErr == nil && rep.Counters.Failed > 0 && rep.Counters.Indexed+rep.Counters.Unchanged == 0:
		st.State, st.Message = crawler.JobFailed, "every page failed"
	case runErr == nil:
		st.State = crawler.JobSucceeded
		if rep.Truncated {
			st.Message = "stopped early: " + rep.Reason
		}
	case kgagent.ErrorCode(runErr) == kgagent.ECANCELED:
		st.State, st.Message = crawler.JobCanceled, "canceled"
	default:
		st.State, st.Message = crawler.JobFailed, kgagent.ErrorMessage(runErr)
	}
	err := q.retry(ctx, msg, func(ctx context.Context) error { return q.put(ctx, st) })
	if err != nil && ctx.Err() != nil { // shutting down meanwhile: one last try
		err = q.put(context.WithoutCancel(ctx), st)
	}
	if err != nil {
		_ = msg.NakWithDelay(time.Second)
		return false
	}
	_ = msg.Ack()
	return false
}

// retry runs f until it succeeds, fails with an error other than
// EUNAVAILABLE, or ctx ends, renewing msg's AckWait meanwhile. Handing the
// message back instead would spend one of the job's MaxDeliver deliveries
// per failed try: a status store without a leader for a few seconds (a node
// of a three-node cluster killed) used every delivery within seconds, and
// the job stayed "running" for good.
func (q *Queue) retry(ctx context.Context, msg jetstream.Msg, f func(context.Context) error) error {
	wait := 50 * time.Millisecond
	for {
		err := f(ctx)
		if err == nil || kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE || ctx.Err() != nil {
			return err
		}
		_ = msg.InProgress()
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

func rate(c crawler.Counters, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(c.Done) / d.Seconds()
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
