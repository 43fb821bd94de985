package natsstate

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/gateway"
	"github.com/kgagent/kgagent/internal/natskv"
)

// StreamsConfig names the JetStream resources of Streams and sets their
// limits; zero values take the defaults given.
type StreamsConfig struct {
	Stream    string        // JetStream stream of frames; "KGAGENT_STREAMS"
	Subject   string        // subject prefix of the frames; "kgagent.streams"
	Bucket    string        // key-value bucket of stream records; "kgagent_streams"
	Retain    time.Duration // how long a stream's frames and record are kept; 2m plus MaxRunning
	MaxEvents int           // frames kept per stream; 2048
	MaxBytes  int64         // bytes of frames kept in all, oldest dropped first; 64 MiB
	Replicas  int           // replicas of the stream and bucket; 0: natskv.Replicas(nc)
	Stale     time.Duration // a running stream's record not renewed for this long is dead; 5s
}

// Streams is a gateway.StreamStore in NATS JetStream, so a websocket client
// can resume a stream on any replica: every frame is one message on the
// stream's own subject of one JetStream stream (in memory, replicated like
// the job queue), whose byte budget drops the oldest frames of all streams
// first; a key-value record per stream key holds the resume token, the
// subject and whether the stream is done. The replica running the request
// hands frames to its own attached client directly; a client attached on
// another replica reads them from JetStream, stored ones first, then live.
//
// The replica running a request renews its record every second. A client
// attached elsewhere to a stream whose record has not been renewed for
// Stale (the replica died before the last frame) gets the frames that were
// written and then a final UNAVAILABLE error frame, instead of waiting for
// frames that will never come.
type Streams struct {
	cfg StreamsConfig
	nc  *nats.Conn
	js  jetstream.JetStream
	kv  jetstream.KeyValue
}

var _ gateway.StreamStore = (*Streams)(nil)

// record is the key-value entry of one stream.
type record struct {
	Token   string `json:"token"`
	Subject string `json:"subject"`
	Done    bool   `json:"done"`
	Beat    int64  `json:"beat"` // when the running replica last renewed it (Unix ms)
}

// NewStreams creates (or opens) the stream and the bucket. Errors:
// EUNAVAILABLE when JetStream cannot be reached.
func NewStreams(ctx context.Context, nc *nats.Conn, cfg StreamsConfig) (*Streams, error) {
	if cfg.Stream == "" {
		cfg.Stream = "KGAGENT_STREAMS"
	}
	if cfg.Subject == "" {
		cfg.Subject = "kgagent.streams"
	}
	if cfg.Bucket == "" {
		cfg.Bucket = "kgagent_streams"
	}
	if cfg.Retain <= 0 {
		cfg.Retain = 4 * time.Minute
	}
	if cfg.MaxEvents <= 0 {
		cfg.MaxEvents = 2048
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 64 << 20
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = natskv.Replicas(nc)
	}
	if cfg.Stale <= 0 {
		cfg.Stale = 5 * time.Second
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "JetStream")
	}
	if err := natskv.Stream(ctx, nc, jetstream.StreamConfig{
		Name:              cfg.Stream,
		Subjects:          []string{cfg.Subject + ".>"},
		Storage:           jetstream.MemoryStorage,
		Replicas:          cfg.Replicas,
		MaxBytes:          cfg.MaxBytes,
		MaxMsgsPerSubject: int64(cfg.MaxEvents),
		MaxAge:            cfg.Retain,
		Discard:           jetstream.DiscardOld,
	}, "resumable frames"); err != nil {
		return nil, err
	}
	kv, err := natskv.Bucket(ctx, nc, jetstream.KeyValueConfig{
		Bucket:   cfg.Bucket,
		TTL:      cfg.Retain,
		Storage:  jetstream.MemoryStorage,
		Replicas: cfg.Replicas,
		History:  1,
	}, "resumable streams")
	if err != nil {
		return nil, err
	}
	return &Streams{cfg: cfg, nc: nc, js: js, kv: kv}, nil
}

// recordKey is the bucket key of a stream key (which may hold any byte).
func recordKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16])
}

// Start creates the stream key: ECONFLICT while a stream with that key is
// unfinished, EUNAVAILABLE when JetStream cannot be reached.
func (s *Streams) Start(ctx context.Context, key, token string) (gateway.Stream, error) {
	rk := recordKey(key)
	e, err := s.kv.Get(ctx, rk)
	var rev uint64
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "reading the stream record")
	default:
		var r record
		if json.Unmarshal(e.Value(), &r) == nil && !r.Done {
			return nil, kgagent.Errorf(kgagent.ECONFLICT, "a request with this id is already running")
		}
		rev = e.Revision()
	}
	inst := make([]byte, 8)
	_, _ = rand.Read(inst)
	r := record{Token: token, Subject: s.cfg.Subject + "." + rk + "." + hex.EncodeToString(inst), Beat: time.Now().UnixMilli()}
	b, _ := json.Marshal(r)
	if rev == 0 {
		_, err = s.kv.Create(ctx, rk, b)
	} else {
		_, err = s.kv.Update(ctx, rk, b, rev)
	}
	if natskv.IsConflict(err) {
		return nil, kgagent.Errorf(kgagent.ECONFLICT, "a request with this id is already running")
	}
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "writing the stream record")
	}
	st := &stream{s: s, key: key, rk: rk, rec: r, owner: true, next: 1, stop: make(chan struct{})}
	go st.renew()
	return st, nil
}

// renew rewrites the record of a running stream every second, until its
// last frame, so other replicas can tell it is alive.
func (st *stream) renew() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-st.stop:
			return
		case <-t.C:
		}
		// putMu orders this write before the last frame's: a renewal
		// never overwrites the record that says done.
		st.putMu.Lock()
		st.mu.Lock()
		r := st.rec
		st.mu.Unlock()
		if !r.Done {
			r.Beat = time.Now().UnixMilli()
			b, _ := json.Marshal(r)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, _ = st.s.kv.Put(ctx, st.rk, b)
			cancel()
		}
		st.putMu.Unlock()
	}
}

// Get returns the stream key, wherever it runs: ENOTFOUND when there is no
// record of it.
func (s *Streams) Get(ctx context.Context, key string) (gateway.Stream, error) {
	rk := recordKey(key)
	e, err := s.kv.Get(ctx, rk)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, kgagent.Errorf(kgagent.ENOTFOUND, "no such stream")
	}
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "reading the stream record")
	}
	var r record
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return nil, kgagent.Errorf(kgagent.ENOTFOUND, "no such stream")
	}
	return &stream{s: s, key: key, rk: rk, rec: r}, nil
}

// Close does nothing: the stream and bucket outlive the process.
func (s *Streams) Close() error { return nil }

// stream is one stream: owner is set on the replica that runs its request
// (it numbers and writes the frames), not on replicas that only read it.
type stream struct {
	s     *Streams
	key   string
	rk    string
	rec   record
	owner bool

	mu    sync.Mutex
	next  int64
	done  bool
	sub   func([]byte) bool
	subID uint64
	cons  map[uint64]func() // stop the readers from JetStream, by subscriber
	stop  chan struct{}     // closed at the last frame (owner only)
	putMu sync.Mutex        // serialises the owner's record writes
}

const seqHeader = "Kgagent-Seq"

func (st *stream) Token() string { return st.rec.Token }

// Done reports whether the last frame was written (read from the record on
// replicas that do not run the request).
func (st *stream) Done() bool {
	st.mu.Lock()
	done := st.done
	st.mu.Unlock()
	if done || st.owner {
		return done
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	e, err := st.s.kv.Get(ctx, st.rk)
	if err != nil {
		return errors.Is(err, jetstream.ErrKeyNotFound)
	}
	var r record
	_ = json.Unmarshal(e.Value(), &r)
	return r.Done
}

// Append numbers f, writes it to JetStream and hands it to the local
// subscriber. On the last frame the record is marked done.
func (st *stream) Append(f gateway.Frame) {
	st.mu.Lock()
	f.Seq = st.next
	st.next++
	if f.Seq == 1 {
		f.ResumeToken = st.rec.Token
	}
	data, err := json.Marshal(f)
	if err != nil {
		data, _ = json.Marshal(gateway.Frame{ID: f.ID, Seq: f.Seq, Complete: f.Complete,
			Error: &gateway.FrameError{Message: "cannot encode response", Type: kgagent.EINTERNAL}})
	}
	msg := nats.NewMsg(st.rec.Subject)
	msg.Header.Set(seqHeader, strconv.FormatInt(f.Seq, 10))
	msg.Data = data
	_ = st.s.nc.PublishMsg(msg)
	if st.sub != nil && !st.sub(data) {
		st.sub = nil
	}
	if f.Complete {
		st.done = true
	}
	st.mu.Unlock()
	if f.Complete {
		st.mu.Lock()
		st.rec.Done = true
		r := st.rec
		st.mu.Unlock()
		close(st.stop)
		b, _ := json.Marshal(r)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = st.s.nc.FlushWithContext(ctx) // the frames land before the record says done
		st.putMu.Lock()
		_, _ = st.s.kv.Put(ctx, st.rk, b)
		st.putMu.Unlock()
		cancel()
	}
}

// Attach sends the frames after lastSeq to send, then the rest as they
// come. On the replica running the request, a new request's own client
// (lastSeq 0, nothing written yet) is served directly; every other client
// reads from JetStream. ENOTFOUND when frames after lastSeq are no longer
// kept.
func (st *stream) Attach(subID uint64, lastSeq int64, send func([]byte) bool) error {
	st.mu.Lock()
	if st.owner && st.next == 1 {
		st.sub, st.subID = send, subID
		st.mu.Unlock()
		return nil
	}
	st.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	js, err := st.s.js.Stream(ctx, st.s.cfg.Stream)
	if err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "reading the stream")
	}
	first, err := js.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(st.rec.Subject))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		if lastSeq > 0 || st.Done() {
			return kgagent.Errorf(kgagent.ENOTFOUND, "events after seq %d are no longer kept", lastSeq)
		}
	case err != nil:
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "reading the stream")
	default:
		if n, _ := strconv.ParseInt(first.Header.Get(seqHeader), 10, 64); lastSeq+1 < n {
			return kgagent.Errorf(kgagent.ENOTFOUND, "events after seq %d are no longer kept (oldest is %d)", lastSeq, n)
		}
	}
	cons, err := js.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{st.rec.Subject}})
	if err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "reading the stream")
	}
	// The handler may stop consuming (the client is gone, or the last
	// frame is sent), but not from inside itself and not before Consume
	// has returned the context to stop.
	var cc jetstream.ConsumeContext
	var stopped atomic.Bool
	ready := make(chan struct{})
	stop := func() {
		if stopped.CompareAndSwap(false, true) {
			go func() { <-ready; cc.Stop() }()
		}
	}
	var sendMu sync.Mutex // the consumer and the watchdog both send
	sent := lastSeq
	cc, err = cons.Consume(func(m jetstream.Msg) {
		n, _ := strconv.ParseInt(m.Headers().Get(seqHeader), 10, 64)
		sendMu.Lock()
		defer sendMu.Unlock()
		if n <= sent || stopped.Load() {
			return
		}
		sent = n
		var f struct {
			Complete bool `json:"complete"`
		}
		_ = json.Unmarshal(m.Data(), &f)
		if !send(m.Data()) || f.Complete {
			stop()
		}
	})
	if err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "reading the stream")
	}
	close(ready)
	go st.watch(&stopped, func() {
		sendMu.Lock()
		defer sendMu.Unlock()
		if stopped.Load() {
			return
		}
		_, id, _ := strings.Cut(st.key, "\x00")
		b, _ := json.Marshal(gateway.Frame{ID: id, Seq: sent + 1, Complete: true, Error: &gateway.FrameError{
			Type: kgagent.EUNAVAILABLE, Message: "the replica running this request stopped before it finished; ask again"}})
		send(b)
		stop()
	})
	st.mu.Lock()
	if st.cons == nil {
		st.cons = map[uint64]func(){}
	}
	st.cons[subID] = stop
	st.mu.Unlock()
	return nil
}

// watch checks the record of a stream another replica runs every second,
// until stopped: when it is neither done nor renewed within Stale, the
// replica died, and dead is called.
func (st *stream) watch(stopped *atomic.Bool, dead func()) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for range t.C {
		if stopped.Load() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		e, err := st.s.kv.Get(ctx, st.rk)
		cancel()
		if err != nil {
			continue
		}
		var r record
		if json.Unmarshal(e.Value(), &r) != nil || r.Done {
			continue
		}
		if time.Since(time.UnixMilli(r.Beat)) > st.s.cfg.Stale {
			dead()
			return
		}
	}
}

// Detach stops sending to subscriber subID.
func (st *stream) Detach(subID uint64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.subID == subID {
		st.sub = nil
	}
	if stop, ok := st.cons[subID]; ok {
		stop()
		delete(st.cons, subID)
	}
}
