package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/kgagent/kgagent/gateway/natsapi"
)

// The embedded NATS server's users (issues 11 and 21). The service user,
// whose password is random per start and never leaves the process, is the
// in-process components' (the NATS API, the job queue, JetStream state).
// The client user, whose password is kept in the data dir (0600) and
// whose URL `kgagent nats-url` prints, may only ask: publish requests and
// read its replies (natsClientPermissions).
const (
	natsServiceUser  = "kgagent"
	natsClientUser   = "kgagent-client"
	natsPasswordFile = "nats.password" // the client user's password
	natsURLFile      = "nats.url"      // the client user's URL
)

// natsClientPermissions are the client user's permissions: publish on the
// request subjects (streamed, kgagent.request.<service>, and single-reply,
// kgagent.ask.<service>) and subscribe to reply inboxes; nothing else — no
// request subscriptions or queue groups (it would see other callers'
// credentials or answer for the service), no JetStream (job and state
// buckets), no job subjects. The README's nats-server permissions block
// for an external NATS is checked against this (TestDeployFilesAreTrue).
func natsClientPermissions() *natsserver.Permissions {
	return &natsserver.Permissions{
		Publish:   &natsserver.SubjectPermission{Allow: []string{natsapi.DefaultSubjectPrefix + ".>", natsapi.DefaultAskPrefix + ".>"}},
		Subscribe: &natsserver.SubjectPermission{Allow: []string{"_INBOX.>"}},
	}
}

// ensurePrivateDir creates dir (0700) and narrows an existing one to 0700:
// the data dir holds session messages, keys and credentials.
func ensurePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}

// writePrivateFile writes data to path with mode 0600, replacing it whole.
func writePrivateFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// loadOrCreateSecretFile returns the secret kept in path, creating it (32
// random bytes, hex, 0600) on first use; a file readable by others is
// narrowed to 0600.
func loadOrCreateSecretFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		secret, err := randomSecret()
		if err != nil {
			return "", err
		}
		if err := writePrivateFile(path, []byte(secret+"\n")); err != nil {
			return "", err
		}
		return secret, nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return "", err
	}
	secret := strings.TrimSpace(string(b))
	if len(secret) < 16 {
		return "", fmt.Errorf("%s holds no secret of 16 characters or more; delete it to generate one", path)
	}
	return secret, nil
}

// credentialURL returns clientURL with user's credentials.
func credentialURL(clientURL, user, password string) string {
	u, err := url.Parse(clientURL)
	if err != nil {
		return clientURL
	}
	u.User = url.UserPassword(user, password)
	return u.String()
}

// randomSecret returns 32 random bytes, hex.
func randomSecret() (string, error) {
	key := make([]byte, 32)
	if _, err := io.ReadFull(rand.Reader, key); err != nil {
		return "", err
	}
	return hex.EncodeToString(key), nil
}

// natsURLOf returns the URL, with the client user's credentials, of the
// in-process NATS server of dataDir, as its serve or worker wrote it at
// start.
func natsURLOf(dataDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, natsURLFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("no in-process NATS server has started on data dir %s (start kgagent serve or worker first)", dataDir)
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// privateDataFiles narrows the stores' files in dataDir (SQLite databases
// and their journals) to 0600: they hold session messages and documents.
func privateDataFiles(dataDir string) {
	matches, _ := filepath.Glob(filepath.Join(dataDir, "*.db*"))
	for _, m := range matches {
		_ = os.Chmod(m, 0o600)
	}
}
