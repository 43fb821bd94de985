// Command kgagent is the one binary of kgagent: serve runs the HTTP,
// websocket and NATS service; worker runs ingestion jobs and NATS answers
// without HTTP; ingest crawls a corpus from the command line; ask answers one
// question; eval scores retrieval on a question set; version prints the
// version. All wiring of stores, LLMs and the bus happens in this package.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if path := os.Getenv("KGAGENT_BENCH_CPUPROFILE"); path != "" {
		// For benchmarks: a CPU profile of the whole command.
		if f, err := os.Create(path); err == nil {
			_ = pprof.StartCPUProfile(f)
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	if path := os.Getenv("KGAGENT_BENCH_HEAPPROFILE"); path != "" {
		// For benchmarks: each SIGUSR1 collects garbage and writes a heap
		// profile to path.N and the live heap to stderr.
		heapOnSignal(path)
	}
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Environ())
	stop()
	if code != 0 {
		os.Exit(code)
	}
}

// heapOnSignal writes a heap profile to path.N (N counting from 1) and logs
// the live heap on each SIGUSR1.
func heapOnSignal(path string) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	go func() {
		for n := 1; ; n++ {
			<-ch
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			fmt.Fprintf(os.Stderr, "heap profile %d: HeapAlloc=%d HeapSys=%d Sys=%d\n", n, ms.HeapAlloc, ms.HeapSys, ms.Sys)
			if f, err := os.Create(fmt.Sprintf("%s.%d", path, n)); err == nil {
				_ = pprof.WriteHeapProfile(f)
				f.Close()
			}
		}
	}()
}

// exitError carries a process exit code through cobra.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// run is main without the process: tests call it with their own arguments,
// writers and environment.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, environ []string) int {
	root := newRootCommand(stdout, stderr, environ)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintln(stderr, "kgagent:", err)
	return 1
}

func newRootCommand(stdout, stderr io.Writer, environ []string) *cobra.Command {
	cfg := defaultConfig()
	root := &cobra.Command{
		Use:           "kgagent",
		Short:         "Knowledge-graph question-answering agent service",
		Long:          "kgagent crawls documentation sites, indexes them as vector embeddings and as a graph of triples,\nand answers questions with a ReAct agent over REST, websocket, NATS and the Fixie agent protocol.\n\nConfiguration precedence: flags > environment (KGAGENT_*) > YAML file (--config) > defaults.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return cfg.resolve(cmd.Flags(), environ)
		},
	}
	cfg.addFlags(root.PersistentFlags())
	root.AddCommand(
		newServeCommand(&cfg, stdout, stderr),
		newWorkerCommand(&cfg, stdout, stderr),
		newIngestCommand(&cfg, stdout, stderr),
		newAskCommand(&cfg, stdout, stderr),
		newEvalCommand(&cfg, stdout, stderr),
		newMCPCommand(&cfg, stdout, stderr),
		newProbeCommand(&cfg, stdout, stderr),
		&cobra.Command{
			Use:   "nats-url",
			Short: "Print the URL, with the client user's credentials, of the in-process NATS server of the data dir",
			Long:  "nats-url prints the URL (nats://kgagent-client:<password>@host:port) that local clients such as the nats CLI\nuse to reach the in-process NATS server of a running serve or worker; it is kept in <data_dir>/nats.url (0600).\nThe client user may only publish requests (kgagent.request.>, kgagent.ask.>) and subscribe to reply inboxes (_INBOX.>).",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				u, err := natsURLOf(cfg.DataDir)
				if err != nil {
					return err
				}
				fmt.Fprintln(stdout, u)
				return nil
			},
		},
		&cobra.Command{
			Use:    "config-reference",
			Short:  "Print the configuration reference table (Markdown) the README holds",
			Hidden: true,
			Args:   cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				fmt.Fprint(stdout, referenceTable())
				return nil
			},
		},
		&cobra.Command{
			Use:   "version",
			Short: "Print the version",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				fmt.Fprintln(stdout, "kgagent", version)
				return nil
			},
		},
	)
	return root
}
