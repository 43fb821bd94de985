package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/spf13/cobra"

	"github.com/kgagent/kgagent/gateway"
	kgmcp "github.com/kgagent/kgagent/gateway/mcp"
)

func newMCPCommand(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve the Model Context Protocol on stdin/stdout (for MCP clients that launch a process)",
		Long: "mcp opens the data dir (taking its lock, like ask and ingest) and serves the MCP tools ask, search, graph,\n" +
			"ingest, ingest_status and collections, and the collections and their documents as kgagent:// resources,\n" +
			"over stdio. Logs go to stderr. While `kgagent serve` holds the data dir, point the MCP client at serve's\n" +
			"Streamable HTTP endpoint (http://ADDR/mcp) instead.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMCP(cmd.Context(), *cfg, os.Stdin, stdout, stderr)
		},
	}
}

// runMCP serves MCP over in/out with the data dir opened in this process.
// Ingestion jobs run here too (in-process NATS on a random loopback port).
func runMCP(ctx context.Context, cfg Config, in io.Reader, out, stderr io.Writer) error {
	defer limitServeMemory(cfg)()
	log := newLogger(cfg, stderr)
	if cfg.NATSURL == "" {
		cfg.NATSListen = "127.0.0.1:-1" // never collide with a serve on the default port
	}
	a, err := openApp(ctx, cfg, "mcp", log, true)
	if err != nil {
		var le *lockedError
		if errors.As(err, &le) && le.base != "" {
			return fmt.Errorf("%w\nkgagent mcp needs the data dir to itself: while serve runs, configure your MCP client with serve's Streamable HTTP endpoint (%s/mcp) instead", err, le.base)
		}
		if errors.As(err, &le) {
			return fmt.Errorf("%w\nkgagent mcp needs the data dir to itself: wait until that command ends", err)
		}
		return err
	}
	defer a.Close()
	if _, err := a.startBackground(ctx); err != nil {
		return err
	}
	go a.warmUp(ctx) // the first tool call then finds the search copies loaded
	gw, err := a.gateway()
	if err != nil {
		return err
	}
	srv := kgmcp.New(gw.Calls(), kgmcp.Options{Version: version, DefaultCollection: cfg.Collection, Logger: log})
	log.Info("serving MCP on stdio", "data_dir", cfg.DataDir, "collection", cfg.Collection)
	return srv.RunIO(ctx, in, out)
}

// mountMCP serves MCP over Streamable HTTP at /mcp behind the gateway's
// credentials (ask scope), limits and Host/Origin checks.
func (a *app) mountMCP(gw *gateway.Server) {
	calls := gw.Calls()
	srv := kgmcp.New(calls, kgmcp.Options{
		Version: version, DefaultCollection: a.cfg.Collection, Logger: a.log, MaxBodyBytes: a.cfg.MaxBodyBytes,
		Authenticate: func(ctx context.Context, h http.Header) (context.Context, error) {
			return calls.Authenticate(ctx, h, gateway.ScopeAsk)
		},
		RequireBearer: gatewayAuthEnabled(a.cfg), Owner: calls.Owner,
	})
	gw.Mount("/mcp", gateway.ScopeAsk, srv.HTTPHandler())
}
