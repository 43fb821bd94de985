// Package natscluster starts clusters of real nats-server processes for
// tests: each node is a separate process on loopback ports, so a test can
// kill one with SIGKILL and start it again on the same ports and data.
//
// The nats-server binary is the one deploy/natscluster/start.sh builds from
// the Go module proxy (make test exports its path as
// KGAGENT_TEST_NATS_SERVER). Without it, Start skips the test, or fails it
// when KGAGENT_REQUIRE_NATS_CLUSTER=1.
package natscluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kgagent/kgagent/internal/testdep"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Cluster is a running cluster of nats-server processes.
type Cluster struct {
	t     testing.TB
	bin   string
	dir   string
	nodes []*node
}

type node struct {
	name                  string
	client, route, health int
	conf                  string
	cmd                   *exec.Cmd
	exited                chan struct{}
}

// Binary returns the nats-server binary named by KGAGENT_TEST_NATS_SERVER,
// skipping t (or failing it when KGAGENT_REQUIRE_NATS_CLUSTER=1) when there
// is none.
func Binary(t testing.TB) string {
	t.Helper()
	return testdep.Env(t, "KGAGENT_TEST_NATS_SERVER", "KGAGENT_REQUIRE_NATS_CLUSTER",
		"KGAGENT_TEST_NATS_SERVER not set: no nats-server binary (make test, or deploy/testenv/40-natscluster.sh, builds one)")
}

// Shared returns the client URLs of the cluster make test started
// (KGAGENT_TEST_NATS_CLUSTER), skipping or failing like Binary when unset.
func Shared(t testing.TB) []string {
	t.Helper()
	urls := testdep.Env(t, "KGAGENT_TEST_NATS_CLUSTER", "KGAGENT_REQUIRE_NATS_CLUSTER",
		"KGAGENT_TEST_NATS_CLUSTER not set: no NATS cluster (make test starts one)")
	return strings.Split(urls, ",")
}

// Start starts an n-node JetStream cluster under t.TempDir() and waits until
// every node is healthy. The nodes are stopped when t ends.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t, bin: Binary(t), dir: t.TempDir()}
	var routes []string
	for i := 0; i < n; i++ {
		nd := &node{name: fmt.Sprintf("n%d", i+1), client: FreePort(t), route: FreePort(t), health: FreePort(t)}
		c.nodes = append(c.nodes, nd)
		routes = append(routes, fmt.Sprintf("%q", fmt.Sprintf("nats-route://127.0.0.1:%d", nd.route)))
	}
	for _, nd := range c.nodes {
		d := filepath.Join(c.dir, nd.name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		nd.conf = filepath.Join(d, "nats.conf")
		conf := fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
http: 127.0.0.1:%d
max_payload: 8MB
jetstream { store_dir: %q }
cluster {
  name: kgagent-fault
  listen: 127.0.0.1:%d
  routes: [ %s ]
}
`, nd.name, nd.client, nd.health, filepath.Join(d, "js"), nd.route, strings.Join(routes, ", "))
		if err := os.WriteFile(nd.conf, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		c.start(nd)
	}
	t.Cleanup(c.stop)
	for i := range c.nodes {
		c.WaitHealthy(i)
	}
	c.WaitPlacement()
	return c
}

func (c *Cluster) start(nd *node) {
	c.t.Helper()
	log, err := os.OpenFile(filepath.Join(filepath.Dir(nd.conf), "nats.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(c.bin, "-c", nd.conf)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		c.t.Fatal(err)
	}
	nd.cmd, nd.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) { _ = cmd.Wait(); log.Close(); close(exited) }(nd.exited)
}

// URLs returns the client URLs of all nodes, comma-separated, as
// --nats-url takes them.
func (c *Cluster) URLs() string {
	var u []string
	for i := range c.nodes {
		u = append(u, c.URL(i))
	}
	return strings.Join(u, ",")
}

// URL returns the client URL of node i.
func (c *Cluster) URL(i int) string {
	return fmt.Sprintf("nats://127.0.0.1:%d", c.nodes[i].client)
}

// Kill kills node i with SIGKILL and waits until it is gone.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	nd := c.nodes[i]
	if nd.cmd == nil {
		return
	}
	_ = nd.cmd.Process.Signal(syscall.SIGKILL)
	<-nd.exited
	nd.cmd = nil
}

// Restart starts node i again (after Kill) on its ports and data and waits
// until it is healthy.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	c.start(c.nodes[i])
	c.WaitHealthy(i)
	c.WaitPlacement()
}

// WaitHealthy waits up to 60 s until node i's /healthz reports JetStream
// current with its cluster.
func (c *Cluster) WaitHealthy(i int) {
	c.t.Helper()
	nd := c.nodes[i]
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", nd.health)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-nd.exited:
			b, _ := os.ReadFile(filepath.Join(filepath.Dir(nd.conf), "nats.log"))
			c.t.Fatalf("nats-server %s exited: %s", nd.name, tail(b))
		default:
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(filepath.Dir(nd.conf), "nats.log"))
			c.t.Fatalf("nats-server %s not healthy after 60s: %s", nd.name, tail(b))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitPlacement waits up to 60 s until the cluster can place a stream on
// every node: it creates a probe stream with one replica per node, then
// deletes it. A node's /healthz answers 200 as soon as it is current with
// the meta group, while the meta leader may still count a peer offline
// and refuse placement ("no suitable peers for placement"); a test that
// creates an R3 stream right after Start would then fail at random.
func (c *Cluster) WaitPlacement() {
	c.t.Helper()
	const probe = "NATSCLUSTER_PROBE"
	deadline := time.Now().Add(60 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		if last = c.placeProbe(probe); last == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.t.Fatalf("nats cluster cannot place a %d-replica stream after 60s: %v", len(c.nodes), last)
}

// placeProbe creates and deletes the R(len(nodes)) stream name.
func (c *Cluster) placeProbe(name string) error {
	nc, err := nats.Connect(c.URLs(), nats.Timeout(5*time.Second))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: name, Subjects: []string{"natscluster.probe"},
		Replicas: len(c.nodes), Storage: jetstream.MemoryStorage,
	}); err != nil {
		return err
	}
	return js.DeleteStream(ctx, name)
}

func (c *Cluster) stop() {
	for _, nd := range c.nodes {
		if nd.cmd == nil {
			continue
		}
		_ = nd.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-nd.exited:
		case <-time.After(10 * time.Second):
			_ = nd.cmd.Process.Kill()
			<-nd.exited
		}
	}
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// FreePort returns a loopback port that was free a moment ago, chosen at
// random below the kernel's ephemeral port range and never twice by this
// process. A port from the ephemeral range (what listening on :0 gives)
// can be taken by any outgoing connection before the node binds it, or
// while a killed node is down before Restart binds it again.
func FreePort(t testing.TB) int {
	t.Helper()
	lo, hi := 10000, ephemeralLow()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 1000 {
		p := lo + rand.IntN(hi-lo)
		if portsGiven[p] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		portsGiven[p] = true
		return p
	}
	t.Fatalf("no free loopback port in [%d, %d)", lo, hi)
	return 0
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// ephemeralLow is the first port of the kernel's ephemeral range (32768
// where it cannot be read, or where it leaves too little room below).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 12000 {
		return 32768
	}
	return n
}

// StartServer starts a single in-process NATS server with JetStream on a
// random loopback port, storing under t.TempDir(); it is shut down when t
// ends. For tests that need a plain server rather than a cluster.
func StartServer(t testing.TB) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(s.Shutdown)
	return s
}
