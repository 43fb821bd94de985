package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/minilm"
	"github.com/kgagent/kgagent/corpus/sqlite"
	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/internal/poll"
)

// TestLazySemanticLoadsOnce: the lazy model loads nothing until asked,
// then once for any number of concurrent callers; a failed load is logged
// once, its Name is "" and Embed returns the error.
func TestLazySemanticLoadsOnce(t *testing.T) {
	var loads atomic.Int64
	var logs bytes.Buffer
	fail := errors.New("weights corrupt")
	l := &lazySemantic{log: slog.New(slog.NewTextHandler(&logs, nil)), load: func() (*minilm.Embedder, error) {
		loads.Add(1)
		return nil, fail
	}}
	if loads.Load() != 0 || l.loaded() {
		t.Fatal("loaded before first use")
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if n := l.Name(); n != "" {
				t.Errorf("Name after a failed load: %q, want \"\"", n)
			}
		}()
	}
	wg.Wait()
	if _, err := l.Embed(context.Background(), []string{"x"}); !errors.Is(err, fail) {
		t.Fatalf("Embed after a failed load: %v, want the load's error", err)
	}
	if _, err := l.EmbedWorkers(context.Background(), []string{"x"}, 1); !errors.Is(err, fail) {
		t.Fatalf("EmbedWorkers after a failed load: %v", err)
	}
	if loads.Load() != 1 || l.loaded() || l.Dimension() != 0 {
		t.Fatalf("%d loads (loaded %v), want 1 that failed", loads.Load(), l.loaded())
	}
	if n := strings.Count(logs.String(), "failed to load"); n != 1 {
		t.Fatalf("the failure logged %d times: %s", n, logs.String())
	}
}

// TestLazySemanticHonoursContext: a search whose context ends while the
// model loads gets the context's error at once, not after the load; the
// load goes on and the next caller gets the model's answer.
func TestLazySemanticHonoursContext(t *testing.T) {
	release := make(chan struct{})
	fail := errors.New("weights corrupt")
	l := &lazySemantic{log: slog.New(slog.NewTextHandler(io.Discard, nil)), load: func() (*minilm.Embedder, error) {
		<-release
		return nil, fail
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := l.Embed(ctx, []string{"x"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Embed while loading, deadline passed: %v, want the deadline", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Embed waited %v for a load its deadline did not allow", took)
	}
	close(release)
	if _, err := l.Embed(context.Background(), []string{"x"}); !errors.Is(err, fail) {
		t.Fatalf("Embed after the load ended: %v, want the load's error", err)
	}
}

// TestSemanticPassWaitsForIngests: the background pass's Yield waits while
// an ingest runs in the process (the demo's, a job's), so the pass never
// competes with it for the cores: under -race on a loaded box the demo's
// ingest starved behind the pass's batches. It returns once the ingest has
// ended, and when the app closes.
func TestSemanticPassWaitsForIngests(t *testing.T) {
	a := &app{warmed: make(chan struct{})}
	close(a.warmed)
	done := make(chan error, 1)
	var r countedRunner
	r.n = &a.ingests
	release := make(chan struct{})
	r.r = runnerFunc(func(ctx context.Context, _ crawler.Spec, _ func(crawler.Counters)) (crawler.Report, error) {
		<-release
		return crawler.Report{}, nil
	})
	ran := make(chan struct{})
	go func() { r.Run(context.Background(), crawler.Spec{}, nil); close(ran) }()
	poll.Until(t, 5*time.Second, func() error {
		if a.ingests.Load() != 1 {
			return fmt.Errorf("%d ingests counted", a.ingests.Load())
		}
		return nil
	})
	go func() { done <- a.yieldToRequests(context.Background()) }()
	select {
	case err := <-done:
		t.Fatalf("the pass went on while an ingest ran: %v", err)
	case <-time.After(3 * ingestPoll):
	}
	close(release)
	<-ran
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pass still waits after the ingest ended")
	}
	a.ingests.Add(1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- a.yieldToRequests(ctx) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("closing while an ingest runs: %v", err)
	}
}

// runnerFunc is a natsjobs.Runner from a func.
type runnerFunc func(context.Context, crawler.Spec, func(crawler.Counters)) (crawler.Report, error)

// Run calls f.
func (f runnerFunc) Run(ctx context.Context, spec crawler.Spec, progress func(crawler.Counters)) (crawler.Report, error) {
	return f(ctx, spec, progress)
}

// TestLazySemanticSearchHonoursContext: the searches' own paths to the
// model (a request's query memo keys by the embedder's name; SemanticQuery
// looks up the vectors of its model by name) wait for the load only as
// long as their context lets them: lazySemantic.Name loads under no
// context, so both waited for the whole load. A failed load leaves the
// search lexical, as before.
func TestLazySemanticSearchHonoursContext(t *testing.T) {
	release := make(chan struct{})
	l := &lazySemantic{log: slog.New(slog.NewTextHandler(io.Discard, nil)), load: func() (*minilm.Embedder, error) {
		<-release
		return nil, errors.New("weights corrupt")
	}}
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	x, err := sqlite.Open(sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	url := "https://x/a"
	text := "zebra stripes"
	if err := x.ReplaceDocument(t.Context(), "c", url, []kgagent.Chunk{{ID: corpus.ChunkID("c", url, 0), Collection: "c", DocURL: url, URL: url, Title: "t", Text: text, Hash: text}}, [][]float32{{1, 0}}); err != nil {
		t.Fatal(err)
	}
	svc, err := corpus.NewService(corpus.ServiceConfig{Index: x, Semantic: l})
	if err != nil {
		t.Fatal(err)
	}
	todo, err := svc.SemanticMissing(t.Context(), "other-model", 0, 10)
	if err != nil || len(todo) != 1 {
		t.Fatalf("SemanticMissing: %v, %v", todo, err)
	}
	if err := svc.PutSemantic(t.Context(), "other-model", []corpus.SemanticVector{{Key: todo[0].Key, Vector: []float32{0.6, 0.8}}}); err != nil {
		t.Fatal(err)
	}
	for name, search := range map[string]func(ctx context.Context) error{
		"query memo": func(ctx context.Context) error {
			_, err := corpus.EmbedQueries(corpus.WithQueryMemo(ctx), l, []string{"zebra"})
			return err
		},
		"SemanticQuery": func(ctx context.Context) error {
			return svc.SemanticQuery(ctx, &corpus.Query{Collection: "c", Text: "zebra"})
		},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		got := make(chan error, 1)
		go func() { got <- search(ctx) }()
		select {
		case err := <-got:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s while the model loads, deadline passed: %v, want the deadline", name, err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s waited past its deadline for the model's load", name)
		}
		cancel()
	}
	close(release)
	if err := svc.SemanticQuery(t.Context(), &corpus.Query{Collection: "c", Text: "zebra"}); err != nil {
		t.Errorf("SemanticQuery after a failed load: %v, want the search left lexical", err)
	}
}

// blockingEmbedder embeds nothing until its context ends (a model still
// loading).
type blockingEmbedder struct{}

func (blockingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (blockingEmbedder) Dimension() int { return 384 }
func (blockingEmbedder) Name() string   { return "blocking" }

// TestAnswerEmbedHonoursTheRequest: the answerer's word embeddings end
// with the request's context, not after their own fixed bound. Before,
// they ran under context.Background with a 5 s timeout: a request with a
// 50 ms deadline waited 5 s.
func TestAnswerEmbedHonoursTheRequest(t *testing.T) {
	embed := answerEmbed(blockingEmbedder{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := embed(ctx, []string{"upgrade"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the request's deadline", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("embed returned after %v, want soon after the request's 50 ms deadline", d)
	}
	if answerEmbed(nil) != nil {
		t.Error("answerEmbed(nil) is not nil")
	}
}
