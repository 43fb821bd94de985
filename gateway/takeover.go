package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/llm"
)

// durableRun is what a durable stream records of its request: the call as
// admitted (collection resolved, caller set) and its deadline.
type durableRun struct {
	ID       string       `json:"id"`
	Service  string       `json:"service"`
	Flow     string       `json:"flow,omitempty"`
	Request  Request      `json:"request"`
	Caller   agent.Caller `json:"caller"`
	Deadline time.Time    `json:"deadline"`
}

// record stores the admitted call c beside its stream, so another replica
// can finish it if this one dies, and gives c a journal of the model's
// outputs kept with the stream. Calls with a session are not recorded:
// sessions are kept by the replica that has them, so such a stream ends
// with UNAVAILABLE when its replica dies (the client asks again).
func (s *Server) record(ds DurableStream, c *Call, deadline time.Time) {
	if c.Request.SessionID != "" {
		return
	}
	b, err := json.Marshal(durableRun{ID: c.ID, Service: c.Service, Flow: c.Flow, Request: c.Request, Caller: c.Caller, Deadline: deadline})
	if err == nil {
		err = ds.Record(b)
	}
	if err != nil {
		s.log.Warn("could not record a resumable stream's request: no other replica can finish it", "request_id", c.ID, "error", err)
		return
	}
	c.journal = s.newJournal(ds, c.ID, nil)
}

// streamJournal is the journal.Journal of a durable stream: each model output is
// one note of the stream, and a replica continuing the stream replays the
// notes it was given, so a model that samples gives the same steps again.
type streamJournal struct {
	s   *Server
	ds  DurableStream
	id  string
	mu  sync.Mutex
	out map[int][]llm.Delta
}

// journalNote is one model output as a stream note.
type journalNote struct {
	N   int         `json:"n"`
	Out []llm.Delta `json:"out"`
}

func (s *Server) newJournal(ds DurableStream, id string, notes [][]byte) *streamJournal {
	j := &streamJournal{s: s, ds: ds, id: id, out: map[int][]llm.Delta{}}
	for _, b := range notes {
		var n journalNote
		if json.Unmarshal(b, &n) != nil {
			continue
		}
		if _, ok := j.out[n.N]; !ok {
			j.out[n.N] = n.Out
		}
	}
	return j
}

func (j *streamJournal) Output(n int) ([]llm.Delta, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	out, ok := j.out[n]
	return out, ok
}

// Record writes the output as a note; a note not written only means that
// a replica continuing the stream asks the model again.
func (j *streamJournal) Record(n int, out []llm.Delta) {
	j.mu.Lock()
	_, had := j.out[n]
	if !had {
		j.out[n] = out
	}
	j.mu.Unlock()
	if had {
		return
	}
	b, err := json.Marshal(journalNote{N: n, Out: out})
	if err == nil {
		err = j.ds.Note(b)
	}
	if err != nil {
		j.s.log.Warn("could not keep a model output with its stream", "request_id", j.id, "error", err)
	}
}

// withLost returns ctx, canceled also when another replica takes ds over.
func withLost(parent context.Context, ds DurableStream) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-ds.Lost():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// takeover continues a stream whose replica died (see DurableStreams): it
// runs the recorded request again — admitted once, on the replica that
// started it: not authenticated, checked or charged again — until its
// recorded deadline, replaying the model outputs kept with the stream
// (journal), and holds each frame up to the stored ones against the
// stored frame of that seq: equal ones are not written again, the frames
// after them are appended, numbered after the stored ones. A client
// resuming with its last seq thus gets every remaining event once, in
// order, ending with the answer. Funcs run again (the built-in ones read
// the same data and give the same observations); the model's finished
// calls are replayed, so only a call cut by the replica's death is asked
// again: the built-in model and deterministic ones answer it the same way.
// A re-run that differs from what was stored (a sampling LLM whose answer
// was streaming, data changed meanwhile) is stopped at the first frame
// that differs and the stream ends with UNAVAILABLE: the client asks again.
func (s *Server) takeover(t Takeover) {
	var r durableRun
	if err := json.Unmarshal(t.Run, &r); err != nil {
		s.log.Error("a stream taken over has an unreadable request record", "error", err)
		t.Stream.Append(errorFrame("", kgagent.Errorf(kgagent.EUNAVAILABLE, "the replica running this request stopped before it finished; ask again")))
		return
	}
	s.log.Info("continuing a stream whose replica stopped", "request_id", r.ID, "service", r.Service, "stored_frames", len(t.Frames))
	ctx, cancel := context.WithDeadline(s.ctx, r.Deadline)
	defer cancel()
	ctx, cancelLost := withLost(ctx, t.Stream)
	defer cancelLost()
	n, diverged := 0, false
	send := func(f Frame) {
		if diverged {
			return
		}
		n++
		if n > len(t.Frames) {
			t.Stream.Append(f)
			return
		}
		f.Seq = int64(n)
		if n == 1 {
			f.ResumeToken = t.Stream.Token()
		}
		if b, err := json.Marshal(f); err == nil && bytes.Equal(b, t.Frames[n-1]) {
			return
		}
		diverged = true
		cancel()
		s.log.Warn("a stream taken over could not be continued: the request run again differs from the stored frames", "request_id", r.ID, "seq", n)
		t.Stream.Append(errorFrame(r.ID, kgagent.Errorf(kgagent.EUNAVAILABLE,
			"the replica running this request stopped; run again on another replica, the request did not give the same events (from seq %d); ask again", n)))
	}
	s.Run(ctx, Call{ID: r.ID, Service: r.Service, Flow: r.Flow, Request: r.Request, Caller: r.Caller,
		journal: s.newJournal(t.Stream, r.ID, t.Notes), recorded: true}, send)
}
