package natsjobs

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/kgagent/kgagent"
)

// sealedPrefix starts a bearer token sealed by sealer: job records on the
// bus and in JetStream's files never hold the token in plain text.
const sealedPrefix = "sealed:v1:"

// sealer encrypts secrets of job records with AES-256-GCM under a key
// derived (sha256) from Config.SecretKey.
type sealer struct{ aead cipher.AEAD }

func newSealer(key []byte) (*sealer, error) {
	if len(key) == 0 {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, kgagent.WrapError(kgagent.EINTERNAL, err, "job secret key")
		}
	}
	sum := sha256.Sum256(key)
	block, err := aes.NewCipher(sum[:])
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EINTERNAL, err, "job secret key")
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, kgagent.WrapError(kgagent.EINTERNAL, err, "job secret key")
	}
	return &sealer{aead: aead}, nil
}

// seal returns secret encrypted ("" stays "").
func (s *sealer) seal(secret string) string {
	if secret == "" {
		return ""
	}
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	ct := s.aead.Seal(nonce, nonce, []byte(secret), []byte("kgagent job secret"))
	return sealedPrefix + base64.RawStdEncoding.EncodeToString(ct)
}

// open decrypts a sealed secret. Errors: EINVALID when it was sealed under
// another key (a restart without a persistent Config.SecretKey) or is
// damaged; a value that is not sealed is refused too.
func (s *sealer) open(sealed string) (string, error) {
	if sealed == "" {
		return "", nil
	}
	b64, ok := strings.CutPrefix(sealed, sealedPrefix)
	if !ok {
		return "", kgagent.Errorf(kgagent.EINVALID, "the job's bearer token is not sealed")
	}
	ct, err := base64.RawStdEncoding.DecodeString(b64)
	if err != nil || len(ct) < s.aead.NonceSize() {
		return "", kgagent.Errorf(kgagent.EINVALID, "the job's bearer token is damaged")
	}
	pt, err := s.aead.Open(nil, ct[:s.aead.NonceSize()], ct[s.aead.NonceSize():], []byte("kgagent job secret"))
	if err != nil {
		return "", kgagent.Errorf(kgagent.EINVALID, "the job's bearer token was sealed with another key (set the job secret key to the same value on every process)")
	}
	return string(pt), nil
}
