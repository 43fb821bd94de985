package embeds

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kgagent/kgagent"
)

// MinSecretLen is the shortest HMAC key Open's callers should accept.
const MinSecretLen = 16

// LoadOrCreateSecret returns the HMAC key kept in the file at path,
// creating it (32 random bytes, hex, mode 0600) on first use, so signed URLs
// outlive a restart. A file readable by others is narrowed to 0600.
// Errors: EINVALID for a file that holds no key of MinSecretLen bytes,
// EUNAVAILABLE when it cannot be read or written.
func LoadOrCreateSecret(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, kgagent.WrapError(kgagent.EINTERNAL, err, "embed URL key")
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "create the embed URL key")
		}
		// CreateTemp makes the file 0600; the rename publishes it whole.
		if err := writeFileAtomic(path, []byte(hex.EncodeToString(key)+"\n")); err != nil {
			return nil, err
		}
		return key, nil
	}
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, err, "read the embed URL key")
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		_ = os.Chmod(path, 0o600)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(key) < MinSecretLen {
		return nil, kgagent.Errorf(kgagent.EINVALID, "embed URL key file %s is damaged: want at least %d hex-encoded bytes", path, MinSecretLen)
	}
	return key, nil
}
