package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/kgagent/kgagent/gateway"
	"github.com/kgagent/kgagent/internal/natscluster"
)

// dockerfileEnv is the environment the image sets (deploy/Dockerfile's ENV).
func dockerfileEnv(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../deploy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "ENV "); ok {
			env = append(env, strings.Fields(rest)...)
		}
	}
	if len(env) == 0 {
		t.Fatal("deploy/Dockerfile sets no ENV")
	}
	return env
}

// checkInvocation runs the binary's own flag parsing and configuration
// resolution (flags, then KGAGENT_* environment, then validation) on args
// and env, as the container would, without running the command. It returns
// the subcommand found.
func checkInvocation(t *testing.T, where string, args, env []string) *cobra.Command {
	t.Helper()
	root := newRootCommand(io.Discard, io.Discard, env)
	sub, rest, err := root.Find(args)
	if err != nil || sub == root {
		t.Errorf("%s: %v is no kgagent command: %v", where, args, err)
		return nil
	}
	if err := sub.ParseFlags(rest); err != nil {
		t.Errorf("%s: %v: %v", where, args, err)
		return nil
	}
	if n := sub.Flags().NArg(); n > 0 && sub.Args != nil {
		if err := sub.Args(sub, sub.Flags().Args()); err != nil {
			t.Errorf("%s: %v: %v", where, args, err)
		}
	}
	if err := root.PersistentPreRunE(sub, sub.Flags().Args()); err != nil {
		t.Errorf("%s: configuration %v with %v: %v", where, args, env, err)
	}
	return sub
}

func strs(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, x := range l {
		out = append(out, x.(string))
	}
	return out
}

// TestDeployFilesAreTrue reads deploy/docker-compose.yml and
// deploy/k8s/kgagent.yaml and checks them against the binary (and the
// README's nats-server permissions block against the embedded NATS
// server's users: checkNATSPermissionsBlock): every kgagent
// command line parses with the binary's flags, every KGAGENT_* variable is a
// configuration key and the whole configuration validates, every health
// check asks /readyz, the compose file has two serve replicas, a worker, a
// three-node NATS cluster, Qdrant and Neo4j, and the example API keys file
// loads. With KGAGENT_TEST_NATS_SERVER set, the nats-server flags are
// checked against that binary's help too.
func TestDeployFilesAreTrue(t *testing.T) {
	base := dockerfileEnv(t)
	b, err := os.ReadFile("../../deploy/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]map[string]any `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	var natsArgs [][]string
	for name, svc := range compose.Services {
		img, _ := svc["image"].(string)
		switch {
		case strings.HasPrefix(img, "nats:"):
			count["nats"]++
			natsArgs = append(natsArgs, strs(svc["command"]))
			// The users of deploy/config/nats-auth.conf, with the
			// passwords it reads from the environment.
			if !slices.Contains(strs(svc["volumes"]), "./config/nats-auth.conf:/etc/nats/kgagent-auth.conf:ro") {
				t.Errorf("compose %s: does not mount deploy/config/nats-auth.conf: %v", name, svc["volumes"])
			}
			envMap, _ := svc["environment"].(map[string]any)
			for _, k := range []string{"KGAGENT_NATS_PASSWORD", "KGAGENT_NATS_CLIENT_PASSWORD"} {
				if _, ok := envMap[k]; !ok {
					t.Errorf("compose %s: no %s for nats-auth.conf", name, k)
				}
			}
			continue
		case strings.HasPrefix(img, "qdrant/qdrant:"):
			count["qdrant"]++
			if img != "qdrant/qdrant:v1.17.1" {
				t.Errorf("compose %s: image %s, but the README names Qdrant 1.17.1 as verified", name, img)
			}
			continue
		case strings.HasPrefix(img, "neo4j:5"):
			count["neo4j"]++
			continue
		case svc["build"] == nil:
			continue
		}
		env := append([]string(nil), base...)
		envMap, _ := svc["environment"].(map[string]any)
		for k, v := range envMap {
			env = append(env, k+"="+v.(string))
		}
		if _, ok := envMap["KGAGENT_JOB_SECRET"]; !ok {
			t.Errorf("compose %s: no KGAGENT_JOB_SECRET: processes sharing a job queue need the same key", name)
		}
		natsURL, _ := envMap["KGAGENT_NATS_URL"].(string)
		for _, u := range strings.Split(natsURL, ",") {
			if !strings.HasPrefix(u, "nats://"+natsServiceUser+":${KGAGENT_NATS_PASSWORD") {
				t.Errorf("compose %s: NATS URL %q does not connect as the service user %s", name, u, natsServiceUser)
			}
		}
		cmd := strs(svc["command"])
		sub := checkInvocation(t, "compose "+name, cmd, env)
		if sub == nil {
			continue
		}
		count[sub.Name()]++
		if sub.Name() == "serve" {
			hc, _ := svc["healthcheck"].(map[string]any)
			test := strs(hc["test"])
			if len(test) < 3 || test[0] != "CMD" || test[1] != "/kgagent" {
				t.Errorf("compose %s: health check %v does not run the image's /kgagent", name, test)
				continue
			}
			probe := checkInvocation(t, "compose "+name+" healthcheck", test[2:], env)
			if probe == nil || probe.Name() != "probe" {
				t.Errorf("compose %s: health check %v is not kgagent probe", name, test)
			} else if p, _ := probe.Flags().GetString("path"); p != "/readyz" {
				t.Errorf("compose %s: health check asks %s, want /readyz", name, p)
			}
		}
	}
	want := map[string]int{"serve": 2, "worker": 1, "nats": 3, "qdrant": 1, "neo4j": 1}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("compose: %d %s services, want %d (all: %v)", count[k], k, n, count)
		}
	}
	checkNATSArgs(t, natsArgs)

	// Kubernetes: the ConfigMap's keys, each container's args and env, and
	// the serve pods' readiness probe.
	b, err = os.ReadFile("../../deploy/k8s/kgagent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var cm []string
	var deployments []map[string]any
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		switch doc["kind"] {
		case "ConfigMap":
			for k, v := range doc["data"].(map[string]any) {
				cm = append(cm, k+"="+v.(string))
			}
		case "Deployment":
			deployments = append(deployments, doc)
		}
	}
	k8s := map[string]int{}
	for _, d := range deployments {
		name := d["metadata"].(map[string]any)["name"].(string)
		spec := d["spec"].(map[string]any)
		pod := spec["template"].(map[string]any)["spec"].(map[string]any)
		for _, c := range pod["containers"].([]any) {
			c := c.(map[string]any)
			env := append(append([]string(nil), base...), cm...)
			secret := false
			natsURL := ""
			for _, e := range c["env"].([]any) {
				n := e.(map[string]any)["name"].(string)
				env = append(env, n+"=from-a-secret")
				secret = secret || n == "KGAGENT_JOB_SECRET"
				if n == "KGAGENT_NATS_URL" {
					natsURL, _ = e.(map[string]any)["value"].(string)
				}
			}
			for _, u := range strings.Split(natsURL, ",") {
				if !strings.HasPrefix(u, "nats://"+natsServiceUser+":$(NATS_PASSWORD)@") {
					t.Errorf("k8s %s: NATS URL %q does not connect as the service user %s", name, u, natsServiceUser)
				}
			}
			if !secret {
				t.Errorf("k8s %s: no KGAGENT_JOB_SECRET: processes sharing a job queue need the same key", name)
			}
			sub := checkInvocation(t, "k8s "+name, strs(c["args"]), env)
			if sub == nil {
				continue
			}
			k8s[sub.Name()] += spec["replicas"].(int)
			if sub.Name() == "serve" {
				rp, _ := c["readinessProbe"].(map[string]any)
				hg, _ := rp["httpGet"].(map[string]any)
				if hg["path"] != "/readyz" || hg["port"] != 8080 {
					t.Errorf("k8s %s: readiness probe %v, want GET /readyz on 8080", name, rp)
				}
			}
		}
	}
	if k8s["serve"] < 2 || k8s["worker"] < 1 {
		t.Errorf("k8s: replicas %v, want 2 or more serve and a worker", k8s)
	}

	checkNATSPermissionsBlock(t)

	// The example API keys file the deploy files point to loads.
	cfg := defaultConfig()
	cfg.APIKeysFile = "../../deploy/config/api-keys.example.yaml"
	var gc gateway.Config
	if err := loadAuth(cfg, &gc); err != nil || len(gc.APIKeys) == 0 {
		t.Errorf("deploy/config/api-keys.example.yaml: %v (%d keys)", err, len(gc.APIKeys))
	}
}

// checkNATSArgs checks the nats-server command lines of the compose file:
// three nodes of one JetStream cluster, each routing to all three, and (when
// make test built nats-server) every flag known to that binary.
func checkNATSArgs(t *testing.T, all [][]string) {
	for _, args := range all {
		joined := strings.Join(args, " ")
		for _, want := range []string{"-js", "-c /etc/nats/kgagent-auth.conf", "--cluster_name kgagent", "--routes nats://nats-1:6222,nats://nats-2:6222,nats://nats-3:6222"} {
			if !strings.Contains(joined, want) {
				t.Errorf("compose nats command %q lacks %q", joined, want)
			}
		}
	}
	if os.Getenv("KGAGENT_TEST_NATS_SERVER") == "" {
		return
	}
	help, _ := exec.Command(natscluster.Binary(t), "--help").CombinedOutput()
	flag := regexp.MustCompile(`^-{1,2}[a-z_]+$`)
	for _, args := range all {
		for _, a := range args {
			if flag.MatchString(a) && !regexp.MustCompile(`(^|[\s,])`+regexp.QuoteMeta(a)+`(\s|,|$)`).Match(help) {
				t.Errorf("compose nats flag %s is not in nats-server --help", a)
			}
		}
	}
}

// checkNATSPermissionsBlock checks the README's nats-server configuration
// for an external NATS: it is deploy/config/nats-auth.conf (which the
// compose file's NATS nodes load), and, parsed by nats-server's own
// parser, it gives the users the embedded server has: the service user
// kgagent unrestricted, the client user exactly natsClientPermissions
// (finding 2 of issue 21).
func checkNATSPermissionsBlock(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var block string
	for _, part := range strings.Split(string(b), "```conf\n")[1:] {
		body, _, _ := strings.Cut(part, "```")
		if strings.Contains(body, "authorization {") {
			block = body
		}
	}
	if block == "" {
		t.Fatal("the README gives no ```conf nats-server authorization block for an external NATS")
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(block, " \n"), "\n") {
		lines = append(lines, strings.TrimPrefix(l, "  ")) // the README's list indentation
	}
	conf := "../../deploy/config/nats-auth.conf"
	file, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(lines, "\n"); got != strings.TrimRight(string(file), "\n") {
		t.Errorf("the README's nats-server block is not deploy/config/nats-auth.conf:\n%s\n---\n%s", got, file)
	}
	t.Setenv("KGAGENT_NATS_PASSWORD", "service-secret")
	t.Setenv("KGAGENT_NATS_CLIENT_PASSWORD", "client-secret")
	opts, err := natsserver.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("deploy/config/nats-auth.conf does not parse: %v", err)
	}
	users := map[string]*natsserver.User{}
	for _, u := range opts.Users {
		users[u.Username] = u
	}
	if len(users) != 2 {
		t.Errorf("README nats-server block: users %v, want %s and %s", users, natsServiceUser, natsClientUser)
	}
	if u := users[natsServiceUser]; u == nil || u.Password != "service-secret" || u.Permissions != nil {
		t.Errorf("README nats-server block: service user %+v, want %s with $KGAGENT_NATS_PASSWORD and no restrictions", u, natsServiceUser)
	}
	u := users[natsClientUser]
	if u == nil || u.Password != "client-secret" {
		t.Fatalf("README nats-server block: client user %+v, want %s with $KGAGENT_NATS_CLIENT_PASSWORD", u, natsClientUser)
	}
	if got, want := u.Permissions, natsClientPermissions(); !reflect.DeepEqual(got, want) {
		t.Errorf("README nats-server block: client permissions\n%s\nwant the embedded server's\n%s", permString(got), permString(want))
	}
}

func permString(p *natsserver.Permissions) string {
	b, _ := json.Marshal(p)
	return string(b)
}
