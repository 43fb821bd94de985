package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"golang.org/x/term"
)

// newLogger returns the slog logger the config asks for: text by default,
// JSON with --log-format json.
func newLogger(cfg Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// isTerminal reports whether w is a terminal (for the progress bar).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// dataLock is an exclusive advisory lock on a data directory, so a second
// process gets a clear error naming the holder instead of corrupting stores.
type dataLock struct {
	f      *os.File
	holder string // what the LOCK file says of this process
}

// lockDataDir creates dir if needed and takes its lock. The lock dies with
// the process, so a kill -9 never leaves a stale lock behind.
func lockDataDir(dir, command string) (*dataLock, error) {
	if err := ensurePrivateDir(dir); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, "LOCK")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("data dir %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := io.ReadAll(io.LimitReader(f, 512))
		f.Close()
		h := strings.TrimSpace(string(holder))
		if h == "" {
			h = "another process"
		}
		le := &lockedError{msg: fmt.Sprintf("data dir %s is in use by %s; stop it or use another --data-dir", dir, h)}
		if i := strings.Index(h, lockServing); i >= 0 {
			le.base = strings.Fields(h[i+len(lockServing):])[0]
		}
		return nil, le
	}
	l := &dataLock{f: f, holder: fmt.Sprintf("pid %d (kgagent %s, started %s)", os.Getpid(), command, time.Now().UTC().Format(time.RFC3339))}
	l.write(l.holder)
	return l, nil
}

// lockServing precedes, in the LOCK file, the base URL of the serve that
// holds the data dir.
const lockServing = "serving "

// serving records in the LOCK file the base URL the holder serves HTTP
// on, so that a command refused the data dir can name it.
func (l *dataLock) serving(base string) {
	if l != nil && l.f != nil {
		l.write(l.holder + ", " + lockServing + base)
	}
}

func (l *dataLock) write(holder string) {
	_ = l.f.Truncate(0)
	_, _ = l.f.WriteAt([]byte(holder+"\n"), 0)
	_ = l.f.Sync()
}

// lockedError is the error of a data dir held by another process; base
// is the HTTP base URL the holder serves on, when it is a serve.
type lockedError struct{ msg, base string }

func (e *lockedError) Error() string { return e.msg }

// Close releases the lock.
func (l *dataLock) Close() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = l.f.Truncate(0)
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	return l.f.Close()
}

// bus is the NATS connection and, in embedded mode, the in-process server.
type bus struct {
	server *natsserver.Server
	conn   *nats.Conn
}

// openBus connects to cfg.NATSURL, or starts an in-process NATS server with
// JetStream storing its files in the data dir and listening on
// cfg.NATSListen. The in-process server requires credentials and has two
// users: the service user (natsServiceUser, a password random per start),
// which this process connects as, and the client user (natsClientUser,
// natsClientPermissions: it may only ask), whose password is kept in
// <data_dir>/nats.password (generated on first start, mode 0600) and whose
// URL is written to <data_dir>/nats.url (0600) for `kgagent nats-url`. A
// listen address beyond loopback is refused when no API keys are
// configured (NATS requests would be open to the network).
func openBus(cfg Config, log *slog.Logger) (*bus, error) {
	if cfg.NATSURL != "" {
		nc, err := nats.Connect(cfg.NATSURL, nats.Name("kgagent"), nats.MaxReconnects(-1))
		if err != nil {
			return nil, fmt.Errorf("nats %s: %w", redactURLs(cfg.NATSURL), err)
		}
		return &bus{conn: nc}, nil
	}
	host, portStr, err := net.SplitHostPort(cfg.NATSListen)
	if err != nil {
		return nil, fmt.Errorf("config: key %q: %v", "nats_listen", err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("config: key %q: bad port %q", "nats_listen", portStr)
	}
	if !gatewayAuthEnabled(cfg) && !isLoopbackAddr(cfg.NATSListen) {
		return nil, fmt.Errorf("config: key %q: %s is not a loopback address and no API keys or JWKS are configured; refusing to open the bus beyond this machine (set api_keys_file)", "nats_listen", cfg.NATSListen)
	}
	clientPassword, err := loadOrCreateSecretFile(filepath.Join(cfg.DataDir, natsPasswordFile))
	if err != nil {
		return nil, err
	}
	password, err := randomSecret()
	if err != nil {
		return nil, err
	}
	opts := &natsserver.Options{
		ServerName: "kgagent",
		Host:       host,
		Port:       port,
		Users: []*natsserver.User{
			{Username: natsServiceUser, Password: password},
			{Username: natsClientUser, Password: clientPassword, Permissions: natsClientPermissions()},
		},
		JetStream:  true,
		StoreDir:   filepath.Join(cfg.DataDir, "nats"),
		NoSigs:     true,
		NoLog:      true,
		MaxPayload: 8 << 20,
	}
	ns, err := natsserver.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("in-process NATS could not listen on %s (is the port taken? set --nats-listen)", cfg.NATSListen)
	}
	nc, err := nats.Connect(ns.ClientURL(), nats.Name("kgagent"), nats.InProcessServer(ns), nats.UserInfo(natsServiceUser, password))
	if err != nil {
		ns.Shutdown()
		return nil, fmt.Errorf("nats: %w", err)
	}
	if err := writePrivateFile(filepath.Join(cfg.DataDir, natsURLFile), []byte(credentialURL(ns.ClientURL(), natsClientUser, clientPassword)+"\n")); err != nil {
		nc.Close()
		ns.Shutdown()
		return nil, err
	}
	log.Info("in-process NATS started", "url", ns.ClientURL(), "jetstream", opts.StoreDir)
	return &bus{server: ns, conn: nc}, nil
}

// URL is the NATS URL other processes on the machine can use, without
// credentials (it is printed and logged; `kgagent nats-url` gives the
// in-process server's URL with them).
func (b *bus) URL() string {
	if b.server != nil {
		return redactURLs(b.server.ClientURL())
	}
	return redactURLs(b.conn.ConnectedUrl())
}

// Ready reports whether the bus is connected.
func (b *bus) Ready() error {
	if b.conn == nil || !b.conn.IsConnected() {
		return errors.New("nats not connected")
	}
	return nil
}

// Close drains the connection and stops the in-process server.
func (b *bus) Close() {
	if b.conn != nil {
		_ = b.conn.Drain()
		b.conn.Close()
	}
	if b.server != nil {
		b.server.Shutdown()
		b.server.WaitForShutdown()
	}
}
