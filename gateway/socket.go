package gateway

import (
	"context"
	"encoding/json"
	"io"
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
//	{"id":"q1","resume":{"last_seq":3}}
//
// Every response frame carries "seq" (1, 2, ... per id). A client that loses
// its socket reconnects and sends a resume with the id and the last seq it
// saw; it gets the frames after it, then the rest as they come. Frames are
// kept for Config.RetainStreams after the last one, and requests keep running
// when their socket goes away (up to Config.RequestTimeout), so they can be
// resumed. Ids must be unique per client (per API key when auth is on).
type SocketRequest struct {
	ID      string          `json:"id"`
	Service string          `json:"service,omitempty"`
	Flow    string          `json:"flow,omitempty"`
	Request json.RawMessage `json:"request,omitempty"`
	Resume  *Resume         `json:"resume,omitempty"`
}

// Resume asks for the frames of a request after LastSeq.
type Resume struct {
	LastSeq int64 `json:"last_seq"`
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
	p        *principal
	send     chan []byte
	done     chan struct{}
	once     sync.Once
	subID    uint64
	mu       sync.Mutex
	running  int
	attached []*stream
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
	wc := &wsConn{s: s, c: c, p: principalFrom(r.Context()), send: make(chan []byte, s.cfg.SendBuffer), done: make(chan struct{}), subID: subIDs.Add(1)}
	go wc.writer()
	wc.reader()
}

// close cuts the connection off once; requests keep running detached.
func (wc *wsConn) close() {
	wc.once.Do(func() {
		close(wc.done)
		_ = wc.c.Close()
		wc.mu.Lock()
		for _, st := range wc.attached {
			st.detach(wc.subID)
		}
		wc.attached = nil
		wc.mu.Unlock()
	})
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
		go wc.close()
		return false
	}
}

func (wc *wsConn) sendFrame(f Frame) {
	data, _ := json.Marshal(f)
	wc.enqueue(data)
}

func (wc *wsConn) writer() {
	ping := time.NewTicker(wc.s.cfg.PingInterval)
	defer ping.Stop()
	defer wc.close()
	for {
		select {
		case <-wc.done:
			return
		case data := <-wc.send:
			_ = wc.c.SetWriteDeadline(time.Now().Add(wc.s.cfg.WriteTimeout))
			if err := wc.c.WriteMessage(websocket.TextMessage, data); err != nil {
				return
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
	defer wc.close()
	wait := 2 * wc.s.cfg.PingInterval
	max := wc.s.cfg.MaxFrameBytes
	// Frames up to max are decoded; larger ones, up to 16x, are read and
	// discarded (memory stays bounded) and get a TOO_LARGE error while the
	// socket lives; beyond 16x gorilla closes the socket (1009).
	wc.c.SetReadLimit(16 * max)
	_ = wc.c.SetReadDeadline(time.Now().Add(wait))
	wc.c.SetPongHandler(func(string) error { return wc.c.SetReadDeadline(time.Now().Add(wait)) })
	for {
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

func (wc *wsConn) streamKey(id string) string {
	owner := ""
	if wc.p.key != nil {
		owner = "k:" + wc.p.key.Name
	} else if wc.p.caller.UserID != "" {
		owner = "u:" + wc.p.caller.UserID
	}
	return owner + "\x00" + id
}

func (wc *wsConn) attach(st *stream) {
	wc.mu.Lock()
	wc.attached = append(wc.attached, st)
	if len(wc.attached) > 4*wc.s.cfg.MaxInFlight {
		wc.attached = slices.DeleteFunc(wc.attached, func(x *stream) bool { x.mu.Lock(); defer x.mu.Unlock(); return x.done })
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
	key := wc.streamKey(f.ID)
	if f.Resume != nil {
		st := s.streams.get(key)
		if st == nil {
			wc.sendFrame(errorFrame(f.ID, kgagent.Errorf(kgagent.ENOTFOUND, "no stream %q to resume (finished streams are kept for %s)", f.ID, s.cfg.RetainStreams)))
			return
		}
		if err := st.attach(wc.subID, f.Resume.LastSeq, wc.enqueue); err != nil {
			wc.sendFrame(errorFrame(f.ID, err))
			return
		}
		wc.attach(st)
		return
	}
	req, err := DecodeRequest(f.Service, f.Request)
	if err == nil {
		err = s.checkFlow(f.Flow)
	}
	if err == nil {
		req.Collection, err = wc.p.collection(req.Collection)
	}
	if err == nil {
		err = s.checkSession(context.WithValue(context.Background(), ctxPrincipal, wc.p), req.SessionID)
	}
	if err != nil {
		wc.sendFrame(errorFrame(f.ID, err))
		return
	}
	wc.mu.Lock()
	over := wc.running >= s.cfg.MaxInFlight
	if !over {
		wc.running++
	}
	wc.mu.Unlock()
	if over {
		wc.sendFrame(errorFrame(f.ID, kgagent.Errorf(kgagent.ERATELIMIT, "more than %d requests in flight on this socket", s.cfg.MaxInFlight)))
		return
	}
	release := func() { wc.mu.Lock(); wc.running--; wc.mu.Unlock() }
	if err := s.auth.charge(wc.p); err != nil {
		release()
		wc.sendFrame(errorFrame(f.ID, err))
		return
	}
	st, err := s.streams.start(key)
	if err != nil {
		release()
		wc.sendFrame(errorFrame(f.ID, err))
		return
	}
	_ = st.attach(wc.subID, 0, wc.enqueue)
	wc.attach(st)
	call := Call{ID: f.ID, Service: f.Service, Flow: f.Flow, Request: req, Caller: wc.p.caller}
	go func() {
		defer release()
		s.Run(s.ctx, call, st.append)
	}()
}
