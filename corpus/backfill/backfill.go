// Package backfill is the background pass that gives every chunk a
// semantic vector (see corpus.SemanticStore): it lists the chunks that lack
// the model's vector, embeds them in batches and commits each batch, so a
// kill loses at most the batch in flight and a restart resumes where the
// last commit left off. It logs its progress (done/total, rate, time left)
// and keeps counters for metrics; ingestion stays lexical and fast, and
// search upgrades as the vectors land.
package backfill

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// WorkerEmbedder is an embedder that can be told how many goroutines one
// call may use (corpus/minilm): the pass leaves cores to queries.
type WorkerEmbedder interface {
	EmbedWorkers(ctx context.Context, texts []string, workers int) ([][]float32, error)
}

// Loader is an embedder that loads its model on first use (serve's lazy
// semantic model), so that its Name waits for the load. The pass waits for
// the load with Load, which returns ctx's error when ctx ends first: a
// pass stopped mid-load (serve shut down in its first seconds) returns at
// once instead of holding the shutdown until the load is done.
type Loader interface {
	Load(ctx context.Context) error
}

// Config configures a Pass. Store and Embedder are required.
type Config struct {
	Store    corpus.SemanticStore
	Embedder corpus.Embedder // its Name is the model the vectors are stored under
	// Batch is how many chunks are embedded and committed together
	// (default 64).
	Batch int
	// Workers is how many goroutines embed at once when the embedder is a
	// WorkerEmbedder (default 1).
	Workers int
	// Progress is how often a running pass logs its progress (default
	// 10s).
	Progress time.Duration
	// Idle is how long a pass that found nothing to do waits before it
	// looks again, unless Kick wakes it (default 5s).
	Idle time.Duration
	// Logger receives the progress lines (default slog.Default()).
	Logger *slog.Logger
	// Yield, when set, is called before each batch (and before the first
	// scan); the pass waits until it returns, so that it embeds only in
	// the gaps between requests (serve: no call in flight for a moment).
	// Its error ends Run: nil when ctx ended, else that error.
	Yield func(ctx context.Context) error
	// Pause, when set, is the pause func of the embedding (corpus.WithPause):
	// an embedder that pauses between steps (MiniLM: before each layer)
	// waits for it mid-batch, so that a request arriving while a batch
	// runs shares the cores with one step of it, not with the whole batch.
	Pause func(ctx context.Context)
}

// Pass is the background pass. Its methods are safe for concurrent use.
type Pass struct {
	cfg Config
	// model is the embedder's Name, asked for when the pass first needs it
	// (an embedder that loads on first use then loads when the pass runs,
	// after its first Yield, not when the pass is made).
	model func() string
	kick  chan struct{}

	embedded  atomic.Int64 // chunks this pass embedded and stored
	batches   atomic.Int64 // batches committed
	nanos     atomic.Int64 // time spent embedding and storing
	done      atomic.Int64 // chunks with a vector, at the last count
	total     atomic.Int64 // chunks, at the last count
	running   atomic.Bool
	idleMu    sync.Mutex
	idleWaits []chan struct{}
}

// New checks cfg and returns a Pass. Errors: EINVALID without a store or
// an embedder.
func New(cfg Config) (*Pass, error) {
	if cfg.Store == nil || cfg.Embedder == nil {
		return nil, kgagent.Errorf(kgagent.EINVALID, "the semantic pass needs a store and an embedder")
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 64
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.Progress <= 0 {
		cfg.Progress = 10 * time.Second
	}
	if cfg.Idle <= 0 {
		cfg.Idle = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Pass{cfg: cfg, model: sync.OnceValue(cfg.Embedder.Name), kick: make(chan struct{}, 1)}, nil
}

// ErrNoModel is Run's error when the embedder has no name (a model that
// failed to load, and said why when it failed).
var ErrNoModel = errors.New("semantic pass: the semantic model is not loaded")

// Kick wakes an idle pass (new chunks were written).
func (p *Pass) Kick() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Stats are a pass's counters.
type Stats struct {
	Embedded int64         // chunks embedded and stored by this pass
	Batches  int64         // batches committed
	Busy     time.Duration // time spent embedding and storing
	Done     int64         // chunks with a vector of the model, at the last count
	Total    int64         // chunks, at the last count
	Running  bool          // the pass has work in hand (false: idle or stopped)
}

// Stats returns the pass's counters.
func (p *Pass) Stats() Stats {
	return Stats{Embedded: p.embedded.Load(), Batches: p.batches.Load(), Busy: time.Duration(p.nanos.Load()),
		Done: p.done.Load(), Total: p.total.Load(), Running: p.running.Load()}
}

// WaitIdle returns once the pass has found nothing left to embed (after
// the call), or when ctx ends.
func (p *Pass) WaitIdle(ctx context.Context) error {
	ch := make(chan struct{})
	p.idleMu.Lock()
	p.idleWaits = append(p.idleWaits, ch)
	p.idleMu.Unlock()
	p.Kick()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run embeds until ctx ends: every chunk that lacks a vector, then, idle,
// whatever is written later. It returns nil when ctx ends, or the store's
// or embedder's error. untilIdle makes it return once nothing is left.
func (p *Pass) Run(ctx context.Context, untilIdle bool) error {
	var after int64
	start, lastLog := time.Now(), time.Now()
	startEmbedded := p.embedded.Load()
	logged := false // the "all embedded" line was said for this idle spell
	waiting := 0    // waiters registered before the current full scan began
	for {
		if ctx.Err() != nil {
			return nil
		}
		if y := p.cfg.Yield; y != nil {
			if err := y(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
		if after == 0 {
			waiting = p.waiters()
		}
		if l, ok := p.cfg.Embedder.(Loader); ok && l.Load(ctx) != nil && ctx.Err() != nil {
			return nil // stopped while the model loads
		}
		if p.model() == "" {
			// A model that failed to load (it said why) has no name:
			// there is nothing to store vectors under, so the pass ends.
			return ErrNoModel
		}
		todo, err := p.cfg.Store.SemanticMissing(ctx, p.model(), after, p.cfg.Batch)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if len(todo) == 0 && after > 0 {
			after = 0 // chunks written below the cursor since it passed
			continue
		}
		if len(todo) == 0 {
			p.running.Store(false)
			if err := p.count(ctx); err != nil && ctx.Err() == nil {
				return err
			}
			if !logged && p.embedded.Load() > startEmbedded {
				s := p.Stats()
				p.cfg.Logger.Info("semantic vectors: all chunks embedded", "model", p.model(), "chunks", s.Total,
					"embedded", s.Embedded-startEmbedded, "seconds", time.Since(start).Seconds())
			}
			logged = true
			p.wakeIdle(waiting)
			if untilIdle {
				return nil
			}
			select {
			case <-ctx.Done():
				return nil
			case <-p.kick:
			case <-time.After(p.cfg.Idle):
			}
			continue
		}
		if logged {
			logged, start, lastLog, startEmbedded = false, time.Now(), time.Now(), p.embedded.Load()
		}
		p.running.Store(true)
		if err := p.batch(ctx, todo); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		after = todo[len(todo)-1].Key
		if time.Since(lastLog) >= p.cfg.Progress {
			lastLog = time.Now()
			p.logProgress(ctx, start, startEmbedded)
		}
	}
}

// batch embeds and stores one batch.
func (p *Pass) batch(ctx context.Context, todo []corpus.SemanticTodo) error {
	t0 := time.Now()
	texts := make([]string, len(todo))
	for i, t := range todo {
		texts[i] = t.Text
	}
	var vecs [][]float32
	var err error
	ctx = corpus.WithPause(ctx, p.cfg.Pause)
	if we, ok := p.cfg.Embedder.(WorkerEmbedder); ok {
		vecs, err = we.EmbedWorkers(ctx, texts, p.cfg.Workers)
	} else {
		vecs, err = p.cfg.Embedder.Embed(ctx, texts)
	}
	if err != nil {
		return err
	}
	if len(vecs) != len(todo) {
		return kgagent.Errorf(kgagent.EINTERNAL, "embedder returned %d vectors for %d texts", len(vecs), len(todo))
	}
	out := make([]corpus.SemanticVector, len(todo))
	for i, t := range todo {
		out[i] = corpus.SemanticVector{Key: t.Key, Vector: vecs[i]}
	}
	if err := p.cfg.Store.PutSemantic(ctx, p.model(), out); err != nil {
		return err
	}
	p.embedded.Add(int64(len(todo)))
	p.batches.Add(1)
	p.done.Add(int64(len(todo)))
	p.nanos.Add(int64(time.Since(t0)))
	return nil
}

// count refreshes done and total from the store.
func (p *Pass) count(ctx context.Context) error {
	done, total, err := p.cfg.Store.SemanticProgress(ctx, p.model())
	if err != nil {
		return err
	}
	p.done.Store(int64(done))
	p.total.Store(int64(total))
	return nil
}

// logProgress logs done/total, the rate since start and the time left.
func (p *Pass) logProgress(ctx context.Context, start time.Time, startEmbedded int64) {
	if err := p.count(ctx); err != nil {
		return
	}
	s := p.Stats()
	rate := float64(s.Embedded-startEmbedded) / time.Since(start).Seconds()
	args := []any{"model", p.model(), "done", s.Done, "total", s.Total, "chunks_per_s", float64(int(rate*10)) / 10}
	if rate > 0 && s.Total > s.Done {
		args = append(args, "eta", (time.Duration(float64(s.Total-s.Done)/rate) * time.Second).String())
	}
	p.cfg.Logger.Info("semantic vectors", args...)
}

// waiters is how many WaitIdle calls are waiting now.
func (p *Pass) waiters() int {
	p.idleMu.Lock()
	defer p.idleMu.Unlock()
	return len(p.idleWaits)
}

// wakeIdle releases the first n waiters: those registered before the scan
// that found nothing began. A waiter registered during that scan may have
// written chunks the scan did not see; it waits for the next one (its
// Kick wakes the pass).
func (p *Pass) wakeIdle(n int) {
	p.idleMu.Lock()
	defer p.idleMu.Unlock()
	for _, ch := range p.idleWaits[:n] {
		close(ch)
	}
	p.idleWaits = append(p.idleWaits[:0:0], p.idleWaits[n:]...)
}
