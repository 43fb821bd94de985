package natsstate

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/kgagent/kgagent/internal/seal"
)

// StreamsConfig names the JetStream resources of Streams and sets their
// limits; zero values take the defaults given.
type StreamsConfig struct {
	Stream    string        // JetStream stream of frames; "KGAGENT_STREAMS"
	Subject   string        // subject prefix of the frames; "kgagent.streams"
	Bucket    string        // key-value bucket of stream records; "kgagent_streams"
	Retain    time.Duration // how long a finished stream stays resumable; gateway.DefaultRetainStreams (see keep)
	MaxEvents int           // frames (and model-output notes) kept per stream; gateway.DefaultMaxStreamEvents
	MaxBytes  int64         // bytes of frames kept in all, oldest dropped first; gateway.DefaultMaxStreamBytes
	Replicas  int           // replicas of the stream and bucket; 0: natskv.Replicas
	Stale     time.Duration // the lease: a running stream's record unchanged for this long (seen by a reader) is taken over; 5s
	// SecretKey seals what the stream and bucket hold of a stream — its
	// resume token and request in the record, its frames and notes —
	// with AES-256-GCM (internal/seal), so the bus and JetStream never
	// hold them in plain text. Every replica needs the same key (kgagent
	// uses job_secret); empty: a random key, so streams resume only on
	// this process.
	SecretKey []byte
}

// Streams is a gateway.StreamStore in NATS JetStream, so a websocket client
// can resume a stream on any replica: every frame is one message on the
// stream's own subject of one JetStream stream (in memory, replicated like
// the job queue), whose byte budget drops the oldest frames of all streams
// first; a key-value record per stream key holds the resume token, the
// subject, whether the stream is done, and the request (Record). The
// replica running a request writes each frame to JetStream and, once it is
// stored, hands it to its own attached client; a client attached on
// another replica reads the frames from JetStream, stored ones first, then
// live.
//
// Streams is a gateway.DurableStreams: the replica running a request holds
// a lease on it, its record, which it rewrites every second (compare-and-set
// on the record's revision). A replica with a client attached to a stream
// whose record has not changed for Stale (by its own clock) takes it over:
// it rewrites the record naming itself (compare-and-set again: of several
// replicas, one wins), reads the stored frames and hands them, with the
// recorded request, to the function given to OnTakeover, which continues
// the request and appends the frames after them. The replica that lost
// the lease writes no more frames: every frame is published expecting the
// subject's last stored message to be the one it wrote before (a replica
// that lost the lease finds another's there and stops), and a replica that
// could not renew its lease for Stale/2 renews it before writing a frame.
// A replica whose frame JetStream did not store gives the stream up (its
// own client still gets every frame; its lease lapses, so a client resumed
// elsewhere gets the stream continued after the stored frames). A stream
// with no recorded request, or whose frames were dropped, ends for the
// clients attached elsewhere with a final UNAVAILABLE error frame.
type Streams struct {
	cfg StreamsConfig
	nc  *nats.Conn
	js  jetstream.JetStream
	kv  jetstream.KeyValue
	sl  *seal.Sealer

	mu  sync.Mutex
	run func(gateway.Takeover)
}

var _ gateway.DurableStreams = (*Streams)(nil)

// record is the key-value entry of one stream, as this process holds it;
// in the bucket its Token and Run are sealed (encode, decode).
type record struct {
	Token     string `json:"token"` // the resume token
	Subject   string `json:"subject"`
	Done      bool   `json:"done"`
	Beat      int64  `json:"beat"`            // when the running replica last renewed it (Unix ms)
	Owner     string `json:"owner,omitempty"` // the run that holds the lease (random per run)
	Run       []byte `json:"run,omitempty"`   // the request, to be continued elsewhere (gateway's, opaque here)
	Takeovers int    `json:"takeovers,omitempty"`
}

// stored is a record as the bucket holds it: its resume token and request
// sealed, each bound to the stream's record key.
type storedRecord struct {
	Token     string `json:"token"`
	Subject   string `json:"subject"`
	Done      bool   `json:"done"`
	Beat      int64  `json:"beat"`
	Owner     string `json:"owner,omitempty"`
	Run       string `json:"run,omitempty"`
	Takeovers int    `json:"takeovers,omitempty"`
}

// Contexts the sealed parts of a stream are bound to (with its record
// key or subject).
const (
	sealToken = "kgagent stream token "
	sealRun   = "kgagent stream request "
	sealFrame = "kgagent stream frame "
)

// encode returns r as the bucket keeps it under record key rk.
func (s *Streams) encode(rk string, r record) []byte {
	b, _ := json.Marshal(storedRecord{Token: s.sl.SealString(r.Token, sealToken+rk), Subject: r.Subject, Done: r.Done,
		Beat: r.Beat, Owner: r.Owner, Run: s.sl.SealString(string(r.Run), sealRun+rk), Takeovers: r.Takeovers})
	return b
}

// decode reads the bucket's entry of record key rk. Its lease fields are
// returned even when err says its sealed parts could not be opened
// (EUNAVAILABLE: sealed with another replica's key).
func (s *Streams) decode(rk string, data []byte) (record, error) {
	var sr storedRecord
	if err := json.Unmarshal(data, &sr); err != nil {
		return record{}, kgagent.Errorf(kgagent.EUNAVAILABLE, "the stream record is damaged")
	}
	r := record{Subject: sr.Subject, Done: sr.Done, Beat: sr.Beat, Owner: sr.Owner, Takeovers: sr.Takeovers}
	tok, terr := s.sl.OpenString(sr.Token, sealToken+rk)
	run, rerr := s.sl.OpenString(sr.Run, sealRun+rk)
	if terr != nil || rerr != nil {
		return r, kgagent.Errorf(kgagent.EUNAVAILABLE, "the stream record was sealed with another key (set job_secret to the same value on every replica)")
	}
	r.Token = tok
	if run != "" {
		r.Run = []byte(run)
	}
	return r, nil
}

// sealData seals a frame or note for subject; openData opens it.
func (s *Streams) sealData(subject string, data []byte) []byte {
	return s.sl.Seal(data, sealFrame+subject)
}

func (s *Streams) openData(subject string, data []byte) ([]byte, error) {
	b, err := s.sl.Open(data, sealFrame+subject)
	if err != nil {
		return nil, kgagent.Errorf(kgagent.EUNAVAILABLE, "the stream's events were sealed with another key (set job_secret to the same value on every replica)")
	}
	return b, nil
}

// withDefaults returns c with its zero values replaced by the defaults.
func (c StreamsConfig) withDefaults() StreamsConfig {
	if c.Stream == "" {
		c.Stream = "KGAGENT_STREAMS"
	}
	if c.Subject == "" {
		c.Subject = "kgagent.streams"
	}
	if c.Bucket == "" {
		c.Bucket = "kgagent_streams"
	}
	if c.Retain <= 0 {
		c.Retain = gateway.DefaultRetainStreams
	}
	if c.MaxEvents <= 0 {
		c.MaxEvents = gateway.DefaultMaxStreamEvents
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = gateway.DefaultMaxStreamBytes
	}
	if c.Stale <= 0 {
		c.Stale = 5 * time.Second
	}
	return c
}

// keep is how long JetStream keeps a frame and a record: it ages them from
// when they were written, not from when the stream finished, so the first
// frame of an answer that ran the whole gateway.DefaultRequestTimeout must
// still be there retain after the answer's end (what the in-memory store
// keeps).
func keep(retain time.Duration) time.Duration { return retain + gateway.DefaultRequestTimeout }

// NewStreams creates (or opens) the stream and the bucket. Errors:
// EUNAVAILABLE when JetStream cannot be reached.
func NewStreams(ctx context.Context, nc *nats.Conn, cfg StreamsConfig) (*Streams, error) {
	cfg = cfg.withDefaults()
	sl, err := seal.New(cfg.SecretKey)
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EINTERNAL, err, "stream secret key")
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
		MaxAge:            keep(cfg.Retain),
		Discard:           jetstream.DiscardOld,
	}, "resumable frames"); err != nil {
		return nil, err
	}
	kv, err := natskv.Bucket(ctx, nc, jetstream.KeyValueConfig{
		Bucket:   cfg.Bucket,
		TTL:      keep(cfg.Retain),
		Storage:  jetstream.MemoryStorage,
		Replicas: cfg.Replicas,
		History:  1,
	}, "resumable streams")
	if err != nil {
		return nil, err
	}
	return &Streams{cfg: cfg, nc: nc, js: js, kv: kv, sl: sl}, nil
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
		if r, err := s.decode(rk, e.Value()); (err == nil || r.Subject != "") && !r.Done {
			return nil, kgagent.Errorf(kgagent.ECONFLICT, "a request with this id is already running")
		}
		rev = e.Revision()
	}
	st := s.newOwner(key, rk)
	r := record{Token: token, Subject: s.cfg.Subject + "." + rk + "." + randomHex(8), Beat: time.Now().UnixMilli(), Owner: st.ownerID}
	b := s.encode(rk, r)
	if rev == 0 {
		rev, err = s.kv.Create(ctx, rk, b)
	} else {
		rev, err = s.kv.Update(ctx, rk, b, rev)
	}
	if natskv.IsConflict(err) {
		return nil, kgagent.Errorf(kgagent.ECONFLICT, "a request with this id is already running")
	}
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "writing the stream record")
	}
	st.rec, st.rev, st.renewed, st.next = r, rev, time.Now(), 1
	go st.renew()
	return st, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newOwner returns the stream key as run here (its record not yet written).
func (s *Streams) newOwner(key, rk string) *stream {
	return &stream{s: s, key: key, rk: rk, owner: true, ownerID: randomHex(12), stop: make(chan struct{}), lost: make(chan struct{})}
}

// OnTakeover sets the function that continues the streams this replica
// takes over (gateway.Server sets it). Without one, streams are not taken
// over: their clients get UNAVAILABLE when the replica running them dies.
func (s *Streams) OnTakeover(run func(gateway.Takeover)) {
	s.mu.Lock()
	s.run = run
	s.mu.Unlock()
}

// takeover outcomes.
const (
	tookOver = iota // this replica runs the stream now (or it turned out done)
	raced           // another replica wrote the record first
	retry           // JetStream did not answer; try again later
	cannot          // nothing to continue: the stream ends UNAVAILABLE
)

// takeOver tries to take over the stream key whose lease lapsed; e is its
// record as last read (r decoded).
func (s *Streams) takeOver(key, rk string, e jetstream.KeyValueEntry, r record) int {
	s.mu.Lock()
	run := s.run
	s.mu.Unlock()
	if run == nil || len(r.Run) == 0 {
		return cannot
	}
	st := s.newOwner(key, rk)
	r.Owner, r.Beat = st.ownerID, time.Now().UnixMilli()
	r.Takeovers++
	b := s.encode(rk, r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rev, err := s.kv.Update(ctx, rk, b, e.Revision())
	if natskv.IsConflict(err) {
		return raced
	}
	if err != nil {
		return retry
	}
	// The lease is this replica's. Without a renewal it lapses again,
	// and the stream is tried again (here or elsewhere).
	st.rec, st.rev, st.renewed = r, rev, time.Now()
	frames, notes, last, lastSub, whole, err := s.stored(ctx, r.Subject)
	if err != nil {
		return retry
	}
	st.next, st.lastSub = last+1, lastSub
	go st.renew()
	switch {
	case !whole:
		st.Append(gateway.Frame{ID: frameID(key), Complete: true, Error: &gateway.FrameError{Type: kgagent.EUNAVAILABLE,
			Message: "the replica running this request stopped, and its events were no longer all kept; ask again"}})
	case last > 0 && complete(frames[len(frames)-1]):
		// The last frame was written; the record was not marked done.
		st.mu.Lock()
		st.done, st.rec.Done = true, true
		r := st.rec
		st.mu.Unlock()
		close(st.stop)
		st.putMu.Lock()
		_ = st.putLocked(r)
		st.putMu.Unlock()
	default:
		go run(gateway.Takeover{Stream: st, Run: r.Run, Frames: frames, Notes: notes})
	}
	return tookOver
}

func complete(frame []byte) bool {
	var f struct {
		Complete bool `json:"complete"`
	}
	_ = json.Unmarshal(frame, &f)
	return f.Complete
}

// frameID is the request id of a stream key ("<owner or token>\x00<id>").
func frameID(key string) string {
	_, id, _ := strings.Cut(key, "\x00")
	return id
}

// stored reads the messages of subject: the frames' data in order, the
// notes', the last frame's seq, the JetStream sequence of the last
// message, and whether the frames are seqs 1..last with none dropped.
func (s *Streams) stored(ctx context.Context, subject string) (frames, notes [][]byte, last int64, lastSub uint64, whole bool, err error) {
	js, err := s.js.Stream(ctx, s.cfg.Stream)
	if err != nil {
		return nil, nil, 0, 0, false, err
	}
	lm, err := js.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil, 0, 0, true, nil
	}
	if err != nil {
		return nil, nil, 0, 0, false, err
	}
	cons, err := js.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		return nil, nil, 0, 0, false, err
	}
	whole = true
	for {
		batch, err := cons.Fetch(256, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, nil, 0, 0, false, err
		}
		for m := range batch.Messages() {
			md, err := m.Metadata()
			if err != nil {
				return nil, nil, 0, 0, false, err
			}
			data, err := s.openData(subject, m.Data())
			if err != nil {
				return nil, nil, 0, 0, false, err
			}
			if m.Headers().Get(noteHeader) != "" {
				notes = append(notes, data)
			} else {
				n, _ := strconv.ParseInt(m.Headers().Get(seqHeader), 10, 64)
				if n != last+1 {
					whole = false
				}
				last = n
				frames = append(frames, data)
			}
			if md.Sequence.Stream >= lm.Sequence {
				return frames, notes, last, md.Sequence.Stream, whole, nil
			}
		}
		if err := batch.Error(); err != nil {
			return nil, nil, 0, 0, false, err
		}
		if ctx.Err() != nil {
			return nil, nil, 0, 0, false, ctx.Err()
		}
	}
}

// putLocked writes r as the record, if the lease is still this run's
// (compare-and-set on the revision it last wrote); a record another run
// wrote means the stream was taken over: it is lost here. st.putMu is
// held.
func (st *stream) putLocked(r record) error {
	if st.isLost() {
		return errLost
	}
	b := st.s.encode(st.rk, r)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	at := time.Now()
	rev, err := st.s.kv.Update(ctx, st.rk, b, st.rev)
	if natskv.IsConflict(err) {
		// A write that timed out may have landed: the record is still
		// this run's when it names it.
		e, gerr := st.s.kv.Get(ctx, st.rk)
		var cur record
		if gerr == nil {
			cur, _ = st.s.decode(st.rk, e.Value()) // the owner is not sealed
		}
		if gerr == nil && cur.Owner == st.ownerID {
			st.rev = e.Revision()
			rev, err = st.s.kv.Update(ctx, st.rk, b, st.rev)
		}
		if natskv.IsConflict(err) || (gerr == nil && cur.Owner != st.ownerID) {
			st.markLost()
			return errLost
		}
	}
	if err != nil {
		return err
	}
	st.rev, st.renewed = rev, at
	return nil
}

var errLost = errors.New("the stream was taken over by another replica")

func (st *stream) isLost() bool {
	select {
	case <-st.lost:
		return true
	default:
		return false
	}
}

func (st *stream) markLost() {
	st.lostOnce.Do(func() { close(st.lost) })
}

// Lost is closed when another replica has taken the stream over.
func (st *stream) Lost() <-chan struct{} { return st.lost }

// Record stores the stream's request in its record, so another replica
// can continue it. Errors: EUNAVAILABLE.
func (st *stream) Record(run []byte) error {
	st.mu.Lock()
	st.rec.Run = run
	r := st.rec
	st.mu.Unlock()
	st.putMu.Lock()
	defer st.putMu.Unlock()
	if err := st.putLocked(r); err != nil {
		return kgagent.WrapError(kgagent.EUNAVAILABLE, err, "writing the stream record")
	}
	return nil
}

// renew rewrites the record of a running stream every second, until its
// last frame or until it is lost, so other replicas can tell it is alive.
func (st *stream) renew() {
	t := time.NewTicker(min(time.Second, st.s.cfg.Stale/5))
	defer t.Stop()
	for {
		select {
		case <-st.stop:
			return
		case <-st.lost:
			return
		case <-t.C:
		}
		if st.gaveUp.Load() {
			return
		}
		st.beat()
	}
}

// beat renews the lease. putMu orders it with the last frame's write: a
// renewal never overwrites the record that says done.
func (st *stream) beat() {
	st.putMu.Lock()
	defer st.putMu.Unlock()
	st.mu.Lock()
	r := st.rec
	st.mu.Unlock()
	if !r.Done {
		r.Beat = time.Now().UnixMilli()
		_ = st.putLocked(r)
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
	r, err := s.decode(rk, e.Value())
	if err != nil {
		return nil, err
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
	owner bool

	// The owner's lease (guarded by putMu).
	ownerID string    // names this run in the record
	rev     uint64    // the record's revision this run last wrote
	renewed time.Time // when that write started
	putMu   sync.Mutex

	mu       sync.Mutex
	rec      record
	next     int64
	lastSub  uint64 // JetStream sequence of the last frame written (the owner's)
	done     bool
	sub      func([]byte) bool
	subID    uint64
	cons     map[uint64]func() // stop the readers from JetStream, by subscriber
	stop     chan struct{}     // closed at the last frame (owner only)
	lost     chan struct{}     // closed when taken over by another replica (owner only)
	lostOnce sync.Once
	gaveUp   atomic.Bool // JetStream failed to store a frame: local client only, no renewals
	pubs     int         // messages published by this run (guarded by mu)
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
	r, _ := st.s.decode(st.rk, e.Value()) // done is not sealed
	return r.Done
}

// Append numbers f and writes it to JetStream, then hands it to the local
// subscriber (a client never sees a frame that is not stored, unless
// JetStream failed). On the last frame the record is marked done. Frames
// of a stream taken over by another replica are not written.
func (st *stream) Append(f gateway.Frame) {
	if st.isLost() {
		return
	}
	st.putMu.Lock()
	if !st.gaveUp.Load() && time.Since(st.renewed) > st.s.cfg.Stale/2 {
		// No renewal for a while (a pause, NATS trouble): is the lease
		// still this run's?
		st.mu.Lock()
		r := st.rec
		st.mu.Unlock()
		r.Beat = time.Now().UnixMilli()
		_ = st.putLocked(r)
	}
	st.putMu.Unlock()
	if st.isLost() {
		return
	}
	st.mu.Lock()
	f.Seq = st.next
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
	msg.Data = st.s.sealData(st.rec.Subject, data)
	if !st.gaveUp.Load() && !st.publish(msg) {
		st.mu.Unlock()
		st.markLost()
		return
	}
	st.next++
	if st.sub != nil && !st.sub(data) {
		st.sub = nil
	}
	if f.Complete {
		st.done = true
		st.rec.Done = true
	}
	r := st.rec
	st.mu.Unlock()
	if f.Complete {
		close(st.stop)
		if !st.gaveUp.Load() {
			st.putMu.Lock()
			_ = st.putLocked(r)
			st.putMu.Unlock()
		}
	}
}

// publish writes msg (a frame or a note) to JetStream, expecting the
// subject's last message to be the one this run wrote before; false when
// another replica's message is there (the stream was taken over). When
// JetStream does not store a message, this run gives the stream up: the
// rest of its frames go to the local client only, and its lease is no
// longer renewed, so clients resumed elsewhere get the stream continued by
// another replica after the stored frames. st.mu is held.
func (st *stream) publish(msg *nats.Msg) bool {
	st.pubs++
	id := st.ownerID + "." + strconv.Itoa(st.pubs)
	msg.Header.Set(ownerHeader, st.ownerID)
	msg.Header.Set(idHeader, id)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for try := 0; try < 2; try++ {
		ack, err := st.s.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(st.lastSub))
		if err == nil {
			st.lastSub = ack.Sequence
			return true
		}
		if !natskv.IsConflict(err) {
			break
		}
		// A publish that timed out may have been stored: the last
		// message is still this run's when this run wrote it.
		js, serr := st.s.js.Stream(ctx, st.s.cfg.Stream)
		if serr != nil {
			break
		}
		lm, lerr := js.GetLastMsgForSubject(ctx, st.rec.Subject)
		if lerr != nil {
			break
		}
		if lm.Header.Get(ownerHeader) != st.ownerID {
			return false
		}
		st.lastSub = lm.Sequence
		if lm.Header.Get(idHeader) == id {
			return true // this very message was stored
		}
	}
	st.gaveUp.Store(true)
	return true
}

// Note stores data on the stream's subject, in order with its frames
// (clients never get it; a takeover does). Errors: EUNAVAILABLE when it
// was not stored.
func (st *stream) Note(data []byte) error {
	if st.isLost() {
		return kgagent.Errorf(kgagent.EUNAVAILABLE, "the stream was taken over")
	}
	st.mu.Lock()
	if st.gaveUp.Load() {
		st.mu.Unlock()
		return kgagent.Errorf(kgagent.EUNAVAILABLE, "the stream is no longer written to JetStream")
	}
	msg := nats.NewMsg(st.rec.Subject)
	msg.Header.Set(noteHeader, "1")
	msg.Data = st.s.sealData(st.rec.Subject, data)
	ok := st.publish(msg)
	stored := ok && !st.gaveUp.Load()
	st.mu.Unlock()
	if !ok {
		st.markLost()
	}
	if !stored {
		return kgagent.Errorf(kgagent.EUNAVAILABLE, "the note was not stored")
	}
	return nil
}

const (
	idHeader   = "Kgagent-Id"   // unique per message: owner and count
	noteHeader = "Kgagent-Note" // a note, not a frame
)

const ownerHeader = "Kgagent-Owner"

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
	// fail ends the client's stream with an error frame. sendMu is held.
	fail := func(msg string) {
		b, _ := json.Marshal(gateway.Frame{ID: frameID(st.key), Seq: sent + 1, Complete: true, Error: &gateway.FrameError{
			Type: kgagent.EUNAVAILABLE, Message: msg}})
		send(b)
		stop()
	}
	cc, err = cons.Consume(func(m jetstream.Msg) {
		if m.Headers().Get(noteHeader) != "" {
			return
		}
		n, _ := strconv.ParseInt(m.Headers().Get(seqHeader), 10, 64)
		sendMu.Lock()
		defer sendMu.Unlock()
		if n <= sent || stopped.Load() {
			return
		}
		if n > sent+1 {
			fail(fmt.Sprintf("events %d to %d of this request were not stored; ask again", sent+1, n-1))
			return
		}
		data, err := st.s.openData(st.rec.Subject, m.Data())
		if err != nil {
			fail(kgagent.ErrorMessage(err))
			return
		}
		sent = n
		if !send(data) || complete(data) {
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
		if !stopped.Load() {
			fail("the replica running this request stopped before it finished; ask again")
		}
	})
	st.mu.Lock()
	if st.cons == nil {
		st.cons = map[uint64]func(){}
	}
	st.cons[subID] = stop
	st.mu.Unlock()
	return nil
}

// watch checks the record of a stream another replica runs, until
// stopped: when it is not done and has not changed for Stale (by this
// replica's clock: the lease lapsed), the stream is taken over here
// (takeOver); when there is nothing to continue, dead is called.
func (st *stream) watch(stopped *atomic.Bool, dead func()) {
	t := time.NewTicker(min(time.Second, st.s.cfg.Stale/5))
	defer t.Stop()
	var rev uint64
	since := time.Now()
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
		r, err := st.s.decode(st.rk, e.Value())
		if (err != nil && r.Subject == "") || r.Done {
			continue
		}
		if e.Revision() != rev {
			rev, since = e.Revision(), time.Now()
			continue
		}
		if time.Since(since) <= st.s.cfg.Stale {
			continue
		}
		switch st.s.takeOver(st.key, st.rk, e, r) {
		case cannot:
			dead()
			return
		default:
			since = time.Now() // the record changed, or try again later
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
