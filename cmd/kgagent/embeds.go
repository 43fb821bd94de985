package main

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/corpus/embeds"
	"github.com/kgagent/kgagent/gateway"
	"github.com/kgagent/kgagent/netguard"
)

// openEmbeds opens the embed store in <data_dir>/embeds. Its URL key is
// embed_secret, else the key generated once in <data_dir>/embeds/url.key
// (0600), so signed URLs survive a restart.
func (a *app) openEmbeds() error {
	cfg := a.cfg
	dir := filepath.Join(cfg.DataDir, "embeds")
	secret := []byte(cfg.EmbedSecret)
	if len(secret) == 0 {
		k, err := embeds.LoadOrCreateSecret(filepath.Join(dir, "url.key"))
		if err != nil {
			return err
		}
		secret = k
	}
	st, err := embeds.Open(embeds.Config{Dir: dir, MaxBytes: cfg.EmbedMaxBytes, Secret: secret, TTL: cfg.EmbedURLTTL, BaseURL: embedBaseURL(cfg)})
	if err != nil {
		return err
	}
	a.svc.embeds = st
	return nil
}

// embedFetch is the agents' embed reader: data URIs, the store's own signed
// URLs straight from disk, other http(s) URLs through the guarded client.
func (a *app) embedFetch() agent.EmbedFetchFunc {
	rd := &embeds.Reader{Store: a.svc.embeds, HTTPClient: a.guardedClient()}
	return rd.Read
}

// guardedClient is the client of every fetch of a URL an API caller gave
// (embeds, registered agents): netguard's, letting through only
// allowed_private_hosts among private addresses. The hosts were checked by
// checkGuardConfig at start.
func (a *app) guardedClient() *http.Client {
	hc, err := netguard.NewClient(netguard.Config{AllowedPrivateHosts: a.cfg.AllowedPrivateHosts})
	if err != nil {
		return netguard.DefaultClient()
	}
	return hc
}

// checkGuardConfig refuses a malformed allowed_private_hosts.
func checkGuardConfig(cfg Config) error {
	if _, err := netguard.New(netguard.Config{AllowedPrivateHosts: cfg.AllowedPrivateHosts}); err != nil {
		return fmt.Errorf("config: key %q: %s", "allowed_private_hosts", kgagent.ErrorMessage(err))
	}
	return nil
}

// embedBaseURL is where signed embed URLs point: public_url plus the embed
// route, else http://<addr> when addr names a host and port; "" when it
// must be learned from the listener (port 0 or a wildcard host).
func embedBaseURL(cfg Config) string {
	if cfg.PublicURL != "" {
		return strings.TrimRight(cfg.PublicURL, "/") + gateway.EmbedsPath
	}
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil || port == "0" || host == "" {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return ""
	}
	return "http://" + net.JoinHostPort(host, port) + gateway.EmbedsPath
}

// learnEmbedBase wraps the HTTP handler of serve: while the embed store has
// no base URL (no public_url, addr with port 0 or a wildcard host), the
// local address of the first request sets it. A local address is the
// listener's own, not something a client can choose.
func (a *app) learnEmbedBase(h http.Handler) http.Handler {
	st := a.svc.embeds
	if st == nil || st.BaseURL() != "" {
		return h
	}
	a.log.Warn("signed embed URLs will use the address the first request reached; set public_url to the URL clients use", "addr", a.cfg.Addr)
	var once sync.Once
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() {
			if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && st.BaseURL() == "" {
				st.SetBaseURL("http://" + la.String() + gateway.EmbedsPath)
			}
		})
		h.ServeHTTP(w, r)
	})
}

// checkPublicURL validates public_url: empty, or an absolute http(s) URL
// with a host and no query or fragment.
func checkPublicURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("config: key %q: %q is not an http(s) URL like https://kgagent.example", "public_url", s)
	}
	return nil
}

// checkEmbedConfig validates the embed keys of c.
func checkEmbedConfig(c *Config) error {
	if err := checkPublicURL(c.PublicURL); err != nil {
		return err
	}
	if c.EmbedMaxBytes <= 0 || c.EmbedURLTTL <= 0 {
		return fmt.Errorf("config: keys %q and %q: must be positive", "embed_max_bytes", "embed_url_ttl")
	}
	if c.EmbedSecret != "" && len(c.EmbedSecret) < embeds.MinSecretLen {
		return fmt.Errorf("config: key %q: must be at least %d bytes", "embed_secret", embeds.MinSecretLen)
	}
	return nil
}
