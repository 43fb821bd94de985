package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/kgagent/kgagent"
)

// SocketRequest is one frame a client sends on /api/v1/socket: a request
// (seed 004) or a resume.
//
//	{"id":"q1","service":"agent","flow":"default","request":{"question":"..."}}
//	{"id":"q1","resume":{"last_seq":3,"token":"<resume_token of seq 1>"}}
//
// Every response frame carries "seq" (1, 2, ... per id), and the first one
// a "resume_token". A client that loses its socket reconnects and sends a
// resume with the id and the last seq it saw; it gets the frames after it,
// then the rest as they come. Streams belong to their caller: an API key,
// user or calling agent resumes its own streams by id; an anonymous caller
// (an open server) must give the resume token, so no one else can read
// them. Frames are kept for Config.RetainStreams after the last one (within
// Config.MaxStreamBytes in all), and requests keep running when their
// socket goes away (up to Config.RequestTimeout), so they can be resumed.
// Ids must be unique per client while they run.
//
// A socket runs at most Config.MaxInFlight requests at once; further
// requests wait (the socket is not read meanwhile: back-pressure). A client
// that does not read its frames is closed with 1013 (try again later).
type SocketRequest struct {
	ID      string          `json:"id"`
	Service string          `json:"service,omitempty"`
	Flow    string          `json:"flow,omitempty"`
	Request json.RawMessage `json:"request,omitempty"`
	Resume  *Resume         `json:"resume,omitempty"`
}

// Resume asks for the frames of a request after LastSeq.
type Resume struct {
	LastSeq int64  `json:"last_seq"`
	Token   string `json:"token,omitempty"` // the stream's resume_token; required for anonymous callers
}

// DecodeSocketRequest decodes one websocket frame. Errors are EINVALID with
// a reason detail; the id is returned when it could be read, so the error can
// be sent for that id.
func DecodeSocketRequest(data []byte) (SocketRequest, error) {
	var f SocketRequest
	if err := decodeJSON(data, &f); err != nil {
		var probe struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(data, &probe) == nil {
			f.ID = probe.ID
		}
		return f, err
	}
	if f.ID == "" {
		return f, invalid(ReasonMissingField, "id", "id is required")
	}
	if len(f.ID) > 256 {
		return f, invalid(ReasonUnknownValue, "id", "id is over 256 bytes")
	}
	if f.Resume != nil {
		if f.Resume.LastSeq < 0 {
			return f, invalid(ReasonUnknownValue, "resume.last_seq", "last_seq must be >= 0")
		}
		return f, nil
	}
	if f.Service == "" {
		return f, invalid(ReasonMissingField, "service", "service is required")
	}
	if !services[f.Service] {
		// Refused here, before the name reaches a stream or a metrics
		// label (issue 21, finding 11).
		return f, unknownService(f.Service)
	}
	if len(f.Request) == 0 || string(f.Request) == "null" {
		return f, invalid(ReasonMissingField, "request", "request is required")
	}
	return f, nil
}

var subIDs atomic.Uint64

// wsConn is one client socket: a reader (this goroutine), a writer goroutine
// draining a bounded queue, and the requests it runs.
type wsConn struct {
	s        *Server
	c        *websocket.Conn
	p        *Principal
	send     chan []byte
	done     chan struct{}
	once     sync.Once
	subID    uint64
	slots    chan struct{} // one per request in flight
	drained  chan struct{} // signalled by the writer after each frame
	mu       sync.Mutex
	attached []Stream
	ids      map[string]bool // ids running on this socket
}

// writeBuffers is shared by every socket: an idle socket holds no write
// buffer (1000 idle sockets cost 1000x less memory).
var writeBuffers = &sync.Pool{}

func (s *Server) upgrader() *websocket.Upgrader {
	return &websocket.Upgrader{
		ReadBufferSize:  4096,
		WriteBufferSize: 4096,
		WriteBufferPool: writeBuffers,
		CheckOrigin:     s.originAllowed,
	}
}

// socket serves /api/v1/socket.
func (s *Server) socket(w http.ResponseWriter, r *http.Request) {
	c, err := s.upgrader().Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader wrote the error
	}
	s.metrics.sockets.Inc()
	defer s.metrics.sockets.Dec()
	wc := &wsConn{s: s, c: c, p: principalFrom(r.Context()), send: make(chan []byte, s.cfg.SendBuffer), done: make(chan struct{}), subID: subIDs.Add(1),
		slots: make(chan struct{}, s.cfg.MaxInFlight), drained: make(chan struct{}, 1), ids: map[string]bool{}}
	go wc.writer()
	wc.reader()
}

// close cuts the connection off once, with a close frame of code and
// reason (none when code is 0); requests keep running detached.
func (wc *wsConn) close(code int, reason string) {
	wc.once.Do(func() {
		close(wc.done)
		if code != 0 {
			_ = wc.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(wc.s.cfg.WriteTimeout))
			lingerClose(wc.c.NetConn(), closeGrace)
		} else {
			_ = wc.c.Close()
		}
		wc.mu.Lock()
		for _, st := range wc.attached {
			st.Detach(wc.subID)
		}
		wc.attached = nil
		wc.mu.Unlock()
	})
}

// closeGrace is how long a socket the server closes with a code (a client
// that does not read) goes on reading, and discarding, what the client
// sends after the close frame.
const closeGrace = 2 * time.Second

// lingerClose closes c after a close frame: its sending side at once (the
// client reads the frame, then the end), its receiving side once the
// client has closed too or grace has passed. A TCP socket closed while the
// client's frames still wait unread in it answers with a reset, and a
// reset can discard the close frame before the client reads it
// ("connection reset by peer" instead of the code and reason).
func lingerClose(c net.Conn, grace time.Duration) {
	hc, ok := c.(interface{ CloseWrite() error })
	if !ok || hc.CloseWrite() != nil {
		_ = c.Close()
		return
	}
	t := time.AfterFunc(grace, func() { _ = c.Close() })
	go func() {
		_, _ = io.Copy(io.Discard, c)
		t.Stop()
		_ = c.Close()
	}()
}

// enqueue queues data for the writer; a full queue means the client does not
// read, and it is cut off.
func (wc *wsConn) enqueue(data []byte) bool {
	select {
	case <-wc.done:
		return false
	default:
	}
	select {
	case wc.send <- data:
		return true
	default:
		wc.s.log.Warn("websocket send buffer full; closing", "buffer", cap(wc.send))
		go wc.close(websocket.CloseTryAgainLater, "client does not read its frames")
		return false
	}
}

// sendFrame queues a frame of the reader (an error for a request that did
// not start), waiting while the queue is full: the reader slows down
// instead of the socket being cut off.
func (wc *wsConn) sendFrame(f Frame) {
	data, _ := json.Marshal(f)
	select {
	case wc.send <- data:
	case <-wc.done:
	}
}

func (wc *wsConn) writer() {
	ping := time.NewTicker(wc.s.cfg.PingInterval)
	defer ping.Stop()
	defer wc.close(0, "")
	for {
		select {
		case <-wc.done:
			return
		case data := <-wc.send:
			_ = wc.c.SetWriteDeadline(time.Now().Add(wc.s.cfg.WriteTimeout))
			if err := wc.c.WriteMessage(websocket.TextMessage, data); err != nil {
				return
			}
			select {
			case wc.drained <- struct{}{}:
			default:
			}
		case <-ping.C:
			if err := wc.c.WriteControl(websocket.PingMessage, nil, time.Now().Add(wc.s.cfg.WriteTimeout)); err != nil {
				return
			}
		}
	}
}

// frameIDRe finds the id at the start of a frame too large to decode.
var frameIDRe = regexp.MustCompile(`^\s*\{\s*"id"\s*:\s*"([^"\\]{1,256})"`)

func (wc *wsConn) reader() {
	defer wc.close(0, "")
	wait := 2 * wc.s.cfg.PingInterval
	max := wc.s.cfg.MaxFrameBytes
	// Frames up to max are decoded; larger ones, up to 16x, are read and
	// discarded (memory stays bounded) and get a TOO_LARGE error while the
	// socket lives; beyond 16x gorilla closes the socket (1009).
	wc.c.SetReadLimit(16 * max)
	_ = wc.c.SetReadDeadline(time.Now().Add(wait))
	wc.c.SetPongHandler(func(string) error { return wc.c.SetReadDeadline(time.Now().Add(wait)) })
	for {
		// Wait for a free slot before reading the next frame, so a burst
		// is served MaxInFlight requests at a time; the client's frames
		// wait in the connection meanwhile (back-pressure)...
		select {
		case wc.slots <- struct{}{}:
		case <-wc.done:
			return
		}
		<-wc.slots
		// and for the send queue to be mostly empty, so the running
		// requests' frames fit in it while the client reads.
		for len(wc.send) > cap(wc.send)/4 {
			select {
			case <-wc.drained:
			case <-wc.done:
				return
			}
		}
		_ = wc.c.SetReadDeadline(time.Now().Add(wait))
		typ, rd, err := wc.c.NextReader()
		if err != nil {
			return
		}
		data, err := io.ReadAll(io.LimitReader(rd, max+1))
		if err != nil {
			return
		}
		_ = wc.c.SetReadDeadline(time.Now().Add(wait))
		if int64(len(data)) > max {
			if _, err := io.Copy(io.Discard, rd); err != nil {
				return
			}
			id := ""
			if m := frameIDRe.FindSubmatch(data); m != nil {
				id = string(m[1])
			}
			wc.sendFrame(errorFrame(id, kgagent.Errorf(kgagent.ETOOLARGE, "frame is over %d bytes", max)))
			continue
		}
		if typ != websocket.TextMessage {
			wc.sendFrame(errorFrame("", kgagent.Errorf(kgagent.EUNSUPPORTED, "send JSON text frames")))
			continue
		}
		wc.handle(data)
	}
}

// streamKey is the key of stream id of this socket's caller: its owner and
// the id, or for an anonymous caller the stream's resume token and the id.
func (wc *wsConn) streamKey(id, token string) string {
	if o := wc.p.owner(); o != "" {
		return "o:" + o + "\x00" + id
	}
	return "t:" + token + "\x00" + id
}

func (wc *wsConn) attach(st Stream) {
	wc.mu.Lock()
	wc.attached = append(wc.attached, st)
	if len(wc.attached) > 4*wc.s.cfg.MaxInFlight {
		wc.attached = slices.DeleteFunc(wc.attached, func(x Stream) bool { return x.Done() })
	}
	wc.mu.Unlock()
}

// handle runs one frame from the client.
func (wc *wsConn) handle(data []byte) {
	s := wc.s
	f, err := DecodeSocketRequest(data)
	if err != nil {
		wc.sendFrame(errorFrame(f.ID, err))
		return
	}
	if f.Resume != nil {
		st, err := s.streams.Get(s.ctx, wc.streamKey(f.ID, f.Resume.Token))
		if err != nil {
			wc.sendFrame(errorFrame(f.ID, kgagent.Errorf(kgagent.ENOTFOUND, "no stream %q to resume (finished streams are kept for %s; anonymous callers give its resume_token)", f.ID, s.cfg.RetainStreams)))
			return
		}
		if err := st.Attach(wc.subID, f.Resume.LastSeq, wc.enqueue); err != nil {
			wc.sendFrame(errorFrame(f.ID, err))
			return
		}
		wc.attach(st)
		return
	}
	var req Request
	if err := decodeJSON(f.Request, &req); err != nil {
		wc.sendFrame(errorFrame(f.ID, err))
		return
	}
	wc.mu.Lock()
	dup := wc.ids[f.ID]
	wc.ids[f.ID] = true
	wc.mu.Unlock()
	if dup {
		wc.sendFrame(errorFrame(f.ID, kgagent.Errorf(kgagent.ECONFLICT, "a request with this id is already running")))
		return
	}
	release := func() { wc.mu.Lock(); delete(wc.ids, f.ID); wc.mu.Unlock() }
	token := newToken()
	st, err := s.streams.Start(s.ctx, wc.streamKey(f.ID, token), token)
	if err != nil {
		release()
		wc.sendFrame(errorFrame(f.ID, err))
		return
	}
	wc.slots <- struct{}{} // the reader waited for a free slot
	_ = st.Attach(wc.subID, 0, wc.enqueue)
	wc.attach(st)
	call := Call{ID: f.ID, Service: f.Service, Flow: f.Flow, Request: req, Principal: wc.p}
	ctx, cancel := s.ctx, context.CancelFunc(func() {})
	if ds, ok := st.(DurableStream); ok {
		// Recorded once admitted, so another replica can finish it;
		// stopped here if one has taken it over.
		call.admitted = func(c *Call, deadline time.Time) { s.record(ds, c, deadline) }
		ctx, cancel = withLost(ctx, ds)
	}
	go func() {
		defer func() { release(); <-wc.slots; cancel() }()
		s.Run(ctx, call, st.Append)
	}()
}
