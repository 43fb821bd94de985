package natsjobs

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/internal/poll"
)

func startNATS(t *testing.T, dir string) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	return s
}

func connect(t *testing.T, s *server.Server, cfg Config) (*nats.Conn, *Queue) {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL(), nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	q, err := New(context.Background(), nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return nc, q
}

func waitState(t *testing.T, q *Queue, id string, want crawler.JobState) crawler.JobStatus {
	t.Helper()
	return waitStateLong(t, q, id, want, 20*time.Second)
}

func site(t *testing.T) string {
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Join("..", "..", "testdata", "site"))))
	t.Cleanup(srv.Close)
	return srv.URL
}

func ingester() *crawler.Ingester {
	return crawler.NewIngester(crawler.IngesterConfig{Crawler: crawler.Config{AllowPrivate: true}})
}

func TestSubmitRunGetList(t *testing.T) {
	s := startNATS(t, t.TempDir())
	defer s.Shutdown()
	_, q := connect(t, s, Config{StatusInterval: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	workerDone := make(chan error, 1)
	go func() { workerDone <- q.Run(ctx, ingester()) }()

	url := site(t)
	st, err := q.Submit(ctx, crawler.Spec{Collection: "lumen", URLs: []string{url + "/*"}, BearerToken: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	if st.State != crawler.JobQueued || st.ID == "" || st.Spec.BearerToken != "REDACTED" {
		t.Fatalf("submitted %+v", st)
	}
	done := waitState(t, q, st.ID, crawler.JobSucceeded)
	if done.Counters.Indexed < 30 || done.Counters.Failed != 0 || done.PagesPerS <= 0 || done.StartedAt == nil || done.FinishedAt == nil {
		t.Errorf("finished job %+v", done)
	}
	if done.Spec.BearerToken != "REDACTED" {
		t.Error("token leaked through Get")
	}
	list, err := q.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != st.ID {
		t.Errorf("List = %+v, %v", list, err)
	}
	cancel()
	select {
	case err := <-workerDone:
		if err != nil {
			t.Errorf("worker: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("worker did not stop")
	}
}

func TestBadInput(t *testing.T) {
	s := startNATS(t, t.TempDir())
	defer s.Shutdown()
	_, q := connect(t, s, Config{})
	ctx := context.Background()
	tests := []struct {
		name string
		spec crawler.Spec
	}{
		{"no urls", crawler.Spec{}},
		{"bad exclude", crawler.Spec{URLs: []string{"http://h/*"}, Exclude: []string{""}}},
		{"negative max pages", crawler.Spec{URLs: []string{"http://h/*"}, MaxPages: -1}},
	}
	for _, tt := range tests {
		if _, err := q.Submit(ctx, tt.spec); kgagent.ErrorCode(err) != kgagent.EINVALID {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	if list, _ := q.List(ctx); len(list) != 0 {
		t.Errorf("rejected specs were stored: %+v", list)
	}
	for _, id := range []string{"nope", "00000000-0000-0000-0000-000000000000", "../../etc"} {
		if _, err := q.Get(ctx, id); kgagent.ErrorCode(err) != kgagent.ENOTFOUND {
			t.Errorf("Get(%q) = %v", id, err)
		}
	}
}

// blockingRunner blocks until its context ends.
type blockingRunner struct{ started chan string }

func (b blockingRunner) Run(ctx context.Context, spec crawler.Spec, progress func(crawler.Counters)) (crawler.Report, error) {
	b.started <- spec.Collection
	progress(crawler.Counters{Queued: 1})
	<-ctx.Done()
	return crawler.Report{}, kgagent.WrapError(kgagent.ECANCELED, ctx.Err(), "canceled")
}

func TestJobSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{AckWait: 2 * time.Second, StatusInterval: 50 * time.Millisecond}
	s := startNATS(t, dir)
	_, q := connect(t, s, cfg)
	url := site(t)
	st, err := q.Submit(context.Background(), crawler.Spec{Collection: "lumen", URLs: []string{url + "/*"}})
	if err != nil {
		t.Fatal(err)
	}
	// The first worker starts the job and then the whole server goes away,
	// as in a crash: the message is never acknowledged.
	started := make(chan string, 1)
	ctx1, cancel1 := context.WithCancel(context.Background())
	w1 := make(chan struct{})
	go func() { q.Run(ctx1, blockingRunner{started}); close(w1) }()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("job did not start")
	}
	waitState(t, q, st.ID, crawler.JobRunning)
	s.Shutdown()
	cancel1()
	<-w1

	// A new server on the same store, a new process's queue and worker.
	s2 := startNATS(t, dir)
	defer s2.Shutdown()
	_, q2 := connect(t, s2, cfg)
	if got, err := q2.Get(context.Background(), st.ID); err != nil || got.State != crawler.JobRunning {
		t.Fatalf("after restart: %+v %v", got, err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	go q2.Run(ctx2, ingester())
	done := waitState(t, q2, st.ID, crawler.JobSucceeded)
	if done.Counters.Indexed < 30 || done.Message == "" {
		t.Errorf("resumed job: %+v", done)
	}
}

func TestCancel(t *testing.T) {
	s := startNATS(t, t.TempDir())
	defer s.Shutdown()
	_, q := connect(t, s, Config{StatusInterval: 20 * time.Millisecond})
	ctx := context.Background()
	wctx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	started := make(chan string, 1)
	workerDone := make(chan struct{})
	go func() { q.Run(wctx, blockingRunner{started}); close(workerDone) }()
	st, err := q.Submit(ctx, crawler.Spec{URLs: []string{"http://example.invalid/*"}})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	// Progress reaches the status while the job runs.
	poll.Until(t, 10*time.Second, func() error {
		cur, err := q.Get(ctx, st.ID)
		if err == nil && (cur.State != crawler.JobRunning || cur.Counters.Queued != 1) {
			err = fmt.Errorf("running status without progress: %+v", cur)
		}
		return err
	})
	if _, err := q.Cancel(ctx, st.ID); err != nil {
		t.Fatal(err)
	}
	got := waitState(t, q, st.ID, crawler.JobCanceled)
	if got.FinishedAt == nil {
		t.Errorf("canceled job: %+v", got)
	}
	// A job canceled while queued never runs. The worker is stopped while
	// the job is submitted and canceled (else it may take the job first),
	// and a fresh one started afterwards.
	stopWorker()
	<-workerDone
	var ran atomic.Bool
	st2, _ := q.Submit(ctx, crawler.Spec{URLs: []string{"http://example.invalid/x"}})
	if _, err := q.Cancel(ctx, st2.ID); err != nil {
		t.Fatal(err)
	}
	wctx2, stopWorker2 := context.WithCancel(ctx)
	defer stopWorker2()
	go q.Run(wctx2, blockingRunner{started})
	select {
	case <-started:
		ran.Store(true)
	case <-time.After(300 * time.Millisecond):
	}
	if ran.Load() {
		t.Error("a canceled queued job ran")
	}
	if _, err := q.Cancel(ctx, "00000000-0000-0000-0000-000000000000"); kgagent.ErrorCode(err) != kgagent.ENOTFOUND {
		t.Errorf("cancel unknown: %v", err)
	}
}

func TestGracefulShutdownHandsJobBack(t *testing.T) {
	s := startNATS(t, t.TempDir())
	defer s.Shutdown()
	cfg := Config{StatusInterval: 20 * time.Millisecond} // default AckWait: 60s
	_, q := connect(t, s, cfg)
	st, err := q.Submit(context.Background(), crawler.Spec{Collection: "lumen", URLs: []string{site(t) + "/faq.html"}})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan string, 1)
	ctx1, cancel1 := context.WithCancel(context.Background())
	w1 := make(chan struct{})
	go func() { q.Run(ctx1, blockingRunner{started}); close(w1) }()
	<-started
	cancel1() // graceful stop: the job is handed back at once, not after AckWait
	<-w1
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	go q.Run(ctx2, ingester())
	start := time.Now()
	done := waitState(t, q, st.ID, crawler.JobSucceeded)
	if done.Counters.Indexed != 1 || time.Since(start) > 30*time.Second {
		t.Errorf("handed-back job: %+v after %s", done, time.Since(start))
	}
}
