package natsjobs

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/internal/natscluster"
	"github.com/kgagent/kgagent/internal/natskv"
	"github.com/kgagent/kgagent/internal/poll"
)

// TestReplicatedOnCluster: on the three-node cluster make test starts, the
// job stream and the status bucket are created with three replicas; on a
// single server with one.
func TestReplicatedOnCluster(t *testing.T) {
	urls := natscluster.Shared(t)
	nc, err := nats.Connect(strings.Join(urls, ","))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got := natskv.Replicas(context.Background(), nc); got != 3 {
		t.Fatalf("Replicas on a 3-node cluster = %d (servers %v, cluster %q)", got, nc.Servers(), nc.ConnectedClusterName())
	}
	name := "R3TEST_" + strings.ReplaceAll(t.Name(), "/", "_") + "_" + time.Now().Format("150405.000000000")
	name = strings.ReplaceAll(name, ".", "_")
	cfg := Config{Stream: name, Subject: "kgagent.test." + name, Consumer: name, Bucket: name}
	ctx := context.Background()
	if _, err := New(ctx, nc, cfg); err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	t.Cleanup(func() {
		_ = js.DeleteStream(context.Background(), name)
		_ = js.DeleteKeyValue(context.Background(), name)
	})
	st, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if r := st.CachedInfo().Config.Replicas; r != 3 {
		t.Errorf("job stream replicas = %d, want 3", r)
	}
	kv, err := js.KeyValue(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := ks.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas; r != 3 {
		t.Errorf("status bucket replicas = %d, want 3", r)
	}

	s := startNATS(t, t.TempDir())
	defer s.Shutdown()
	single, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	if got := natskv.Replicas(context.Background(), single); got != 1 {
		t.Errorf("Replicas on a single server = %d", got)
	}
}

// TestFaultNATSNodeKilled: two workers on a three-node cluster of real
// nats-server processes; one node is killed with SIGKILL while a job runs.
// The running job and a job submitted after the kill both finish, and the
// status of the first is still readable (its bucket has three replicas).
func TestFaultNATSNodeKilled(t *testing.T) {
	c := natscluster.Start(t, 3)
	cfg := Config{AckWait: 5 * time.Second, StatusInterval: 50 * time.Millisecond}
	var queues []*Queue
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < 2; i++ {
		nc, err := nats.Connect(c.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		q, err := New(ctx, nc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		js, _ := jetstream.New(nc)
		if info, err := js.Stream(ctx, q.cfg.Stream); err != nil || info.CachedInfo().Config.Replicas != 3 {
			t.Fatalf("job stream on a 3-node cluster: %v, want 3 replicas (%v)", info, err)
		}
		queues = append(queues, q)
		go q.Run(ctx, slowIngester())
	}
	url := site(t)
	var st crawler.JobStatus
	// A stream just created on three nodes may not have elected its leader
	// yet: the first publish can get no response ("no response from
	// stream"); it must work soon.
	poll.Until(t, 20*time.Second, func() error {
		var err error
		st, err = queues[0].Submit(ctx, crawler.Spec{Collection: "lumen", URLs: []string{url + "/*"}})
		return err
	})
	waitStateLong(t, queues[1], st.ID, crawler.JobRunning, 60*time.Second)
	c.Kill(0)
	var st2 crawler.JobStatus
	var err error
	// Submitting may fail while the clients move off the dead node and the
	// stream elects a new leader; it must work again soon.
	poll.Until(t, 20*time.Second, func() error {
		st2, err = queues[1].Submit(ctx, crawler.Spec{Collection: "lumen2", URLs: []string{url + "/faq.html"}})
		return err
	})
	for _, id := range []string{st.ID, st2.ID} {
		done := waitStateLong(t, queues[1], id, crawler.JobSucceeded, 60*time.Second)
		// A redelivered job finds its pages unchanged (the page state is
		// shared by the worker that ran it before).
		if done.Counters.Indexed+done.Counters.Unchanged < 1 || done.Counters.Failed != 0 {
			t.Errorf("job %s after a node kill: %+v", id, done)
		}
	}
	c.Restart(0)
}

// slowIngester crawls with a delay per request, so a job runs long enough
// to be interrupted.
func slowIngester() *crawler.Ingester {
	return crawler.NewIngester(crawler.IngesterConfig{Crawler: crawler.Config{AllowPrivate: true, Parallelism: 1, Delay: 20 * time.Millisecond}})
}

// waitStateLong waits up to d for the job to reach state want.
func waitStateLong(t *testing.T, q *Queue, id string, want crawler.JobState, d time.Duration) crawler.JobStatus {
	t.Helper()
	var st crawler.JobStatus
	poll.Until(t, d, func() error {
		var err error
		st, err = q.Get(context.Background(), id)
		if err == nil && st.State != want {
			err = fmt.Errorf("job %s: state %q, want %q", id, st.State, want)
		}
		return err
	})
	return st
}
