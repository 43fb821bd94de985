package gateway

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/kgagent/kgagent"
)

// stream is the frames of one request id, kept so a client that reconnects
// can resume it. Frames are stored encoded; at most max are kept (the oldest
// are dropped first).
type stream struct {
	key string

	mu       sync.Mutex
	frames   [][]byte
	first    int64 // seq of frames[0]
	next     int64 // seq the next frame gets
	max      int
	done     bool
	finished time.Time
	sub      func([]byte) bool // the attached socket's enqueue, or nil
	subID    uint64
}

// append numbers f, keeps it and passes it to the attached subscriber.
func (st *stream) append(f Frame) {
	st.mu.Lock()
	defer st.mu.Unlock()
	f.Seq = st.next
	st.next++
	data, err := json.Marshal(f)
	if err != nil {
		data, _ = json.Marshal(errorFrame(f.ID, kgagent.WrapError(kgagent.EINTERNAL, err, "cannot encode response")))
	}
	if len(st.frames) >= st.max {
		st.frames[0] = nil
		st.frames = st.frames[1:]
		st.first++
	}
	st.frames = append(st.frames, data)
	if f.Complete {
		st.done = true
		st.finished = time.Now()
	}
	if st.sub != nil && !st.sub(data) {
		st.sub = nil
	}
}

// attach sends the kept frames after lastSeq to sub and subscribes it to the
// rest. It fails with ENOTFOUND when frames after lastSeq were dropped.
func (st *stream) attach(subID uint64, lastSeq int64, sub func([]byte) bool) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if lastSeq+1 < st.first {
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

// detach removes the subscriber subID, if it is still the attached one.
func (st *stream) detach(subID uint64) {
	st.mu.Lock()
	if st.subID == subID {
		st.sub = nil
	}
	st.mu.Unlock()
}

// streamStore keeps streams by key for a retention window after they finish,
// at most max at once.
type streamStore struct {
	retain    time.Duration
	max       int
	maxEvents int

	mu      sync.Mutex
	streams map[string]*stream
	stop    chan struct{}
	once    sync.Once
}

func newStreamStore(retain time.Duration, max, maxEvents int) *streamStore {
	s := &streamStore{retain: retain, max: max, maxEvents: maxEvents, streams: map[string]*stream{}, stop: make(chan struct{})}
	go s.janitor()
	return s
}

func (s *streamStore) janitor() {
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
func (s *streamStore) sweep(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, st := range s.streams {
		st.mu.Lock()
		old := st.done && now.Sub(st.finished) > s.retain
		st.mu.Unlock()
		if old {
			delete(s.streams, k)
		}
	}
}

func (s *streamStore) close() { s.once.Do(func() { close(s.stop) }) }

// start creates the stream for key. Errors: ECONFLICT when a stream with
// that key is still running, EUNAVAILABLE when the store is full of running
// streams.
func (s *streamStore) start(key string) (*stream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.streams[key]; ok {
		old.mu.Lock()
		running := !old.done
		old.mu.Unlock()
		if running {
			return nil, kgagent.Errorf(kgagent.ECONFLICT, "a request with this id is already running")
		}
		delete(s.streams, key)
	}
	if len(s.streams) >= s.max {
		var oldest *stream
		for _, st := range s.streams {
			st.mu.Lock()
			if st.done && (oldest == nil || st.finished.Before(oldest.finished)) {
				oldest = st
			}
			st.mu.Unlock()
		}
		if oldest == nil {
			return nil, kgagent.Errorf(kgagent.EUNAVAILABLE, "too many requests running; try again later")
		}
		delete(s.streams, oldest.key)
	}
	st := &stream{key: key, first: 1, next: 1, max: s.maxEvents}
	s.streams[key] = st
	return st, nil
}

func (s *streamStore) get(key string) *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams[key]
}
