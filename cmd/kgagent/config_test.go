package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/crawler/natsjobs"
)

func resolveWith(t *testing.T, args []string, env []string, yaml string) (Config, error) {
	t.Helper()
	cfg := defaultConfig()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	cfg.addFlags(fs)
	if yaml != "" {
		p := filepath.Join(t.TempDir(), "kgagent.yaml")
		if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", p)
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	err := cfg.resolve(fs, env)
	return cfg, err
}

func TestConfigPrecedence(t *testing.T) {
	yaml := "addr: 127.0.0.1:1111\ndata_dir: /from/yaml\nlog_level: warn\n"
	env := []string{"KGAGENT_ADDR=127.0.0.1:2222", "KGAGENT_CRAWL_DELAY=250ms", "PATH=/bin"}
	cfg, err := resolveWith(t, []string{"--addr", "127.0.0.1:3333"}, env, yaml)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, got, want string }{
		{"flag beats env and yaml", cfg.Addr, "127.0.0.1:3333"},
		{"yaml beats default", cfg.DataDir, "/from/yaml"},
		{"yaml level", cfg.LogLevel, "warn"},
		{"default kept", cfg.Index, "sqlite"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	if cfg.CrawlDelay != 250*time.Millisecond {
		t.Errorf("env duration: got %v", cfg.CrawlDelay)
	}
	cfg, err = resolveWith(t, nil, env, yaml)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:2222" {
		t.Errorf("env beats yaml: got %q", cfg.Addr)
	}
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	tests := []struct {
		name, yaml string
		env        []string
		args       []string
		want       string
	}{
		{"unknown yaml key", "adr: x\n", nil, nil, `unknown key "adr"`},
		{"yaml line", "addr: x\nbogus: 1\n", nil, nil, ":2:"},
		{"bad yaml type", "max_iterations: lots\n", nil, nil, `key "max_iterations"`},
		{"unknown env", "", []string{"KGAGENT_ADRR=x"}, nil, "KGAGENT_ADRR"},
		{"bad env int", "", []string{"KGAGENT_MAX_ITERATIONS=ten"}, nil, `key "max_iterations"`},
		{"bad enum", "", nil, []string{"--index", "faiss"}, `key "index"`},
		{"qdrant needs addr", "", nil, []string{"--index", "qdrant"}, `key "qdrant_addr"`},
		{"negative iterations", "max_iterations: -1\n", nil, nil, `key "max_iterations"`},
		{"ingest memory limit too small", "ingest_memory_limit: 1000000\n", nil, nil, `key "ingest_memory_limit"`},
		{"serve memory limit too small", "serve_memory_limit: 1000000\n", nil, nil, `key "serve_memory_limit"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := resolveWith(t, tt.args, tt.env, tt.yaml)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want error containing %q", err, tt.want)
			}
		})
	}
}

func TestConfigTestEnvIgnored(t *testing.T) {
	if _, err := resolveWith(t, nil, []string{"KGAGENT_REQUIRE_NEO4J=1", "KGAGENT_PYDOCS=/x"}, ""); err != nil {
		t.Fatal(err)
	}
}

// TestScriptEnvIsNotConfig: every KGAGENT_ variable the test and benchmark
// scripts set or read is either a config key's or one serve ignores, so a
// binary the tests start in that environment does not stop with "unknown
// environment variable" (KGAGENT_MINILM_WHEEL and KGAGENT_HOME_CHECK once did).
func TestScriptEnvIsNotConfig(t *testing.T) {
	scripts, err := filepath.Glob("../../deploy/testenv/*.sh")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no test scripts found: %v", err)
	}
	scripts = append(scripts, "../../deploy/test.sh", "../../deploy/bench.sh", "../../deploy/bench-scale.sh", "../../deploy/bench-cluster.sh", "../../Makefile")
	known := map[string]bool{}
	cfg := defaultConfig()
	for _, f := range cfg.fields() {
		known[f.env] = true
	}
	re := regexp.MustCompile(`KGAGENT_[A-Z0-9_]+`)
	for _, s := range scripts {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range re.FindAllString(string(b), -1) {
			if strings.HasSuffix(name, "_") {
				continue // a family named in a comment: KGAGENT_REQUIRE_*
			}
			if isConfigEnv(name) && !known[name] {
				t.Errorf("%s uses %s: neither a config key's variable nor in testEnvPrefixes, so kgagent refuses to start beside it", s, name)
			}
		}
	}
}

func TestReadmeDocumentsEveryKey(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, f := range (&Config{}).fields() {
		if !strings.Contains(readme, "`"+f.key+"`") || !strings.Contains(readme, "`--"+f.flag+"`") {
			t.Errorf("README does not document key %s (--%s)", f.key, f.flag)
		}
	}
	if !strings.Contains(readme, referenceTable()) {
		t.Errorf("README configuration table is stale; it must contain exactly:\n%s", referenceTable())
	}
}

func TestDataDirLock(t *testing.T) {
	dir := t.TempDir()
	l1, err := lockDataDir(dir, "serve")
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockDataDir(dir, "ingest")
	if err == nil || !strings.Contains(err.Error(), "in use by pid") || !strings.Contains(err.Error(), "kgagent serve") {
		t.Fatalf("second lock: got %v, want error naming the holder", err)
	}
	if err := l1.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := lockDataDir(dir, "ingest")
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l2.Close()
}

// TestConfigSharedDefaults: the settings whose defaults a package also
// applies take that package's exported default, so the two cannot drift
// (issue 22: job_ack_wait was 30 s here and 60 s in crawler/natsjobs).
func TestConfigSharedDefaults(t *testing.T) {
	c := defaultConfig()
	if c.JobAckWait != natsjobs.DefaultAckWait {
		t.Errorf("job_ack_wait %s, natsjobs.DefaultAckWait %s", c.JobAckWait, natsjobs.DefaultAckWait)
	}
	if c.Collection != kgagent.DefaultCollection {
		t.Errorf("collection %q, kgagent.DefaultCollection %q", c.Collection, kgagent.DefaultCollection)
	}
	// The crawler's default bytes in flight are the CLI's at its default
	// ingest_memory_limit (they were 16 MiB against 12.5).
	if b := crawler.InFlightBytesWithin(c.IngestMemoryLimit); b != crawler.DefaultInFlightBytes {
		t.Errorf("in-flight bytes %d at ingest_memory_limit %d, crawler.DefaultInFlightBytes %d", b, c.IngestMemoryLimit, crawler.DefaultInFlightBytes)
	}
}
