package natskv

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kgagent/kgagent/internal/natscluster"
)

// TestStreamNeverShrinks: a process whose connection knows one server of
// the three-node cluster (as one does that connected while the cluster was
// still forming, before the servers announced each other) counts one
// replica, yet its create-or-update keeps the three replicas the stream
// already has. Before, such a process turned the job stream into R1 (seen in
// a make test run of TestFaultNATSNodeKilledUnderLoad).
func TestStreamNeverShrinks(t *testing.T) {
	urls := natscluster.Shared(t)
	ctx := context.Background()
	nc, err := nats.Connect(strings.Join(urls, ","))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	name := strings.ReplaceAll("SHRINK_"+time.Now().Format("150405.000000000"), ".", "_")
	cfg := jetstream.StreamConfig{Name: name, Subjects: []string{"kgagent.test." + name}}
	if err := Stream(ctx, nc, cfg, "test"); err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), name) })
	replicas := func() int {
		t.Helper()
		info, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return info.CachedInfo().Config.Replicas
	}
	if r := replicas(); r != 3 {
		t.Fatalf("created with %d replicas on a 3-node cluster, want 3", r)
	}

	one, err := nats.Connect(urls[0], nats.IgnoreDiscoveredServers())
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	saved := discoveryWait
	discoveryWait = 300 * time.Millisecond
	defer func() { discoveryWait = saved }()
	if got := Replicas(ctx, one); got != 1 {
		t.Fatalf("a connection that knows %v counts %d replicas; the test needs one that counts 1", one.Servers(), got)
	}
	cfg.MaxMsgs = 1000 // an update, as a newer version of kgagent would make
	if err := Stream(ctx, one, cfg, "test"); err != nil {
		t.Fatal(err)
	}
	if r := replicas(); r != 3 {
		t.Errorf("after an update from a connection that counted 1 server: %d replicas, want 3", r)
	}
}
