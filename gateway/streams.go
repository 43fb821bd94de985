package gateway

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/kgagent/kgagent"
)

// StreamStore keeps the frames of websocket requests so a client that
// reconnects can resume them. NewMemStreams (the default) keeps them in
// this process; a deployment with several replicas can plug in a shared
// one. Keys are built by the gateway from the stream's owner and request id
// (or, for anonymous callers, the stream's resume token), so a store never
// decides who may read a stream.
type StreamStore interface {
	// Start creates the stream key with its resume token. Errors:
	// ECONFLICT when a stream with that key is still running, EUNAVAILABLE
	// when the store is full of running streams.
	Start(ctx context.Context, key, token string) (Stream, error)
	// Get returns the stream key. Errors: ENOTFOUND.
	Get(ctx context.Context, key string) (Stream, error)
	// Close stops background work.
	Close() error
}

// Stream is the frames of one request, numbered from 1.
type Stream interface {
	// Token is the stream's resume token.
	Token() string
	// Append numbers f (its Seq is set; the first frame also carries the
	// resume token), keeps it, and passes it to the attached subscriber.
	Append(f Frame)
	// Attach sends the kept frames after lastSeq to send and subscribes it
	// (as subID) to the rest; send returns false when it cannot take more.
	// Errors: ENOTFOUND when frames after lastSeq are no longer kept.
	Attach(subID uint64, lastSeq int64, send func([]byte) bool) error
	// Detach removes subscriber subID if it is still the attached one.
	Detach(subID uint64)
	// Done reports whether the last frame was appended.
	Done() bool
}

// DurableStreams is a StreamStore whose requests outlive the replica
// running them (gateway/natsstate): that replica records the admitted
// request beside its frames (DurableStream.Record) and holds a lease on it;
// when it dies, a replica with a client attached to the stream takes it
// over — one replica, by compare-and-set on the lease — and calls the
// function given to OnTakeover, which runs the request again and writes
// the frames past the stored ones (see Server.takeover).
type DurableStreams interface {
	StreamStore
	// OnTakeover sets the function called when this replica has taken a
	// stream over. The Server sets it (New).
	OnTakeover(run func(Takeover))
}

// DurableStream is a Stream of a DurableStreams on the replica running its
// request.
type DurableStream interface {
	Stream
	// Record stores the admitted request (opaque to the store), so
	// another replica can run it. Errors: EUNAVAILABLE.
	Record(run []byte) error
	// Note stores data beside the frames (the model outputs a re-run
	// replays), in order with them; Takeover.Notes gives them back.
	// Errors: EUNAVAILABLE.
	Note(data []byte) error
	// Lost is closed when another replica has taken the stream over: the
	// request here stops, and no frame of it is written any more.
	Lost() <-chan struct{}
}

// Takeover is a stream this replica took over: its recorded request, its
// stored frames (seq 1 to len(Frames), in order) and notes, and the stream
// to write the rest to (Append numbers them from len(Frames)+1).
type Takeover struct {
	Stream DurableStream
	Run    []byte
	Frames [][]byte
	Notes  [][]byte
}

// memStreams is the in-memory StreamStore. One mutex guards every stream:
// appends are short, and the byte budget spans all of them. Frames are
// dropped oldest first — across streams — when the kept bytes pass
// maxBytes, and per stream past maxEvents; finished streams go after the
// retention window, or oldest first when maxStreams are kept.
type memStreams struct {
	retain     time.Duration
	maxStreams int
	maxEvents  int
	maxBytes   int64

	mu      sync.Mutex
	streams map[string]*memStream
	bytes   int64      // bytes of frames kept
	order   []frameRef // frames in append order, for oldest-first eviction (entries of dropped frames are skipped)
	live    int        // frames kept
	stop    chan struct{}
	once    sync.Once
}

type frameRef struct {
	st  *memStream
	seq int64
}

// NewMemStreams returns the in-memory StreamStore: finished streams kept
// for retain, at most maxStreams streams, maxEvents frames per stream and
// maxBytes bytes of frames in all.
func NewMemStreams(retain time.Duration, maxStreams, maxEvents int, maxBytes int64) StreamStore {
	s := &memStreams{retain: retain, maxStreams: maxStreams, maxEvents: maxEvents, maxBytes: maxBytes, streams: map[string]*memStream{}, stop: make(chan struct{})}
	go s.janitor()
	return s
}

// memStream is one stream of a memStreams; its fields are guarded by the
// store's mutex.
type memStream struct {
	s        *memStreams
	key      string
	token    string
	frames   [][]byte
	first    int64 // seq of frames[0]
	next     int64 // seq the next frame gets
	done     bool
	gone     bool // removed from the store
	finished time.Time
	sub      func([]byte) bool
	subID    uint64
}

func (s *memStreams) janitor() {
	t := time.NewTicker(max(s.retain/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.sweep(time.Now())
		}
	}
}

// sweep drops streams finished more than the retention window before now.
func (s *memStreams) sweep(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.streams {
		if st.done && now.Sub(st.finished) > s.retain {
			s.remove(st)
		}
	}
}

// remove drops st and its frames. s.mu is held.
func (s *memStreams) remove(st *memStream) {
	if s.streams[st.key] == st {
		delete(s.streams, st.key)
	}
	for _, f := range st.frames {
		s.bytes -= int64(len(f))
	}
	s.live -= len(st.frames)
	st.frames, st.gone, st.sub = nil, true, nil
}

// dropFirst drops the oldest frame of st. s.mu is held.
func (s *memStreams) dropFirst(st *memStream) {
	s.bytes -= int64(len(st.frames[0]))
	s.live--
	st.frames[0] = nil
	st.frames = st.frames[1:]
	st.first++
}

// evict drops frames oldest first until the kept bytes fit the budget,
// and compacts the order list. s.mu is held.
func (s *memStreams) evict() {
	for s.bytes > s.maxBytes && len(s.order) > 0 {
		ref := s.order[0]
		s.order[0] = frameRef{}
		s.order = s.order[1:]
		st := ref.st
		if st.gone || len(st.frames) == 0 || ref.seq != st.first {
			continue // already dropped
		}
		s.dropFirst(st)
		if len(st.frames) == 0 && st.done {
			s.remove(st)
		}
	}
	if len(s.order) > 2*s.live+1024 {
		kept := make([]frameRef, 0, s.live+64)
		for _, ref := range s.order {
			if !ref.st.gone && len(ref.st.frames) > 0 && ref.seq >= ref.st.first {
				kept = append(kept, ref)
			}
		}
		s.order = kept
	}
}

func (s *memStreams) Close() error {
	s.once.Do(func() { close(s.stop) })
	return nil
}

func (s *memStreams) Start(_ context.Context, key, token string) (Stream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.streams[key]; ok {
		if !old.done {
			return nil, kgagent.Errorf(kgagent.ECONFLICT, "a request with this id is already running")
		}
		s.remove(old)
	}
	if len(s.streams) >= s.maxStreams {
		var oldest *memStream
		for _, st := range s.streams {
			if st.done && (oldest == nil || st.finished.Before(oldest.finished)) {
				oldest = st
			}
		}
		if oldest == nil {
			return nil, kgagent.Errorf(kgagent.EUNAVAILABLE, "too many requests running; try again later")
		}
		s.remove(oldest)
	}
	st := &memStream{s: s, key: key, token: token, first: 1, next: 1}
	s.streams[key] = st
	return st, nil
}

func (s *memStreams) Get(_ context.Context, key string) (Stream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.streams[key]
	if !ok {
		return nil, kgagent.Errorf(kgagent.ENOTFOUND, "no such stream")
	}
	return st, nil
}

func (st *memStream) Token() string { return st.token }

func (st *memStream) Done() bool {
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	return st.done
}

func (st *memStream) Append(f Frame) {
	s := st.s
	s.mu.Lock()
	defer s.mu.Unlock()
	f.Seq = st.next
	st.next++
	if f.Seq == 1 {
		f.ResumeToken = st.token
	}
	data, err := json.Marshal(f)
	if err != nil {
		data, _ = json.Marshal(errorFrame(f.ID, kgagent.WrapError(kgagent.EINTERNAL, err, "cannot encode response")))
	}
	if f.Complete {
		st.done = true
		st.finished = time.Now()
	}
	if st.sub != nil && !st.sub(data) {
		st.sub = nil
	}
	if st.gone {
		return // evicted while running: frames still reach the subscriber
	}
	if len(st.frames) >= s.maxEvents {
		s.dropFirst(st)
	}
	st.frames = append(st.frames, data)
	s.bytes += int64(len(data))
	s.live++
	s.order = append(s.order, frameRef{st: st, seq: f.Seq})
	s.evict()
}

func (st *memStream) Attach(subID uint64, lastSeq int64, sub func([]byte) bool) error {
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	if lastSeq+1 < st.first || (st.gone && lastSeq+1 < st.next) {
		return kgagent.Errorf(kgagent.ENOTFOUND, "events after seq %d are no longer kept (oldest is %d)", lastSeq, st.first)
	}
	for i, data := range st.frames {
		if st.first+int64(i) > lastSeq && !sub(data) {
			return nil
		}
	}
	if !st.done {
		st.sub, st.subID = sub, subID
	}
	return nil
}

func (st *memStream) Detach(subID uint64) {
	st.s.mu.Lock()
	if st.subID == subID {
		st.sub = nil
	}
	st.s.mu.Unlock()
}
