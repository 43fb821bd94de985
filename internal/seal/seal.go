// Package seal encrypts the secrets kgagent keeps on its message bus —
// the bearer tokens of queued ingestion jobs (crawler/natsjobs), the
// resume tokens, requests and frames of resumable websocket streams
// (gateway/natsstate) — with AES-256-GCM under a key every process sharing
// the bus holds (job_secret, or the data dir's jobs.key), so that neither
// the bus nor JetStream's files hold them in plain text.
//
// Each sealed value is bound to a context (GCM's additional data), such as
// "kgagent job secret": a value sealed for one use does not open for
// another.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
)

// Prefix starts a value sealed by SealString: records on the bus never
// hold the secret in plain text.
const Prefix = "sealed:v1:"

// Errors of Open and OpenString.
var (
	ErrNotSealed = errors.New("the value is not sealed")
	ErrDamaged   = errors.New("the sealed value is damaged")
	ErrOtherKey  = errors.New("the value was sealed with another key")
)

// Sealer seals and opens values with AES-256-GCM under a key derived
// (sha256) from the secret it was made with. It is safe for concurrent use.
type Sealer struct{ aead cipher.AEAD }

// New returns a Sealer for key; an empty key gets a random one (values
// then open only in this process).
func New(key []byte) (*Sealer, error) {
	if len(key) == 0 {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
	}
	sum := sha256.Sum256(key)
	block, err := aes.NewCipher(sum[:])
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Seal returns plain encrypted for context: a random nonce, then the
// ciphertext and its tag.
func (s *Sealer) Seal(plain []byte, context string) []byte {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	_, _ = rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, plain, []byte(context))
}

// Open decrypts what Seal returned for the same context. Errors:
// ErrDamaged, ErrOtherKey (another key, or another context).
func (s *Sealer) Open(sealed []byte, context string) ([]byte, error) {
	if len(sealed) < s.aead.NonceSize()+s.aead.Overhead() {
		return nil, ErrDamaged
	}
	n := s.aead.NonceSize()
	pt, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte(context))
	if err != nil {
		return nil, ErrOtherKey
	}
	return pt, nil
}

// SealString returns secret sealed for context as text: Prefix and the
// base64 of Seal ("" stays "").
func (s *Sealer) SealString(secret, context string) string {
	if secret == "" {
		return ""
	}
	return Prefix + base64.RawStdEncoding.EncodeToString(s.Seal([]byte(secret), context))
}

// OpenString decrypts what SealString returned ("" stays ""). Errors:
// ErrNotSealed for a value without Prefix, ErrDamaged, ErrOtherKey.
func (s *Sealer) OpenString(sealed, context string) (string, error) {
	if sealed == "" {
		return "", nil
	}
	b64, ok := strings.CutPrefix(sealed, Prefix)
	if !ok {
		return "", ErrNotSealed
	}
	ct, err := base64.RawStdEncoding.DecodeString(b64)
	if err != nil {
		return "", ErrDamaged
	}
	pt, err := s.Open(ct, context)
	if err != nil {
		return "", err
	}
	return string(pt), nil
}
