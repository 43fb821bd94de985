package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

// newProbeCommand is the health check of container images without a shell
// or curl (the distroless image): it asks serve's /readyz on --addr.
func newProbeCommand(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var path string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "probe",
		Short: "Exit 0 when the serve on --addr answers /readyz with 200 (a container health check)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return probe(cmd.Context(), cfg.Addr, path, timeout, stdout)
		},
	}
	c.Flags().StringVar(&path, "path", "/readyz", "path to GET")
	c.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "how long to wait for the answer")
	return c
}

// probe GETs path on addr (a wildcard host is asked on loopback) and fails
// unless the answer is 200.
func probe(ctx context.Context, addr, path string, timeout time.Duration, stdout io.Writer) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("config: key %q: %v", "addr", err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url := "http://" + net.JoinHostPort(host, port) + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("probe %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("probe %s: %s: %s", url, resp.Status, body)
	}
	fmt.Fprintf(stdout, "%s: %s\n", url, resp.Status)
	return nil
}
